//! Fidelity of the userspace delay line (run as root; see bench/delayline.sh):
//! the RTT it adds against the one asked for (p50 and p99 error, from
//! `ping -c 200 -i 0.01`), and the loss of `nettune bench udp-stream` at a
//! few `--rate`s through it.
//!
//! `delayline NETTUNE_BIN [RATE...]`: RATEs default to 10M 50M 100M 200M 400M.

use nettune_lab::{DelayLine, DelaySpec, ADDR_B};
use std::time::Duration;

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn line(delay_ms: u64) -> Option<DelayLine> {
    let spec = DelaySpec {
        delay: Duration::from_millis(delay_ms),
        ..DelaySpec::default()
    };
    match DelayLine::create("ntdlb", spec) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("delay line: {e}");
            None
        }
    }
}

fn rtt(delay_ms: u64) {
    let Some(dl) = line(delay_ms) else { return };
    let Ok(out) = dl
        .a()
        .command("ping")
        .args(["-n", "-c", "200", "-i", "0.01", "-W", "2", ADDR_B])
        .output()
    else {
        eprintln!("ping failed to start");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    let asked = 2.0 * delay_ms as f64;
    println!(
        "delay {delay_ms} ms each way (RTT asked {asked} ms): {} / 200 replies, RTT p50 {:.3} ms p99 {:.3} ms, error p50 {:+.3} ms p99 {:+.3} ms",
        rtts.len(),
        pct(&rtts, 0.5),
        pct(&rtts, 0.99),
        pct(&rtts, 0.5) - asked,
        pct(&rtts, 0.99) - asked,
    );
}

/// Loss % values in a bench JSON document.
fn loss_values(json: &str) -> Vec<f64> {
    json.split("\"loss_pct\":")
        .skip(1)
        .filter_map(|s| s.trim_start().split([',', '}']).next()?.trim().parse().ok())
        .collect()
}

fn rates(bin: &str, rates: &[String]) {
    let Some(dl) = line(10) else { return };
    let Ok(server) = dl.b().spawn(bin, &["serve", "-4"]) else {
        eprintln!("could not start {bin} serve");
        return;
    };
    std::thread::sleep(Duration::from_millis(700));
    for r in rates {
        let before = dl
            .stats()
            .a_to_b
            .overflow
            .load(std::sync::atomic::Ordering::Relaxed);
        let out = dl
            .a()
            .command(bin)
            .args(["bench", ADDR_B, "--test", "udp-stream", "--size", "1200"])
            .args(["--rate", r, "--duration", "3", "--json"])
            .output();
        let after = dl
            .stats()
            .a_to_b
            .overflow
            .load(std::sync::atomic::Ordering::Relaxed);
        let werr = dl
            .stats()
            .a_to_b
            .write_errors
            .load(std::sync::atomic::Ordering::Relaxed);
        let dev = &dl.devices()[0];
        let tx = dl
            .a()
            .ip(&["-s", "link", "show", dev])
            .unwrap_or_default()
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("TX:"))
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        match out {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let loss = loss_values(&text);
                let worst = loss.iter().copied().fold(0.0, f64::max);
                println!(
                    "udp-stream --size 1200 --rate {r} over 10 ms: loss {worst:.3} % (values {loss:?}), queue overflow drops {}; forwarder write errors so far {werr}; A device TX (bytes packets errors dropped ...) {tx}",
                    after.saturating_sub(before)
                );
            }
            Ok(o) => println!(
                "udp-stream --rate {r}: bench failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => println!("udp-stream --rate {r}: {e}"),
        }
    }
    drop(server);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let bin = args.next().unwrap_or_else(|| "nettune".into());
    let mut asked: Vec<String> = args.collect();
    if asked.is_empty() {
        asked = ["10M", "50M", "100M", "200M", "400M"]
            .map(String::from)
            .to_vec();
    }
    rtt(10);
    rtt(50);
    rates(&bin, &asked);
}
