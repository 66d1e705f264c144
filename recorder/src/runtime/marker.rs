//! The mark every program built with ppd carries, so that replay runs only ppd programs.
//!
//! A recording names the program to run and its arguments. A hash proves that a binary is the
//! one named, not that it is a ppd program: `/bin/sh` with `-c COMMAND` hashes as well as any.
//! So the runtime's entry (`runtime::install`, through which every mode starts) refers to a
//! static holding a unique byte string, which the linker therefore keeps in every executable
//! that can run a ppd `main`, and `program_hash` looks for it while it hashes a binary
//! (`docs/format.md` §2.2).
//!
//! The string is spelled out only in [`PROGRAM_MARKER`]; what looks for it gets it by
//! unmasking [`MASKED`] at run time, so a binary that only checks programs (the `ppd` command)
//! does not carry it by accident.

/// The marker's bytes.
const MARKER_TEXT: [u8; 48] = *b"ppd program marker v1 6b1e0c9f4a27d853e08f2c71b9";

/// What the marker is masked with where it is searched for.
const MASK: u8 = 0x5a;

const fn masked(text: [u8; 48]) -> [u8; 48] {
    let mut out = text;
    let mut i = 0;
    while i < out.len() {
        out[i] ^= MASK;
        i += 1;
    }
    out
}

/// The marker, masked: the form a checker's binary holds.
const MASKED: [u8; 48] = masked(MARKER_TEXT);

/// The marker itself, in every ppd program.
static PROGRAM_MARKER: [u8; 48] = MARKER_TEXT;

/// Keeps the marker in the executable: a use the optimizer cannot see through.
#[inline(never)]
pub(crate) fn keep() {
    std::hint::black_box(&PROGRAM_MARKER);
}

/// The bytes to look for in a binary: the marker, unmasked at run time.
pub(crate) fn needle() -> [u8; 48] {
    masked(std::hint::black_box(MASKED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_looked_for_is_the_marker() {
        assert_eq!(needle(), PROGRAM_MARKER);
        assert_ne!(MASKED, PROGRAM_MARKER);
    }
}
