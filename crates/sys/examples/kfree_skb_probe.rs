//! Benchmark-only watcher for bench/drops_cost.py: attach a BPF program on
//! the `kfree_skb` raw tracepoint, or at fentry of the kernel function
//! every reasoned drop goes through, for SECS seconds (or until killed).
//!
//!     kfree_skb_probe empty|counter|fentry-empty|fentry-counter [SECS]
//!
//! `empty`: `r0 = 0; exit` on the raw tracepoint (the floor any BPF probe
//! there costs); `counter`: nettune's drop counter by reason (argument 2,
//! 128 slots) there; `fentry-empty` and `fentry-counter`: the same two at
//! fentry of `sk_skb_reason_drop` (6.10+) or `kfree_skb_reason` (5.17 to
//! 6.9), found in /sys/kernel/btf/vmlinux. Needs root (CAP_BPF and
//! CAP_PERFMON). The counters print what they counted by reason number
//! when SECS have passed (not when killed).

use nettune_sys::bpf::{possible_cpus, ArgCounter, EmptyProgram, Hook};
use nettune_sys::btf::{drop_function, Btf};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3600);
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|l| possible_cpus(&l))
        .unwrap_or(1);
    let fentry = || -> Result<_, Box<dyn std::error::Error>> {
        let data = std::fs::read("/sys/kernel/btf/vmlinux")?;
        let f = drop_function(&Btf::parse(&data)?)?;
        eprintln!(
            "fentry on {} (BTF id {}), reason is argument {}, values below {} skipped",
            f.name, f.btf_id, f.reason_arg, f.skip
        );
        Ok(f)
    };
    let mut counter = None;
    let _empty = match mode.as_str() {
        "empty" => Some(EmptyProgram::attach("kfree_skb")?),
        "counter" => {
            counter = Some(ArgCounter::attach("kfree_skb", 2, 128, cpus)?);
            None
        }
        "fentry-empty" => {
            let f = fentry()?;
            Some(EmptyProgram::attach_to(Hook::Fentry { btf_id: f.btf_id })?)
        }
        "fentry-counter" => {
            let f = fentry()?;
            let hook = Hook::Fentry { btf_id: f.btf_id };
            counter = Some(ArgCounter::attach_to(
                hook,
                f.reason_arg,
                f.skip,
                128,
                cpus,
            )?);
            None
        }
        _ => {
            eprintln!("usage: kfree_skb_probe empty|counter|fentry-empty|fentry-counter [SECS]");
            std::process::exit(2);
        }
    };
    std::thread::sleep(Duration::from_secs(secs));
    if let Some(c) = counter {
        // what was counted, by reason number (a check that it counts)
        let counts = c.counts();
        let by: Vec<String> = counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(r, n)| format!("{r}:{n}"))
            .collect();
        println!(
            "counted {} by reason {}",
            counts.iter().sum::<u64>(),
            by.join(" ")
        );
    }
    Ok(())
}
