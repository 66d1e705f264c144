//! A hash set whose iteration order replays, mirroring `std::collections::hash_set`.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::ops::{Deref, DerefMut};

pub use std::collections::hash_set::{
    Difference, Drain, Intersection, IntoIter, Iter, SymmetricDifference, Union,
};

use super::hash_map::RandomState;

/// std's `HashSet` with ppd's [`RandomState`] by default; dereferences to the std set.
///
/// ```
/// let mut s = ppd::collections::HashSet::new();
/// assert!(s.insert(3));
/// assert!(s.contains(&3));
/// for x in &s {
///     assert_eq!(*x, 3);
/// }
/// ```
pub struct HashSet<T, S = RandomState> {
    inner: std::collections::HashSet<T, S>,
}

impl<T> HashSet<T, RandomState> {
    /// An empty set, like std's `HashSet::new`.
    ///
    /// ```
    /// let s: ppd::collections::HashSet<u8> = ppd::collections::HashSet::new();
    /// assert!(s.is_empty());
    /// ```
    pub fn new() -> Self {
        HashSet::with_hasher(RandomState::new())
    }

    /// An empty set with room for `capacity` elements.
    ///
    /// ```
    /// let s: ppd::collections::HashSet<u8> = ppd::collections::HashSet::with_capacity(8);
    /// assert!(s.capacity() >= 8);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        HashSet::with_capacity_and_hasher(capacity, RandomState::new())
    }
}

impl<T, S> HashSet<T, S> {
    /// An empty set hashing with `hasher`.
    ///
    /// ```
    /// use ppd::collections::{HashSet, hash_map::RandomState};
    /// let s: HashSet<u8> = HashSet::with_hasher(RandomState::new());
    /// assert!(s.is_empty());
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        HashSet {
            inner: std::collections::HashSet::with_hasher(hasher),
        }
    }

    /// An empty set with room for `capacity` elements, hashing with `hasher`.
    ///
    /// ```
    /// use ppd::collections::{HashSet, hash_map::RandomState};
    /// let s: HashSet<u8> = HashSet::with_capacity_and_hasher(4, RandomState::new());
    /// assert!(s.capacity() >= 4);
    /// ```
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        HashSet {
            inner: std::collections::HashSet::with_capacity_and_hasher(capacity, hasher),
        }
    }

    /// The std set inside.
    ///
    /// ```
    /// let s = ppd::collections::HashSet::from([1]);
    /// assert_eq!(s.into_inner().len(), 1);
    /// ```
    pub fn into_inner(self) -> std::collections::HashSet<T, S> {
        self.inner
    }
}

impl<T, S> Deref for HashSet<T, S> {
    type Target = std::collections::HashSet<T, S>;

    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<T, S> DerefMut for HashSet<T, S> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl<T, S: Default> Default for HashSet<T, S> {
    fn default() -> Self {
        HashSet::with_hasher(S::default())
    }
}

impl<T: Clone, S: Clone> Clone for HashSet<T, S> {
    fn clone(&self) -> Self {
        HashSet {
            inner: self.inner.clone(),
        }
    }
}

impl<T: fmt::Debug, S> fmt::Debug for HashSet<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T: Eq + Hash, S: BuildHasher> PartialEq for HashSet<T, S> {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl<T: Eq + Hash, S: BuildHasher> Eq for HashSet<T, S> {}

impl<T: Eq + Hash, S: BuildHasher + Default> FromIterator<T> for HashSet<T, S> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        HashSet {
            inner: std::collections::HashSet::from_iter(iter),
        }
    }
}

impl<T: Eq + Hash, const N: usize> From<[T; N]> for HashSet<T, RandomState> {
    fn from(items: [T; N]) -> Self {
        items.into_iter().collect()
    }
}

impl<T: Eq + Hash, S: BuildHasher> Extend<T> for HashSet<T, S> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.inner.extend(iter)
    }
}

impl<'a, T: Eq + Hash + Copy + 'a, S: BuildHasher> Extend<&'a T> for HashSet<T, S> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.inner.extend(iter)
    }
}

impl<T, S> IntoIterator for HashSet<T, S> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        self.inner.into_iter()
    }
}

impl<'a, T, S> IntoIterator for &'a HashSet<T, S> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.inner.iter()
    }
}
