//! Shared by the analysis tests: recording race-corpus scenarios and examples, running the
//! analysis commands, rendering pages in headless Chromium.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ppd_tests::{ppd, ppd_bin, record_example};
use serde_json::Value;

/// The race-corpus program.
pub(crate) fn corpus_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_race_corpus"))
}

/// `race_corpus --list`: every scenario with its expected races and marker lines.
pub(crate) fn listing() -> Vec<Value> {
    let out = Command::new(corpus_bin())
        .arg("--list")
        .output()
        .expect("run race_corpus --list");
    assert!(
        out.status.success(),
        "race_corpus --list: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .expect("the listing is JSON")
        .as_array()
        .expect("the listing is an array")
        .clone()
}

/// The listing entry of scenario `name`.
pub(crate) fn scenario(name: &str) -> Value {
    listing()
        .into_iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

/// The line of marker `marker` in scenario `s`.
pub(crate) fn marker_line(s: &Value, marker: &str) -> u64 {
    s["markers"]
        .as_array()
        .expect("markers")
        .iter()
        .find(|m| m[0] == marker)
        .and_then(|m| m[1].as_u64())
        .unwrap_or_else(|| panic!("no marker {marker} in {s}"))
}

/// Records scenario `name` into `<work>/<name>` and returns the directory.
pub(crate) fn record_scenario(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    let bin = corpus_bin();
    let out = ppd(
        work,
        &[
            "record",
            "-o",
            dir.to_str().expect("utf-8 path"),
            "--",
            bin.to_str().expect("utf-8 path"),
            name,
        ],
    );
    assert!(
        out.status.success(),
        "recording {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Records example `name` into `<work>/<name>` and returns the directory.
pub(crate) fn record(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    let out = record_example(work, &dir, name, &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ppd: recorded"),
        "recording {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// `ppd ARGS` in `work`, which must succeed; its standard output.
pub(crate) fn ppd_ok(work: &Path, args: &[&str]) -> Vec<u8> {
    let out: Output = ppd(work, args);
    assert!(
        out.status.success(),
        "ppd {args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `ppd races --json DIR`, parsed.
pub(crate) fn races_json(work: &Path, dir: &Path) -> Value {
    let out = ppd_ok(
        work,
        &["races", "--json", dir.to_str().expect("utf-8 path")],
    );
    serde_json::from_slice(&out).expect("ppd races --json prints JSON")
}

/// The races of a report as `(var, lower line, higher line)`, sorted.
pub(crate) fn race_lines(report: &Value) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = report["races"]
        .as_array()
        .expect("races")
        .iter()
        .map(|r| {
            let a = r["a"]["line"].as_u64().expect("a.line");
            let b = r["b"]["line"].as_u64().expect("b.line");
            (
                r["var"].as_str().expect("var").to_owned(),
                a.min(b),
                a.max(b),
            )
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Headless Chromium for the browser-rendering checks: `PPD_CHROMIUM`, or the first of
/// `chromium`, `chromium-browser`, `google-chrome` on `PATH`.
///
/// Without one, `check` names the skipped check on the test's real standard error (libtest
/// captures only the print macros, so the notice shows in `cargo test`'s output) and the caller
/// skips it. Under `PPD_REQUIRE_BROWSER=1`, as CI runs, a missing browser fails the test.
pub(crate) fn chromium(check: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PPD_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path(&["chromium", "chromium-browser", "google-chrome"]));
    if found.is_some() {
        return found;
    }
    if std::env::var("PPD_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!(
            "PPD_REQUIRE_BROWSER=1 but no Chromium was found for {check}: install it \
             (`apt-get install chromium`) or name it with PPD_CHROMIUM=/path/to/chromium"
        );
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED browser check in {check}: the page was not rendered (no chromium on PATH; \
         install chromium, or set PPD_CHROMIUM, to run it; PPD_REQUIRE_BROWSER=1 makes a \
         missing browser a failure)"
    );
    None
}

/// The first of `names` found as an executable file in a directory of `PATH`.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The DOM of `page` after its scripts ran, as headless Chromium serializes it.
pub(crate) fn render_dom(chromium: &Path, page: &Path) -> String {
    render_dom_at(chromium, page, "")
}

/// The DOM of `page` opened at `fragment` (`#from=10&to=20`; empty: none) after its scripts
/// ran. The window and its scale are those of [`screenshot`], so the coordinates the page
/// reports are the screenshot's pixels.
pub(crate) fn render_dom_at(chromium: &Path, page: &Path, fragment: &str) -> String {
    let out = run_chromium(chromium, page, fragment, &["--dump-dom"]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What headless Chromium shows of `page` opened at `fragment`: a 1400×900 window, one device
/// pixel a CSS pixel.
pub(crate) fn screenshot(chromium: &Path, page: &Path, fragment: &str) -> Screenshot {
    let dir = tempfile::tempdir().expect("a directory for the screenshot");
    let png = dir.path().join("shot.png");
    run_chromium(
        chromium,
        page,
        fragment,
        &[&format!("--screenshot={}", png.display())],
    );
    let file = std::fs::File::open(&png).expect("chromium wrote the screenshot");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("the PNG's pixels");
    let channels = info.color_type.samples();
    assert!(
        info.bit_depth == png::BitDepth::Eight && channels >= 3,
        "an 8-bit colour screenshot: {info:?}"
    );
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .flat_map(|px| [px[0], px[1], px[2]])
        .collect();
    Screenshot {
        width: info.width,
        height: info.height,
        rgb,
    }
}

fn run_chromium(chromium: &Path, page: &Path, fragment: &str, mode: &[&str]) -> Output {
    let profile = tempfile::tempdir().expect("browser profile directory");
    let url = format!(
        "file://{}{fragment}",
        page.canonicalize().expect("page exists").display()
    );
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(mode)
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A screenshot's pixels.
pub(crate) struct Screenshot {
    pub(crate) width: u32,
    pub(crate) height: u32,
    rgb: Vec<u8>,
}

impl Screenshot {
    /// The colour at `(x, y)` (black outside the picture).
    pub(crate) fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        if x >= self.width || y >= self.height {
            return [0, 0, 0];
        }
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// How many pixels of the rectangle `xs × ys` `matches`.
    pub(crate) fn count(
        &self,
        xs: std::ops::Range<u32>,
        ys: std::ops::Range<u32>,
        matches: impl Fn([u8; 3]) -> bool,
    ) -> usize {
        ys.flat_map(|y| xs.clone().map(move |x| (x, y)))
            .filter(|&(x, y)| matches(self.pixel(x, y)))
            .count()
    }

    /// The share of the columns `xs` that have a pixel `matches` somewhere in the rows `ys`.
    pub(crate) fn columns_with(
        &self,
        xs: std::ops::Range<u32>,
        ys: std::ops::Range<u32>,
        matches: impl Fn([u8; 3]) -> bool,
    ) -> f64 {
        let width = xs.len().max(1);
        let hit = xs
            .filter(|&x| ys.clone().any(|y| matches(self.pixel(x, y))))
            .count();
        hit as f64 / width as f64
    }
}

/// `#rrggbb` as a colour.
pub(crate) fn colour(hex: &str) -> [u8; 3] {
    let hex = hex.trim_start_matches('#');
    let part = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).expect("a #rrggbb colour");
    [part(0), part(2), part(4)]
}

/// Whether `a` is `b` within `tolerance` in every channel.
pub(crate) fn near(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(&x, y)| x.abs_diff(y) <= tolerance)
}

/// Whether a pixel is dark enough to be text.
pub(crate) fn is_ink(px: [u8; 3]) -> bool {
    u32::from(px[0]) + u32::from(px[1]) + u32::from(px[2]) < 3 * 110
}

/// How many times `needle` occurs in `haystack`.
pub(crate) fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// The value of attribute `name` on the element whose opening tag starts with `tag_start`.
pub(crate) fn attribute(dom: &str, tag_start: &str, name: &str) -> Option<String> {
    let at = dom.find(tag_start)?;
    let tag_end = at + dom[at..].find('>')?;
    let tag = &dom[at..tag_end];
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = start + tag[start..].find('"')?;
    Some(tag[start..end].to_owned())
}

/// The `ppd` binary, for tests that drive it themselves.
pub(crate) fn ppd_path() -> PathBuf {
    ppd_bin()
}
