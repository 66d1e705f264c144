//! The protocol buffers wire format, as much of it as the Perfetto export writes: varints,
//! fixed64s, strings and nested messages. Messages are built bottom-up in reusable buffers, so
//! that writing millions of small packets allocates nothing per packet.

/// Wire type of varints.
const VARINT: u64 = 0;
/// Wire type of 64-bit fixed-width fields.
const FIXED64: u64 = 1;
/// Wire type of strings, bytes and nested messages.
const LEN: u64 = 2;

/// One message being encoded.
#[derive(Debug, Default)]
pub(crate) struct Message {
    bytes: Vec<u8>,
}

impl Message {
    /// Forgets the fields written so far, keeping the buffer.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
    }

    /// The encoded fields.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn raw_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u64) {
        self.raw_varint((u64::from(field) << 3) | wire);
    }

    /// An integer, bool or enum field.
    pub(crate) fn varint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.raw_varint(v);
    }

    /// A `fixed64` field.
    pub(crate) fn fixed64(&mut self, field: u32, v: u64) {
        self.tag(field, FIXED64);
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    /// The tag and length of a string, bytes or message field of `len` bytes, whose contents
    /// the caller writes separately.
    pub(crate) fn length_delimited_header(&mut self, field: u32, len: usize) {
        self.tag(field, LEN);
        self.raw_varint(len as u64);
    }

    /// A string or bytes field.
    pub(crate) fn bytes_field(&mut self, field: u32, b: &[u8]) {
        self.length_delimited_header(field, b.len());
        self.bytes.extend_from_slice(b);
    }

    /// A string field.
    pub(crate) fn string(&mut self, field: u32, s: &str) {
        self.bytes_field(field, s.as_bytes());
    }

    /// A nested message field.
    pub(crate) fn message(&mut self, field: u32, m: &Message) {
        self.bytes_field(field, &m.bytes);
    }

    /// A nested message field built by `fill` (for the few messages written once).
    pub(crate) fn nested(&mut self, field: u32, fill: impl FnOnce(&mut Message)) {
        let mut m = Message::default();
        fill(&mut m);
        self.message(field, &m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_examples_of_the_protobuf_encoding_guide() {
        // `message Test1 { int32 a = 1; }` with a = 150 is 08 96 01.
        let mut m = Message::default();
        m.varint(1, 150);
        assert_eq!(m.bytes(), [0x08, 0x96, 0x01]);
        // `message Test2 { string b = 2; }` with b = "testing".
        m.clear();
        m.string(2, "testing");
        assert_eq!(m.bytes(), b"\x12\x07testing");
        // `message Test3 { Test1 c = 3; }` wrapping the first example.
        m.clear();
        m.nested(3, |c| c.varint(1, 150));
        assert_eq!(m.bytes(), [0x1a, 0x03, 0x08, 0x96, 0x01]);
        m.clear();
        m.fixed64(47, 1);
        assert_eq!(m.bytes(), [0xf9, 0x02, 1, 0, 0, 0, 0, 0, 0, 0]);
    }
}
