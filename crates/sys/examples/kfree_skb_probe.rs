//! Benchmark-only watcher for bench/drops_cost.py: attach a BPF program on
//! the `kfree_skb` raw tracepoint for SECS seconds (or until killed).
//!
//!     kfree_skb_probe empty|counter [SECS]
//!
//! `empty`: `r0 = 0; exit` (the floor any BPF probe there costs);
//! `counter`: nettune's drop counter by reason (argument 2, 128 slots).
//! Needs root (CAP_BPF and CAP_PERFMON).

use nettune_sys::bpf::{possible_cpus, ArgCounter, EmptyProgram};
use std::time::Duration;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3600);
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|l| possible_cpus(&l))
        .unwrap_or(1);
    let _probe: Box<dyn std::fmt::Debug> = match mode.as_str() {
        "empty" => Box::new(EmptyProgram::attach("kfree_skb")?),
        "counter" => Box::new(ArgCounter::attach("kfree_skb", 2, 128, cpus)?),
        _ => {
            eprintln!("usage: kfree_skb_probe empty|counter [SECS]");
            std::process::exit(2);
        }
    };
    std::thread::sleep(Duration::from_secs(secs));
    Ok(())
}
