//! User marks: `ppd::mark!(label, value)` logs a labelled value that predicates (`mark LABEL`),
//! traces and reports can refer to.

use std::panic::Location;

use ppd_formats::{Event, EventKind, value};
use serde::Serialize;

use crate::runtime;
use crate::runtime::backend::Op;

/// Logs a user event: `label` and the value's encoding. Use through [`mark!`](crate::mark!).
///
/// ```
/// ppd::mark("balance", &-20i64);
/// ```
#[track_caller]
pub fn mark<T: Serialize + ?Sized>(label: &'static str, value: &T) {
    if !runtime::active() {
        return;
    }
    let site = Location::caller();
    let bytes = value::encode(value)
        .or_else(|e| value::encode(&format!("<value could not be encoded: {e}>")))
        .unwrap_or_default();
    runtime::expect(Op::plain(EventKind::Mark, Some(site)));
    runtime::done(&Event::Mark {
        label,
        site: Some(site),
        value: &bytes,
    });
}

/// Logs a user event with a label and an optional serializable value.
///
/// ```
/// let balance = -20i64;
/// ppd::mark!("negative", balance);
/// ppd::mark!("checkpoint");
/// ```
#[macro_export]
macro_rules! mark {
    ($label:expr, $value:expr $(,)?) => {
        $crate::mark($label, &$value)
    };
    ($label:expr $(,)?) => {
        $crate::mark($label, &())
    };
}
