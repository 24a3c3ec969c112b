//! Feed the client's decoder a hostile `report` frame whose doctor report
//! is `MB` megabytes of tiny JSON values, as a hostile server would send,
//! and print the process's peak RSS (VmHWM). Used for the figure in
//! docs/security.md:
//!
//! `cargo run --release -p nettune-engine --example hostile_report -- 64 [doctor|junk|offloads]`

use nettune_engine::proto::{self, Msg};
use nettune_engine::report::CpuReport;

/// A `report` frame of about `bytes` bytes. `doctor`: its doctor report
/// holds `[[],[],...]` in `findings`; `junk`: an unknown field holds that;
/// `offloads`: one interface with `"","",...` as its offloads (a list of
/// short strings, the typed report's costliest shape).
fn frame(kind: &str, bytes: usize) -> Vec<u8> {
    let cpu = serde_json::to_string(&CpuReport::default()).unwrap_or_default();
    let mut b = format!(
        r#"{{"type":"report","report":{{"workers":[],"cpu":{cpu},"rejected_connections":0,"#
    )
    .into_bytes();
    let (head, item, tail): (&[u8], &[u8], &[u8]) = match kind {
        "junk" => (br#""facts":{"ncpus":0,"interfaces":[]},"junk":["#, b"[],", b"[]]}}"),
        "offloads" => (
            br#""facts":{"ncpus":0,"interfaces":[{"name":"x","rx_queues":0,"tx_queues":0,"irqs":[],"offloads_on":["#,
            br#""","#,
            br#"""]}]}}}"#,
        ),
        _ => (
            br#""facts":{"ncpus":0,"interfaces":[]},"doctor":{"schema_version":1,"skipped":[],"findings":["#,
            b"[],",
            b"[]]}}}",
        ),
    };
    b.extend_from_slice(head);
    while b.len() < bytes {
        b.extend_from_slice(item);
    }
    b.extend_from_slice(tail);
    b
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let kind = std::env::args().nth(2).unwrap_or_else(|| "doctor".into());
    let body = frame(&kind, mb << 20);
    let before = vm_hwm_kib();
    let msg = proto::decode(&body);
    let after = vm_hwm_kib();
    if let Err(e) = &msg {
        eprintln!("{e}");
    }
    let ok = matches!(msg, Ok(Msg::Report { .. }));
    println!(
        "{kind} input {} MiB: peak RSS {} MiB before decoding, {} MiB after ({:.1} MiB per MiB of input); decoded: {ok}",
        body.len() >> 20,
        before >> 10,
        after >> 10,
        (after.saturating_sub(before)) as f64 / 1024.0 / (body.len() as f64 / 1048576.0)
    );
}
