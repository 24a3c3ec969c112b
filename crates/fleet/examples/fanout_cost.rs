//! The controller's cost of a fleet fan-out: `N` local agents (`nettune
//! agent --stdio` children), each asked `hello` then `inspect` on a small
//! fixture root (or `verify` against `STATE_DIR`, a journal of that root,
//! when given), at most `PARALLEL` at once. Prints the wall time, this
//! process's peak RSS (`VmHWM`) and its CPU time (user + system, from
//! /proc/self/stat at 100 ticks a second; the agents' own CPU apart).
//!
//! ```text
//! cargo build -p nettune && cargo run -p nettune-fleet --example fanout_cost -- \
//!     target/debug/nettune 200 64 tests/fixtures/real-interrupts/ice-ctrl-vector
//! # verify: a copy of a fixture with an applied plan
//! cp -a tests/fixtures/c4-8xlarge /tmp/r && nettune apply --root /tmp/r --state-dir /tmp/s \
//!     --profile throughput --yes && ... fanout_cost target/debug/nettune 200 64 /tmp/r /tmp/s
//! ```

use model::inventory::Transport;
use nettune_fleet::fanout::Options;
use nettune_fleet::ops::{run, Job, Op};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn status_kb(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// (own user+system, waited children's user+system) in seconds.
fn cpu_s() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    let (u, s2, cu, cs) = (f.first()?, f.get(1)?, f.get(2)?, f.get(3)?);
    Some((
        (u.saturating_add(*s2)) as f64 / 100.0,
        (cu.saturating_add(*cs)) as f64 / 100.0,
    ))
}

fn main() {
    let mut a = std::env::args().skip(1);
    let (Some(exe), Some(n), Some(parallel), Some(root)) = (a.next(), a.next(), a.next(), a.next())
    else {
        eprintln!("usage: fanout_cost NETTUNE N PARALLEL FIXTURE_ROOT [STATE_DIR]");
        std::process::exit(2);
    };
    let (Ok(n), Ok(parallel)) = (n.parse::<usize>(), parallel.parse::<usize>()) else {
        eprintln!("N and PARALLEL are numbers");
        std::process::exit(2);
    };
    let state = a.next().map(PathBuf::from);
    let op = if state.is_some() {
        Op::Verify
    } else {
        Op::Inspect
    };
    let jobs: Vec<Job> = (0..n)
        .map(|i| Job {
            host: format!("h{i}"),
            transport: Transport::Local,
            root: Some(PathBuf::from(&root)),
            state_dir: state.clone(),
            remote_exe: None,
        })
        .collect();
    let opts = Options {
        parallel,
        deadline: Duration::from_secs(60),
        copy: false,
        version: env!("CARGO_PKG_VERSION").to_string(),
        exe: PathBuf::from(exe),
    };
    let rss0 = status_kb("VmRSS:").unwrap_or(0);
    let t = Instant::now();
    let reports = run(&jobs, &op, &opts);
    let wall = t.elapsed();
    let failed = nettune_fleet::summary::verdict(&reports).failed;
    if let Some(r) = reports.iter().find(|r| r.outcome.failed()) {
        eprintln!("first failure: {}: {:?}", r.host, r.error);
    }
    let (own, children) = cpu_s().unwrap_or((0.0, 0.0));
    println!(
        "{} to {n} agents, parallel {parallel}: {} ok, {} failed; wall {:.3} s; controller peak RSS {} KiB (before the run {} KiB); controller CPU {:.2} s; agents' CPU {:.2} s",
        if state.is_some() { "verify" } else { "hello+inspect" },
        n.saturating_sub(failed.len()),
        failed.len(),
        wall.as_secs_f64(),
        status_kb("VmHWM:").unwrap_or(0),
        rss0,
        own,
        children
    );
}
