//! Issue 16, item 6: the kernel accepts ESC and BEL in interface names (and
//! in IRQ names, the hostname, the kernel release), so a host can carry
//! text that would drive the terminal. Every human output shows such text
//! escaped (`\x1b`), never raw; JSON stays exact (serde escapes it).

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{bin, copy, Copy};
use std::fs;

/// The hostile interface name: red colour and a bell (8 bytes; the kernel
/// refuses only `/`, `:`, whitespace and names over 15 bytes).
const NAME: &str = "e\x1b[31m\x07x";
/// How every human output must show it.
const SHOWN: &str = "e\\x1b[31m\\x07x";
const HOST: &str = "ip\x1b]0;owned\x07-10";
const RELEASE: &str = "6.1\x1b[2J\u{9b}1m";

/// nic-ena-allowance (ENA ens5 with 3 recorded samples) with the NIC, its
/// IRQs, the hostname and the kernel release made hostile.
fn hostile() -> Copy {
    let c = copy("nic-ena-allowance");
    fixture_copy::rename_iface(&c.root, "ens5", NAME);
    assert!(c.root.join("sys/class/net").join(NAME).exists());
    let k = c.root.join("proc/sys/kernel");
    fs::write(k.join("hostname"), format!("{HOST}\n")).unwrap();
    fs::write(k.join("osrelease"), format!("{RELEASE}\n")).unwrap();
    c
}

/// The first raw control character of `out` (newline and tab are layout).
fn raw_control(out: &[u8]) -> Option<(usize, char)> {
    String::from_utf8_lossy(out)
        .char_indices()
        .find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
}

fn run(c: &Copy, args: &[&str]) -> (String, String) {
    let out = bin()
        .args(args)
        .arg("--root")
        .arg(&c.root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    if let Some((i, ch)) = raw_control(&out.stdout) {
        panic!("{args:?}: raw {ch:?} at byte {i} of stdout:\n{text}");
    }
    if let Some((i, ch)) = raw_control(&out.stderr) {
        panic!("{args:?}: raw {ch:?} at byte {i} of stderr:\n{err}");
    }
    (text, err)
}

#[test]
fn inspect_escapes_names_hostname_and_release() {
    let c = hostile();
    let (out, _) = run(&c, &["inspect"]);
    assert!(out.contains(SHOWN), "{out}");
    assert!(out.contains("ip\\x1b]0;owned\\x07-10"), "{out}");
    assert!(out.contains("6.1\\x1b[2J\\u{9b}1m"), "{out}");
    // The IRQ names (NAME-Tx-Rx-0) too, with --iface selecting the NIC.
    let (out, _) = run(&c, &["inspect", "--iface", NAME]);
    assert!(out.contains(&format!("{SHOWN}-Tx-Rx-0")), "{out}");
    // JSON keeps the exact name (serde's \u001b escapes).
    let out = bin()
        .args(["inspect", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    // (serde escapes C0 controls; a C1 one such as U+009B is valid JSON text.)
    assert!(!out.stdout.iter().any(|b| *b < 0x20 && *b != b'\n'));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v
        .to_string()
        .contains(&serde_json::to_string(NAME).unwrap()));
}

#[test]
fn stat_over_recorded_samples_escapes_names() {
    let c = hostile();
    let (out, _) = run(&c, &["stat", "-c", "2"]);
    assert!(out.contains(SHOWN), "{out}");
}

#[test]
fn doctor_escapes_names() {
    let c = hostile();
    let (out, _) = run(&c, &["doctor"]);
    assert!(out.contains(SHOWN) || out.contains("ip\\x1b"), "{out}");
}

#[test]
fn plan_and_dry_run_escape_names() {
    let c = hostile();
    for p in ["throughput", "latency"] {
        let (out, _) = run(&c, &["plan", "--profile", p]);
        assert!(!out.is_empty());
        let state = c.state.to_str().unwrap().to_string();
        run(
            &c,
            &["apply", "--profile", p, "--dry-run", "--state-dir", &state],
        );
        run(&c, &["profile", "show", p]);
    }
}

#[test]
fn top_screen_escapes_names() {
    use nettune::top::draw::draw;
    use nettune::top::findings::DoctorFindings;
    use nettune::top::App;
    let c = hostile();
    let root = host::Root::new(&c.root);
    let snap = host::read_snapshot(&root);
    let samples = host::capture::read_samples(&root).unwrap();
    let mut app = App::new(
        samples[0].at,
        snap,
        vec![],
        Box::new(DoctorFindings::new(root.clone())),
    );
    for s in samples {
        app.sample(s);
    }
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 50)).unwrap();
    t.draw(|f| draw(f, &app.screen())).unwrap();
    let text: String = t
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(raw_control(text.as_bytes()).is_none(), "{text:?}");
    assert!(text.contains(SHOWN), "{}", t.backend());
}
