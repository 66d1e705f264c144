//! The distributed control flow graph (§2, Definition 2.1).

/// A node's index in its graph.
pub type NodeId = usize;

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A computational statement (also a process's start and end).
    Stmt,
    /// A non-blocking send.
    Send,
    /// A blocking receive.
    Recv,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its process, an index into [`Dcfg::processes`].
    pub process: usize,
    /// What it does.
    pub kind: Kind,
    /// A name for it, for reports (`S1`, `R2`, `x.rs:12`).
    pub label: String,
}

/// One process: a start and an end node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Its name.
    pub name: String,
    /// Its start node, which every path of the process leaves from.
    pub start: NodeId,
    /// Its end node, which every path of the process reaches.
    pub stop: NodeId,
}

/// An edge the graph cannot have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DcfgError {
    /// An edge names a node the graph lacks.
    #[error("no node {0} in the graph")]
    NoNode(NodeId),
    /// An intraprocess edge joins two processes.
    #[error("flow edge {from} -> {to} joins two processes")]
    CrossFlow {
        /// Its source.
        from: NodeId,
        /// Its destination.
        to: NodeId,
    },
    /// An interprocess edge that is not from a send to a receive of another process.
    #[error("message edge {from} -> {to} is not from a send to a receive of another process")]
    BadMessage {
        /// Its source.
        from: NodeId,
        /// Its destination.
        to: NodeId,
    },
}

/// `DCFG = (V, E_inter, E_intra)`.
#[derive(Debug, Clone, Default)]
pub struct Dcfg {
    /// `V`.
    pub nodes: Vec<Node>,
    /// The processes.
    pub processes: Vec<Process>,
    /// `Succ(n)` for each node.
    pub succ: Vec<Vec<NodeId>>,
    /// `Pred(n)` for each node.
    pub pred: Vec<Vec<NodeId>>,
    /// `E_inter`: (send, receive) pairs.
    pub messages: Vec<(NodeId, NodeId)>,
}

impl Dcfg {
    /// An empty graph.
    pub fn new() -> Dcfg {
        Dcfg::default()
    }

    /// Adds a process with its start and end nodes; returns its index.
    pub fn process(&mut self, name: &str) -> usize {
        let p = self.processes.len();
        let start = self.push(p, Kind::Stmt, &format!("{name}.start"));
        let stop = self.push(p, Kind::Stmt, &format!("{name}.stop"));
        self.processes.push(Process {
            name: name.to_owned(),
            start,
            stop,
        });
        p
    }

    fn push(&mut self, process: usize, kind: Kind, label: &str) -> NodeId {
        self.nodes.push(Node {
            process,
            kind,
            label: label.to_owned(),
        });
        self.succ.push(Vec::new());
        self.pred.push(Vec::new());
        self.nodes.len() - 1
    }

    /// Adds a node to process `p`.
    pub fn node(&mut self, p: usize, kind: Kind, label: &str) -> NodeId {
        self.push(p, kind, label)
    }

    /// Adds the intraprocess edge `from -> to`.
    pub fn flow(&mut self, from: NodeId, to: NodeId) -> Result<(), DcfgError> {
        let (a, b) = (self.get(from)?, self.get(to)?);
        if a.process != b.process {
            return Err(DcfgError::CrossFlow { from, to });
        }
        if !self.succ[from].contains(&to) {
            self.succ[from].push(to);
            self.pred[to].push(from);
        }
        Ok(())
    }

    /// Adds edges along `path`, each node to the next.
    pub fn chain(&mut self, path: &[NodeId]) -> Result<(), DcfgError> {
        for w in path.windows(2) {
            self.flow(w[0], w[1])?;
        }
        Ok(())
    }

    /// Adds the interprocess edge `send -> recv`.
    pub fn message(&mut self, send: NodeId, recv: NodeId) -> Result<(), DcfgError> {
        let (s, r) = (self.get(send)?, self.get(recv)?);
        if s.kind != Kind::Send || r.kind != Kind::Recv || s.process == r.process {
            return Err(DcfgError::BadMessage {
                from: send,
                to: recv,
            });
        }
        if !self.messages.contains(&(send, recv)) {
            self.messages.push((send, recv));
        }
        Ok(())
    }

    fn get(&self, n: NodeId) -> Result<&Node, DcfgError> {
        self.nodes.get(n).ok_or(DcfgError::NoNode(n))
    }

    /// The node named `label`.
    pub fn find(&self, label: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.label == label)
    }
}
