//! What a recording may make ppd do, end to end with real processes and files: a recording
//! runs its program only if the user's ppd wrote it here (its manifest's MAC holds under the
//! user's key), or the user trusted it (`ppd trust`) or named the program (`--binary`); and
//! never a program that is not a ppd program. How the run ended is believed only from a
//! manifest and exit record the MAC covers.
//!
//! Every command runs with `XDG_DATA_HOME` set, which is where the user's key lives: two
//! directories are two users (or two hosts), whatever account runs the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ppd_tests::{example_bin, ppd_bin};
use serde_json::Value;

const TASK_CASES: &str = env!("CARGO_BIN_EXE_task_cases");

/// A user of ppd: the home of their key.
struct User {
    data: PathBuf,
}

impl User {
    fn new(work: &Path, name: &str) -> User {
        User {
            data: work.join(name),
        }
    }

    /// `ppd ARGS...` as this user, in `cwd`, with standard input closed.
    fn ppd(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(ppd_bin())
            .args(args)
            .env("XDG_DATA_HOME", &self.data)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .expect("run ppd")
    }

    /// Records `program ARGS...` into `work/name` as this user.
    fn record(&self, work: &Path, name: &str, program: &Path, args: &[&str]) -> PathBuf {
        let dir = work.join(name);
        let mut all = vec!["record", "-o", dir.to_str().unwrap(), "--"];
        all.push(program.to_str().unwrap());
        all.extend_from_slice(args);
        let out = self.ppd(work, &all);
        assert!(
            stderr(&out).contains("ppd: recorded"),
            "{name}: {}",
            stderr(&out)
        );
        dir
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// `ppd info --json` as `user`: the status of each manifest and exit record, by file name.
fn statuses(user: &User, cwd: &Path, dir: &Path) -> Vec<(String, String, String)> {
    let out = user.ppd(cwd, &["info", "--json", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    info["authenticity"]
        .as_array()
        .expect("ppd info --json lists what it checked")
        .iter()
        .map(|f| {
            let path = PathBuf::from(f["path"].as_str().unwrap());
            (
                path.strip_prefix(dir).unwrap().display().to_string(),
                f["status"].as_str().unwrap().to_owned(),
                f["why"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn status(file: &str, status: &str, why: &str) -> (String, String, String) {
    (file.into(), status.into(), why.into())
}

/// The system shell's real file, its size and its BLAKE3 hash.
fn shell() -> (PathBuf, u64, String) {
    let path = std::fs::canonicalize("/bin/sh").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let hash = blake3::hash(&bytes).to_hex().to_string();
    (path, bytes.len() as u64, hash)
}

/// Rewrites `dir`'s manifest to run `program` (with its real size and hash) with `argv`, as
/// someone who sends a recording can: without a MAC, or with `mac` as its last member.
fn forge(dir: &Path, program: (&Path, u64, &str), argv: &[&str], mac: Option<&str>) {
    let mut m = manifest(dir);
    let object = m.as_object_mut().unwrap();
    object.remove("mac");
    object.insert(
        "program".into(),
        serde_json::json!({"path": program.0, "size": program.1, "blake3": program.2}),
    );
    object.insert("argv".into(), serde_json::json!(argv));
    let mut text = serde_json::to_string_pretty(&m).unwrap();
    if let Some(mac) = mac {
        text.truncate(text.len() - 2);
        text.push_str(&format!(",\n  \"mac\": \"{mac}\"\n}}"));
    }
    std::fs::write(dir.join("manifest.json"), text).unwrap();
}

#[test]
fn a_manifest_that_runs_a_shell_command_runs_nothing() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let me = User::new(work, "me");
    let bank = me.record(work, "bank", &example_bin("bank"), &[]);
    let farm = me.record(work, "farm", Path::new(TASK_CASES), &["farm-panic"]);
    let mac_of_mine = manifest(&bank)["mac"].as_str().unwrap().to_owned();
    let ran = work.join("ran");
    let command = format!("touch {}", ran.display());
    let argv = ["sh", "-c", command.as_str()];
    let (sh, size, hash) = shell();
    let (bank, farm) = (bank.to_str().unwrap(), farm.to_str().unwrap());
    let sh_str: &'static str = sh.to_str().unwrap().to_owned().leak();
    let commands = |binary: Option<&'static str>| {
        let mut all = vec![
            vec!["replay", bank],
            vec!["replay", bank, "--to", "main=1"],
            vec!["why", bank, "teller", "balance"],
            vec!["analyze", "tasks", farm, "--rerun", "37"],
        ];
        if let Some(binary) = binary {
            for args in &mut all {
                args.extend(["--binary", binary]);
            }
        }
        all
    };
    let refused = |args: &[&str], expect: &str| {
        let out = me.ppd(work, args);
        assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expect),
            "ppd {args:?}: {}",
            stderr(&out)
        );
        assert!(!ran.exists(), "ppd {args:?} ran the shell");
    };
    // Without a MAC: not written by this user here.
    for dir in [bank, farm] {
        forge(Path::new(dir), (&sh, size, &hash), &argv, None);
    }
    for args in commands(None) {
        refused(&args, "it carries no MAC");
        refused(
            &args,
            &format!(
                "`ppd trust {}`",
                args[1 + usize::from(args[0] == "analyze")]
            ),
        );
    }
    // With a MAC that names this user's key but does not hold: damage.
    for dir in [bank, farm] {
        forge(
            Path::new(dir),
            (&sh, size, &hash),
            &argv,
            Some(&mac_of_mine),
        );
    }
    for args in commands(None) {
        refused(&args, "tampered: its MAC fails under your key");
    }
    // Naming the shell as the program does not make it a ppd program.
    for dir in [bank, farm] {
        forge(Path::new(dir), (&sh, size, &hash), &argv, None);
    }
    for args in commands(Some(sh_str)) {
        refused(&args, "not a program built with ppd");
    }
    // Nor does trusting the recording: ppd refuses to.
    let out = me.ppd(work, &["trust", "--yes", bank]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("NOT a ppd program"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("not trusting"), "{}", stderr(&out));
    refused(&["replay", bank], "it carries no MAC");
}

#[test]
fn a_binary_without_the_marker_is_refused_even_from_an_authenticated_manifest() {
    use ppd_formats::authenticity::UserKey;
    use ppd_formats::manifest::Manifest;
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let me = User::new(work, "me");
    let rec = me.record(work, "bank", &example_bin("bank"), &[]);
    // ppd itself runs whatever `ppd record --` is given: a shell by another name.
    let ppd = ppd_bin();
    let bytes = std::fs::read(&ppd).unwrap();
    let hash = blake3::hash(&bytes).to_hex().to_string();
    let ran = work.join("ran");
    let command = format!("touch {}", ran.display());
    let argv = ["ppd", "record", "--", "sh", "-c", command.as_str()];
    forge(&rec, (&ppd, bytes.len() as u64, &hash), &argv, None);
    // Sealed with this user's own key: as if they had trusted it.
    let key = UserKey::load_or_create_in(&me.data.join("ppd/key")).unwrap();
    let manifest = Manifest::read(&rec).unwrap();
    manifest.write_sealed(&rec, false, Some(&key)).unwrap();
    assert_eq!(
        statuses(&me, work, &rec)[0],
        status("manifest.json", "authenticated", "")
    );
    let rec = rec.to_str().unwrap();
    let ppd = ppd.to_str().unwrap();
    for args in [
        vec!["replay", rec],
        vec!["replay", rec, "--binary", ppd],
        vec!["why", rec, "teller", "balance", "--binary", ppd],
    ] {
        let out = me.ppd(work, &args);
        assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("not a program built with ppd"),
            "ppd {args:?}: {}",
            stderr(&out)
        );
        assert!(!ran.exists(), "ppd {args:?} ran ppd record");
    }
}

#[test]
fn a_recording_from_another_user_runs_only_once_trusted_or_with_binary() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (alice, bob) = (User::new(work, "alice"), User::new(work, "bob"));
    let rec = alice.record(work, "bank", &example_bin("bank"), &[]);
    assert_eq!(
        statuses(&alice, work, &rec),
        [
            status("manifest.json", "authenticated", ""),
            status("exit.json", "authenticated", ""),
        ]
    );
    let sent = work.join("sent");
    copy_dir(&rec, &sent);
    let sent_str = sent.to_str().unwrap();
    // Bob, who never used ppd, has no key to check it with.
    assert_eq!(
        statuses(&bob, work, &sent)[0],
        status("manifest.json", "unauthenticated", "no_key")
    );
    // Once he has one, he reads it with a note on what is unchecked.
    ppd_formats::authenticity::UserKey::load_or_create_in(&bob.data.join("ppd/key")).unwrap();
    let out = bob.ppd(work, &["info", sent_str]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not written by you here: its MAC is under another ppd key"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("as the recording says, unchecked"));
    assert!(stdout(&out).contains("unchecked"), "{}", stdout(&out));
    assert_eq!(
        statuses(&bob, work, &sent),
        [
            status("manifest.json", "unauthenticated", "other_key"),
            status("exit.json", "unauthenticated", "other_key"),
        ]
    );
    // Nothing runs until he says so.
    for args in [
        vec!["replay", sent_str],
        vec!["why", sent_str, "teller", "balance"],
    ] {
        let out = bob.ppd(work, &args);
        assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`ppd trust {sent_str}`")),
            "{}",
            stderr(&out)
        );
    }
    // Naming the program runs it, checked against the hash.
    let program = manifest(&sent)["program"]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = bob.ppd(work, &["replay", sent_str, "--binary", &program]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // `ppd trust` shows what would run, and without a yes trusts nothing.
    let before = std::fs::read(sent.join("manifest.json")).unwrap();
    let out = bob.ppd(work, &["trust", sent_str]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let shown = stdout(&out);
    let m = manifest(&sent);
    for field in [
        format!("program   {program}"),
        format!("blake3    {}", m["program"]["blake3"].as_str().unwrap()),
        format!("argv      [{:?}]", m["argv"][0].as_str().unwrap()),
        format!("cwd       {}", m["cwd"].as_str().unwrap()),
        "binary    the recorded binary, a ppd program".to_owned(),
    ] {
        assert!(shown.contains(&field), "no {field:?} in {shown}");
    }
    assert!(
        stderr(&out).contains("confirm with `ppd trust --yes"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(sent.join("manifest.json")).unwrap(), before);
    let out = bob.ppd(work, &["trust", "--yes", sent_str]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        statuses(&bob, work, &sent),
        [
            status("manifest.json", "authenticated", ""),
            status("exit.json", "authenticated", ""),
        ]
    );
    for args in [
        vec!["replay", sent_str, "--verify"],
        vec!["why", sent_str, "teller", "balance"],
    ] {
        let out = bob.ppd(work, &args);
        assert_eq!(out.status.code(), Some(0), "ppd {args:?}: {}", stderr(&out));
    }
    // Trust is his: to Alice the copy is now his.
    assert_eq!(
        statuses(&alice, work, &sent)[0],
        status("manifest.json", "unauthenticated", "other_key")
    );
}

fn copy_dir(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Replaces the first `"FIELD": VALUE` in `file` with another value, bytes otherwise as they
/// are (the MAC included).
fn edit_number(file: &Path, field: &str) -> i64 {
    let text = std::fs::read_to_string(file).unwrap();
    let key = format!("\"{field}\": ");
    let at = text.find(&key).expect("the field is there") + key.len();
    let end = at + text[at..].find([',', '\n']).unwrap();
    let old: i64 = text[at..end].parse().unwrap();
    let new = if old == 0 { 3 } else { 0 };
    std::fs::write(file, format!("{}{new}{}", &text[..at], &text[end..])).unwrap();
    new
}

#[test]
fn an_edited_exit_code_or_exit_record_is_damage() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let me = User::new(work, "me");
    let rec = me.record(work, "bank", &example_bin("bank"), &[]);
    let rec_str = rec.to_str().unwrap();
    let original = std::fs::read(rec.join("manifest.json")).unwrap();
    let edited = edit_number(&rec.join("manifest.json"), "exit_code");
    let out = me.ppd(work, &["info", rec_str]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{rec_str}/manifest.json: tampered")),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "answered: {}", stdout(&out));
    for args in [
        vec!["info", "--json", rec_str],
        vec!["races", rec_str],
        vec!["replay", rec_str],
    ] {
        let out = me.ppd(work, &args);
        assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("manifest.json: tampered"),
            "{}",
            stderr(&out)
        );
    }
    // Asked to, it answers, and says from what.
    let out = me.ppd(work, &["info", rec_str, "--allow-damage"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("exited with code {edited}")));
    assert!(stdout(&out).contains("unchecked"), "{}", stdout(&out));
    // How the OS process ended, as `ppd record` saw it.
    std::fs::write(rec.join("manifest.json"), original).unwrap();
    edit_number(&rec.join("exit.json"), "code");
    let out = me.ppd(work, &["info", rec_str]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("{rec_str}/exit.json: tampered")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn parts_merged_keep_their_authenticity_and_one_from_elsewhere_stays_unchecked() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let (me, other) = (User::new(work, "me"), User::new(work, "other-host"));
    let bank = example_bin("bank");
    let join = ["record", "--join", "nightly-7", "-o"];
    let record_part = |user: &User, name: &str| {
        let dir = work.join(name);
        let mut args = join.to_vec();
        args.extend([dir.to_str().unwrap(), "--", bank.to_str().unwrap()]);
        let out = user.ppd(work, &args);
        assert!(stderr(&out).contains("ppd: recorded"), "{}", stderr(&out));
        dir
    };
    let (a, b, c) = (
        record_part(&me, "a"),
        record_part(&me, "b"),
        record_part(&other, "c"),
    );
    let merge = |out: &str, parts: [&Path; 2]| {
        let out = work.join(out);
        let o = me.ppd(
            work,
            &[
                "merge",
                "-o",
                out.to_str().unwrap(),
                parts[0].to_str().unwrap(),
                parts[1].to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        out
    };
    // Both parts are the user's: the renamed node's manifest is sealed again.
    let ours = merge("ours", [&a, &b]);
    let statuses_of = |dir: &Path| {
        statuses(&me, work, dir)
            .into_iter()
            .map(|(file, status, _)| (file, status))
            .collect::<Vec<_>>()
    };
    let authenticated = |file: &str| (file.to_owned(), "authenticated".to_owned());
    assert_eq!(
        statuses_of(&ours),
        [
            authenticated("manifest.json"),
            authenticated("exit.json"),
            authenticated("nodes/bank-1-2/manifest.json"),
            authenticated("nodes/bank-1-2/exit.json"),
        ]
    );
    let out = me.ppd(work, &["replay", ours.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A part from elsewhere is not made the user's by merging it.
    let mixed = merge("mixed", [&a, &c]);
    let found = statuses(&me, work, &mixed);
    assert_eq!(
        found[2],
        status("nodes/bank-1-2/manifest.json", "unauthenticated", "no_mac")
    );
    assert_eq!(
        found[3],
        status("nodes/bank-1-2/exit.json", "unauthenticated", "other_key")
    );
    let mixed_str = mixed.to_str().unwrap();
    let out = me.ppd(work, &["replay", mixed_str]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ppd trust"), "{}", stderr(&out));
    let out = me.ppd(work, &["trust", "--yes", mixed_str]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = me.ppd(work, &["replay", mixed_str]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The README's first command line, in a fresh directory: record, then ask why.
#[test]
fn the_readme_set_up_records_and_explains() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let me = User::new(work, "me");
    let bank = example_bin("bank");
    let out = me.ppd(work, &["record", "--", bank.to_str().unwrap()]);
    assert!(stderr(&out).contains("ppd: recorded"), "{}", stderr(&out));
    let out = me.ppd(work, &["why", "teller", "balance", "--depth", "8"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("\nbalance = "), "{}", stdout(&out));
    assert!(!stderr(&out).contains("unchecked"), "{}", stderr(&out));
}
