//! The autotune search against a simulated host: the objective is a
//! function of the applied settings (a true effect per candidate, pairwise
//! interactions) plus seeded noise. No OS, no traffic.
//!
//! `cargo test -p nettune-tune --test autotune_sim search_vs_grid -- --nocapture`
//! prints the search's cost against an exhaustive grid over the same levels.

use model::experiment::{Factor, Knob, Level, Metric, TestKind};
use model::stats::{median_interval, BootstrapConfig, SplitMix64, Statistic};
use nettune_tune::autotune::{
    Arm, AutotuneError, Constraint, Objective, Observation, Outcome, Reason, Response, Search,
    SearchConfig, SearchSpace, Step,
};

/// The fake host: true effects (relative, per candidate index), pairwise
/// interactions, relative noise, and a p99 that some candidates raise.
struct FakeHost {
    base: f64,
    effects: Vec<f64>,
    interactions: Vec<(usize, usize, f64)>,
    p99_effects: Vec<f64>,
    noise: f64,
    rng: SplitMix64,
    /// Two modes: arms without the candidate run at the factor half the
    /// time (the lab's unpinned TCP runs).
    two_modes: Option<(usize, f64)>,
}

impl FakeHost {
    fn new(effects: &[f64], noise: f64, seed: u64) -> FakeHost {
        FakeHost {
            base: 10e9,
            effects: effects.to_vec(),
            interactions: Vec::new(),
            p99_effects: vec![0.0; effects.len()],
            noise,
            rng: SplitMix64::new(seed ^ 0xFA4E),
            two_modes: None,
        }
    }

    fn truth(&self, changes: &[usize]) -> f64 {
        let mut v = self.base;
        for &c in changes {
            v *= 1.0 + self.effects[c];
        }
        for &(a, b, e) in &self.interactions {
            if changes.contains(&a) && changes.contains(&b) {
                v *= 1.0 + e;
            }
        }
        v
    }

    fn measure(&mut self, changes: &[usize]) -> Observation {
        let mut v = self.truth(changes) * (1.0 + self.rng.normal(0.0, self.noise));
        if let Some((c, slow)) = self.two_modes {
            if !changes.contains(&c) && self.rng.chance(0.5) {
                v *= slow;
            }
        }
        let mut p99 = 100.0;
        for &c in changes {
            p99 *= 1.0 + self.p99_effects[c];
        }
        let p99 = p99 * (1.0 + self.rng.normal(0.0, self.noise));
        Observation::new(v).with(Response::Metric(Metric::LatencyP99), p99)
    }
}

/// Four factors, current level first: 4 × 3 × 3 × 2 = 72 cells, 8 candidates.
/// Candidates: 0 gro=20000, 1 gro=50000, 2 gro=100000, 3 napi=2, 4 napi=8,
/// 5 channels=8, 6 channels=2, 7 threaded_napi=true.
fn space() -> SearchSpace {
    let f = |knob, levels: Vec<Level>| Factor { knob, levels };
    SearchSpace::new(vec![
        f(
            Knob::GroFlushTimeout,
            vec![
                Level::Int(0),
                Level::Int(20_000),
                Level::Int(50_000),
                Level::Int(100_000),
            ],
        ),
        f(
            Knob::NapiDeferHardIrqs,
            vec![Level::Int(0), Level::Int(2), Level::Int(8)],
        ),
        f(
            Knob::Channels,
            vec![Level::Int(4), Level::Int(8), Level::Int(2)],
        ),
        f(
            Knob::ThreadedNapi,
            vec![Level::Bool(false), Level::Bool(true)],
        ),
    ])
    .expect("space")
}

/// `AUTOTUNE_SIM_STATISTIC=mean` runs the sweeps on means.
fn config(seed: u64) -> SearchConfig {
    let statistic = std::env::var("AUTOTUNE_SIM_STATISTIC")
        .ok()
        .and_then(|s| Statistic::parse(&s))
        .unwrap_or_default();
    SearchConfig {
        seed,
        statistic,
        ..SearchConfig::new(Metric::Throughput)
    }
}

/// Run the search to its end on `host`; the trace is every measured arm.
fn drive(search: &mut Search, host: &mut FakeHost) -> (Outcome, Vec<(usize, Arm)>) {
    drive_with(search, host, |_| {})
}

/// [`drive`], calling `after` with the search after every recorded run.
fn drive_with(
    search: &mut Search,
    host: &mut FakeHost,
    mut after: impl FnMut(&Search),
) -> (Outcome, Vec<(usize, Arm)>) {
    let mut trace = Vec::new();
    for _ in 0..10_000 {
        match search.next_step().expect("next") {
            Step::Measure { arm, seq } => {
                let obs = host.measure(&arm.changes());
                trace.push((seq, arm.clone()));
                search.record(&arm, obs).expect("record");
                after(search);
            }
            Step::Done(o) => return (o, trace),
        }
    }
    panic!("the search did not end");
}

fn run(effects: &[f64], noise: f64, seed: u64) -> (Outcome, Vec<(usize, Arm)>) {
    let mut host = FakeHost::new(effects, noise, seed);
    let mut s = Search::new(space(), config(seed)).expect("search");
    drive(&mut s, &mut host)
}

fn names(o: &Outcome) -> Vec<String> {
    o.accepted.iter().map(|a| a.candidate.to_string()).collect()
}

#[test]
fn an_already_tuned_state_accepts_nothing() {
    for seed in 1..=6 {
        let (o, _) = run(&[0.0; 8], 0.03, seed);
        assert!(o.accepted.is_empty(), "seed {seed}:\n{}", o.render());
        assert_eq!(o.rejected.len(), 8);
        assert_eq!(o.settings, space().settings(&[]));
    }
}

#[test]
fn a_planted_harmful_candidate_is_rejected_with_its_interval() {
    // napi=2 (candidate 3) costs 15 %; the rest do nothing.
    let mut effects = [0.0; 8];
    effects[3] = -0.15;
    let (o, _) = run(&effects, 0.03, 7);
    let r = o
        .rejected
        .iter()
        .find(|r| r.candidate.to_string() == "napi_defer_hard_irqs=2")
        .expect("rejected");
    assert_eq!(r.reason, Reason::Harmful, "{}", o.render());
    let e = r.race.expect("raced");
    assert!(e.relative && e.change.hi < 0.0 && e.change.contains(-15.0) || e.change.hi < -5.0);
    let text = o.render();
    let line = text
        .lines()
        .find(|l| l.contains("napi_defer_hard_irqs=2"))
        .expect("shown");
    assert!(line.contains("harmful") && line.contains(" % ["), "{line}");
}

#[test]
fn a_noisy_but_real_ten_percent_gain_is_found() {
    let mut effects = [0.0; 8];
    effects[0] = 0.10; // gro_flush_timeout=20000
    effects[6] = -0.06; // channels=2
    for seed in 1..=5 {
        let (o, _) = run(&effects, 0.05, seed);
        assert_eq!(
            names(&o),
            ["gro_flush_timeout=20000"],
            "seed {seed}:\n{}",
            o.render()
        );
        let last = o.rechecks.last().expect("rechecked");
        assert!(last.passed && last.effect.change.lo > 0.0);
        assert!(
            o.runs <= space().grid_runs(5) / 3,
            "{} runs\n{}",
            o.runs,
            o.render()
        );
    }
}

#[test]
fn a_lower_is_better_objective_accepts_a_latency_cut() {
    // min-p99: the objective falls by 12 % with threaded_napi=true and
    // rises by 10 % with channels=2.
    let mut effects = [0.0; 8];
    effects[7] = -0.12;
    effects[6] = 0.10;
    let mut host = FakeHost::new(&effects, 0.03, 21);
    host.base = 80.0;
    let cfg = SearchConfig {
        seed: 21,
        ..SearchConfig::new(Metric::LatencyP99)
    };
    let mut s = Search::new(space(), cfg).expect("search");
    let (o, _) = drive(&mut s, &mut host);
    assert_eq!(names(&o), ["threaded_napi=true"], "{}", o.render());
    assert!(o.accepted[0].race.change.hi < 0.0);
    let r = o
        .rejected
        .iter()
        .find(|r| r.candidate.to_string() == "channels=2")
        .expect("rejected");
    assert_eq!(r.reason, Reason::Harmful, "{}", o.render());
}

#[test]
fn a_budget_cut_never_calls_a_winner_after_one_round() {
    let effects = [0.08; 8];
    for budget in 39..=69 {
        let cfg = SearchConfig {
            budget: Some(budget),
            ..config(4)
        };
        let mut host = FakeHost::new(&effects, 0.02, 4);
        let mut s = Search::new(space(), cfg).expect("search");
        let (o, _) = drive(&mut s, &mut host);
        assert!(o.runs <= budget, "{budget}: {} runs", o.runs);
        for a in &o.accepted {
            assert!(a.race.runs >= 6, "{budget}: {}", o.render());
        }
    }
}

#[test]
fn winners_of_two_knobs_are_combined_and_rechecked() {
    let mut effects = [0.0; 8];
    effects[1] = 0.08; // gro=50000
    effects[7] = 0.06; // threaded_napi=true
    let (o, _) = run(&effects, 0.02, 3);
    assert_eq!(
        names(&o),
        ["gro_flush_timeout=50000", "threaded_napi=true"],
        "{}",
        o.render()
    );
    // The combination and, in the same batches, the combination without
    // each member (here: each member alone); both members are needed.
    assert_eq!(o.rechecks.len(), 1, "{}", o.render());
    let rc = &o.rechecks[0];
    assert_eq!(rc.changes.len(), 2);
    assert!(rc.passed);
    assert!(rc.effect.change.contains(14.48) || rc.effect.change.lo > 8.0);
    let v = rc.versus_best.expect("against the best alone");
    assert!(v.change.lo > 0.0, "{}", o.render());
    assert_eq!(rc.without.len(), 2);
    assert!(rc
        .without
        .iter()
        .all(|m| m.needed && m.effect.change.lo > 0.0));
    let text = o.render();
    assert!(text.contains("against the best alone"), "{text}");
    assert!(
        text.contains("with against without threaded_napi=true") && text.contains("needed"),
        "{text}"
    );
}

#[test]
fn a_combination_better_than_baseline_but_worse_than_its_best_member_keeps_the_member() {
    // gro=20000 +12 %, threaded_napi +6 %, together 10 % less: the
    // combination still beats the baseline (+6.9 %) but loses to gro alone.
    let mut effects = [0.0; 8];
    effects[0] = 0.12;
    effects[7] = 0.06;
    let mut host = FakeHost::new(&effects, 0.02, 13);
    host.interactions.push((0, 7, -0.10));
    let mut s = Search::new(space(), config(13)).expect("search");
    let (o, _) = drive(&mut s, &mut host);
    assert_eq!(names(&o), ["gro_flush_timeout=20000"], "{}", o.render());
    assert_eq!(o.rechecks.len(), 2, "{}", o.render());
    let (combo, single) = (&o.rechecks[0], &o.rechecks[1]);
    assert!(
        combo.effect.change.lo > 0.0,
        "beats the baseline:\n{}",
        o.render()
    );
    assert!(!combo.passed && single.passed);
    assert!(combo.versus_best.expect("compared").change.estimate < 0.0);
    let t = o
        .rejected
        .iter()
        .find(|r| r.candidate.to_string() == "threaded_napi=true")
        .expect("rejected");
    assert!(
        matches!(&t.reason, Reason::Rider(e) if e.change.estimate < 0.0),
        "{}",
        o.render()
    );
    assert_eq!(o.settings, space().settings(&[0]));
}

#[test]
fn a_member_that_adds_nothing_to_the_combination_is_dropped() {
    // threaded_napi wins alone (+6 %) but adds nothing next to gro=20000
    // (the interaction cancels it): the simpler setting is kept.
    let mut effects = [0.0; 8];
    effects[0] = 0.12;
    effects[7] = 0.06;
    let mut host = FakeHost::new(&effects, 0.02, 17);
    host.interactions.push((0, 7, 1.0 / 1.06 - 1.0));
    let mut s = Search::new(space(), config(17)).expect("search");
    let (o, _) = drive(&mut s, &mut host);
    assert_eq!(names(&o), ["gro_flush_timeout=20000"], "{}", o.render());
    assert!(o.rechecks[0].effect.change.lo > 0.0, "{}", o.render());
    assert!(!o.rechecks[0].passed && o.rechecks[1].passed);
}

#[test]
fn a_combination_spoiled_by_an_interaction_falls_back_to_the_best_alone() {
    let mut effects = [0.0; 8];
    effects[0] = 0.12; // gro=20000
    effects[7] = 0.06; // threaded_napi=true
    let mut host = FakeHost::new(&effects, 0.02, 11);
    // Together they lose 25 %.
    host.interactions.push((0, 7, -0.25));
    let mut s = Search::new(space(), config(11)).expect("search");
    let (o, _) = drive(&mut s, &mut host);
    assert_eq!(o.rechecks.len(), 2, "{}", o.render());
    assert!(!o.rechecks[0].passed && o.rechecks[1].passed);
    assert_eq!(names(&o), ["gro_flush_timeout=20000"]);
    let t = o
        .rejected
        .iter()
        .find(|r| r.candidate.to_string() == "threaded_napi=true")
        .expect("rejected");
    // Dropped by the backward check: with it, the combination is worse.
    assert!(
        matches!(&t.reason, Reason::Rider(e) if e.change.hi < 0.0),
        "{}",
        o.render()
    );
}

#[test]
fn a_gain_that_breaks_a_constraint_is_rejected_with_the_constraint() {
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    let mut host = FakeHost::new(&effects, 0.02, 5);
    host.p99_effects[0] = 0.30; // p99 grows 30 %
    let cfg = SearchConfig {
        constraints: vec![Constraint::parse("p99<=+5%").expect("parse")],
        ..config(5)
    };
    let mut s = Search::new(space(), cfg).expect("search");
    let (o, _) = drive(&mut s, &mut host);
    assert!(o.accepted.is_empty(), "{}", o.render());
    let r = &o.rejected[0];
    match &r.reason {
        Reason::Constraint(c) => {
            assert_eq!(c.constraint, "p99<=+5%");
            assert!(c.effect.change.lo > 5.0 && !c.holds);
        }
        other => panic!("{other:?}\n{}", o.render()),
    }
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    effects[3] = -0.10;
    let a = run(&effects, 0.04, 42);
    let b = run(&effects, 0.04, 42);
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    let c = run(&effects, 0.04, 43);
    assert_ne!(a.1, c.1, "another seed, another order");
    // Interleaved and randomized: the first round is not arm by arm.
    let first: Vec<&Arm> = a.1.iter().take(6).map(|(_, arm)| arm).collect();
    assert!(first.windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn a_budget_too_small_is_refused_up_front_with_the_minimum() {
    let cfg = SearchConfig {
        budget: Some(10),
        ..config(1)
    };
    assert_eq!(cfg.minimum_runs(), 39);
    let err = Search::new(space(), cfg).expect_err("too small");
    assert_eq!(
        err,
        AutotuneError::BudgetTooSmall {
            budget: 10,
            minimum: 39,
            repeats: 3
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("10 runs") && msg.contains("at least 39"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn a_tight_budget_is_kept() {
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    for budget in [39, 45, 54, 69] {
        let cfg = SearchConfig {
            budget: Some(budget),
            ..config(9)
        };
        let mut host = FakeHost::new(&effects, 0.03, 9);
        let mut s = Search::new(space(), cfg).expect("search");
        let (o, _) = drive(&mut s, &mut host);
        assert!(o.runs <= budget, "{budget}: {} runs", o.runs);
        assert!(o
            .rejected
            .iter()
            .any(|r| r.reason == Reason::Budget || r.race.is_some()));
    }
}

#[test]
fn an_objective_the_workload_cannot_measure_is_one_line_before_anything_runs() {
    let err = Objective::MinP99
        .metric_for(TestKind::TcpStream, false)
        .expect_err("no latency source");
    let msg = err.to_string();
    assert_eq!(
        msg,
        "min-p99 cannot be measured by a tcp-stream workload: it needs a latency source: a tcp-rr, udp-rr or tcp-crr workload, or a probe (--probe rr|icmp)"
    );
    // udp-rr, a test of bench's catalogue, measures what tcp-rr measures.
    for o in [Objective::MinP99, Objective::MaxPps] {
        assert_eq!(
            o.metric_for(TestKind::UdpRr, false),
            o.metric_for(TestKind::TcpRr, false),
            "{o}"
        );
    }
    assert_eq!(
        Objective::MinP99.metric_for(TestKind::TcpStream, true),
        Ok(Metric::LatencyP99)
    );
    assert_eq!(
        Objective::parse("max-cps").and_then(|o| o.metric_for(TestKind::TcpCrr, false)),
        Ok(Metric::Transactions)
    );
    // max-pps races packets/s, not bit/s (issue 34).
    assert_eq!(
        Objective::MaxPps.metric_for(TestKind::UdpStream, false),
        Ok(Metric::PacketRate)
    );
    assert!(Objective::MaxCps
        .metric_for(TestKind::TcpRr, false)
        .is_err());
    assert!(Objective::MaxThroughput
        .metric_for(TestKind::TcpRr, false)
        .is_err());
    let e = Objective::parse("fastest").expect_err("unknown");
    assert!(e.to_string().contains("`fastest`"));
    let c = Constraint::parse("p99<=+5%").expect("parse");
    assert!(c.check_workload(TestKind::TcpStream, false).is_err());
    assert!(c.check_workload(TestKind::TcpRr, false).is_ok());
}

#[test]
fn constraints_parse_and_errors_name_the_text() {
    let c = Constraint::parse(" p99 <= +5% ").expect("parse");
    assert_eq!(c.response, Response::Metric(Metric::LatencyP99));
    assert_eq!(c.limit_pct, 5.0);
    let c = Constraint::parse("cpu_per_work<=+0%").expect("parse");
    assert_eq!(c.response, Response::Metric(Metric::CpuPerWork));
    let c = Constraint::parse("throughput>=-1%").expect("parse");
    assert_eq!(c.response, Response::Metric(Metric::Throughput));
    assert_eq!(c.limit_pct, -1.0);
    for (bad, why) in [
        ("p99<5%", "expected NAME<=X%"),
        ("speed<=+5%", "unknown response"),
        ("p99<=5", "% change"),
        ("p99<=abc%", "not a number"),
        ("p99<=+1e9%", "between"),
        ("p99<=nan%", "between"),
    ] {
        let msg = Constraint::parse(bad).expect_err(bad).to_string();
        assert!(msg.starts_with(&format!("constraint `{bad}`")), "{msg}");
        assert!(msg.contains(why), "{msg}");
    }
}

#[test]
fn a_run_out_of_turn_or_not_finite_is_refused() {
    let mut s = Search::new(space(), config(1)).expect("search");
    let Step::Measure { arm, seq } = s.next_step().expect("next") else {
        panic!("a run is due first");
    };
    assert_eq!(seq, 0);
    let other = if arm == Arm::Baseline {
        Arm::Candidate(0)
    } else {
        Arm::Baseline
    };
    assert!(matches!(
        s.record(&other, Observation::new(1.0)),
        Err(AutotuneError::WrongArm { .. })
    ));
    assert!(matches!(
        s.record(&arm, Observation::new(f64::NAN)),
        Err(AutotuneError::BadValue { seq: 0, .. })
    ));
    // Still due: next_step() repeats it.
    assert_eq!(
        s.next_step().expect("next"),
        Step::Measure {
            arm: arm.clone(),
            seq: 0
        }
    );
    s.record(&arm, Observation::new(1.0)).expect("record");
    assert!(matches!(
        s.record(&arm, Observation::new(1.0)),
        Err(AutotuneError::NothingDue { .. }) | Err(AutotuneError::WrongArm { .. })
    ));
}

#[test]
fn a_space_without_candidates_or_with_a_duplicate_is_refused() {
    let one = |knob| Factor {
        knob,
        levels: vec![Level::Int(1)],
    };
    assert_eq!(
        SearchSpace::new(vec![one(Knob::Channels)]),
        Err(AutotuneError::NoCandidate)
    );
    let e = SearchSpace::new(vec![one(Knob::Channels), one(Knob::Channels)]).expect_err("dup");
    assert!(e.to_string().contains("`channels` appears twice"));
    assert_eq!(space().grid_cells(), 72);
    assert_eq!(space().grid_runs(5), 360);
    // The race's worst case, and 11 re-check arms (baseline, combination,
    // 4 + 3 + 2 leave-one-out arms as members go) of 12 runs at most.
    assert_eq!(space().estimate_runs(3), 9 * 3 * 4 + 11 * 12);
    // With forward passes, at worst each pass keeps the knob with the
    // fewest levels (threaded_napi 1, channels 2, napi 2, gro 3): passes
    // over 8, 7, 5 and 3 candidates of 4, 3, 2 and 1 knobs.
    let pass = |c: usize, f: usize| (c + 1) * 3 * 4 + (f * (f + 1) / 2 + 1) * 12;
    assert_eq!(
        space().estimate_runs_in_passes(3),
        pass(8, 4) + pass(7, 3) + pass(5, 2) + pass(3, 1)
    );
    // Never under what a search with a forward pass uses, where one pass's
    // worst case can be: two knobs of one level each, a +60 % change and
    // its hidden partner, at 25 % noise (seed 13 takes 90 runs, over the
    // 84 of one pass).
    let f = |knob, levels: Vec<Level>| Factor { knob, levels };
    let two = SearchSpace::new(vec![
        f(
            Knob::GroFlushTimeout,
            vec![Level::Int(0), Level::Int(20_000)],
        ),
        f(Knob::NapiDeferHardIrqs, vec![Level::Int(0), Level::Int(2)]),
    ])
    .expect("space");
    assert_eq!(two.estimate_runs(3), 3 * 3 * 4 + 4 * 12);
    let mut over_one_pass = 0;
    for seed in 1..=20 {
        let mut host = FakeHost::new(&[0.60, -0.05], 0.25, seed);
        host.interactions.push((0, 1, 1.30 / 0.95 - 1.0));
        let mut s = Search::new(two.clone(), config(seed)).expect("search");
        let (o, _) = drive(&mut s, &mut host);
        assert!(o.runs <= two.estimate_runs_in_passes(3), "{}", o.runs);
        over_one_pass += usize::from(o.runs > two.estimate_runs(3));
    }
    assert!(
        over_one_pass > 0,
        "no search used more than one pass's worst case"
    );
}

// ---------------------------------------------------------------------------
// Search against the exhaustive grid.

/// Every cell of the grid as candidate indexes (level > 0 of each factor).
fn grid_cells(space: &SearchSpace) -> Vec<Vec<usize>> {
    let mut cells: Vec<Vec<usize>> = vec![Vec::new()];
    let mut offset = 0;
    for f in space.factors() {
        let mut next = Vec::new();
        for cell in &cells {
            next.push(cell.clone());
            for l in 1..f.levels.len() {
                let mut c = cell.clone();
                c.push(offset + l - 1);
                next.push(c);
            }
        }
        offset += f.levels.len() - 1;
        cells = next;
    }
    cells
}

struct GridResult {
    runs: usize,
    best: Vec<usize>,
    /// Grid median and 95 % interval per cell.
    medians: Vec<(Vec<usize>, f64, model::stats::Interval)>,
}

fn grid(host: &mut FakeHost, repeats: usize) -> GridResult {
    let cells = grid_cells(&space());
    let mut medians = Vec::new();
    let mut runs = 0;
    for cell in cells {
        let vals: Vec<f64> = (0..repeats)
            .map(|_| host.measure(&cell).objective())
            .collect();
        runs += repeats;
        let i = median_interval(&vals, &BootstrapConfig::default()).expect("interval");
        medians.push((cell, i.estimate, i));
    }
    let best = medians
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|m| m.0.clone())
        .unwrap_or_default();
    GridResult {
        runs,
        best,
        medians,
    }
}

/// The mix of the grid comparison: one strong gain with a weaker level of
/// the same knob, a harmful level, a small real gain, a gain that interacts
/// badly with the strong one, and do-nothings.
fn grid_mix() -> FakeHost {
    let mut effects = [0.0; 8];
    effects[0] = 0.10; // gro=20000
    effects[1] = 0.07; // gro=50000
    effects[2] = 0.02; // gro=100000
    effects[3] = -0.08; // napi=2: harmful
    effects[4] = 0.0; // napi=8
    effects[5] = 0.05; // channels=8
    effects[6] = -0.03; // channels=2
    effects[7] = 0.04; // threaded_napi=true
    let mut h = FakeHost::new(&effects, 0.04, 0);
    // threaded_napi with gro_flush_timeout=20000: −4 %, its own gain gone.
    h.interactions.push((0, 7, -0.04));
    h
}

/// The grid mix with the noise of `seed`, and a search of `seed`.
fn on_grid_mix(seed: u64) -> (FakeHost, Search) {
    let mut host = grid_mix();
    host.rng = SplitMix64::new(seed ^ 0xFA4E);
    (host, Search::new(space(), config(seed)).expect("search"))
}

/// One seed of the comparison: the search and an exhaustive grid (with
/// its own noise), each on the mix at 4 % noise.
struct SeedResult {
    runs: usize,
    grid_runs: usize,
    chosen: Vec<usize>,
    label: String,
    /// The kept setting is the grid's best cell.
    same: bool,
    /// The kept setting's true objective lies inside the grid best's 95 %
    /// interval.
    within: bool,
    /// The true gain of the kept setting, %.
    true_gain: f64,
    /// The grid's best cell, its median and 95 % interval, % of the true
    /// baseline.
    grid_best: (String, f64, f64, f64),
    /// Kept members whose true effect in the kept setting is not a gain:
    /// the setting without the member is as good or better.
    false_keeps: Vec<String>,
    outcome: Outcome,
}

fn search_vs_grid(seed: u64, grid_repeats: usize) -> SeedResult {
    let sp = space();
    let (mut host, mut s) = on_grid_mix(seed);
    let (o, _) = drive(&mut s, &mut host);
    let mut chosen: Vec<usize> = o
        .accepted
        .iter()
        .filter_map(|a| sp.candidates().iter().position(|c| *c == a.candidate))
        .collect();
    chosen.sort_unstable();
    let mut ghost = grid_mix();
    ghost.rng = SplitMix64::new(seed.wrapping_add(1000) ^ 0xFA4E);
    let g = grid(&mut ghost, grid_repeats);
    let best_i = g
        .medians
        .iter()
        .find(|m| m.0 == g.best)
        .map(|m| m.2)
        .expect("best");
    // The judge: the kept setting is the grid's best cell, or its true
    // objective lies inside the grid best's 95 % interval (bootstrap of the
    // median of the grid's own runs of that cell). The truth is the
    // simulation's, without noise; the interval is the grid's, with it.
    let truth = |cell: &[usize]| ghost.truth(cell);
    let base = truth(&[]);
    let pct = |v: f64| (v / base - 1.0) * 100.0;
    let false_keeps = chosen
        .iter()
        .filter(|&&m| {
            let rest: Vec<usize> = chosen.iter().copied().filter(|&c| c != m).collect();
            truth(&chosen) <= truth(&rest)
        })
        .filter_map(|&m| sp.candidates().get(m).map(ToString::to_string))
        .collect();
    let label = |cell: &[usize]| {
        if cell.is_empty() {
            "baseline".to_string()
        } else {
            s.label(&Arm::Combination(cell.to_vec()))
        }
    };
    SeedResult {
        runs: o.runs,
        grid_runs: g.runs,
        same: chosen == g.best,
        within: best_i.contains(truth(&chosen)),
        true_gain: pct(truth(&chosen)),
        grid_best: (
            label(&g.best),
            pct(best_i.estimate),
            pct(best_i.lo),
            pct(best_i.hi),
        ),
        label: label(&chosen),
        chosen,
        false_keeps,
        outcome: o,
    }
}

#[test]
fn search_vs_grid_over_seeds() {
    let grid_repeats = 5;
    let sp = space();
    println!(
        "simulation: {} cells, grid {} runs ({} per cell); noise 4 %; search: race 3 runs/round (successive halving, ≤4 rounds), re-check and backward check in batches of 3 (decides from 6; a member at most 12, the baseline comparison 18)",
        sp.grid_cells(),
        sp.grid_runs(grid_repeats as u32),
        grid_repeats
    );
    let truth = |cell: &[usize]| {
        let h = grid_mix();
        (h.truth(cell) / h.truth(&[]) - 1.0) * 100.0
    };
    let true_best = grid_cells(&sp)
        .into_iter()
        .map(|c| truth(&c))
        .fold(f64::NEG_INFINITY, f64::max);
    println!("true gain of the best cell: {true_best:+.1} %");
    println!("seed  search_runs  grid_runs  ratio  found_grid_best  true_gain  search_choice  |  grid best: median [95 % interval]");
    let mut found = 0;
    let mut within_cost = 0;
    let mut max_ratio: f64 = 0.0;
    let mut total_ratio = 0.0;
    let seeds = 1..=8u64;
    let n = seeds.clone().count();
    for seed in seeds {
        let r = search_vs_grid(seed, grid_repeats);
        if std::env::var_os("AUTOTUNE_SIM_VERBOSE").is_some() {
            println!("{}", r.outcome.render());
            for rc in &r.outcome.rechecks {
                let w: Vec<String> = rc
                    .without
                    .iter()
                    .map(|m| format!("{}/{}", m.effect.runs, m.effect.baseline_runs))
                    .collect();
                println!(
                    "runs: arm {} baseline {}; with/without {}",
                    rc.effect.runs,
                    rc.effect.baseline_runs,
                    w.join(" ")
                );
            }
        }
        let ratio = r.runs as f64 / r.grid_runs as f64;
        total_ratio += ratio;
        max_ratio = max_ratio.max(ratio);
        if r.same || r.within {
            found += 1;
        }
        if r.runs * 3 <= r.grid_runs {
            within_cost += 1;
        }
        println!(
            "{seed:>4}  {:>11}  {:>9}  {:>5.2}  {:>15}  {:>+7.1} %  {}  |  {} {:+.1} % [{:+.1}, {:+.1}]",
            r.runs,
            r.grid_runs,
            ratio,
            if r.same {
                "same"
            } else if r.within {
                "within interval"
            } else {
                "no"
            },
            r.true_gain,
            r.label,
            r.grid_best.0,
            r.grid_best.1,
            r.grid_best.2,
            r.grid_best.3,
        );
        // Safety, on every seed: every kept change has a true effect in
        // the kept setting (without it the setting is truly worse), so the
        // host is never left worse than it was either.
        assert!(
            r.false_keeps.is_empty(),
            "seed {seed}: kept without a true effect: {:?}\n{}",
            r.false_keeps,
            r.outcome.render()
        );
        assert!(r.true_gain >= 0.0, "seed {seed}");
        assert!(r.chosen.len() <= sp.factors().len());
    }
    println!(
        "found the grid's best (or one within its interval) in {found}/{n} seeds; a third of the grid or less in {within_cost}/{n}; cost {:.2} mean, {max_ratio:.2} at most",
        total_ratio / n as f64
    );
    // The cost goal (a third of the grid or less) holds on every seed; the
    // grid's best (or within its interval) is found on 6 of 8: the
    // measured figures (bench/RESULTS.md), asserted as floors against
    // regressions.
    assert_eq!(
        within_cost, n,
        "a third of the grid or less in {within_cost}/{n}"
    );
    assert!(found >= 6, "found in {found}/{n}");
}

/// More seeds than the test asserts, for the rates (printing only):
/// `AUTOTUNE_SIM_SEEDS=40 cargo test -p nettune-tune --test autotune_sim sweep -- --nocapture --ignored`.
#[test]
#[ignore]
fn search_vs_grid_sweep() {
    let n: u64 = std::env::var("AUTOTUNE_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let (mut found, mut cheap, mut unsafe_, mut runs) = (0, 0, 0, 0);
    let mut gains = std::collections::BTreeMap::<String, usize>::new();
    for seed in 1..=n {
        let r = search_vs_grid(seed, 5);
        found += usize::from(r.same || r.within);
        cheap += usize::from(r.runs * 3 <= r.grid_runs);
        if !r.false_keeps.is_empty() {
            unsafe_ += 1;
            println!(
                "seed {seed}: kept without a true effect: {:?}",
                r.false_keeps
            );
            if std::env::var_os("AUTOTUNE_SIM_VERBOSE").is_some() {
                println!("{}", r.outcome.render());
            }
        }
        runs += r.runs;
        *gains.entry(r.label.clone()).or_default() += 1;
    }
    println!(
        "seeds {n}: found {found}, cost ≤ 1/3 {cheap}, false keeps {unsafe_}, mean runs {:.1}",
        runs as f64 / n as f64
    );
    for (k, v) in gains {
        println!("  {v:>3}  {k}");
    }
}

/// How often a state already tuned (no candidate has an effect) gets a
/// change accepted, over more seeds (printing only):
/// `AUTOTUNE_SIM_SEEDS=40 cargo test -p nettune-tune --test autotune_sim null_sweep -- --ignored --nocapture`.
#[test]
#[ignore]
fn search_null_sweep() {
    let n: u64 = std::env::var("AUTOTUNE_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let (mut kept, mut runs) = (0, 0);
    for seed in 1..=n {
        let (o, _) = run(&[0.0; 8], 0.04, seed);
        runs += o.runs;
        if !o.accepted.is_empty() {
            kept += 1;
            println!("seed {seed}: kept {:?}", names(&o));
            if std::env::var_os("AUTOTUNE_SIM_VERBOSE").is_some() {
                println!("{}", o.render());
            }
        }
    }
    println!(
        "seeds {n}: a change kept on {kept}; mean runs {:.1}",
        runs as f64 / n as f64
    );
}

/// Run the search to its end on `host`, taking after every recorded run
/// what a Ctrl-C at that moment would keep (`Search::outcome_so_far`).
fn drive_with_interims(
    search: &mut Search,
    host: &mut FakeHost,
) -> (Outcome, Vec<(usize, Arm)>, Vec<Outcome>) {
    let mut interims = Vec::new();
    let (o, trace) = drive_with(search, host, |s| {
        interims.push(s.outcome_so_far().expect("so far"));
    });
    assert_eq!(search.outcome_so_far().expect("done"), o);
    (o, trace, interims)
}

/// What an interim outcome keeps must meet the acceptance rule on its own
/// re-check: the last re-check passed, of exactly the kept changes (with
/// what earlier passes kept), with an
/// interval above zero and an estimate at the threshold, and every member
/// of a combination proven needed.
fn assert_kept_is_proven(o: &Outcome, what: &str) {
    if o.accepted.is_empty() {
        return;
    }
    let last = o
        .rechecks
        .iter()
        .rev()
        .find(|r| r.passed)
        .unwrap_or_else(|| panic!("{what}: kept without a passed re-check\n{}", o.render()));
    let mut kept: Vec<String> = o.accepted.iter().map(|a| a.candidate.to_string()).collect();
    // A later pass's re-check is measured on top of what earlier passes
    // kept (each of those passed its own).
    let mut checked: Vec<String> = last
        .on_top_of
        .iter()
        .chain(&last.changes)
        .map(ToString::to_string)
        .collect();
    kept.sort();
    checked.sort();
    assert_eq!(kept, checked, "{what}\n{}", o.render());
    assert!(
        last.effect.change.lo > 0.0 && last.effect.change.estimate >= 2.0,
        "{what}: {}\n{}",
        last.effect,
        o.render()
    );
    if last.changes.len() > 1 {
        // Each member proven needed in this re-check or in one of a larger
        // combination before it (a proof that stays).
        for c in &last.changes {
            let proven = o.rechecks.iter().any(|r| {
                r.without
                    .iter()
                    .any(|m| m.candidate == *c && m.needed && m.effect.change.lo > 0.0)
            });
            assert!(
                proven,
                "{what}: {c} kept while its backward check is open\n{}",
                o.render()
            );
        }
    }
}

#[test]
fn a_ctrl_c_in_the_race_keeps_nothing() {
    let mut effects = [0.0; 8];
    effects[0] = 0.30; // gro_flush_timeout=20000, a gain no race can miss
    let mut host = FakeHost::new(&effects, 0.03, 5);
    let mut s = Search::new(space(), config(5)).expect("search");
    let (o, trace, interims) = drive_with_interims(&mut s, &mut host);
    assert_eq!(names(&o), ["gro_flush_timeout=20000"], "{}", o.render());
    // The race's runs are of the baseline and single candidates; the
    // first run of a re-check arm comes after at least two rounds of 9
    // arms. Up to there a Ctrl-C keeps nothing and names what was still
    // racing as interrupted.
    let race = trace
        .iter()
        .position(|(_, a)| matches!(a, Arm::Combination(_)))
        .unwrap_or(2 * 9 * 3);
    assert!(race >= 2 * 3 * 2, "{race}");
    for (i, so_far) in interims.iter().take(race).enumerate() {
        assert!(so_far.accepted.is_empty(), "run {i}:\n{}", so_far.render());
        assert_eq!(so_far.settings, space().settings(&[]));
    }
    let mid = &interims[10];
    assert!(
        mid.rejected.iter().any(|r| r.reason == Reason::Interrupted
            && r.candidate.to_string() == "gro_flush_timeout=20000"),
        "{}",
        mid.render()
    );
    assert!(mid.render().contains("interrupted before it was decided"));
}

#[test]
fn a_ctrl_c_in_the_recheck_keeps_what_passed_with_its_interval() {
    // Over the grid mix's seeds: whatever a Ctrl-C would keep at any run
    // meets the acceptance rule, and on some seeds it keeps a proven
    // change before the search has ended (the re-check of a combination
    // goes on while a smaller setting is already proven).
    let mut early = 0;
    for seed in 1..=8u64 {
        let (mut host, mut s) = on_grid_mix(seed);
        let (o, _, interims) = drive_with_interims(&mut s, &mut host);
        assert_kept_is_proven(&o, &format!("seed {seed}, the end"));
        for (i, so_far) in interims.iter().enumerate() {
            assert_kept_is_proven(so_far, &format!("seed {seed}, run {i}"));
            if !so_far.accepted.is_empty() && i + 1 < o.runs {
                early += 1;
            }
        }
    }
    assert!(early > 0, "no seed had a proven change before its end");
}

#[test]
fn a_ctrl_c_never_keeps_a_member_whose_backward_check_is_open() {
    // Two real gains, one of them small: the combination passes against
    // the baseline long before the small member is proven needed. A Ctrl-C
    // in between keeps the strong change alone, never the pair.
    let mut effects = [0.0; 8];
    effects[0] = 0.25; // gro_flush_timeout=20000
    effects[5] = 0.04; // channels=8
    let mut checked = 0;
    for seed in 1..=8u64 {
        let mut host = FakeHost::new(&effects, 0.04, seed);
        let mut s = Search::new(space(), config(seed)).expect("search");
        let (_, _, interims) = drive_with_interims(&mut s, &mut host);
        for (i, so_far) in interims.iter().enumerate() {
            assert_kept_is_proven(so_far, &format!("seed {seed}, run {i}"));
            let open_pair = so_far
                .rechecks
                .iter()
                .any(|r| r.changes.len() == 2 && !r.passed && r.effect.change.lo > 2.0);
            if open_pair {
                checked += 1;
                assert!(
                    so_far.accepted.len() < 2,
                    "seed {seed}, run {i}\n{}",
                    so_far.render()
                );
            }
        }
    }
    assert!(checked > 0, "no run with a pair passing but unproven");
}

#[test]
fn a_smaller_combination_keeps_its_leave_one_out_runs() {
    // When the backward check drops a member, the combination without it
    // was a leave-one-out arm of the same interleaved batches: its runs
    // count in its own check against the baseline (they were thrown
    // away, and measured again, before).
    let mut seen = 0;
    for seed in 1..=8u64 {
        let (mut host, mut s) = on_grid_mix(seed);
        let (o, trace) = drive(&mut s, &mut host);
        for rc in o.rechecks.iter().skip(1) {
            if rc.changes.len() < 2 {
                continue;
            }
            let sp = space();
            let mut set: Vec<usize> = rc
                .changes
                .iter()
                .filter_map(|c| sp.candidates().iter().position(|x| x == c))
                .collect();
            set.sort_unstable();
            let measured = trace
                .iter()
                .filter(|(_, a)| *a == Arm::Combination(set.clone()))
                .count();
            assert_eq!(
                rc.effect.runs,
                measured,
                "seed {seed}: {} measured {measured} times, counted {}\n{}",
                s.label(&Arm::Combination(set.clone())),
                rc.effect.runs,
                o.render()
            );
            seen += 1;
        }
    }
    assert!(seen > 0, "no seed re-checked a smaller combination");
}

#[test]
fn a_candidate_with_no_sign_of_a_gain_leaves_the_race_early() {
    // A do-nothing candidate's estimate hovers around zero: after round 2
    // it is under the futility bar (half the threshold) and leaves, so it
    // is not raced in rounds 3 and 4.
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    let mut left = 0;
    for seed in 1..=6u64 {
        let (o, trace) = run(&effects, 0.03, seed);
        for r in &o.rejected {
            if let Reason::NoSign { round, bar } = r.reason {
                left += 1;
                assert!((2..4).contains(&round), "{}", o.render());
                assert!(bar > 0.0 && bar <= 2.0);
                let e = r.race.expect("raced");
                assert!(e.change.estimate < bar, "{}", o.render());
                // Raced in `round` rounds only: 3 runs each.
                let sp = space();
                let i = sp
                    .candidates()
                    .iter()
                    .position(|c| *c == r.candidate)
                    .expect("candidate");
                let runs = trace
                    .iter()
                    .filter(|(_, a)| *a == Arm::Candidate(i))
                    .count();
                assert_eq!(runs, 3 * round as usize, "{}", o.render());
                assert!(o.render().contains("no sign of a practical gain"));
            }
        }
    }
    assert!(left > 0, "no candidate left at the futility bar");
}

/// The lab's shape: a change that moves the operating point a long way
/// (gro_flush_timeout=20000 +60 %, as cubic over bbr), and one that costs
/// 5 % from the baseline but gains 30 % next to it (napi=2, as NAPI
/// batching next to cubic).
fn hidden_partner(seed: u64) -> FakeHost {
    let mut effects = [0.0; 8];
    effects[0] = 0.60;
    effects[3] = -0.05;
    let mut h = FakeHost::new(&effects, 0.04, seed);
    h.interactions.push((0, 3, 1.30 / 0.95 - 1.0));
    h
}

/// The search of seed 3 on the hidden partner within `budget` runs.
fn partner_on_budget(budget: usize) -> Outcome {
    let cfg = SearchConfig {
        budget: Some(budget),
        ..config(3)
    };
    let mut s = Search::new(space(), cfg).expect("search");
    drive(&mut s, &mut hidden_partner(3)).0
}

#[test]
fn a_change_that_helps_only_next_to_a_big_gain_is_kept_by_a_forward_pass() {
    let sp = space();
    let (mut found, mut one_pass_found) = (0, 0);
    let seeds = 1..=6u64;
    for seed in seeds.clone() {
        let mut host = hidden_partner(seed);
        let mut s = Search::new(space(), config(seed)).expect("search");
        let (o, trace, interims) = drive_with_interims(&mut s, &mut host);
        assert_kept_is_proven(&o, &format!("seed {seed}"));
        // A third pass follows when the second's gain is big too.
        assert!(o.passes.len() >= 2, "seed {seed}\n{}", o.render());
        let second = &o.passes[1];
        assert_eq!(
            second.on_top_of,
            vec![sp.candidates()[0].clone()],
            "{}",
            o.render()
        );
        // Every run of the second pass applies what the first kept, and
        // a Ctrl-C in it keeps that, proven.
        for (seq, arm) in &trace[second.first_run..] {
            assert!(arm.changes().contains(&0), "run {seq}: {arm:?}");
        }
        for so_far in &interims[second.first_run..second.race_end] {
            assert_eq!(names(so_far), ["gro_flush_timeout=20000"]);
        }
        let kept = names(&o);
        if kept == ["gro_flush_timeout=20000", "napi_defer_hard_irqs=2"] {
            found += 1;
            let napi = &o.accepted[1];
            assert_eq!(napi.on_top_of, second.on_top_of);
            assert!(napi.race.change.lo > 0.0, "{}", o.render());
            assert!(o.render().contains("(on top of gro_flush_timeout=20000)"));
            // One line for the progress bar, Ctrl-C and profile.toml: each
            // pass's proven gain in turn.
            let line = o.proven_text().expect("proven");
            assert!(
                line.starts_with("gro_flush_timeout=20000 +")
                    && line.contains(", then napi_defer_hard_irqs=2 +")
                    && line.ends_with(" on top"),
                "{line}"
            );
        }
        // One pass, as before: the partner's cost from the baseline hides it.
        let cfg = SearchConfig {
            forward_after_pct: None,
            ..config(seed)
        };
        let mut host = hidden_partner(seed);
        let mut s = Search::new(space(), cfg).expect("search");
        let (o1, _) = drive(&mut s, &mut host);
        assert_eq!(o1.passes.len(), 1);
        if names(&o1).iter().any(|n| n == "napi_defer_hard_irqs=2") {
            one_pass_found += 1;
        }
    }
    assert_eq!(one_pass_found, 0, "one pass found the partner");
    assert!(found >= 5, "found the partner on {found}/6 seeds");
}

#[test]
fn a_forward_pass_keeps_to_the_budget_and_needs_a_big_gain() {
    for budget in [60, 80, 109] {
        let o = partner_on_budget(budget);
        assert!(o.runs <= budget, "{budget}: {} runs", o.runs);
        assert_eq!(names(&o)[0], "gro_flush_timeout=20000", "{}", o.render());
    }
    // A 10 % gain leaves the operating point where it was: one pass.
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    for seed in 1..=4 {
        let (o, _) = run(&effects, 0.03, seed);
        assert_eq!(o.passes.len(), 1, "seed {seed}\n{}", o.render());
    }
}

/// The hidden partner over more seeds, with and without forward passes
/// (printing only):
/// `AUTOTUNE_SIM_SEEDS=100 cargo test -p nettune-tune --test autotune_sim partner_sweep -- --ignored --nocapture`.
#[test]
#[ignore]
fn search_partner_sweep() {
    let n: u64 = std::env::var("AUTOTUNE_SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for forward in [None, Some(20.0)] {
        let (mut both, mut runs, mut passes) = (0, 0, 0);
        for seed in 1..=n {
            let cfg = SearchConfig {
                forward_after_pct: forward,
                ..config(seed)
            };
            let mut host = hidden_partner(seed);
            let mut s = Search::new(space(), cfg).expect("search");
            let (o, _) = drive(&mut s, &mut host);
            let kept = names(&o);
            both += usize::from(
                kept.iter().any(|k| k == "gro_flush_timeout=20000")
                    && kept.iter().any(|k| k == "napi_defer_hard_irqs=2"),
            );
            runs += o.runs;
            passes += o.passes.len();
        }
        println!(
            "forward {forward:?}: seeds {n}, kept both {both}, mean runs {:.1}, mean passes {:.2}",
            runs as f64 / n as f64,
            passes as f64 / n as f64
        );
    }
}

#[test]
fn a_budget_raised_during_the_search_pays_for_a_forward_pass() {
    // 45 runs keep the big gain and leave no room for a forward pass. A
    // time budget whose runs turn out quicker raises the budget as it goes.
    let fixed = partner_on_budget(45);
    assert_eq!(fixed.passes.len(), 1, "{}", fixed.render());

    let cfg = SearchConfig {
        budget: Some(45),
        ..config(3)
    };
    let mut s = Search::new(space(), cfg).expect("search");
    let mut host = hidden_partner(3);
    let o = loop {
        match s.next_step().expect("next") {
            Step::Measure { arm, .. } => {
                let obs = host.measure(&arm.changes());
                s.record(&arm, obs).expect("record");
                s.raise_budget(200);
                // Never lowered: rounds planned count on it.
                s.raise_budget(10);
                assert_eq!(s.budget(), Some(200));
            }
            Step::Done(o) => break o,
        }
    };
    assert!(o.passes.len() >= 2, "{}", o.render());
    assert!(o.runs > 45 && o.runs <= 200, "{} runs", o.runs);
    assert_eq!(names(&o)[0], "gro_flush_timeout=20000", "{}", o.render());
    // An ended search keeps its budget.
    s.raise_budget(1000);
    assert_eq!(s.budget(), Some(200));
}

#[test]
fn a_forward_pass_starts_when_the_budget_pays_for_its_earliest_decision() {
    // 54 runs: the first pass keeps the big gain in 30 and leaves 24, a
    // baseline and a candidate for two rounds of 3 and their re-check's
    // first decision (two batches of 3 each). That pays for the partner.
    let o = partner_on_budget(54);
    assert_eq!(o.passes.len(), 2, "{}", o.render());
    assert_eq!(o.passes[1].first_run, 30, "{}", o.render());
    assert!(o.runs <= 54);
    assert_eq!(
        names(&o),
        ["gro_flush_timeout=20000", "napi_defer_hard_irqs=2"],
        "{}",
        o.render()
    );
    // One run less and the pass does not start.
    let o = partner_on_budget(53);
    assert_eq!(o.passes.len(), 1, "{}", o.render());
}

/// A +10 % change under 10 % noise: four rounds of three runs an arm
/// rarely decide it. With a budget the race goes on after them while the
/// budget pays, instead of ending with the budget unspent.
#[test]
fn a_budget_left_after_the_last_round_races_on_what_may_still_win() {
    let mut effects = [0.0; 8];
    effects[0] = 0.10;
    let gro = "gro_flush_timeout=20000".to_string();
    let (mut longer, mut kept_budget, mut kept_open) = (0, 0, 0);
    let max_rounds = config(1).max_rounds;
    for seed in 1..=12u64 {
        let mut host = FakeHost::new(&effects, 0.10, seed);
        let cfg = SearchConfig {
            budget: Some(150),
            ..config(seed)
        };
        let mut s = Search::new(space(), cfg).expect("search");
        let (o, _) = drive(&mut s, &mut host);
        assert!(o.runs <= 150, "seed {seed}: {} runs", o.runs);
        assert_kept_is_proven(&o, &format!("seed {seed}"));
        longer += usize::from(o.passes[0].rounds > max_rounds);
        kept_budget += usize::from(names(&o).contains(&gro));
        // Those that left after the last round had an estimate under the threshold.
        for r in &o.rejected {
            if let Reason::NoSign { round, bar } = r.reason {
                if round >= max_rounds {
                    let e = r.race.expect("raced").change.estimate;
                    assert!(e < bar, "seed {seed}: {} {e} left at {bar}", r.candidate);
                }
            }
        }
        let mut host = FakeHost::new(&effects, 0.10, seed);
        let mut s = Search::new(space(), config(seed)).expect("search");
        let (o, _) = drive(&mut s, &mut host);
        assert!(
            o.passes.iter().all(|p| p.rounds <= max_rounds),
            "{}",
            o.render()
        );
        kept_open += usize::from(names(&o).contains(&gro));
    }
    assert!(longer > 0, "no race went past its rounds");
    assert!(
        kept_budget > kept_open,
        "kept {kept_budget} of 12 with a budget, {kept_open} without"
    );
}

/// The lab's unpinned TCP runs switch between a slow and a fast mode within
/// minutes; pinned runs do not. Two candidates: threaded_napi=true (here
/// the pin: 1.0 whatever the mode) and gro_flush_timeout=20000 (+3 % with
/// a wide spread, so it stays in doubt for all four rounds). The other arms
/// run slow (0.6) in rounds 1–2, fast (1.2) in rounds 3–4 and slow again in
/// the re-check. threaded_napi=true wins in round 2 and is not raced again.
/// Judged at the race's end against every baseline run, its gain over the
/// slow rounds is lost in the fast ones and it leaves undecided. Judged
/// against the baseline runs of the rounds it ran in, it stays a winner,
/// and the re-check keeps it.
#[test]
fn a_winner_is_judged_against_the_baseline_runs_of_its_own_rounds() {
    let f = |knob, levels: Vec<Level>| Factor { knob, levels };
    let space = SearchSpace::new(vec![
        f(
            Knob::GroFlushTimeout,
            vec![Level::Int(0), Level::Int(20_000)],
        ),
        f(
            Knob::ThreadedNapi,
            vec![Level::Bool(false), Level::Bool(true)],
        ),
    ])
    .expect("space");
    let cfg = SearchConfig {
        forward_after_pct: None,
        ..config(5)
    };
    let mut s = Search::new(space, cfg).expect("search");
    // Rounds 1–2 race three arms, rounds 3–4 two (3 runs an arm a round).
    let mode = |seq: usize| if (18..30).contains(&seq) { 1.2 } else { 0.6 };
    let mut counts = [0usize; 3];
    let o = loop {
        match s.next_step().expect("next") {
            Step::Measure { arm, seq } => {
                let (k, spread, m) = match arm.changes().as_slice() {
                    [] => (0, [0.98, 1.0, 1.02], mode(seq)),
                    [0] => (1, [0.93, 1.03, 1.13], mode(seq)),
                    _ => (2, [0.99, 1.0, 1.01], 1.0),
                };
                let v = m * spread[counts[k] % 3];
                counts[k] += 1;
                s.record(&arm, Observation::new(v * 10e9)).expect("record");
            }
            Step::Done(o) => break o,
        }
    };
    let text = o.render();
    assert_eq!(o.passes[0].rounds, 4, "{text}");
    let a = o
        .accepted
        .iter()
        .find(|a| a.candidate.to_string() == "threaded_napi=true")
        .unwrap_or_else(|| panic!("not kept:\n{text}"));
    assert_eq!(a.race.runs, 6, "{text}");
    // Its race interval is against the slow rounds it ran in: +67 %.
    assert!(a.race.change.lo > 50.0, "{text}");
    let last = o.rechecks.last().expect("rechecked");
    assert!(last.passed && last.changes.len() == 1, "{text}");
}

/// Runs in two modes (0.55 or 1.0 of the value, half the time each) unless
/// threaded_napi=true (here the pin: 0.9, one mode; +16 % on the mean).
/// Judged on means, the search keeps it more often than on medians, whose
/// interval jumps between the modes.
#[test]
fn on_means_a_change_that_ends_two_modes_is_kept_more_often() {
    let mut effects = [0.0; 8];
    effects[7] = -0.1;
    let kept = |statistic: Statistic| {
        (1..=12u64)
            .filter(|&seed| {
                let mut host = FakeHost::new(&effects, 0.03, seed);
                host.two_modes = Some((7, 0.55));
                let cfg = SearchConfig {
                    statistic,
                    budget: Some(150),
                    ..config(seed)
                };
                let mut s = Search::new(space(), cfg).expect("search");
                let (o, _) = drive(&mut s, &mut host);
                assert_kept_is_proven(&o, &format!("seed {seed}"));
                names(&o).contains(&"threaded_napi=true".to_string())
            })
            .count()
    };
    let (mean, median) = (kept(Statistic::Mean), kept(Statistic::Median));
    eprintln!("kept on {mean} of 12 on means, {median} on medians");
    assert!(
        mean > median,
        "kept on {mean} of 12 on means, {median} on medians"
    );
}
