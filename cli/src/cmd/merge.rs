//! `ppd merge`: one recording from recordings of one run made apart — on other hosts, under
//! other launchers — each with `ppd record --join ID`.
//!
//! Every node of every input must carry the same run id; the merged recording holds each of
//! them as a node (the first input's first node at the top, the others under `nodes/NAME/`),
//! with its logs linked (or copied, across file systems) and its manifest naming it. Nothing
//! is derived: the caches are left behind, the logs are the inputs' own bytes.
//!
//! A renamed manifest is sealed again with the user's key only if the part's was theirs: a
//! part recorded by another user or on another host (whose key is not this one) stays
//! unauthenticated in the merge, and a part whose MAC fails is refused.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use ppd_formats::authenticity::{Authenticity, ReaderKey, UserKey};
use ppd_formats::integrity;
use ppd_formats::manifest::{MANIFEST_FILE, Manifest};
use ppd_formats::recording::{NODES_DIR, Node};
use ppd_formats::{FormatError, Recording};

use serde::Serialize;

use crate::exit::{CliError, CmdResult, input};
use crate::output;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The merged recording's directory (new, or empty).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// The recordings to merge, each of one or more OS processes of the same run.
    #[arg(required = true, num_args = 2.., value_name = "REC")]
    recordings: Vec<PathBuf>,
    /// Print what was merged as JSON on standard output.
    #[arg(long)]
    json: bool,
}

/// What `ppd merge --json` prints.
#[derive(Debug, Serialize)]
struct Merged {
    /// The merged recording.
    output: PathBuf,
    /// The run every node belongs to.
    run: String,
    /// Its logical processes, over all nodes.
    processes: usize,
    /// Each node, in the merged recording's order.
    nodes: Vec<MergedNode>,
}

#[derive(Debug, Serialize)]
struct MergedNode {
    /// Its name in the merged recording (its own, or with `-2`, `-3`... when taken).
    name: String,
    /// The directory it was taken from.
    from: PathBuf,
    /// Its directory in the merged recording.
    dir: PathBuf,
    /// Its OS process and host.
    os_pid: u32,
    host: String,
}

pub(crate) fn run(args: &Args) -> CmdResult {
    let nodes = nodes_of_one_run(&args.recordings)?;
    let key = match UserKey::load_or_create() {
        Ok(key) => Some(key),
        Err(e) => {
            eprintln!("ppd: warning: {e}; the merged manifests will carry no MAC of yours");
            None
        }
    };
    let out = super::record::prepare_output(&args.output)?;
    let out = std::fs::canonicalize(&out)
        .map_err(|e| input(FormatError::io(&out, "resolve the output directory", e)))?;
    let mut taken = HashSet::new();
    let mut merged_nodes = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        let name = unique_name(&node.name, &mut taken);
        let target = if k == 0 {
            out.clone()
        } else {
            let nested = out.join(NODES_DIR);
            ppd_formats::private::ensure_dir(&nested).map_err(input)?;
            nested.join(&name)
        };
        ppd_formats::private::ensure_dir(&target).map_err(input)?;
        copy_node(node, &target, &name, key.as_ref())?;
        merged_nodes.push(MergedNode {
            name,
            from: node.dir.clone(),
            dir: target,
            os_pid: node.manifest.os_pid,
            host: node.manifest.host.clone(),
        });
    }
    let merged = Recording::open(&out)?;
    crate::damage::note_unauthenticated(
        integrity::authenticity(&merged)
            .iter()
            .filter(|f| matches!(f.authenticity, Authenticity::Unauthenticated { .. })),
    );
    let run = nodes[0].manifest.run.as_deref().unwrap_or_default();
    eprintln!(
        "ppd: merged {} nodes ({} processes) of run {run} into {}",
        merged.nodes().len(),
        merged.processes().len(),
        out.display()
    );
    if args.json {
        output::json(&Merged {
            output: out,
            run: run.to_owned(),
            processes: merged.processes().len(),
            nodes: merged_nodes,
        });
    }
    Ok(ExitCode::SUCCESS)
}

/// The nodes of `recordings`, in order, checked to be of one run and each there once.
fn nodes_of_one_run(recordings: &[PathBuf]) -> Result<Vec<Node>, CliError> {
    let mut nodes: Vec<Node> = Vec::new();
    for dir in recordings {
        let recording = Recording::open(dir)?;
        if let Some(file) = integrity::authenticity(&recording)
            .into_iter()
            .find(|f| f.authenticity.is_tampered())
        {
            return Err(input(anyhow!("{file}: refusing to merge it")));
        }
        for node in recording.nodes() {
            let Some(run) = &node.manifest.run else {
                return Err(input(anyhow!(
                    "{}: recorded without a run id, so nothing says which run it belongs to \
                     (record each part with `ppd record --join ID`)",
                    node.dir.display()
                )));
            };
            if let Some(first) = nodes.first()
                && first.manifest.run.as_ref() != Some(run)
            {
                return Err(input(anyhow!(
                    "{} and {} are recordings of different runs ({} and {run}): record each \
                     part of one run with `ppd record --join ID`, the same ID",
                    first.dir.display(),
                    node.dir.display(),
                    first.manifest.run.as_deref().unwrap_or_default()
                )));
            }
            let same_process = |n: &&Node| {
                n.manifest.host == node.manifest.host
                    && n.manifest.os_pid == node.manifest.os_pid
                    && n.manifest.start_unix_ns == node.manifest.start_unix_ns
            };
            if let Some(twin) = nodes.iter().find(same_process) {
                return Err(input(anyhow!(
                    "{} and {} are the same OS process (pid {} on {}): a recording is given \
                     twice",
                    twin.dir.display(),
                    node.dir.display(),
                    node.manifest.os_pid,
                    node.manifest.host
                )));
            }
            nodes.push(node.clone());
        }
    }
    Ok(nodes)
}

/// `name`, or `name-2`, `name-3`, ... when a node merged before took it.
fn unique_name(name: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.to_owned();
    let mut n = 1;
    while !taken.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{name}-{n}");
    }
    candidate
}

/// Puts `node`'s logs and program exit into `target` (hard links, or copies across file
/// systems) and writes its manifest there under `name`, sealed with `key` if the part's was
/// sealed with it. Only regular files are taken: what a recording directory holds besides them
/// (caches, nested nodes, markers) is not the node's.
fn copy_node(
    node: &Node,
    target: &Path,
    name: &str,
    key: Option<&UserKey>,
) -> Result<(), CliError> {
    let listing = std::fs::read_dir(&node.dir)
        .map_err(|e| input(FormatError::io(&node.dir, "list the recording", e)))?;
    for item in listing {
        let item = item.map_err(|e| input(FormatError::io(&node.dir, "list the recording", e)))?;
        let file_name = item.file_name();
        let text = file_name.to_string_lossy();
        let kind = item
            .file_type()
            .map_err(|e| input(FormatError::io(item.path(), "inspect", e)))?;
        if !kind.is_file() || text.starts_with('.') || text == MANIFEST_FILE {
            continue;
        }
        let (from, to) = (item.path(), target.join(&file_name));
        if std::fs::hard_link(&from, &to).is_err() {
            let mut source =
                std::fs::File::open(&from).map_err(|e| input(FormatError::io(&from, "read", e)))?;
            let mut copy = ppd_formats::private::create_file(&to, "copy a log")?;
            std::io::copy(&mut source, &mut copy)
                .map_err(|e| input(FormatError::io(&to, "copy a log", e)))?;
        }
    }
    // What is sealed again is what was checked: read once, here.
    let reader = key.map_or(ReaderKey::Absent, |key| ReaderKey::Usable(key.clone()));
    let (mut manifest, authenticity) = Manifest::read_checked(&node.dir, &reader)?;
    if manifest != node.manifest {
        return Err(input(anyhow!(
            "{}: changed while ppd merged it",
            node.dir.join(MANIFEST_FILE).display()
        )));
    }
    manifest.node = Some(name.to_owned());
    let seal = key.filter(|_| authenticity.is_authenticated());
    manifest.write_sealed(target, false, seal)?;
    Ok(())
}
