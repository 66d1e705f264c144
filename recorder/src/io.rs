//! `std::io`, with a [`BufReader`] whose reads of a ppd socket are located at the line of the
//! program that asked for them.
//!
//! A socket read is logged with the `file:line` it was called from. std's `BufReader` reads
//! its inner reader from std's own code, so every read a program makes through it — a
//! `read_line`, a step of `for line in reader.lines()` — would be located in std. This one is
//! std's `BufReader` under a wrapper whose methods are `#[track_caller]`: while one runs, a ppd
//! socket read it makes is located at its caller. Everything else is std's `std::io`.

use std::cell::Cell;
use std::io as std_io;
use std::panic::Location;

pub use std::io::*;

use crate::runtime;

/// Where an operation was called from.
type Site = &'static Location<'static>;

thread_local! {
    /// The line a `BufReader` method running on this thread was called from.
    static READING_FOR: Cell<Option<Site>> = const { Cell::new(None) };
}

/// The line a `BufReader` method running on this thread was called from, if one is.
pub(crate) fn reading_for() -> Option<Site> {
    READING_FOR.with(Cell::get)
}

/// Runs `read` on behalf of `caller`, unless recording is off (then nothing is logged) or an
/// outer `BufReader` method already does (a `BufReader` of a `BufReader`: the program's line
/// is the outer one's caller).
fn on_behalf_of<T>(caller: Site, read: impl FnOnce() -> T) -> T {
    if !runtime::active() || reading_for().is_some() {
        return read();
    }
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            READING_FOR.with(|r| r.set(None));
        }
    }
    READING_FOR.with(|r| r.set(Some(caller)));
    let _restore = Restore;
    read()
}

/// std's `BufReader`: buffered reads of `R`, each located at the line that asked for it.
///
/// ```
/// let reader = ppd::io::BufReader::new(&b"one\ntwo\n"[..]);
/// assert_eq!(reader.lines().count(), 2);
/// ```
#[derive(Debug)]
pub struct BufReader<R> {
    inner: std_io::BufReader<R>,
}

impl<R: Read> BufReader<R> {
    /// A reader with std's default buffer.
    pub fn new(inner: R) -> BufReader<R> {
        BufReader {
            inner: std_io::BufReader::new(inner),
        }
    }

    /// A reader with a buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize, inner: R) -> BufReader<R> {
        BufReader {
            inner: std_io::BufReader::with_capacity(capacity, inner),
        }
    }
}

impl<R> BufReader<R> {
    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        self.inner.get_ref()
    }

    /// The underlying reader; reading from it directly loses what the buffer holds.
    pub fn get_mut(&mut self) -> &mut R {
        self.inner.get_mut()
    }

    /// What the buffer holds.
    pub fn buffer(&self) -> &[u8] {
        self.inner.buffer()
    }

    /// The buffer's size.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// The underlying reader; what the buffer holds is lost.
    pub fn into_inner(self) -> R {
        self.inner.into_inner()
    }
}

impl<R: Read> BufReader<R> {
    /// The lines, as `BufRead::lines`; each step is located at the line that takes it (the
    /// `for` loop's).
    pub fn lines(self) -> Lines<BufReader<R>> {
        Lines { reader: self }
    }

    /// The pieces between `byte`s, as `BufRead::split`; each step is located at the line that
    /// takes it.
    pub fn split(self, byte: u8) -> Split<BufReader<R>> {
        Split { reader: self, byte }
    }
}

impl<R: Read> Read for BufReader<R> {
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read(buf))
    }

    #[track_caller]
    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read_vectored(bufs))
    }

    #[track_caller]
    fn read_exact(&mut self, buf: &mut [u8]) -> std_io::Result<()> {
        on_behalf_of(Location::caller(), || self.inner.read_exact(buf))
    }

    #[track_caller]
    fn read_to_end(&mut self, buf: &mut Vec<u8>) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read_to_end(buf))
    }

    #[track_caller]
    fn read_to_string(&mut self, buf: &mut String) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read_to_string(buf))
    }
}

impl<R: Read> BufRead for BufReader<R> {
    #[track_caller]
    fn fill_buf(&mut self) -> std_io::Result<&[u8]> {
        on_behalf_of(Location::caller(), || self.inner.fill_buf())
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
    }

    #[track_caller]
    fn read_until(&mut self, byte: u8, buf: &mut Vec<u8>) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read_until(byte, buf))
    }

    #[track_caller]
    fn read_line(&mut self, buf: &mut String) -> std_io::Result<usize> {
        on_behalf_of(Location::caller(), || self.inner.read_line(buf))
    }
}

impl<R: Seek> Seek for BufReader<R> {
    fn seek(&mut self, pos: SeekFrom) -> std_io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// The lines of a [`BufReader`], as std's `Lines`.
#[derive(Debug)]
pub struct Lines<B> {
    reader: B,
}

impl<R: Read> Iterator for Lines<BufReader<R>> {
    type Item = std_io::Result<String>;

    #[track_caller]
    fn next(&mut self) -> Option<std_io::Result<String>> {
        let mut line = String::new();
        let read = on_behalf_of(Location::caller(), || {
            self.reader.inner.read_line(&mut line)
        });
        match read {
            Ok(0) => None,
            Ok(_) => {
                if line.ends_with('\n') {
                    line.pop();
                    if line.ends_with('\r') {
                        line.pop();
                    }
                }
                Some(Ok(line))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// The pieces of a [`BufReader`] between one byte, as std's `Split`.
#[derive(Debug)]
pub struct Split<B> {
    reader: B,
    byte: u8,
}

impl<R: Read> Iterator for Split<BufReader<R>> {
    type Item = std_io::Result<Vec<u8>>;

    #[track_caller]
    fn next(&mut self) -> Option<std_io::Result<Vec<u8>>> {
        let mut piece = Vec::new();
        let byte = self.byte;
        let read = on_behalf_of(Location::caller(), || {
            self.reader.inner.read_until(byte, &mut piece)
        });
        match read {
            Ok(0) => None,
            Ok(_) => {
                if piece.last() == Some(&byte) {
                    piece.pop();
                }
                Some(Ok(piece))
            }
            Err(e) => Some(Err(e)),
        }
    }
}
