//! A hash map whose iteration order replays, mirroring `std::collections::hash_map`.

use std::borrow::Borrow;
use std::cell::Cell;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::{Deref, DerefMut, Index};

pub use std::collections::hash_map::{
    DefaultHasher, Drain, Entry, IntoIter, IntoKeys, IntoValues, Iter, IterMut, Keys,
    OccupiedEntry, VacantEntry, Values, ValuesMut,
};

/// A hasher builder whose keys come from the log, like `std::collections::hash_map::RandomState`.
///
/// As in std, a thread draws its keys once and every later `RandomState` of the thread is the
/// previous one with its first key plus one; under ppd the two draws are logged random numbers,
/// so each process's maps hash alike in replay.
///
/// ```
/// use std::hash::BuildHasher;
/// let s = ppd::collections::hash_map::RandomState::new();
/// assert_eq!(s.hash_one(7), s.clone().hash_one(7));
/// ```
#[derive(Clone)]
pub struct RandomState {
    /// std's SipHash with zero keys after hashing the two logged keys: every hasher starts as
    /// a copy of it, so keying costs nothing per hash.
    keyed: DefaultHasher,
}

impl RandomState {
    /// New keys for a map.
    ///
    /// ```
    /// let _s = ppd::collections::hash_map::RandomState::new();
    /// ```
    pub fn new() -> RandomState {
        thread_local! {
            static KEYS: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
        }
        KEYS.with(|keys| {
            let (k0, k1) = keys
                .get()
                .unwrap_or_else(|| (crate::rand::next_u64(), crate::rand::next_u64()));
            keys.set(Some((k0.wrapping_add(1), k1)));
            let mut keyed = DefaultHasher::new();
            keyed.write_u64(k0);
            keyed.write_u64(k1);
            RandomState { keyed }
        })
    }
}

impl Default for RandomState {
    fn default() -> RandomState {
        RandomState::new()
    }
}

impl fmt::Debug for RandomState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandomState").finish_non_exhaustive()
    }
}

impl BuildHasher for RandomState {
    type Hasher = DefaultHasher;

    fn build_hasher(&self) -> DefaultHasher {
        self.keyed.clone()
    }
}

/// std's `HashMap` with ppd's [`RandomState`] by default; dereferences to the std map.
///
/// ```
/// let mut m = ppd::collections::HashMap::new();
/// m.insert("a", 1);
/// assert_eq!(m.get("a"), Some(&1));
/// for (k, v) in &m {
///     assert_eq!((*k, *v), ("a", 1));
/// }
/// ```
pub struct HashMap<K, V, S = RandomState> {
    inner: std::collections::HashMap<K, V, S>,
}

impl<K, V> HashMap<K, V, RandomState> {
    /// An empty map, like std's `HashMap::new`.
    ///
    /// ```
    /// let m: ppd::collections::HashMap<u8, u8> = ppd::collections::HashMap::new();
    /// assert!(m.is_empty());
    /// ```
    pub fn new() -> Self {
        HashMap::with_hasher(RandomState::new())
    }

    /// An empty map with room for `capacity` entries.
    ///
    /// ```
    /// let m: ppd::collections::HashMap<u8, u8> = ppd::collections::HashMap::with_capacity(8);
    /// assert!(m.capacity() >= 8);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        HashMap::with_capacity_and_hasher(capacity, RandomState::new())
    }
}

impl<K, V, S> HashMap<K, V, S> {
    /// An empty map hashing with `hasher`.
    ///
    /// ```
    /// use ppd::collections::{HashMap, hash_map::RandomState};
    /// let m: HashMap<u8, u8> = HashMap::with_hasher(RandomState::new());
    /// assert!(m.is_empty());
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        HashMap {
            inner: std::collections::HashMap::with_hasher(hasher),
        }
    }

    /// An empty map with room for `capacity` entries, hashing with `hasher`.
    ///
    /// ```
    /// use ppd::collections::{HashMap, hash_map::RandomState};
    /// let m: HashMap<u8, u8> = HashMap::with_capacity_and_hasher(4, RandomState::new());
    /// assert!(m.capacity() >= 4);
    /// ```
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        HashMap {
            inner: std::collections::HashMap::with_capacity_and_hasher(capacity, hasher),
        }
    }

    /// The keys, consuming the map.
    ///
    /// ```
    /// let m = ppd::collections::HashMap::from([(1, 'a')]);
    /// assert_eq!(m.into_keys().collect::<Vec<_>>(), [1]);
    /// ```
    pub fn into_keys(self) -> IntoKeys<K, V> {
        self.inner.into_keys()
    }

    /// The values, consuming the map.
    ///
    /// ```
    /// let m = ppd::collections::HashMap::from([(1, 'a')]);
    /// assert_eq!(m.into_values().collect::<Vec<_>>(), ['a']);
    /// ```
    pub fn into_values(self) -> IntoValues<K, V> {
        self.inner.into_values()
    }

    /// The std map inside.
    ///
    /// ```
    /// let m = ppd::collections::HashMap::from([(1, 'a')]);
    /// assert_eq!(m.into_inner().len(), 1);
    /// ```
    pub fn into_inner(self) -> std::collections::HashMap<K, V, S> {
        self.inner
    }
}

impl<K, V, S> Deref for HashMap<K, V, S> {
    type Target = std::collections::HashMap<K, V, S>;

    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<K, V, S> DerefMut for HashMap<K, V, S> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl<K, V, S: Default> Default for HashMap<K, V, S> {
    fn default() -> Self {
        HashMap::with_hasher(S::default())
    }
}

impl<K: Clone, V: Clone, S: Clone> Clone for HashMap<K, V, S> {
    fn clone(&self) -> Self {
        HashMap {
            inner: self.inner.clone(),
        }
    }
}

impl<K: fmt::Debug, V: fmt::Debug, S> fmt::Debug for HashMap<K, V, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl<K: Eq + Hash, V: PartialEq, S: BuildHasher> PartialEq for HashMap<K, V, S> {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl<K: Eq + Hash, V: Eq, S: BuildHasher> Eq for HashMap<K, V, S> {}

impl<K: Eq + Hash, V, S: BuildHasher + Default> FromIterator<(K, V)> for HashMap<K, V, S> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        HashMap {
            inner: std::collections::HashMap::from_iter(iter),
        }
    }
}

impl<K: Eq + Hash, V, const N: usize> From<[(K, V); N]> for HashMap<K, V, RandomState> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<K: Eq + Hash, V, S: BuildHasher> Extend<(K, V)> for HashMap<K, V, S> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.inner.extend(iter)
    }
}

impl<'a, K: Eq + Hash + Copy, V: Copy, S: BuildHasher> Extend<(&'a K, &'a V)> for HashMap<K, V, S> {
    fn extend<I: IntoIterator<Item = (&'a K, &'a V)>>(&mut self, iter: I) {
        self.inner.extend(iter)
    }
}

impl<K, V, S> IntoIterator for HashMap<K, V, S> {
    type Item = (K, V);
    type IntoIter = IntoIter<K, V>;

    fn into_iter(self) -> IntoIter<K, V> {
        self.inner.into_iter()
    }
}

impl<'a, K, V, S> IntoIterator for &'a HashMap<K, V, S> {
    type Item = (&'a K, &'a V);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Iter<'a, K, V> {
        self.inner.iter()
    }
}

impl<'a, K, V, S> IntoIterator for &'a mut HashMap<K, V, S> {
    type Item = (&'a K, &'a mut V);
    type IntoIter = IterMut<'a, K, V>;

    fn into_iter(self) -> IterMut<'a, K, V> {
        self.inner.iter_mut()
    }
}

impl<K, Q, V, S> Index<&Q> for HashMap<K, V, S>
where
    K: Eq + Hash + Borrow<Q>,
    Q: Eq + Hash + ?Sized,
    S: BuildHasher,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        &self.inner[key]
    }
}
