//! Whether a measurement can be trusted as a measurement of the path: what
//! else used the machine while a run measured ([`OthersLoad`]), and whether
//! a cell's runs fell into two states far apart ([`two_states`]), the rule
//! lab, experiment and autotune share.

pub use crate::results::OthersLoad;
use crate::results::{LimitGroup, RunRecord};

/// Other processes' CPU, in CPUs' worth, from which a run is said to have
/// run on a busy machine: a fifth of a core taken from the measurement.
pub const BUSY_OTHERS_CPUS: f64 = 0.2;
/// Mean steal % over the CPUs from which a run is said to have run on a
/// busy host (the hypervisor gave the CPUs to someone else).
pub const BUSY_STEAL_PCT: f64 = 5.0;

impl OthersLoad {
    /// Whether the run shared the machine enough to say so.
    pub fn is_busy(&self) -> bool {
        self.cpus >= BUSY_OTHERS_CPUS || self.steal_pct >= BUSY_STEAL_PCT
    }
}

/// The note of a cell some of whose runs ran on a busy machine: `the machine
/// was busy in 8 of 20 runs of baseline: other processes took up to 0.71
/// CPU (busiest: bash 1.42 CPU-s), steal up to 0.0 %; those runs measured
/// the path beside that load`. `None` when no run was busy.
pub fn busy_note(cell: &str, runs: &[RunRecord]) -> Option<String> {
    busy_of(
        cell,
        runs.iter().filter(|r| !r.warmup).map(|r| r.others.as_ref()),
    )
}

/// [`busy_note`] over each run's load (`None`: the run did not say).
pub fn busy_of<'a>(
    what: &str,
    loads: impl IntoIterator<Item = Option<&'a OthersLoad>>,
) -> Option<String> {
    let mut n = 0usize;
    let mut busy: Vec<&OthersLoad> = Vec::new();
    for l in loads {
        n += 1;
        if let Some(l) = l.filter(|l| l.is_busy()) {
            busy.push(l);
        }
    }
    if busy.is_empty() {
        return None;
    }
    let cpus = busy.iter().map(|o| o.cpus).fold(0.0, f64::max);
    let steal = busy.iter().map(|o| o.steal_pct).fold(0.0, f64::max);
    let top = busy
        .iter()
        .max_by(|a, b| a.cpus.total_cmp(&b.cpus))
        .and_then(|o| o.top.as_deref())
        .map(|t| format!(" (busiest: {t})"))
        .unwrap_or_default();
    Some(format!(
        "the machine was busy in {} of {n} runs of {what}: other processes took up to {} CPU{top}, steal up to {} %; those runs measured the path beside that load",
        busy.len(),
        crate::metric::num(cpus),
        crate::metric::num(steal),
    ))
}

/// Runs each of two states needs before [`two_states`] names them.
pub const STATE_MIN_RUNS: usize = 2;
/// How far apart (ratio of medians, and of the nearest values across the
/// gap when split by value) two states lie before [`two_states`] names them.
pub const STATE_MIN_RATIO: f64 = 1.25;

/// Whether runs (value, what limited the run) fell into two states far
/// apart: by what limited them (the two largest groups, each in at least
/// [`STATE_MIN_RUNS`] runs, medians at least [`STATE_MIN_RATIO`] apart),
/// else by value (the widest gap between sorted values, at least that ratio
/// with that many runs on each side: `the low state`, `the high state`).
/// The groups and the ratio of their medians.
pub fn two_states<'a>(
    runs: impl IntoIterator<Item = (f64, Option<&'a str>)>,
) -> Option<(Vec<LimitGroup>, f64)> {
    let runs: Vec<(f64, Option<&str>)> = runs.into_iter().filter(|(v, _)| v.is_finite()).collect();
    let split = |gs: Vec<LimitGroup>| {
        let (a, b) = (gs.first()?, gs.get(1)?);
        let (lo, hi) = (a.median.min(b.median), a.median.max(b.median));
        let apart = lo > 0.0 && hi / lo >= STATE_MIN_RATIO;
        (apart && b.runs >= STATE_MIN_RUNS).then_some((gs, hi / lo))
    };
    if let Some(s) = split(LimitGroup::group(runs.iter().copied())) {
        return Some(s);
    }
    let mut v: Vec<f64> = runs.iter().map(|(v, _)| *v).collect();
    v.sort_by(f64::total_cmp);
    let k = STATE_MIN_RUNS;
    if v.len() < 2 * k || v.first().is_none_or(|x| *x <= 0.0) {
        return None;
    }
    let (cut, gap) = (k..=v.len() - k)
        .map(|i| (i, v[i] / v[i - 1]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if gap < STATE_MIN_RATIO {
        return None;
    }
    let group = |name: &str, xs: &[f64]| {
        Some(LimitGroup {
            limited_by: name.into(),
            runs: xs.len(),
            median: crate::stats::summarize(xs).ok()?.median,
        })
    };
    let (lo, hi) = v.split_at(cut);
    let (a, b) = (group("the low state", lo)?, group("the high state", hi)?);
    let ratio = b.median / a.median;
    let mut gs = vec![a, b];
    gs.sort_by_key(|g| std::cmp::Reverse(g.runs));
    Some((gs, ratio))
}

/// The note of a cell's metric whose runs fell into two states: `the runs of
/// tcp-rr transactions in baseline fell into two states (...), 190 % apart:
/// its median depends on how many runs fell in each`.
pub fn two_states_note(
    what: &str,
    groups: &[LimitGroup],
    ratio: f64,
    fmt: &dyn Fn(f64) -> String,
) -> String {
    format!(
        "the runs of {what} fell into two states ({}), {:.0} % apart: the median depends on how many runs fell in each, and a change's effect can depend on the state the host was in",
        LimitGroup::describe(groups, fmt),
        (ratio - 1.0) * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tcp-rr baseline: runs at about 58k and 20k tps.
    #[test]
    fn two_states_by_value_when_no_run_says_what_limited_it() {
        let runs = [58_100.0, 20_300.0, 57_500.0, 19_800.0, 21_000.0];
        let (gs, ratio) = two_states(runs.iter().map(|v| (*v, None))).expect("two states");
        assert_eq!(gs[0].limited_by, "the low state");
        assert_eq!(gs[0].runs, 3);
        assert_eq!(gs[1].runs, 2);
        assert!(ratio > 2.5, "{ratio}");
    }

    #[test]
    fn one_state_with_ordinary_spread_is_not_split() {
        let runs = [50.0, 52.0, 55.0, 58.0, 61.0, 49.0];
        assert!(two_states(runs.iter().map(|v| (*v, None))).is_none());
        // One outlier is not a state.
        let runs = [50.0, 52.0, 51.0, 53.0, 90.0];
        assert!(two_states(runs.iter().map(|v| (*v, None))).is_none());
    }

    #[test]
    fn two_states_by_what_limited_the_runs() {
        let runs = [
            (17.0, Some("recv")),
            (18.0, Some("recv")),
            (34.0, Some("send")),
            (33.0, Some("send")),
        ];
        let (gs, _) = two_states(runs).expect("two states");
        assert!(gs.iter().any(|g| g.limited_by == "recv"));
    }

    #[test]
    fn busy_runs_are_counted_and_named() {
        let run = |cpus: f64, top: &str| RunRecord {
            workload: "tcp-rr".into(),
            others: Some(OthersLoad {
                cpus,
                steal_pct: 0.0,
                top: Some(top.into()),
            }),
            ..RunRecord::default()
        };
        let runs = [run(0.01, "sshd 0.01 CPU-s"), run(0.71, "bash 1.42 CPU-s")];
        let n = busy_note("baseline", &runs).expect("busy");
        assert!(n.contains("busy in 1 of 2 runs of baseline"), "{n}");
        assert!(n.contains("0.710 CPU (busiest: bash 1.42 CPU-s)"), "{n}");
        assert_eq!(busy_note("baseline", &runs[..1]), None);
    }
}
