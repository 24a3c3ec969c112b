//! Peak memory of rendering hostile host facts, from the kernel's peak RSS
//! (`VmHWM`, reset through `/proc/self/clear_refs`): the pretty form used to
//! be built whole before it was cut at 64 KiB (an 8 MB results.json took
//! 1.09 GB). One test in this binary, so nothing else moves the peak.
#![allow(clippy::unwrap_used)]

mod common;

fn kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn hostile_host_facts_are_cut_while_written() {
    // 100 nested arrays around 500,000 zeros: 16 MB as a Value, about
    // 100 MB as pretty JSON (each zero indented by 200 spaces).
    let deep = (0..100).fold(
        serde_json::Value::Array(vec![serde_json::Value::from(0); 500_000]),
        |v, _| serde_json::Value::Array(vec![v]),
    );
    let mut r = common::synthetic();
    r.host_facts.insert("h".into(), deep);
    // "5" resets the peak RSS to the current RSS (Linux 4.0+).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = kib("VmHWM:");
    let page = nettune_report::render_html(&r).unwrap();
    let grown = kib("VmHWM:").saturating_sub(before);
    assert!(
        grown < 32 * 1024,
        "rendering took {} MiB more at its peak",
        grown / 1024
    );
    // The block keeps its 64 KiB (the HTML escaping cut it at 2000 characters).
    assert!(page.contains("(cut at 65536 bytes)"));
}
