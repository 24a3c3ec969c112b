//! Fidelity of the userspace delay line (run as root; see bench/delayline.sh),
//! through [`Lab`]s of 2 hosts built with the delay line
//! ([`MechanismChoice::Userspace`]):
//!
//! - the RTT it adds against the one asked for (p50 and p99 error of
//!   `ping -c 200 -i 0.01`) at 10, 50 and 100 ms;
//! - the jitter band (20 ms ± 10 ms asked);
//! - the loss of `nettune bench udp-stream --size 1200` at rising `--rate`s
//!   and the throughput of `tcp-stream`, through a 10 ms line without a
//!   rate limit and with a 100 Mbit/s one.
//!
//! - `nice`: the forwarder's tail at 50 ms RTT with its thread at nice 0
//!   and at nice -10, while a 300 Mbit/s UDP stream shares the line.
//!
//! - `rhel6-bdp` (not in the default set; 2 minutes): the BDP table of Red Hat's RHEL 6 tuning slides
//!   through the line: 100 Mbit/s, 100 ms RTT, `tcp-stream` for 20 s with
//!   `net.ipv4.tcp_rmem` max 174760, 1250000 and 1662500 set in the lab's
//!   two namespaces, then 1662500 with application buffers too.
//!
//! `delayline NETTUNE_BIN [SECTION...]`: sections `rtt`, `jitter`, `free`,
//! `rated`, `nice` (default: all), `rhel6-bdp`.

use model::bench::result::BenchResult;
use nettune_lab::{ChildGuard, DelayLine, DelaySpec, Lab, LabSpec, MechanismChoice, ADDR_B};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn lab(rtt_ms: u64, jitter_ms: u64, rate: Option<u64>) -> Option<Lab> {
    let spec = LabSpec {
        prefix: "ntdlb".into(),
        delay: Some(Duration::from_millis(rtt_ms)),
        jitter: (jitter_ms > 0).then(|| Duration::from_millis(jitter_ms)),
        rate,
        mechanism: MechanismChoice::Userspace,
        ..LabSpec::new(2, 1)
    };
    match Lab::build(spec) {
        Ok(l) => Some(l),
        Err(e) => {
            eprintln!("lab: {e}");
            None
        }
    }
}

/// Sorted RTTs (ms) of `ping -n -c COUNT -i 0.01 -W 2` from host 0 to host 1.
fn ping(l: &Lab, count: u32) -> Vec<f64> {
    let Some(to) = l.addr(1) else {
        return Vec::new();
    };
    let Ok(out) = l.hosts()[0]
        .command("ping")
        .args(["-n", "-c", &count.to_string(), "-i", "0.01", "-W", "2"])
        .arg(to.to_string())
        .output()
    else {
        eprintln!("ping failed to start");
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    rtts
}

/// The line's own lateness: packets written over 1 ms late, and the most.
fn late(l: &Lab) -> String {
    l.delay_stats(1).map_or(String::new(), |st| {
        format!(
            "line late > 1 ms: {} + {} packets (A→B + B→A), latest {:.3} / {:.3} ms",
            st.a_to_b.late_1ms.load(Ordering::Relaxed),
            st.b_to_a.late_1ms.load(Ordering::Relaxed),
            st.a_to_b.late_max_us.load(Ordering::Relaxed) as f64 / 1e3,
            st.b_to_a.late_max_us.load(Ordering::Relaxed) as f64 / 1e3,
        )
    })
}

fn rtt(rtt_ms: u64) {
    let Some(l) = lab(rtt_ms, 0, None) else {
        return;
    };
    let rtts = ping(&l, 200);
    let asked = rtt_ms as f64;
    println!(
        "RTT asked {asked} ms ({}): {} / 200 replies, RTT p50 {:.3} ms p99 {:.3} ms max {:.3} ms, error p50 {:+.3} ms p99 {:+.3} ms",
        l.delay_mechanism(),
        rtts.len(),
        pct(&rtts, 0.5),
        pct(&rtts, 0.99),
        pct(&rtts, 1.0),
        pct(&rtts, 0.5) - asked,
        pct(&rtts, 0.99) - asked,
    );
    println!("  {}", late(&l));
}

fn jitter() {
    let (d, j) = (20, 10);
    let Some(l) = lab(d, j, None) else { return };
    let rtts = ping(&l, 400);
    let (lo, hi) = ((d - j) as f64, (d + j) as f64);
    let inside = rtts.iter().filter(|r| (lo..=hi + 1.0).contains(*r)).count();
    println!(
        "RTT {d} ± {j} ms asked (band {lo}..{hi} ms): {} / 400 replies, min {:.3} p1 {:.3} p50 {:.3} p99 {:.3} max {:.3} ms, {inside} within band..band+1 ms",
        rtts.len(),
        pct(&rtts, 0.0),
        pct(&rtts, 0.01),
        pct(&rtts, 0.5),
        pct(&rtts, 0.99),
        pct(&rtts, 1.0),
    );
    println!("  {}", late(&l));
}

/// `tc -s qdisc` drops and `ip -s link` TX drops of host 0's link end.
fn drops(l: &Lab) -> String {
    let h0 = &l.hosts()[0];
    let tx = h0
        .ip(&["-s", "link", "show", "v1"])
        .unwrap_or_default()
        .lines()
        .skip_while(|x| !x.trim_start().starts_with("TX:"))
        .nth(1)
        .and_then(|x| x.split_whitespace().nth(3).map(String::from))
        .unwrap_or_default();
    let q = h0.sh("tc -s qdisc show dev v1").unwrap_or_default();
    let qd: Vec<&str> = q
        .split("dropped ")
        .skip(1)
        .filter_map(|s| s.split([',', ' ']).next())
        .collect();
    format!("v1 TX dropped {tx}, qdisc dropped {qd:?}")
}

fn bench(l: &Lab, bin: &str, args: &[&str]) -> Option<BenchResult> {
    let to = l.addr(1)?.to_string();
    let out = l.hosts()[0]
        .command(bin)
        .args(["bench", &to, "--json", "--warmup", "1"])
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        println!(
            "  bench {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| println!("  bench {args:?}: unreadable JSON: {e}"))
        .ok()
}

fn server(l: &Lab, bin: &str) -> Option<ChildGuard> {
    let s = l.hosts()[1].spawn(bin, &["serve", "-4"]).ok()?;
    std::thread::sleep(Duration::from_millis(700));
    Some(s)
}

fn streams(bin: &str, rate: Option<u64>, udp_rates: &[&str]) {
    let Some(l) = lab(10, 0, rate) else { return };
    let Some(_srv) = server(&l, bin) else {
        eprintln!("could not start {bin} serve");
        return;
    };
    let limit = rate.map_or("no rate limit".to_string(), |r| {
        format!("tbf {} Mbit/s", r / 1_000_000)
    });
    if let Some(s) = l.delay_spec() {
        println!(
            "10 ms RTT, {limit}: queue limit {} packets / {} bytes per direction",
            s.limit_packets, s.limit_bytes
        );
    }
    for r in udp_rates {
        let Some(st) = l.delay_stats(1) else { return };
        let over0 = st.a_to_b.overflow.load(Ordering::Relaxed);
        let res = bench(
            &l,
            bin,
            &[
                "--test",
                "udp-stream",
                "--size",
                "1200",
                "--rate",
                r,
                "--duration",
                "3",
            ],
        );
        let over = st.a_to_b.overflow.load(Ordering::Relaxed) - over0;
        if let Some(res) = res {
            for d in &res.results {
                let loss = d.udp.map(|u| u.loss_pct).unwrap_or(f64::NAN);
                println!(
                    "  udp-stream 1200 B --rate {r}: received {:.1} Mbit/s, loss {loss:.3} %, line overflow {over}, {}",
                    d.bits_per_sec / 1e6,
                    drops(&l)
                );
            }
        }
    }
    for _ in 0..2 {
        if let Some(res) = bench(&l, bin, &["--test", "tcp-stream", "--duration", "5"]) {
            for d in &res.results {
                println!(
                    "  tcp-stream 5 s: {:.1} Mbit/s, retransmits {}, {}",
                    d.bits_per_sec / 1e6,
                    d.retransmits,
                    drops(&l)
                );
            }
        }
    }
    println!("  {}", late(&l));
    if let Some(st) = l.delay_stats(1) {
        println!(
            "  line: forwarded {} / {}, polls {}, buffers {}, held max {} / {}, niced {}",
            st.a_to_b.forwarded.load(Ordering::Relaxed),
            st.b_to_a.forwarded.load(Ordering::Relaxed),
            st.polls.load(Ordering::Relaxed),
            st.buffers.load(Ordering::Relaxed),
            st.a_to_b.held_max.load(Ordering::Relaxed),
            st.b_to_a.held_max.load(Ordering::Relaxed),
            st.niced.load(Ordering::Relaxed),
        );
    }
}

/// Ping through a bare [`DelayLine`] of 25 ms each way at `nice`, with a
/// 300 Mbit/s UDP stream through the same line.
fn nice(bin: &str, nice: i32) {
    let spec = DelaySpec {
        delay: Duration::from_millis(25),
        nice,
        ..DelaySpec::default()
    };
    let Ok(dl) = DelayLine::create("ntdlb", spec) else {
        eprintln!("delay line failed");
        return;
    };
    let Ok(_srv) = dl.b().spawn(bin, &["serve", "-4"]) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(700));
    let load = dl
        .a()
        .command(bin)
        .args(["bench", ADDR_B, "--test", "udp-stream", "--size", "1200"])
        .args(["--rate", "300M", "--duration", "4", "--warmup", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    std::thread::sleep(Duration::from_millis(300));
    let out = dl
        .a()
        .command("ping")
        .args(["-n", "-c", "200", "-i", "0.01", "-W", "2", ADDR_B])
        .output();
    if let Ok(mut l) = load {
        let _ = l.wait();
    }
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    println!(
        "nice {nice} (applied: {}), 50 ms RTT under a 300 Mbit/s UDP stream: {} / 200 replies, p50 {:.3} p99 {:.3} max {:.3} ms",
        dl.stats().niced.load(Ordering::Relaxed),
        rtts.len(),
        pct(&rtts, 0.5),
        pct(&rtts, 0.99),
        pct(&rtts, 1.0),
    );
}

fn rhel6_bdp(bin: &str) {
    let Some(l) = lab(100, 0, Some(100_000_000)) else {
        return;
    };
    let Some(_srv) = server(&l, bin) else { return };
    for (max, app) in [
        (174_760, false),
        (1_250_000, false),
        (1_662_500, false),
        (1_662_500, true),
    ] {
        for h in l.hosts() {
            if let Err(e) = h.sh(&format!("sysctl -qw net.ipv4.tcp_rmem='4096 87380 {max}'")) {
                eprintln!("sysctl in {}: {e}", h.name());
                return;
            }
        }
        let mut args = vec!["--test", "tcp-stream", "--duration", "20"];
        if app {
            args.extend(["--sndbuf", "1662500", "--rcvbuf", "1662500"]);
        }
        if let Some(res) = bench(&l, bin, &args) {
            for d in &res.results {
                println!(
                    "rhel6-bdp tcp_rmem max {max}{}: {:.1} Mbit/s, retransmits {}",
                    if app {
                        " + SO_SNDBUF/SO_RCVBUF 1662500"
                    } else {
                        ""
                    },
                    d.bits_per_sec / 1e6,
                    d.retransmits
                );
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "nettune".into());
    let mut sections: Vec<String> = args.collect();
    if sections.is_empty() {
        sections = ["rtt", "jitter", "free", "rated", "nice"]
            .map(String::from)
            .to_vec();
    }
    for s in &sections {
        match s.as_str() {
            "rtt" => [10, 50, 100].into_iter().for_each(rtt),
            "jitter" => jitter(),
            "free" => streams(&bin, None, &["100M", "200M", "300M", "400M", "600M"]),
            "rated" => streams(&bin, Some(100_000_000), &["50M", "90M", "95M"]),
            "rhel6-bdp" => rhel6_bdp(&bin),
            "nice" => {
                for _ in 0..2 {
                    nice(&bin, 0);
                    nice(&bin, -10);
                }
            }
            other => eprintln!("unknown section {other}"),
        }
    }
}
