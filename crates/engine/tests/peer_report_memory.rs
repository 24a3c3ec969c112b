//! A hostile server's `report` message costs the client about its own size
//! in memory, not the ~21 times a generic JSON tree costs: the peak RSS
//! (VmHWM) growth while decoding a 16 MiB report of tiny JSON values
//! (`[[],[],...]` as doctor findings and as an unknown field, `"","",...` as
//! offloads and as server notes) stays under twice the input. One test
//! alone in this file, so no other test's memory shows in the process's
//! peak.

#![allow(clippy::unwrap_used)]

use nettune_engine as engine;

use engine::proto::{self, Msg};

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A `report` frame of about `bytes` bytes: `head`, then `item` repeated,
/// then `tail`.
fn frame(head: &str, item: &[u8], tail: &str, bytes: usize) -> Vec<u8> {
    let mut b = format!(
        r#"{{"type":"report","report":{{"workers":[],"cpu":{{"seconds":0,"cpus":[],"host_busy_us":0,"process_user_us":0,"process_sys_us":0,"note":null}},"rejected_connections":0,{head}"#
    )
    .into_bytes();
    while b.len() < bytes {
        b.extend_from_slice(item);
    }
    b.extend_from_slice(tail.as_bytes());
    b
}

const FACTS: &str = r#""facts":{"ncpus":0,"interfaces":[]},"#;

#[test]
fn a_hostile_report_costs_about_its_size() {
    const INPUT: usize = 16 << 20;
    let iface = r#""facts":{"ncpus":0,"interfaces":[{"name":"x","rx_queues":0,"tx_queues":0,"irqs":[],"offloads_on":["#;
    let cases: [(&str, String, &[u8], &str); 4] = [
        (
            "doctor findings",
            format!(r#"{FACTS}"doctor":{{"schema_version":1,"skipped":[],"findings":["#),
            b"[],",
            "[]]}}}",
        ),
        (
            "an unknown field",
            format!(r#"{FACTS}"junk":["#),
            b"[],",
            "[]]}}",
        ),
        ("offloads", iface.to_string(), b"\"\",", "\"\"]}]}}}"),
        (
            "server notes",
            format!(r#"{FACTS}"notes":["#),
            b"\"\",",
            "\"\"]}}",
        ),
    ];
    for (what, head, item, tail) in cases {
        let body = frame(&head, item, tail, INPUT);
        // Reset the peak to the current RSS (Linux 4.0+), so each case is
        // measured from its own start.
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let before = vm_hwm_kib();
        let m = proto::decode(&body).unwrap();
        let after = vm_hwm_kib();
        let Msg::Report { report } = m else {
            panic!("not a report")
        };
        if what == "doctor findings" {
            let p = report.doctor.unwrap();
            assert!(p.report.unwrap().findings.is_empty());
            assert!(p.dropped > 0);
        }
        let grew = after.saturating_sub(before);
        eprintln!("{what}: VmHWM {before} KiB → {after} KiB");
        assert!(
            grew <= 2 * (INPUT as u64 >> 10),
            "decoding {} KiB of hostile {what} grew the peak RSS by {grew} KiB",
            INPUT >> 10
        );
    }
}
