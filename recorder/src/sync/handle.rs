//! Shared objects as e-block arguments.
//!
//! An e-block's prelog must hold its arguments, and an argument may be a channel end, a mutex
//! or an atomic. Such a handle is logged as its object id; when ppd re-executes the e-block, the
//! id is rebuilt into an emulated handle whose operations are served from the e-block's log
//! interval. Outside re-execution a handle cannot be deserialized: there would be no log to
//! serve it.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};

use ppd_formats::ObjectId;

use crate::runtime::{self, backend::Mode};

/// The name handles are logged under.
const HANDLE: &str = "PpdObject";

pub(crate) fn serialize<S: Serializer>(id: ObjectId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_newtype_struct(HANDLE, &id.0)
}

#[derive(Deserialize)]
#[serde(rename = "PpdObject")]
struct Handle(u64);

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
    what: &str,
) -> Result<ObjectId, D::Error> {
    let Handle(id) = Handle::deserialize(deserializer)?;
    if runtime::mode() != Mode::Emulate {
        return Err(D::Error::custom(format!(
            "a {what} can only be rebuilt from a log while ppd re-executes an e-block"
        )));
    }
    Ok(ObjectId(id))
}
