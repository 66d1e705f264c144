//! A fixed-size set of node ids.

use std::fmt;

/// A set of node ids below a fixed bound, one bit each.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set of ids below `n`.
    pub fn new(n: usize) -> Bits {
        Bits {
            words: vec![0; n.div_ceil(64)],
        }
    }

    /// The set of every id below `n`.
    pub fn full(n: usize) -> Bits {
        let mut b = Bits::new(n);
        for i in 0..n {
            b.insert(i);
        }
        b
    }

    /// Adds `i`; whether it was new.
    pub fn insert(&mut self, i: usize) -> bool {
        let (w, m) = (i / 64, 1u64 << (i % 64));
        let new = self.words[w] & m == 0;
        self.words[w] |= m;
        new
    }

    /// Removes `i`.
    pub fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1u64 << (i % 64));
    }

    /// Whether `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Adds every member of `other`; whether the set grew.
    pub fn union_with(&mut self, other: &Bits) -> bool {
        let mut grew = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let before = *a;
            *a |= b;
            grew |= *a != before;
        }
        grew
    }

    /// Keeps only the members of `other`.
    pub fn intersect_with(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    /// The members, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            (0..64)
                .filter(move |b| word & (1u64 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether it has no members.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
}

impl fmt::Debug for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}
