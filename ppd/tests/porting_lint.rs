//! The clippy configuration of `docs/porting.md` flags every std item it lists: the snippet is
//! read from the guide, a crate that uses each listed item is linted with it, and clippy must
//! name each one (a path that names nothing, or a typo, would go unreported). The crate depends
//! on crossbeam-channel, whose items the snippet lists too.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The first `toml` block after the guide's "Linting ports with clippy" heading.
fn snippet() -> String {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/porting.md");
    let text = std::fs::read_to_string(&guide).expect("docs/porting.md");
    let section = text
        .split("## Linting ports with clippy")
        .nth(1)
        .expect("the guide has the section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .expect("the section has a toml block");
    block
        .split("```")
        .next()
        .expect("the block ends")
        .to_owned()
}

/// The `path = "..."` entries of the snippet.
fn paths(snippet: &str) -> Vec<String> {
    snippet
        .split("path = \"")
        .skip(1)
        .map(|rest| rest.split('"').next().expect("a quoted path").to_owned())
        .collect()
}

/// A statement using each item the snippet may list.
fn usages() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        (
            "std::net::TcpListener",
            "let _: Option<std::net::TcpListener> = None;",
        ),
        (
            "std::net::TcpStream",
            "let _: Option<std::net::TcpStream> = None;",
        ),
        (
            "std::net::UdpSocket",
            "let _: Option<std::net::UdpSocket> = None;",
        ),
        (
            "std::os::unix::net::UnixListener",
            "let _: Option<std::os::unix::net::UnixListener> = None;",
        ),
        (
            "std::os::unix::net::UnixStream",
            "let _: Option<std::os::unix::net::UnixStream> = None;",
        ),
        (
            "std::os::unix::net::UnixDatagram",
            "let _: Option<std::os::unix::net::UnixDatagram> = None;",
        ),
        (
            "std::thread::Builder",
            "let _: Option<std::thread::Builder> = None;",
        ),
        (
            "std::thread::JoinHandle",
            "let _: Option<std::thread::JoinHandle<()>> = None;",
        ),
        (
            "std::thread::Thread",
            "let _: Option<std::thread::Thread> = None;",
        ),
        (
            "std::thread::ThreadId",
            "let _: Option<std::thread::ThreadId> = None;",
        ),
        (
            "std::thread::Scope",
            "let _: Option<&std::thread::Scope<'_, '_>> = None;",
        ),
        (
            "std::thread::ScopedJoinHandle",
            "let _: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;",
        ),
        (
            "std::sync::Mutex",
            "let _: Option<std::sync::Mutex<u8>> = None;",
        ),
        (
            "std::sync::mpsc::Sender",
            "let _: Option<std::sync::mpsc::Sender<u8>> = None;",
        ),
        (
            "std::sync::mpsc::Receiver",
            "let _: Option<std::sync::mpsc::Receiver<u8>> = None;",
        ),
        (
            "std::sync::atomic::AtomicBool",
            "let _: Option<std::sync::atomic::AtomicBool> = None;",
        ),
        (
            "std::sync::atomic::AtomicI8",
            "let _: Option<std::sync::atomic::AtomicI8> = None;",
        ),
        (
            "std::sync::atomic::AtomicU8",
            "let _: Option<std::sync::atomic::AtomicU8> = None;",
        ),
        (
            "std::sync::atomic::AtomicI16",
            "let _: Option<std::sync::atomic::AtomicI16> = None;",
        ),
        (
            "std::sync::atomic::AtomicU16",
            "let _: Option<std::sync::atomic::AtomicU16> = None;",
        ),
        (
            "std::sync::atomic::AtomicI32",
            "let _: Option<std::sync::atomic::AtomicI32> = None;",
        ),
        (
            "std::sync::atomic::AtomicU32",
            "let _: Option<std::sync::atomic::AtomicU32> = None;",
        ),
        (
            "std::sync::atomic::AtomicI64",
            "let _: Option<std::sync::atomic::AtomicI64> = None;",
        ),
        (
            "std::sync::atomic::AtomicU64",
            "let _: Option<std::sync::atomic::AtomicU64> = None;",
        ),
        (
            "std::sync::atomic::AtomicIsize",
            "let _: Option<std::sync::atomic::AtomicIsize> = None;",
        ),
        (
            "std::sync::atomic::AtomicUsize",
            "let _: Option<std::sync::atomic::AtomicUsize> = None;",
        ),
        (
            "std::sync::atomic::AtomicPtr",
            "let _: Option<std::sync::atomic::AtomicPtr<u8>> = None;",
        ),
        (
            "std::time::Instant",
            "let _: Option<std::time::Instant> = None;",
        ),
        (
            "std::time::SystemTime",
            "let _: Option<std::time::SystemTime> = None;",
        ),
        (
            "std::collections::HashMap",
            "let _: Option<std::collections::HashMap<u8, u8>> = None;",
        ),
        (
            "std::collections::HashSet",
            "let _: Option<std::collections::HashSet<u8>> = None;",
        ),
        (
            "std::collections::hash_map::RandomState",
            "let _: Option<std::collections::hash_map::RandomState> = None;",
        ),
        ("std::thread::spawn", "std::thread::spawn(|| ());"),
        ("std::thread::scope", "std::thread::scope(|_| ());"),
        ("std::thread::current", "std::thread::current();"),
        ("std::thread::park", "std::thread::park();"),
        (
            "std::thread::park_timeout",
            "std::thread::park_timeout(core::time::Duration::ZERO);",
        ),
        (
            "std::thread::sleep",
            "std::thread::sleep(core::time::Duration::ZERO);",
        ),
        (
            "std::thread::available_parallelism",
            "let _ = std::thread::available_parallelism();",
        ),
        (
            "std::sync::mpsc::channel",
            "let _ = std::sync::mpsc::channel::<u8>();",
        ),
        (
            "std::sync::atomic::fence",
            "std::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);",
        ),
        (
            "std::sync::atomic::compiler_fence",
            "std::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);",
        ),
        (
            "std::sync::MutexGuard",
            "let _: Option<std::sync::MutexGuard<'_, u8>> = None;",
        ),
        (
            "std::sync::RwLock",
            "let _: Option<std::sync::RwLock<u8>> = None;",
        ),
        (
            "std::sync::RwLockReadGuard",
            "let _: Option<std::sync::RwLockReadGuard<'_, u8>> = None;",
        ),
        (
            "std::sync::RwLockWriteGuard",
            "let _: Option<std::sync::RwLockWriteGuard<'_, u8>> = None;",
        ),
        (
            "std::sync::Condvar",
            "let _: Option<std::sync::Condvar> = None;",
        ),
        (
            "std::sync::Barrier",
            "let _: Option<std::sync::Barrier> = None;",
        ),
        ("std::sync::Once", "let _: Option<std::sync::Once> = None;"),
        (
            "std::sync::OnceLock",
            "let _: Option<std::sync::OnceLock<u8>> = None;",
        ),
        (
            "std::sync::LazyLock",
            "let _: Option<std::sync::LazyLock<u8>> = None;",
        ),
        (
            "std::sync::mpsc::SyncSender",
            "let _: Option<std::sync::mpsc::SyncSender<u8>> = None;",
        ),
        (
            "crossbeam_channel::Sender",
            "let _: Option<crossbeam_channel::Sender<u8>> = None;",
        ),
        (
            "crossbeam_channel::Receiver",
            "let _: Option<crossbeam_channel::Receiver<u8>> = None;",
        ),
        (
            "crossbeam_channel::Select",
            "let _: Option<crossbeam_channel::Select<'_>> = None;",
        ),
        (
            "std::sync::mpsc::sync_channel",
            "let _ = std::sync::mpsc::sync_channel::<u8>(0);",
        ),
        (
            "crossbeam_channel::unbounded",
            "let _ = crossbeam_channel::unbounded::<u8>();",
        ),
        (
            "crossbeam_channel::bounded",
            "let _ = crossbeam_channel::bounded::<u8>(1);",
        ),
        (
            "crossbeam_channel::after",
            "let _ = crossbeam_channel::after(core::time::Duration::ZERO);",
        ),
        (
            "crossbeam_channel::tick",
            "let _ = crossbeam_channel::tick(core::time::Duration::from_secs(1));",
        ),
        (
            "crossbeam_channel::never",
            "let _ = crossbeam_channel::never::<u8>();",
        ),
        (
            "crossbeam_channel::select",
            "let (_tx, rx) = crossbeam_channel::unbounded::<u8>(); crossbeam_channel::select! { recv(rx) -> _m => (), default => () }",
        ),
    ])
}

#[test]
fn the_guides_clippy_configuration_flags_every_std_item_it_lists() {
    let snippet = snippet();
    let listed = paths(&snippet);
    assert!(listed.iter().any(|p| p == "std::sync::Mutex"), "{snippet}");
    let usages = usages();
    let mut body = String::new();
    for path in &listed {
        let usage = usages
            .get(path.as_str())
            .unwrap_or_else(|| panic!("no usage of {path} to lint: add one to this test"));
        body.push_str("    ");
        body.push_str(usage);
        body.push('\n');
    }
    let krate = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        krate.path().join("Cargo.toml"),
        "[package]\nname = \"port\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n\
         [dependencies]\ncrossbeam-channel = \"0.5\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(krate.path().join("src")).unwrap();
    std::fs::write(
        krate.path().join("src/lib.rs"),
        format!("#![allow(clippy::let_underscore_future)]\npub fn port() {{\n{body}}}\n"),
    )
    .unwrap();
    std::fs::write(krate.path().join("clippy.toml"), &snippet).unwrap();
    let out = Command::new(env!("CARGO"))
        .args(["clippy", "--offline", "--quiet"])
        .current_dir(krate.path())
        .env("CARGO_TARGET_DIR", krate.path().join("target"))
        .output()
        .expect("run cargo clippy");
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(!report.contains("error"), "{report}");
    for path in &listed {
        assert!(
            report.contains(&format!("disallowed type `{path}`"))
                || report.contains(&format!("disallowed method `{path}`"))
                || report.contains(&format!("disallowed macro `{path}`")),
            "clippy did not flag {path}:\n{report}"
        );
    }
}
