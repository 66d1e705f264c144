//! Which shared objects can log the values they carry.
//!
//! ppd's channels take any `T` and its locks any `T: Send`, as std's do, so their generic code
//! cannot ask whether `T` is `Serialize + DeserializeOwned`: record and replay only need the
//! order of choices, which never depends on `T`. Values are needed in two places: where an e-block is
//! re-executed (a message it received, a value it read under a lock) and where the user asked
//! for payloads. Both are served by an object's [`Values`] slot, which holds a [`ValueCodec`]
//! once something that knows the concrete type has put one there:
//!
//! - `#[ppd::eblock]` registers every argument at entry, and every value-carrying call in its
//!   body whose receiver is reached from an argument (`rx.recv()`, `self.account.lock()`),
//!   where the types are concrete. It does so through [`probe`]: autoref specialization picks
//!   [`Carries::register_serde`] when the object's values are serde and does nothing otherwise.
//! - [`log_values`] registers an object explicitly (checked by the compiler), for payloads of
//!   objects no e-block touches.
//!
//! The registration lives in the object's shared state, so every clone of a channel end and
//! every later operation sees it. An object with no codec is *opaque*: its operations log the
//! order of choices but no values, and a re-execution that needs one of its values says which
//! and why ([`Opaque`]).

use std::fmt;
use std::sync::{Arc, OnceLock};

use ppd_formats::value::{self, ValueError};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How values of one concrete type are encoded into a log and rebuilt from it.
pub struct ValueCodec<T> {
    encode: fn(&T) -> Result<Vec<u8>, ValueError>,
    decode: fn(&[u8]) -> Result<T, ValueError>,
}

impl<T> fmt::Debug for ValueCodec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ValueCodec<{}>", std::any::type_name::<T>())
    }
}

impl<T: Serialize + DeserializeOwned> ValueCodec<T> {
    /// The codec of a serde type: self-describing MessagePack (`ppd_formats::value`).
    pub fn serde() -> ValueCodec<T> {
        ValueCodec {
            encode: |v| value::encode(v),
            decode: value::decode_as::<T>,
        }
    }
}

/// The codec slot of an object whose values are `T`: empty (opaque) until registered.
pub struct Values<T>(OnceLock<ValueCodec<T>>);

impl<T> Values<T> {
    /// An opaque slot.
    pub const fn new() -> Values<T> {
        Values(OnceLock::new())
    }

    /// Whether a codec has been registered.
    pub fn known(&self) -> bool {
        self.0.get().is_some()
    }

    /// Encodes `value`, or `None` when the object is opaque or encoding failed (an encoding
    /// failure leaves the value out of the log rather than failing the user's operation).
    pub fn encode(&self, value: &T) -> Option<Vec<u8>> {
        self.0.get().and_then(|c| (c.encode)(value).ok())
    }

    /// Rebuilds a logged value.
    pub fn decode(&self, bytes: &[u8]) -> Result<T, Opaque> {
        match self.0.get() {
            Some(c) => (c.decode)(bytes).map_err(|e| Opaque::Undecodable(e.to_string())),
            None => Err(Opaque::NotSerde(std::any::type_name::<T>())),
        }
    }
}

impl<T: Serialize + DeserializeOwned> Values<T> {
    /// Registers the serde codec (idempotent: the first registration stays).
    pub fn register_serde(&self) {
        self.0.get_or_init(ValueCodec::serde);
    }
}

impl<T> Default for Values<T> {
    fn default() -> Values<T> {
        Values::new()
    }
}

impl<T> fmt::Debug for Values<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.known() {
            "Values(serde)"
        } else {
            "Values(opaque)"
        })
    }
}

/// Why a value the log should hold cannot be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Opaque {
    /// The object's values were never seen to be serde, so none were logged.
    #[error(
        "its type `{0}` is not known to be Serialize + Deserialize, so its values are not logged \
         (derive serde for it, or reach the object from an e-block argument)"
    )]
    NotSerde(&'static str),
    /// The logged bytes do not decode as the type now expected (the binary changed).
    #[error("the logged value does not decode as the expected type: {0}")]
    Undecodable(String),
}

/// A shared object whose values can be logged once their type is known to be serde.
///
/// Implemented by each ppd primitive that carries values (with the serde bound on its value
/// type), and through references and smart pointers, so that `Arc<Mutex<T>>` registers the
/// mutex.
pub trait Carries {
    /// Registers the serde codec in the object's [`Values`] slot.
    fn register_serde(&self);
}

impl<X: Carries + ?Sized> Carries for &X {
    fn register_serde(&self) {
        (**self).register_serde();
    }
}

impl<X: Carries + ?Sized> Carries for &mut X {
    fn register_serde(&self) {
        (**self).register_serde();
    }
}

impl<X: Carries + ?Sized> Carries for Box<X> {
    fn register_serde(&self) {
        (**self).register_serde();
    }
}

impl<X: Carries + ?Sized> Carries for Arc<X> {
    fn register_serde(&self) {
        (**self).register_serde();
    }
}

impl<X: Carries + ?Sized> Carries for std::rc::Rc<X> {
    fn register_serde(&self) {
        (**self).register_serde();
    }
}

/// Logs the values `object` carries from now on, in every clone of it: message payloads when
/// recorded with `--payloads`, and what an e-block re-execution needs. Objects an e-block
/// reaches are registered without this.
pub fn log_values<X: Carries + ?Sized>(object: &X) {
    object.register_serde();
}

/// Registration where the type may or may not be serde: `(&&Probe(&object)).register()` with
/// both traits in scope, as the macros generate it. Method resolution tries
/// [`ViaSerde`](probe::ViaSerde) (on `&Probe`) first and falls back to
/// [`Opaque`](probe::Opaque) (on `Probe`); this works where the object's type is already known,
/// which is why the macros only probe e-block arguments and places reached from them.
pub mod probe {
    use super::Carries;

    /// An object to register.
    #[derive(Debug)]
    pub struct Probe<'a, X: ?Sized>(pub &'a X);

    /// Registration of an object whose values are serde.
    pub trait ViaSerde {
        /// Registers the object.
        fn register(&self);
    }

    impl<X: Carries + ?Sized> ViaSerde for &Probe<'_, X> {
        fn register(&self) {
            self.0.register_serde();
        }
    }

    /// Anything else: nothing to register.
    pub trait Opaque {
        /// Does nothing.
        fn register(&self);
    }

    impl<X: ?Sized> Opaque for Probe<'_, X> {
        fn register(&self) {}
    }
}

/// Registers an object if its values are serde: `register_values!(expr)`.
#[macro_export]
#[doc(hidden)]
macro_rules! __register_values {
    ($object:expr) => {{
        #[allow(unused_imports)]
        use $crate::sync::values::probe::{Opaque as _, ViaSerde as _};
        (&&$crate::sync::values::probe::Probe(&$object)).register()
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in primitive: carries `T`, registers when `T` is serde.
    struct Cell<T>(Values<T>);

    impl<T: Serialize + DeserializeOwned> Carries for Cell<T> {
        fn register_serde(&self) {
            self.0.register_serde();
        }
    }

    struct NotSerde;

    #[test]
    fn probing_a_serde_object_registers_its_codec_through_pointers() {
        let cell = Arc::new(Cell::<Vec<u32>>(Values::new()));
        crate::__register_values!(cell);
        assert!(cell.0.known());
        let bytes = cell.0.encode(&vec![1, 2]).unwrap();
        assert_eq!(cell.0.decode(&bytes), Ok(vec![1, 2]));
    }

    #[test]
    fn probing_an_opaque_object_does_nothing_and_decoding_says_why() {
        let cell = Cell::<NotSerde>(Values::new());
        crate::__register_values!(cell);
        assert!(!cell.0.known());
        assert!(cell.0.encode(&NotSerde).is_none());
        match cell.0.decode(&[0x90]) {
            Err(Opaque::NotSerde(name)) => assert!(name.ends_with("NotSerde"), "{name}"),
            _ => panic!("an opaque object decoded a value"),
        }
    }

    #[test]
    fn a_value_of_another_type_is_undecodable() {
        let cell = Cell::<u8>(Values::new());
        cell.0.register_serde();
        let bytes = value::encode(&"text").unwrap();
        assert!(matches!(cell.0.decode(&bytes), Err(Opaque::Undecodable(_))));
    }
}
