//! Measurement (not a timing benchmark): how many runs `--until-ci` needs
//! against a fixed repeat count for the same interval width, on simulated
//! noisy metrics.
//!
//! Run: `cargo bench -p nettune-model --bench until_ci`
//!
//! For each simulated metric, sequential stopping (target half-width T % of the
//! median, minimum 5, cap 100 repeats) runs `TRIALS` times; we report the runs
//! it used, how often it reached the target, and how often its interval held
//! the true median. The fixed design is the smallest repeat count whose
//! interval reaches the same half-width in at least as large a share of trials
//! as sequential stopping did (you choose a fixed count before seeing the data,
//! so it must suit the noisy case in advance).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use nettune_model::stats::{
    median_interval, BootstrapConfig, Decision, SplitMix64, StopReason, StopRule,
};

const TRIALS: u64 = 200;
const TARGET_PCT: f64 = 2.0;
const MIN: usize = 5;
const CAP: usize = 100;
const RESAMPLES: usize = 1000;

struct Metric {
    name: &'static str,
    /// Draw one run's value.
    draw: fn(&mut SplitMix64) -> f64,
    /// The distribution's true median.
    median: f64,
}

fn quiet(r: &mut SplitMix64) -> f64 {
    r.normal(100.0, 1.0)
}
fn moderate(r: &mut SplitMix64) -> f64 {
    r.normal(100.0, 4.0)
}
fn noisy(r: &mut SplitMix64) -> f64 {
    r.normal(100.0, 5.0)
}
/// 90 % of runs N(100, 2), 10 % disturbed runs N(70, 10): heavy lower tail.
fn disturbed(r: &mut SplitMix64) -> f64 {
    if r.next_f64() < 0.1 {
        r.normal(70.0, 10.0)
    } else {
        r.normal(100.0, 2.0)
    }
}

fn true_median(draw: fn(&mut SplitMix64) -> f64) -> f64 {
    let mut r = SplitMix64::new(99);
    let mut v: Vec<f64> = (0..400_001).map(|_| draw(&mut r)).collect();
    v.sort_by(f64::total_cmp);
    v[200_000]
}

fn cfg(seed: u64) -> BootstrapConfig {
    BootstrapConfig {
        resamples: RESAMPLES,
        level: 0.95,
        seed,
        ..BootstrapConfig::default()
    }
}

fn main() {
    let metrics = [
        Metric {
            name: "quiet    (sd 1 %)",
            draw: quiet,
            median: 100.0,
        },
        Metric {
            name: "moderate (sd 4 %)",
            draw: moderate,
            median: 100.0,
        },
        Metric {
            name: "noisy    (sd 5 %)",
            draw: noisy,
            median: 100.0,
        },
        Metric {
            name: "disturbed (10 % outliers)",
            draw: disturbed,
            median: true_median(disturbed),
        },
    ];
    println!(
        "until-ci {TARGET_PCT} %, min {MIN}, cap {CAP}, {RESAMPLES} resamples, {TRIALS} trials per metric"
    );
    println!(
        "{:<27} {:>6} {:>5} {:>5} {:>5} {:>9} {:>8} | {:>9} {:>9} {:>8}",
        "metric",
        "mean",
        "p50",
        "p90",
        "max",
        "reached",
        "covered",
        "fixed n",
        "reached",
        "covered"
    );
    let (mut seq_total, mut fixed_total, mut worst_fixed) = (0usize, 0usize, 0usize);
    for (k, m) in metrics.iter().enumerate() {
        let mut rng = SplitMix64::new(1000 + k as u64);
        let mut used = Vec::new();
        let (mut reached, mut covered) = (0u64, 0u64);
        for t in 0..TRIALS {
            let rule = StopRule {
                bootstrap: cfg(t),
                ..StopRule::new(TARGET_PCT, MIN, CAP)
            };
            let mut v = Vec::new();
            let reason = loop {
                if let Decision::Stop(s) = rule.decide(&v).unwrap() {
                    break s;
                }
                v.push((m.draw)(&mut rng));
            };
            if matches!(reason, StopReason::Converged { .. }) {
                reached += 1;
            }
            if median_interval(&v, &cfg(t)).unwrap().contains(m.median) {
                covered += 1;
            }
            used.push(v.len());
        }
        used.sort_unstable();
        let mean = used.iter().sum::<usize>() as f64 / used.len() as f64;
        let p = |q: f64| used[((used.len() - 1) as f64 * q) as usize];
        // Smallest fixed n reaching the target at least as often.
        let mut fixed = None;
        for n in MIN..=CAP {
            let (mut ok, mut held) = (0u64, 0u64);
            for t in 0..TRIALS {
                let v: Vec<f64> = (0..n).map(|_| (m.draw)(&mut rng)).collect();
                let i = median_interval(&v, &cfg(t)).unwrap();
                if i.half_width_pct().is_some_and(|h| h <= TARGET_PCT) {
                    ok += 1;
                }
                if i.contains(m.median) {
                    held += 1;
                }
            }
            if ok * 10 >= (reached * 10).min(TRIALS * 9) {
                fixed = Some((n, ok, held));
                break;
            }
        }
        let (fixed_n, fixed_col) = match fixed {
            Some((n, ok, held)) => (
                n,
                format!(
                    "{n:>9} {:>8.0}% {:>7.0}%",
                    ok as f64 * 100.0 / TRIALS as f64,
                    held as f64 * 100.0 / TRIALS as f64
                ),
            ),
            None => (
                CAP,
                format!("{:>9} {:>9} {:>8}", format!(">{CAP}"), "-", "-"),
            ),
        };
        seq_total += used.iter().sum::<usize>();
        fixed_total += fixed_n * TRIALS as usize;
        worst_fixed = worst_fixed.max(fixed_n);
        println!(
            "{:<27} {:>6.1} {:>5} {:>5} {:>5} {:>8.0}% {:>7.0}% | {}",
            m.name,
            mean,
            p(0.5),
            p(0.9),
            used[used.len() - 1],
            reached as f64 * 100.0 / TRIALS as f64,
            covered as f64 * 100.0 / TRIALS as f64,
            fixed_col,
        );
    }
    let per_trial = |x: usize| x as f64 / TRIALS as f64;
    println!(
        "runs per suite of these {} metrics: until-ci {:.1}, fixed n tuned per metric {:.1}, one fixed n for all ({} each) {}",
        metrics.len(),
        per_trial(seq_total),
        per_trial(fixed_total),
        worst_fixed,
        worst_fixed * metrics.len()
    );
}
