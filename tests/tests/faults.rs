//! Faults around a recording, end to end with real processes: a disk that fills while the
//! program is recorded, a standard output that cannot be written, damaged recordings and the
//! exit code every command gives them.
//!
//! Exit codes (README, "Exit codes"): 0 success, 2 bad input (a damaged recording included), 1
//! a failure of the program, of a verification or of writing the output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ppd_tests::{ppd, ppd_bin, record_example};
use serde_json::Value;

const VICTIM: &str = env!("CARGO_BIN_EXE_victim");

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Says that a case needing root was skipped, on the real stderr (libtest does not capture
/// it: a skip must show); under `PPD_REQUIRE_ROOT`, as CI runs as root, the skip is a failure.
fn skipped_without_root(case: &str) {
    use std::io::Write;
    assert!(
        std::env::var_os("PPD_REQUIRE_ROOT").is_none(),
        "PPD_REQUIRE_ROOT is set, but {case} cannot be tested here: it needs root"
    );
    let _ = writeln!(
        std::io::stderr(),
        "NOTICE: skipped: {case} needs root (PPD_REQUIRE_ROOT makes this a failure)"
    );
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted when dropped; `None` (with a
/// notice on stderr, or a failure under `PPD_REQUIRE_ROOT`) where mounting is not permitted.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(SmallDisk { dir }),
            _ => {
                skipped_without_root(&format!("the disk-full behaviour (a {size} tmpfs)"));
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// `ppd record --payloads` of the victim (a hub and four workers, 7000+ events) into `dir`,
/// with `env` (the ring's size) set.
fn record_victim(dir: &Path, mode: &str, env: &[(&str, &str)]) -> Output {
    Command::new(ppd_bin())
        .args(["record", "--payloads", "-o"])
        .arg(dir)
        .args(["--", VICTIM, mode])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .output()
        .unwrap()
}

/// The victim, drawing random numbers, recorded with 4 KiB blocks and two-slot rings, so that
/// a small disk fills part-way through the run.
fn record_victim_small(dir: &Path) -> Output {
    record_victim(
        dir,
        "ok-random",
        &[("PPD_BLOCK_SIZE", "4096"), ("PPD_RING_BLOCKS", "2")],
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

#[test]
fn a_full_disk_stops_the_recording_at_one_cut_and_the_program_runs_on() {
    let unrecorded = Command::new(VICTIM)
        .arg("ok-random")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(unrecorded.code(), Some(0));
    // Room for the rings (six logs of 12 KiB), the manifest's 64 KiB reserve and the manifest,
    // not for the frames: the run's 6400 random draws alone are 50 KiB that do not compress
    // (without them the frames compressed to 2-13 KiB, as the interleaving went).
    let Some(disk) = SmallDisk::mount("148k") else {
        return;
    };
    let rec = disk.path().join("rec");
    let out = record_victim_small(&rec);
    let err = stderr(&out);
    assert_eq!(out.status.code(), unrecorded.code(), "{err}");
    assert!(err.contains("ppd: recording stopped:"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("the program runs on unrecorded"), "{err}");

    let manifest: Value =
        serde_json::from_slice(&std::fs::read(rec.join("manifest.json")).unwrap()).unwrap();
    let stopped = &manifest["stopped"];
    assert!(
        stopped["reason"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{manifest:#}"
    );
    assert_eq!(manifest["end"]["exit_code"], 0, "{manifest:#}");
    let cut = stopped["cut"].as_array().unwrap();
    assert!(!cut.is_empty(), "{manifest:#}");

    // Not damage: `info` describes the cut and exits 0; the logs end where the manifest says.
    let info = ppd(disk.path(), &["info", "--json", rec.to_str().unwrap()]);
    assert_eq!(info.status.code(), Some(0), "{}", stderr(&info));
    let info = json(&info);
    assert!(info["stopped"].as_str().unwrap().contains("No space left"));
    assert_eq!(info["complete"], false);
    // Where the disk fills depends on how the frames compressed and when they were written:
    // the cut may fall anywhere, even after the last event (the final frames did not fit).
    // What holds wherever it falls: each log ends at the manifest's cut, and replays to it.
    let recorded: u64 = info["events"].as_u64().unwrap();
    assert!(recorded > 0, "{info:#}");
    for c in cut {
        let p = info["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == c["process"])
            .unwrap();
        assert_eq!(p["events"], c["events"], "{info:#}");
    }

    // The recording replays to its cut: every logged event, no divergence.
    let replay = ppd(disk.path(), &["replay", "--json", rec.to_str().unwrap()]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let summary = json(&replay);
    assert_eq!(summary["outcome"], "reproduced", "{summary:#}");
    assert_eq!(summary["events"].as_u64(), Some(recorded), "{summary:#}");
    assert!(
        summary["integrity"]["stopped"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{summary:#}"
    );
    assert!(
        stderr(&replay).contains("recording stopped before the program ended"),
        "{}",
        stderr(&replay)
    );
}

#[test]
fn a_disk_too_small_for_the_rings_leaves_the_program_unharmed() {
    // The default ring (1 MiB) does not fit: with a sparse ring the program's first store to a
    // page the disk could not back killed it with SIGBUS (exit code 135 here, before the ring
    // was allocated up front).
    let Some(disk) = SmallDisk::mount("64k") else {
        return;
    };
    let rec = disk.path().join("rec");
    let out = record_victim(&rec, "ok", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("ppd: warning: only 64.0 KiB free"), "{err}");
    assert!(
        err.contains("reserve disk space for the log's ring: No space left on device"),
        "{err}"
    );
    // Nothing was recorded, and `info` says so without calling it damage.
    let info = ppd(disk.path(), &["info", rec.to_str().unwrap()]);
    assert_eq!(info.status.code(), Some(0), "{}", stderr(&info));
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("not recorded (recording stopped)"), "{text}");
}

/// A recording of the bank example, and where it is.
fn bank_recording(work: &Path) -> PathBuf {
    let dir = work.join("rec");
    let out = record_example(work, &dir, "bank", &[]);
    assert!(
        dir.join("manifest.json").exists(),
        "bank did not record: {}",
        stderr(&out)
    );
    dir
}

/// Every command that prints to standard output, on `rec`.
fn printing_commands(rec: &str) -> Vec<Vec<String>> {
    let v = |args: &[&str]| args.iter().map(|s| s.to_string()).collect();
    vec![
        v(&["info", rec]),
        v(&["info", "--json", rec]),
        v(&["races", rec]),
        v(&["races", "--json", rec]),
        v(&["graph", rec, "--format", "svg"]),
        v(&["export", rec, "--format", "json"]),
        v(&["why", rec, "teller", "balance", "--depth", "2"]),
        v(&["why", rec, "teller", "--state"]),
        v(&["replay", "--json", rec]),
        v(&["replay", rec, "--to", "main=1", "--json"]),
    ]
}

#[test]
fn a_full_standard_output_is_an_error_for_every_command() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let rec = rec.to_str().unwrap();
    let help = [&["--help"][..], &["--version"], &["why", "--help"]]
        .map(|args| args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    for args in printing_commands(rec).into_iter().chain(help) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(ppd_bin())
            .args(&args)
            .current_dir(work.path())
            .stdout(full)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "ppd {args:?}: {err}");
        assert!(
            err.contains("No space left on device") && !err.contains("panicked"),
            "ppd {args:?}: {err}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let rec = rec.to_str().unwrap();
    for args in printing_commands(rec) {
        let mut child = Command::new(ppd_bin())
            .args(&args)
            .current_dir(work.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "ppd {args:?}: {err}");
        assert!(!err.contains("standard output"), "ppd {args:?}: {err}");
    }
}

#[test]
fn a_damaged_recording_is_bad_input_for_every_command_unless_allowed() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    // A flipped bit inside the teller's compressed frame: its index and footer are intact, so
    // only a command that checks payload checksums can tell.
    let log = rec.join("proc-0001.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(rec.join("manifest.json")).unwrap()).unwrap();
    let ring = manifest["options"]["block_size"].as_u64().unwrap()
        * manifest["options"]["ring_blocks"].as_u64().unwrap();
    let payload = (4096 + ring + 56 + 20) as usize;
    bytes[payload] ^= 0x10;
    std::fs::write(&log, bytes).unwrap();
    let rec = rec.to_str().unwrap();
    for args in printing_commands(rec) {
        let out = ppd(
            work.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {err}");
        assert!(
            err.contains("proc-0001.log: checksum mismatch in frame payload at byte offset"),
            "ppd {args:?}: {err}"
        );
        if args[0] != "info" {
            assert!(out.stdout.is_empty(), "ppd {args:?} answered anyway");
        }
    }
    // Asked to, the analyses answer from the readable part, and say so.
    let out = ppd(
        work.path(),
        &["export", rec, "--format", "json", "--allow-damage"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("answering from the readable part only"));
    let export = json(&out);
    let teller = &export["processes"][1];
    assert_eq!(teller["name"], "teller");
    assert_eq!(teller["complete"], false, "{teller:#}");
    assert!(
        teller["damage"][0]
            .as_str()
            .unwrap()
            .contains("checksum mismatch in frame payload"),
        "{teller:#}"
    );
    let out = ppd(work.path(), &["races", "--json", rec, "--allow-damage"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let races = json(&out);
    assert!(
        races["integrity"]["damage"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("checksum mismatch in frame payload"),
        "{races:#}"
    );
    let out = ppd(work.path(), &["info", rec, "--allow-damage"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("damage: "));
}

#[test]
fn a_missing_or_empty_log_is_bad_input() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let only_manifest = work.path().join("only-manifest");
    std::fs::create_dir(&only_manifest).unwrap();
    std::fs::copy(
        rec.join("manifest.json"),
        only_manifest.join("manifest.json"),
    )
    .unwrap();
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for entry in std::fs::read_dir(&rec).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), empty.join(entry.file_name())).unwrap();
        }
    }
    std::fs::write(empty.join("proc-0002.log"), b"").unwrap();
    for (dir, what) in [
        (&only_manifest, "proc-0000.log: missing"),
        (&empty, "proc-0002.log: truncated log header"),
    ] {
        let dir = dir.to_str().unwrap();
        for args in [
            vec!["replay", "--verify", dir],
            vec!["races", dir],
            vec!["graph", dir, "--format", "dot"],
            vec!["export", dir, "--format", "json"],
            vec!["info", dir],
        ] {
            let out = ppd(work.path(), &args);
            assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(what),
                "ppd {args:?}: {}",
                stderr(&out)
            );
        }
    }
}

/// Copies every file of recording `from` into a new recording directory `to`.
fn copy_recording(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn swapped_foreign_duplicated_and_fifo_logs_are_bad_input() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let other_run = work.path().join("other");
    let out = record_example(work.path(), &other_run, "bank", &[]);
    assert!(other_run.join("manifest.json").exists(), "{}", stderr(&out));
    let case = |name: &str, edit: &dyn Fn(&Path)| -> PathBuf {
        let dir = work.path().join(name);
        copy_recording(&rec, &dir);
        edit(&dir);
        dir
    };
    let swapped = case("swapped", &|d| {
        std::fs::rename(d.join("proc-0003.log"), d.join("x")).unwrap();
        std::fs::rename(d.join("proc-0004.log"), d.join("proc-0003.log")).unwrap();
        std::fs::rename(d.join("x"), d.join("proc-0004.log")).unwrap();
    });
    let foreign = case("foreign", &|d| {
        std::fs::copy(other_run.join("proc-0001.log"), d.join("proc-0001.log")).unwrap();
    });
    let duplicated = case("duplicated", &|d| {
        let path = d.join("manifest.json");
        let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let auditor = m["processes"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|p| p["id"] == 2)
            .unwrap();
        auditor["id"] = Value::from(1);
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    });
    // A whole recording of another run, copied in as a node: its logs are its own, but its run
    // is not this one (`ppd merge` would have refused the same parts).
    let foreign_node = case("foreign-node", &|d| {
        let nodes = d.join("nodes");
        std::fs::create_dir(&nodes).unwrap();
        copy_recording(&other_run, &nodes.join("bank-2"));
    });
    let fifo = case("fifo", &|d| {
        std::fs::remove_file(d.join("proc-0002.log")).unwrap();
        nix::unistd::mkfifo(
            &d.join("proc-0002.log"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
    });
    for (dir, what) in [
        (
            &swapped,
            "proc-0003.log: the log's header is process p4 \"client-1\"",
        ),
        (&foreign, "proc-0001.log: the log was written by OS process"),
        (&duplicated, "the manifest lists process p1 twice"),
        (&foreign_node, "nodes/bank-2: a node of another run (run "),
        (&fifo, "proc-0002.log: is a FIFO, not a regular file"),
    ] {
        let dir = dir.to_str().unwrap();
        for args in [
            vec!["info", dir],
            vec!["replay", "--verify", dir],
            vec!["races", dir],
            vec!["graph", dir, "--format", "dot"],
            vec!["export", dir, "--format", "json"],
            vec!["why", dir, "teller", "balance"],
        ] {
            // A FIFO must not hang any of them: it is refused before anything reads it.
            let out = ppd(work.path(), &args);
            assert_eq!(out.status.code(), Some(2), "ppd {args:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains(what),
                "ppd {args:?}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn why_depth_is_bounded_by_what_there_is_to_follow() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let out = ppd(
        work.path(),
        &[
            "why",
            rec.to_str().unwrap(),
            "teller",
            "balance",
            "--depth",
            "18446744073709551615",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("balance"));
}

/// A manifest edited to name another program: nothing but the recorded binary may run, whatever
/// the manifest says. Edited, it no longer carries the user's MAC, so nothing runs unless the
/// user names the program (`--binary`); and even then only a ppd program with the recorded hash,
/// from a recording that is the invoking user's own and no one else's to change.
#[test]
fn a_tampered_manifest_runs_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let marker = work.path().join("ran");
    let script = work.path().join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hash_of_script = blake3::hash(&std::fs::read(&script).unwrap())
        .to_hex()
        .to_string();
    let manifest_path = rec.join("manifest.json");
    let original = std::fs::read_to_string(&manifest_path).unwrap();
    let recorded_hash = serde_json::from_str::<Value>(&original).unwrap()["program"]["blake3"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        recorded_hash.len(),
        64,
        "the recorder always hashes: {original}"
    );
    let tamper = |path: &Path, hash: &str| {
        let mut m: Value = serde_json::from_str(&original).unwrap();
        m["program"]["path"] = Value::from(path.to_str().unwrap());
        m["program"]["blake3"] = Value::from(hash);
        m.as_object_mut().unwrap().remove("mac");
        std::fs::write(&manifest_path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    };
    let rec_str = rec.to_str().unwrap();
    let script_str = script.to_str().unwrap();
    let run_all_with = |named: &[&str], expect: &str| {
        for mut args in [
            vec!["replay", rec_str],
            vec!["replay", rec_str, "--to", "main=1"],
            vec!["why", rec_str, "teller", "balance"],
            vec!["why", rec_str, "teller", "--state"],
        ] {
            args.extend_from_slice(named);
            let out = ppd(work.path(), &args);
            let err = stderr(&out);
            // `--state` restores from the logs alone and runs nothing; it may succeed.
            if args.contains(&"--state") {
                assert!(
                    out.status.code() == Some(0) || out.status.code() == Some(2),
                    "{err}"
                );
            } else {
                assert_eq!(out.status.code(), Some(2), "{expect}: ppd {args:?}: {err}");
                assert!(err.contains(expect), "ppd {args:?}: {err}");
            }
            assert!(
                !err.contains(&recorded_hash),
                "ppd {args:?} printed the hash: {err}"
            );
            assert!(!marker.exists(), "ppd {args:?} ran the script");
        }
    };
    // Not written by the user as it is: nothing runs unless they name the program.
    tamper(&script, &hash_of_script);
    run_all_with(&[], "it carries no MAC");
    let run_all = |expect: &str| run_all_with(&["--binary", script_str], expect);
    // A program that is not a ppd program, though it has the hash the manifest says.
    run_all("not a program built with ppd");
    // An empty hash used to skip the check.
    tamper(&script, "");
    run_all("the recording has no hash of its program");
    // A wrong hash.
    tamper(&script, &"0".repeat(64));
    run_all("this is not the binary that was recorded");
    // The script's own hash, in a recording others can write to: its manifest proves nothing.
    tamper(&script, &hash_of_script);
    let dir_mode = std::fs::metadata(&rec).unwrap().permissions().mode();
    std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(0o777)).unwrap();
    run_all("the recording directory is writable by everyone");
    std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(dir_mode)).unwrap();
    std::fs::set_permissions(&manifest_path, std::fs::Permissions::from_mode(0o620)).unwrap();
    run_all("the manifest is writable by its group");
    std::fs::set_permissions(&manifest_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A program others can write to.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o777)).unwrap();
    run_all("the program is writable by everyone");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A program that belongs to someone else (only root can make one here).
    if nix::unistd::chown(&script, Some(nix::unistd::Uid::from_raw(65534)), None).is_ok() {
        run_all("the program belongs to user 65534");
    } else {
        skipped_without_root("the foreign-owner case (chown)");
    }
}

#[test]
fn binary_names_what_it_runs_and_still_checks_the_hash() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(rec.join("manifest.json")).unwrap()).unwrap();
    let moved = work.path().join("bank-moved");
    std::fs::copy(manifest["program"]["path"].as_str().unwrap(), &moved).unwrap();
    let rec = rec.to_str().unwrap();
    let moved_str = moved.to_str().unwrap();
    let out = ppd(work.path(), &["replay", rec, "--binary", moved_str]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("ppd: running {moved_str} (--binary")),
        "{}",
        stderr(&out)
    );
    let other = std::env::current_exe().unwrap();
    let out = ppd(
        work.path(),
        &["replay", rec, "--binary", other.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("this is not the binary that was recorded"));
}

/// Files under `dir`, recursively, with their modes.
fn modes_under(dir: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        out.push((entry.path(), meta.permissions().mode() & 0o777));
        if meta.is_dir() {
            out.extend(modes_under(&entry.path()));
        }
    }
    out
}

/// `ppd ARGS` under umask 000, so that only ppd's own modes protect what it writes.
fn ppd_with_open_umask(cwd: &Path, args: &[&str]) -> Output {
    let mut script = String::from("umask 000; exec \"$0\"");
    for i in 1..=args.len() {
        script += &format!(" \"${{{i}}}\"");
    }
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

#[test]
fn everything_ppd_writes_is_private_whatever_the_umask() {
    let work = tempfile::tempdir().unwrap();
    let rec = work.path().join("rec");
    let bank = ppd_tests::example_bin("bank");
    let out = ppd_with_open_umask(
        work.path(),
        &[
            "record",
            "-o",
            rec.to_str().unwrap(),
            "--",
            bank.to_str().unwrap(),
        ],
    );
    assert!(rec.join("manifest.json").exists(), "{}", stderr(&out));
    let r = rec.to_str().unwrap();
    for args in [
        vec!["races", r],
        vec!["export", r, "--format", "shiviz"],
        vec!["replay", r, "--to", "main=1", "--json"],
        vec!["why", r, "teller", "balance", "--depth", "2"],
    ] {
        let out = ppd_with_open_umask(work.path(), &args);
        assert_eq!(out.status.code(), Some(0), "ppd {args:?}: {}", stderr(&out));
    }
    let written = modes_under(&rec);
    assert!(
        written.iter().any(|(p, _)| p.ends_with("cache/halt.json")),
        "{written:?}"
    );
    assert!(
        written.iter().any(|(p, _)| p.ends_with("cache/clocks.bin")),
        "{written:?}"
    );
    for (path, mode) in &written {
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{} is {mode:o}", path.display());
    }
}

#[test]
fn writes_never_follow_a_link_out_of_the_recording() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, rec.join("cache")).unwrap();
    let r = rec.to_str().unwrap();
    for args in [vec!["races", r], vec!["export", r, "--format", "shiviz"]] {
        let out = ppd(work.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = ppd(work.path(), &["replay", r, "--to", "main=1"]);
    assert!(
        stderr(&out).contains("not saving the halt")
            && stderr(&out).contains("symbolic link (ppd does not write through links)"),
        "{}",
        stderr(&out)
    );
    let out = ppd(
        work.path(),
        &["why", r, "teller", "balance", "--depth", "2"],
    );
    assert_ne!(
        out.status.code(),
        Some(0),
        "why wrote its index through the link?"
    );
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "ppd wrote through the link"
    );
}

#[test]
fn record_into_an_existing_directory_tightens_it_or_refuses() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let open = work.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = record_example(work.path(), &open, "bank", &[]);
    assert!(open.join("manifest.json").exists(), "{}", stderr(&out));
    assert_eq!(mode(&open), 0o700);
    let theirs = work.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    if nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).is_err() {
        skipped_without_root("the foreign-owner case (chown)");
        return;
    }
    let out = record_example(work.path(), &theirs, "bank", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("output directory belongs to user 65534"),
        "{}",
        stderr(&out)
    );
    assert!(!theirs.join("manifest.json").exists());
}

#[test]
fn messages_name_what_is_wrong() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let r = rec.to_str().unwrap();
    // A process id past what ids hold names no process: 4096 << 20 wraps to node 0 in 32 bits,
    // where p4096.1 once named the teller (p1).
    for id in ["p4096.1", "p8192.3", "p1.1048577", "p7.0"] {
        let out = ppd(work.path(), &["why", r, id, "balance"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{id}: {err}");
        assert!(
            err.contains(&format!("no process `{id}` in the recording")),
            "{id}: {err}"
        );
    }
    let missing = work.path().join("no/such/dir/x.svg");
    let out = ppd(
        work.path(),
        &[
            "graph",
            r,
            "--format",
            "svg",
            "-o",
            missing.to_str().unwrap(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "ppd: cannot create {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    let out = ppd(
        work.path(),
        &[
            "why",
            r,
            "teller",
            "--what-if",
            "request=notjson",
            "--at",
            "handle#1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // A bare name reads as a unit variant, which this type does not have.
    assert!(
        err.contains("\"notjson\" is not a value of the argument's type")
            && err.contains("unknown variant `notjson`"),
        "{err}"
    );
    let out = ppd(
        work.path(),
        &[
            "why",
            r,
            "teller",
            "--what-if",
            "request=not json",
            "--at",
            "handle#1",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`not json` is not a value (at byte 4: expected the end of the value")
            && err.contains("request='\"not json\"'"),
        "{err}"
    );
    let file = work.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let out = ppd(work.path(), &["info", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a file, not a directory"),
        "{}",
        stderr(&out)
    );
}

/// Runs `ppd ARGS...` in `cwd`; a command still running after two minutes is killed and the
/// test fails: it hung (a command reading a FIFO would wait for a writer forever).
fn ppd_not_hanging(cwd: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(ppd_bin())
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!("ppd {args:?} hung: {}", stderr(&out));
}

fn make_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// Besides logs and manifests, commands read `exit.json` and the caches; a FIFO in place of any
/// of them hangs nothing: `exit.json` is then as if absent, a cache is recomputed.
#[test]
fn a_fifo_in_place_of_the_exit_file_or_a_cache_hangs_no_command() {
    let work = tempfile::tempdir().unwrap();
    let rec = bank_recording(work.path());
    let dir = rec.to_str().unwrap();
    // Warm the caches so that there is a file of each kind to replace.
    assert_eq!(
        ppd(work.path(), &["why", dir, "teller", "balance"])
            .status
            .code(),
        Some(0)
    );
    let graph = ["graph", dir, "--format", "dot", "-o", "/dev/null"];
    assert_eq!(ppd(work.path(), &graph).status.code(), Some(0));
    let cache = rec.join("cache");
    for file in ["clocks.bin", "why/p0001.idx"] {
        assert!(cache.join(file).is_file(), "no {file} to replace");
    }
    let answers = |args: &[&str]| -> String {
        let out = ppd_not_hanging(work.path(), args);
        assert_eq!(out.status.code(), Some(0), "ppd {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let why_before = answers(&["why", dir, "teller", "balance"]);
    make_fifo(&rec.join("exit.json"));
    answers(&["info", dir]);
    answers(&["replay", dir]);
    make_fifo(&cache.join("clocks.bin"));
    answers(&["export", dir, "--format", "json", "-o", "/dev/null"]);
    make_fifo(&cache.join("clocks.bin"));
    answers(&graph);
    make_fifo(&cache.join("why").join("p0001.idx"));
    assert_eq!(answers(&["why", dir, "teller", "balance"]), why_before);
    // A cache recomputed replaces the FIFO.
    let index = std::fs::symlink_metadata(cache.join("why").join("p0001.idx")).unwrap();
    assert!(index.file_type().is_file());
}
