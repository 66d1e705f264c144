//! Who creates an object registered at its first use (`ppd_recorder::sync`), when a process
//! reaches the object first and cannot name it: the process whose log has the object's
//! `Create`, of its kind and at its construction site.
//!
//! A held replay needs the answer: Algorithm 1 (`control`) asks the producer of whatever a
//! process waits for, and a process waiting for a creation whose creator the controllers
//! cannot name would wait where no controller sees it (an e-block taking a lock another thread
//! creates, halted before that thread starts, hung the halt). The index is built the first
//! time such a wait happens in a held replay, by reading every log once; a plain replay, where
//! every process runs freely, never builds it.

use std::collections::HashMap;
use std::panic::Location;

use ppd_formats::event::ObjectKind;
use ppd_formats::{Event, ObjectId, Recording};

/// What an object is and where it was constructed: file, line, column.
type Made = (ObjectKind, String, u32, u32);

/// Every logged creation, by what and where.
#[derive(Debug, Default)]
pub(crate) struct Creations(HashMap<Made, Vec<ObjectId>>);

impl Creations {
    /// Reads the `Create` events of every log. A log that cannot be read, or the damaged end
    /// of one, adds nothing: its process reports that itself when it replays.
    pub(crate) fn read(recording: &Recording) -> Creations {
        let mut made: HashMap<Made, Vec<ObjectId>> = HashMap::new();
        for entry in recording.processes() {
            let Ok(reader) = recording.open_log(entry) else {
                continue;
            };
            for event in reader.events() {
                let Ok((_, event)) = event else { break };
                if let Event::Create {
                    object,
                    kind,
                    site: Some(site),
                    ..
                } = event
                {
                    made.entry((kind, site.file.clone(), site.line, site.column))
                        .or_default()
                        .push(object);
                }
            }
        }
        Creations(made)
    }

    /// The objects of `kind` made at `site`, by creator in process order.
    pub(crate) fn at(&self, kind: ObjectKind, site: &Location<'_>) -> &[ObjectId] {
        let key = (kind, site.file().to_owned(), site.line(), site.column());
        self.0.get(&key).map_or(&[], Vec::as_slice)
    }
}
