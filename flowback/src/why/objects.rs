//! Objects as answers name them: by the name they were created with (`channel requests`),
//! else by their kind and id; and the values that hold one (a channel end, a mutex, a socket
//! passed to an e-block), shown as the object they are (`channel requests (receiver)`).

use std::cell::RefCell;
use std::collections::HashMap;

use ppd_formats::eblock_trace::Captured;
use ppd_formats::value::{self, Value};
use ppd_formats::{ObjectId, ProcessId, Recording};

/// The labels of a recording's objects, each looked up once.
pub(super) struct Objects<'r> {
    recording: &'r Recording,
    labels: RefCell<HashMap<ObjectId, String>>,
}

impl<'r> Objects<'r> {
    pub(super) fn new(recording: &'r Recording) -> Objects<'r> {
        Objects {
            recording,
            labels: RefCell::new(HashMap::new()),
        }
    }

    /// An object by the name it was created with (`channel doubled`), else its kind and id.
    pub(super) fn label(&self, object: ObjectId) -> String {
        self.labels
            .borrow_mut()
            .entry(object)
            .or_insert_with(|| ppd_formats::object_label(self.recording, object))
            .clone()
    }

    /// A value `process` logged, as answers show it.
    pub(super) fn show(&self, process: ProcessId, value: &Value) -> String {
        value::show_with(value, &self.of(process))
    }

    /// The same, as JSON.
    pub(super) fn json(&self, process: ProcessId, value: &Value) -> serde_json::Value {
        value::to_json_with(value, &self.of(process))
    }

    /// A value a trace of `process` captured, as answers show it.
    pub(super) fn shown(&self, process: ProcessId, captured: Option<&Captured>) -> Option<String> {
        Some(match captured? {
            Captured::Value(bytes) => value::show_bytes_with(bytes, &self.of(process)),
            Captured::Debug(text) => text.clone(),
            Captured::Opaque(ty) => format!("<{ty}>"),
        })
    }

    /// The objects as the values `process` logged name them.
    fn of(&self, process: ProcessId) -> InNode<'_, 'r> {
        InNode {
            objects: self,
            base: ProcessId::on_node(process.node(), 0).0,
        }
    }
}

/// The objects as the values of one node name them: by its own ids, which the recording moves
/// up by `base`.
struct InNode<'a, 'r> {
    objects: &'a Objects<'r>,
    base: u32,
}

impl value::Objects for InNode<'_, '_> {
    fn id(&self, object: ObjectId) -> ObjectId {
        object.rebased(self.base)
    }

    fn label(&self, object: ObjectId) -> String {
        self.objects.label(object)
    }
}
