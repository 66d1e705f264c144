//! Shared objects as e-block arguments.
//!
//! An e-block's prelog must hold its arguments, and an argument may be a channel end, a mutex
//! or an atomic. Such a handle is logged as its object id and which end of the object it is
//! (`ppd_formats::value::Handle`, a MessagePack extension value), so that reports name it as
//! the object it is; when ppd re-executes the e-block, the id is rebuilt into an emulated
//! handle whose operations are served from the e-block's log interval. Outside re-execution a
//! handle cannot be deserialized: there would be no log to serve it.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use ppd_formats::ObjectId;
use ppd_formats::value::{End, Handle};

use crate::runtime::{self, backend::Mode};

pub(crate) fn serialize<S: Serializer>(
    object: ObjectId,
    end: End,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    Handle { object, end }.serialize(serializer)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
    what: &str,
) -> Result<ObjectId, D::Error> {
    let handle = Handle::deserialize(deserializer)?;
    if runtime::mode() != Mode::Emulate {
        return Err(D::Error::custom(format!(
            "a {what} can only be rebuilt from a log while ppd re-executes an e-block"
        )));
    }
    Ok(handle.object)
}
