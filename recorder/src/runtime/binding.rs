//! Objects named after the variable they are bound to: in `let account = Mutex::new(100);`
//! inside `#[ppd::main]` (its closures included) or an `#[ppd::eblock]`, the mutex is
//! `account` in every report, as if made with `Mutex::named("account", 100)`.
//!
//! The attributes read the names off the source: for each `let` of the function they register
//! a [`Binding`], the stretch of source the statement spans and the name its objects take.
//! An unnamed object takes the name of the innermost binding around the site it was created
//! at (so not one made in a function the initializer calls). A tuple pattern names its parts
//! from a tuple initializer's parts (`let (a, b) = (Mutex::new(0), Mutex::new(1))`), a single
//! name a tuple's or a struct's parts as its fields (`pair.0`, `shared.accounts`), and
//! otherwise joins its names with `/` (`let (tx, rx) = channel()` is channel `tx/rx`). A
//! closure handed to a `spawn` is a binding without a name: it runs in a process of its own,
//! and what it makes is not what the statement around it binds.
//!
//! The table is static, collected at start-up, and read only when a recorded object is
//! created, so a name costs a program nothing when it is not recorded, and the types of the
//! bound variables play no part in it.
//!
//! Objects whose constructors are `const` (mutexes, atomics, semaphores, `Once`, `OnceLock`,
//! `LazyLock`, `Barrier`, `Condvar`) are created only at their first use (`sync::object`),
//! which may come later and in another process. So that the process that binds one is its
//! creator, the attributes also hand the bound variable to [`Bound`] after a `let` that
//! constructs one (`Mutex::new(..)`, `Arc::new(AtomicU64::new(..))`) or declares its type: a
//! variable that is such an object (or an `Arc` of one) is registered there; any other is left
//! alone. The choice is made by the variable's type at compile time (autoref specialization:
//! [`RegisterBound`] applies to `&Bound<T>` for [`LazyObject`]s, [`SkipBound`] to every
//! `Bound<T>`), which is why it is made only where that type is settled at the `let`.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::OnceLock;

/// A stretch of a source file, from `from` to `to` (line and column, as `Location` counts
/// them), and the name the objects created there take; `None` keeps them unnamed.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    /// The name.
    pub name: Option<&'static str>,
    /// Where the stretch starts: line, column.
    pub from: (u32, u32),
    /// Where it ends (its last token starts): line, column.
    pub to: (u32, u32),
}

/// The bindings of one function, registered by its attribute.
#[derive(Debug)]
pub struct Bindings {
    /// The source file.
    pub file: &'static str,
    /// Its bindings.
    pub list: &'static [Binding],
}

inventory::collect!(Bindings);

/// Every registered binding, by file.
fn by_file() -> &'static HashMap<&'static str, Vec<Binding>> {
    static INDEX: OnceLock<HashMap<&'static str, Vec<Binding>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: HashMap<&'static str, Vec<Binding>> = HashMap::new();
        for bindings in inventory::iter::<Bindings> {
            index
                .entry(bindings.file)
                .or_default()
                .extend_from_slice(bindings.list);
        }
        index
    })
}

/// The name an unnamed object created at `site` takes: that of the innermost binding around
/// it.
pub(crate) fn name_at(site: &Location<'_>) -> Option<&'static str> {
    innermost(by_file().get(site.file())?, (site.line(), site.column()))?.name
}

/// The binding around `here` that starts last (the one nested in all the others that hold
/// it), the shortest of those starting there.
fn innermost(list: &[Binding], here: (u32, u32)) -> Option<&Binding> {
    list.iter()
        .filter(|b| b.from <= here && here <= b.to)
        .max_by_key(|b| (b.from, std::cmp::Reverse(b.to)))
}

/// An object created at its first use, which a binding registers at once.
pub trait LazyObject {
    /// Registers the object now, as its first use would (logging its creation when recording).
    fn register_now(&self);
}

impl<T: LazyObject + ?Sized> LazyObject for std::sync::Arc<T> {
    fn register_now(&self) {
        (**self).register_now();
    }
}

/// A pair or triple of such objects registers them in order, as when they were created in
/// order.
macro_rules! lazy_tuple {
    ($($part:ident . $index:tt),+) => {
        impl<$($part: LazyObject),+> LazyObject for ($($part,)+) {
            fn register_now(&self) {
                $(self.$index.register_now();)+
            }
        }
    };
}

lazy_tuple!(A.0, B.1);
lazy_tuple!(A.0, B.1, C.2);

/// The variable a `let` bound, handed to [`RegisterBound`] or [`SkipBound`].
#[derive(Debug)]
pub struct Bound<'a, T: ?Sized>(pub &'a T);

/// Registers a bound [`LazyObject`]: `(&&Bound(&x)).register_bound()` picks this impl when the
/// type allows, [`SkipBound`]'s otherwise.
pub trait RegisterBound {
    /// Registers the bound object.
    fn register_bound(&self);
}

impl<T: LazyObject + ?Sized> RegisterBound for &Bound<'_, T> {
    fn register_bound(&self) {
        self.0.register_now();
    }
}

/// Leaves a bound variable that is not a [`LazyObject`] alone.
pub trait SkipBound {
    /// Does nothing.
    fn register_bound(&self);
}

impl<T: ?Sized> SkipBound for Bound<'_, T> {
    fn register_bound(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn binding(name: Option<&'static str>, from: (u32, u32), to: (u32, u32)) -> Binding {
        Binding { name, from, to }
    }

    #[test]
    fn the_innermost_binding_around_a_site_names_it() {
        // let worker = { let (a, b) = (M, M); spawn(move || M) };   on lines 10..=14
        let list = [
            binding(Some("worker"), (10, 5), (14, 7)),
            binding(Some("a/b"), (11, 9), (11, 40)),
            binding(Some("a"), (11, 23), (11, 30)),
            binding(Some("b"), (11, 32), (11, 39)),
            binding(None, (12, 15), (13, 9)),
        ];
        let name = |at| innermost(&list, at).and_then(|b| b.name);
        assert_eq!(name((10, 20)), Some("worker"));
        assert_eq!(name((11, 23)), Some("a"));
        assert_eq!(name((11, 35)), Some("b"));
        assert_eq!(name((11, 31)), Some("a/b"), "between the parts");
        assert_eq!(name((12, 30)), None, "inside the spawned closure");
        assert_eq!(name((13, 20)), Some("worker"), "after the closure");
        assert_eq!(name((9, 1)), None, "before every binding");
        assert_eq!(name((14, 8)), None, "after every binding");
    }
}
