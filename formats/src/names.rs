//! The one rule every command uses to find a process the user named: an exact process name
//! first; in a recording of several OS processes, whose processes are named `NODE/NAME`, a
//! `NAME` that only one node has; `p<N>` (or `N`, or `p<NODE>.<N>`) as a process id only when
//! no process has that name; an error listing the candidates when the name is ambiguous (by
//! the names that tell them apart) or unknown.

use crate::ids::ProcessId;

/// Why a process name does not name exactly one process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessNameError {
    /// Several processes have the name: each is listed by the name that finds it alone (its
    /// full `NODE/NAME`), or by its id when they share that too.
    #[error("{}", ambiguous(name, ids, names))]
    Ambiguous {
        /// The name.
        name: String,
        /// Their ids.
        ids: Vec<ProcessId>,
        /// Their full names, in the order of `ids`.
        names: Vec<String>,
    },
    /// No process has the name, and it is not the id of one.
    #[error("no process `{name}` in the recording (its processes: {})", known.join(", "))]
    Unknown {
        /// The name.
        name: String,
        /// The processes there are, as `name (id)`.
        known: Vec<String>,
    },
}

/// What to say of a name several processes have: each by its full name and id (`server/main
/// (p0), client/main (p1.0)`), and to name one by that name, or by its id when they share it.
fn ambiguous(name: &str, ids: &[ProcessId], names: &[String]) -> String {
    let listed: Vec<String> = ids
        .iter()
        .zip(names)
        .map(|(id, n)| format!("{n} ({id})"))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    let how = if distinct.len() == names.len() {
        "name one of them"
    } else {
        "name one by its id"
    };
    format!(
        "`{name}` names {} processes ({}); {how}",
        ids.len(),
        listed.join(", ")
    )
}

/// Finds the process `name` names among `processes` (id and name of each).
pub fn resolve_process<'a>(
    name: &str,
    processes: impl IntoIterator<Item = (ProcessId, &'a str)> + Clone,
) -> Result<ProcessId, ProcessNameError> {
    let named: Vec<(ProcessId, &str)> = processes
        .clone()
        .into_iter()
        .filter(|(_, n)| *n == name)
        .collect();
    let named = if named.is_empty() && !name.contains('/') {
        let suffix = format!("/{name}");
        processes
            .clone()
            .into_iter()
            .filter(|(_, n)| n.ends_with(&suffix))
            .collect()
    } else {
        named
    };
    match named.as_slice() {
        [(id, _)] => return Ok(*id),
        [_, _, ..] => {
            return Err(ProcessNameError::Ambiguous {
                name: name.to_owned(),
                ids: named.iter().map(|(id, _)| *id).collect(),
                names: named.iter().map(|(_, n)| (*n).to_owned()).collect(),
            });
        }
        [] => {}
    }
    let id = ProcessId::parse_label(name);
    if let Some(id) = id
        && processes.clone().into_iter().any(|(p, _)| p == id)
    {
        return Ok(id);
    }
    Err(ProcessNameError::Unknown {
        name: name.to_owned(),
        known: processes
            .into_iter()
            .map(|(id, n)| format!("{n} ({id})"))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procs() -> Vec<(ProcessId, &'static str)> {
        vec![
            (ProcessId(0), "main"),
            (ProcessId(1), "p2"),
            (ProcessId(2), "worker"),
            (ProcessId(3), "worker"),
        ]
    }

    #[test]
    fn a_name_wins_over_an_id_and_an_id_is_taken_only_when_no_name_matches() {
        assert_eq!(resolve_process("main", procs()), Ok(ProcessId(0)));
        // `p2` is the name of p1, not the id of the process called worker.
        assert_eq!(resolve_process("p2", procs()), Ok(ProcessId(1)));
        assert_eq!(resolve_process("p0", procs()), Ok(ProcessId(0)));
        assert_eq!(resolve_process("3", procs()), Ok(ProcessId(3)));
    }

    #[test]
    fn an_id_past_what_ids_hold_names_no_process_instead_of_wrapping_onto_one() {
        let nodes = vec![
            (ProcessId(0), "bank-1/main"),
            (ProcessId(1), "bank-1/teller"),
            (ProcessId::on_node(1, 3), "other-1/client-0"),
        ];
        // 4096 << 20 and 8192 << 20 wrap to node 0 in 32 bits; 1 << 20 is node 1's process 0.
        for name in [
            "p4096.1",
            "p8192.3",
            "p4097.3",
            "p1.1048576",
            "p1048576",
            "p+1",
            "p1.+3",
        ] {
            assert!(
                matches!(
                    resolve_process(name, nodes.clone()),
                    Err(ProcessNameError::Unknown { .. })
                ),
                "{name} resolved"
            );
        }
        assert_eq!(resolve_process("p1", nodes.clone()), Ok(ProcessId(1)));
        assert_eq!(resolve_process("p1.3", nodes), Ok(ProcessId::on_node(1, 3)));
    }

    #[test]
    fn ambiguous_and_unknown_names_list_the_candidates() {
        let err = resolve_process("worker", procs()).unwrap_err().to_string();
        assert_eq!(
            err,
            "`worker` names 2 processes (worker (p2), worker (p3)); name one by its id"
        );
        let err = resolve_process("p9", procs()).unwrap_err().to_string();
        assert_eq!(
            err,
            "no process `p9` in the recording (its processes: main (p0), p2 (p1), worker (p2), \
             worker (p3))"
        );
    }

    #[test]
    fn a_process_of_several_nodes_is_found_by_its_name_within_its_node_when_unique() {
        let nodes = vec![
            (ProcessId(0), "server-1/main"),
            (ProcessId::on_node(1, 0), "client-1/main"),
            (ProcessId::on_node(1, 1), "client-1/sender"),
        ];
        assert_eq!(
            resolve_process("client-1/main", nodes.clone()),
            Ok(ProcessId::on_node(1, 0))
        );
        assert_eq!(
            resolve_process("sender", nodes.clone()),
            Ok(ProcessId::on_node(1, 1))
        );
        assert_eq!(
            resolve_process("main", nodes.clone())
                .unwrap_err()
                .to_string(),
            "`main` names 2 processes (server-1/main (p0), client-1/main (p1.0)); name one of \
             them",
            "each by the name that finds it alone"
        );
        assert_eq!(
            resolve_process("p1.1", nodes.clone()),
            Ok(ProcessId::on_node(1, 1))
        );
        assert_eq!(ProcessId::on_node(1, 1).to_string(), "p1.1");
    }
}
