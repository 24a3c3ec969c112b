//! A hostile server's `report` message costs the client about its own size
//! in memory, not the ~21 times a generic JSON tree costs: the peak RSS
//! (VmHWM) growth while decoding a 16 MiB report of tiny JSON values
//! (`[[],[],...]` as doctor findings, and as an unknown field) stays under
//! twice the input. One test alone in this file, so no other test's memory
//! shows in the process's peak.

#![allow(clippy::unwrap_used)]

use nettune_engine as engine;

use engine::proto::{self, Msg};

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let l = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn frame(field: &str, bytes: usize) -> Vec<u8> {
    let mut b = format!(
        r#"{{"type":"report","report":{{"facts":{{"ncpus":0,"interfaces":[]}},"workers":[],"cpu":{{"seconds":0,"cpus":[],"host_busy_us":0,"process_user_us":0,"process_sys_us":0,"note":null}},"rejected_connections":0,{field}"#
    )
    .into_bytes();
    while b.len() < bytes {
        b.extend_from_slice(b"[],");
    }
    b.extend_from_slice(b"[]]");
    if field.contains("doctor") {
        b.push(b'}');
    }
    b.extend_from_slice(b"}}");
    b
}

#[test]
fn a_hostile_report_costs_about_its_size() {
    const INPUT: usize = 16 << 20;
    for field in [
        r#""doctor":{"schema_version":1,"skipped":[],"findings":["#,
        r#""junk":["#,
    ] {
        let body = frame(field, INPUT);
        let before = vm_hwm_kib();
        let m = proto::decode(&body).unwrap();
        let after = vm_hwm_kib();
        let Msg::Report { report } = m else {
            panic!("not a report")
        };
        if field.contains("doctor") {
            let p = report.doctor.unwrap();
            assert!(p.report.unwrap().findings.is_empty());
            assert!(p.dropped > 0);
        }
        let grew = after.saturating_sub(before);
        eprintln!("{field}: VmHWM {before} KiB → {after} KiB");
        assert!(
            grew <= 2 * (INPUT as u64 >> 10),
            "decoding {} KiB of hostile report grew the peak RSS by {grew} KiB",
            INPUT >> 10
        );
    }
}
