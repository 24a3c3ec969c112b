//! The report opened in headless Chromium (Debian's `chromium`): it renders,
//! its charts are in the DOM with their labels, and a screenshot is a
//! non-trivial PNG. The input is the SYNTHETIC fixture
//! (crates/report/tests/fixtures, made-up numbers), written through the CLI.
//!
//! Skips with a reason when `chromium` is absent, except with `CI=true`,
//! where `.ci/run` installs it and this test must run.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a Chromium run may take (a cold start on a busy 2-core machine).
const DEADLINE: Duration = Duration::from_secs(120);

/// The charts the fixture has, with the start of each one's label.
const CHARTS: [(&str, &str); 11] = [
    (
        "chart-forest",
        "Change against the baseline, every metric and cell",
    ),
    ("chart-bars-0", "Median throughput of stream per cell"),
    ("chart-bars-1", "Median transactions of rr per cell"),
    ("chart-bars-2", "Median latency p99 of rr per cell"),
    ("chart-throughput-0", "Throughput of stream per interval"),
    ("chart-throughput-1", "Transactions of rr per interval"),
    ("chart-softirq-0", "Softirq % per CPU over time"),
    ("chart-softirq-1", "Softirq % per CPU over time"),
    ("chart-softirq-2", "Softirq % per CPU over time"),
    ("chart-cdf-0", "Latency CDF of rr"),
    ("chart-heatmap", "Softirq % per CPU and cell"),
];

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// Run Chromium headless on `page` with `extra` flags; its stdout, killed
/// at [`DEADLINE`].
fn run_chromium(bin: &Path, profile: &Path, page: &Path, extra: &[String]) -> String {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            assert!(status.success(), "chromium {extra:?} exited with {status}");
            break;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {extra:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().expect("reader")
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.get(..8)? != b"\x89PNG\r\n\x1a\n" || png.get(12..16)? != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(png.get(16..20)?.try_into().ok()?);
    let h = u32::from_be_bytes(png.get(20..24)?.try_into().ok()?);
    Some((w, h))
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but chromium is not installed (.ci/run installs it)"
        );
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures/synthetic-results.json");
    std::fs::copy(results, dir.path().join("results.json")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = dir.path().join("report.html");
    let profile = dir.path().join("chromium-profile");

    let dom = run_chromium(&bin, &profile, &page, &["--dump-dom".into()]);
    assert!(
        dom.contains("nettune report: synthetic-fixture"),
        "{dom:.2000}"
    );
    for (id, label) in CHARTS {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no {id} in the rendered DOM"));
        let open = dom[..at].rfind('<').unwrap();
        let end = at + dom[at..].find('>').unwrap();
        let tag = &dom[open..end];
        assert!(tag.starts_with("<svg"), "{id} is not an svg: {tag}");
        assert!(
            tag.contains(&format!("aria-label=\"{label}")),
            "{id}: {tag}"
        );
    }
    assert_eq!(dom.matches("<svg").count(), CHARTS.len());
    assert!(dom.contains("<text"), "no text drawn in the charts");
    assert!(!dom.contains("<script"), "script in the page");

    let shot = dir.path().join("shot.png");
    run_chromium(
        &bin,
        &profile,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert_eq!(png_size(&png), Some((1280, 2400)), "not the PNG asked for");
    // A blank 1280x2400 page compresses to a few kB; tables and charts do not.
    assert!(
        png.len() > 60_000,
        "screenshot of {} bytes looks blank",
        png.len()
    );
}
