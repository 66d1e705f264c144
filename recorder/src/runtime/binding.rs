//! Objects named after the variable they are bound to: in `let account = Mutex::new(100);`
//! inside `#[ppd::main]`, the mutex is `account` in every report, as if made with
//! `Mutex::named("account", 100)`.
//!
//! The attribute opens a [`BindingScope`] around each such `let` with the lines the statement
//! spans; an unnamed object created while it is open, at a site within those lines (so not in
//! a function the initializer calls), takes the name. Only the first does: in
//! `let pair = (Mutex::new(0), Mutex::new(1))` the second keeps its id.
//!
//! Objects whose constructors are `const` (mutexes, atomics, semaphores, `Once`, `OnceLock`,
//! `LazyLock`, `Barrier`) are created only at their first use (`sync::object`), which may come
//! after the statement. So the attribute also hands the bound variable to [`Bound`] while the
//! scope is open: a variable that is such an object (or an `Arc` of one) is registered there,
//! and takes the name; any other is left alone. The choice is made by the variable's type at
//! compile time (autoref specialization: [`RegisterBound`] applies to `&Bound<T>` for
//! [`LazyObject`]s, [`SkipBound`] to every `Bound<T>`).

use std::cell::Cell;
use std::panic::Location;

#[derive(Clone, Copy, Debug)]
struct Binding {
    name: &'static str,
    file: &'static str,
    lines: (u32, u32),
}

thread_local! {
    static BINDING: Cell<Option<Binding>> = const { Cell::new(None) };
}

/// While alive, the statement `let NAME = ...` at `file`, lines `first..=last`, names the first
/// unnamed object it creates.
#[derive(Debug)]
#[must_use = "the name applies while the scope is alive"]
pub struct BindingScope {
    previous: Option<Binding>,
}

/// Opens the scope of a `let` statement binding `name`.
pub fn name_objects(name: &'static str, file: &'static str, first: u32, last: u32) -> BindingScope {
    let binding = Binding {
        name,
        file,
        lines: (first, last),
    };
    BindingScope {
        previous: BINDING.with(|b| b.replace(Some(binding))),
    }
}

impl Drop for BindingScope {
    fn drop(&mut self) {
        BINDING.with(|b| b.set(self.previous));
    }
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

/// A pair or triple of such objects registers them in order: the first takes the binding's
/// name, as when they were created in order.
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

/// The variable a `let` in `#[ppd::main]` bound, handed to [`RegisterBound`] or [`SkipBound`].
#[derive(Debug)]
pub struct Bound<'a, T: ?Sized>(pub &'a T);

/// Registers a bound [`LazyObject`]: `(&&Bound(&x)).register_bound()` picks this impl when the
/// type allows, [`SkipBound`]'s otherwise.
pub trait RegisterBound {
    /// Registers the bound object while its binding's scope is open.
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

/// The name of the binding an object created at `site` belongs to, used up.
pub(crate) fn take(site: &Location<'_>) -> Option<&'static str> {
    BINDING.with(|b| {
        let binding = b.get()?;
        let (first, last) = binding.lines;
        if site.file() != binding.file || !(first..=last).contains(&site.line()) {
            return None;
        }
        b.set(None);
        Some(binding.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_object_created_on_the_statement_takes_the_name() {
        let here = Location::caller();
        let (file, line) = (here.file(), here.line());
        assert_eq!(take(here), None, "no scope open");
        {
            let _scope = name_objects("account", file, line, line + 40);
            assert_eq!(take(Location::caller()), Some("account"));
            assert_eq!(take(Location::caller()), None, "used up");
        }
        let _outer = name_objects("outer", file, line, line + 40);
        {
            let _inner = name_objects("inner", "elsewhere.rs", line, line + 40);
            assert_eq!(take(Location::caller()), None, "another file");
        }
        assert_eq!(
            take(Location::caller()),
            Some("outer"),
            "the outer scope again"
        );
        let _far = name_objects("far", file, 1, 2);
        assert_eq!(
            take(Location::caller()),
            None,
            "outside the statement's lines"
        );
    }
}
