//! results.json's bytes: the typed builder ([`outcome`]) plus the CLI's
//! header against the `json!` builders it replaced, frozen here as they
//! were. A field added, renamed, dropped, retyped or turned from absent to
//! `null` in the type fails this test.

use model::results::autotune::{AutotuneWorkload, Better, FromSetting};
use model::results::Machine;
use serde_json::{json, Value};
use tune::autotune::Effect;

use super::*;

fn old_effect_json(e: &Effect) -> Value {
    json!({
        "estimate": e.change.estimate,
        "lo": e.change.lo,
        "hi": e.change.hi,
        "level": e.change.level,
        "unit": if e.relative { "%" } else { "difference" },
        "verdict": format!("{:?}", e.verdict).to_lowercase(),
        "runs": e.runs,
        "baseline_runs": e.baseline_runs,
    })
}

fn old_names(cs: &[tune::autotune::Candidate]) -> Vec<String> {
    cs.iter().map(ToString::to_string).collect()
}

/// `runner::autotune::outcome_json` before the type, verbatim.
fn old_outcome_json(
    objective: &str,
    built: &BuiltSpace,
    ended: &Ended,
    trace: &[RunTrace],
) -> Value {
    let space: Vec<Value> = built
        .factors
        .iter()
        .map(|f| {
            json!({
                "knob": f.knob.name(),
                "current": f.levels.first().map(ToString::to_string),
                "levels": f.levels.iter().skip(1).map(ToString::to_string).collect::<Vec<_>>(),
                "source": built.sources.iter().find(|(k, _)| *k == f.knob).map(|(_, s)| *s),
            })
        })
        .collect();
    let excluded: Vec<Value> = built
        .excluded
        .iter()
        .map(|e| json!({"knob": e.knob.name(), "level": e.level, "reason": e.reason}))
        .collect();
    let runs: Vec<Value> = trace
        .iter()
        .map(|r| {
            let mut run = json!({"seq": r.seq, "arm": r.arm, "value": r.value, "values": r.values});
            if let Some(l) = &r.limited_by {
                run["limited_by"] = json!(l);
            }
            // Added since the builders: each run's drops by reason.
            if !r.drops.is_empty() {
                run["drops"] = json!(r.drops);
            }
            run
        })
        .collect();
    let mut doc = json!({
        "schema_version": 1,
        "kind": "autotune",
        "objective": objective,
        "space": space,
        "excluded": excluded,
        "trace": runs,
        "runs_used": trace.len(),
    });
    let o = ended.outcome();
    doc["interrupted"] = json!(ended.interrupted());
    doc["rounds"] = json!(o.rounds);
    doc["accepted"] = o
        .accepted
        .iter()
        .map(|a| json!({"knob": a.candidate.knob.name(), "level": a.candidate.level.to_string(), "race": old_effect_json(&a.race), "on_top_of": old_names(&a.on_top_of)}))
        .collect();
    doc["rejected"] = o
        .rejected
        .iter()
        .map(|r| json!({"knob": r.candidate.knob.name(), "level": r.candidate.level.to_string(), "race": r.race.as_ref().map(old_effect_json), "reason": r.reason.to_string(), "on_top_of": old_names(&r.on_top_of)}))
        .collect();
    doc["rechecks"] = o
        .rechecks
        .iter()
        .map(|r| json!({
            "changes": r.changes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "effect": old_effect_json(&r.effect),
            "versus_best": r.versus_best.as_ref().map(old_effect_json),
            "without": r.without.iter().map(|w| json!({"change": w.candidate.to_string(), "effect": old_effect_json(&w.effect), "needed": w.needed})).collect::<Vec<_>>(),
            "constraints": r.constraints.iter().map(|c| json!({"constraint": c.constraint, "effect": old_effect_json(&c.effect), "holds": c.holds})).collect::<Vec<_>>(),
            "passed": r.passed,
            "on_top_of": old_names(&r.on_top_of),
        }))
        .collect();
    doc["passes"] = o
        .passes
        .iter()
        .map(|p| json!({"on_top_of": old_names(&p.on_top_of), "first_run": p.first_run, "race_end": p.race_end, "rounds": p.rounds}))
        .collect();
    doc["summary"] = json!(o.render());
    doc
}

/// The header nettune's `write_files` added with `json!` before the type.
fn old_header(doc: &mut Value, machine: &Machine) {
    doc["workload"] = json!({
        "test": "tcp-crr",
        "duration": 3u32,
        "flows": 1u32,
        "size": Option::<u32>::None,
        "args": ["--cpus", "0"],
        "min_effect_pct": 2.0f64,
        "statistic": "mean",
        "seed": 7022647215998201445u64,
        "repeats": 3u32,
        "confirm_repeats": 9u32,
        "bench_args": ["--test", "tcp-crr"],
    });
    doc["metric"] = json!("transactions");
    doc["direction"] = json!("higher");
    doc["nettune_version"] = json!("0.1.0");
    doc["started"] = json!("2026-11-26T02:14:22Z");
    doc["finished"] = json!("2026-11-26T02:19:58Z");
    doc["machine"] = serde_json::to_value(machine).unwrap();
    doc["from"] = json!({"dir": std::path::Path::new("/tmp/a"), "setting": ["tcp_tw_reuse=1"]});
}

/// The same header, typed.
fn new_header(r: &mut model::results::autotune::AutotuneResults, machine: &Machine) {
    r.workload = Some(AutotuneWorkload {
        test: Some("tcp-crr".into()),
        duration: Some(3),
        flows: Some(1),
        size: None,
        args: vec!["--cpus".into(), "0".into()],
        min_effect_pct: Some(2.0),
        statistic: Some(model::stats::Statistic::Mean),
        seed: Some(7022647215998201445),
        repeats: Some(3),
        confirm_repeats: Some(9),
        bench_args: vec!["--test".into(), "tcp-crr".into()],
    });
    r.metric = Some("transactions".into());
    r.direction = Some(Better::Higher);
    r.nettune_version = Some("0.1.0".into());
    r.started = Some("2026-11-26T02:14:22Z".into());
    r.finished = Some("2026-11-26T02:19:58Z".into());
    r.machine = Some(machine.clone());
    r.from = Some(FromSetting {
        dir: "/tmp/a".into(),
        setting: vec!["tcp_tw_reuse=1".into()],
    });
}

/// Old and new bytes of `ended`, with and without the CLI's header.
fn assert_same_bytes(built: &BuiltSpace, ended: &Ended, trace: &[RunTrace]) {
    let old = old_outcome_json("max-cps", built, ended, trace);
    let new = outcome("max-cps", built, ended, trace);
    assert_eq!(
        new.to_json_pretty().unwrap(),
        serde_json::to_string_pretty(&old).unwrap()
    );
    // Read back, it is the same document (serde_json's parse of a float
    // may differ in the last digit, so the floats are not compared).
    let back = model::results::autotune::AutotuneResults::from_json(&new.to_json_pretty().unwrap())
        .unwrap();
    assert_eq!(
        (&back.accepted.len(), &back.space, &back.excluded),
        (&new.accepted.len(), &new.space, &new.excluded)
    );
    assert_eq!(back.trace.len(), new.trace.len());
    let machine = Machine {
        hostname: "vm".into(),
        kernel: "6.18".into(),
        cpus: 2,
        cpu_model: None,
    };
    let (mut old, mut new) = (old, new);
    old_header(&mut old, &machine);
    new_header(&mut new, &machine);
    let want = serde_json::to_string_pretty(&old).unwrap();
    assert_eq!(new.to_json_pretty().unwrap(), want);
    let back = model::results::autotune::AutotuneResults::from_json(&want).unwrap();
    assert_eq!(
        (back.workload, back.machine, back.from),
        (new.workload, new.machine, new.from)
    );
}

#[test]
fn results_json_has_the_bytes_of_the_json_builders_it_replaced() {
    // A whole search with a space, its sources and a level left out.
    let mut built = build(Objective::MaxThroughput, &snaps(), NetnsScope::Child);
    built.excluded.push(crate::autotune::Excluded {
        knob: Knob::ThreadedNapi,
        level: Some("true".into()),
        reason: "threaded: write failed on h1".into(),
    });
    built.excluded.push(crate::autotune::Excluded {
        knob: Knob::BusyPoll,
        level: None,
        reason: "not there".into(),
    });
    let cancel = Arc::new(AtomicBool::new(false));
    let (ended, trace) = drive(
        &mut tw_search(60),
        &mut Fake::new(),
        &cfg(cancel),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(!ended.outcome().accepted.is_empty());
    assert!(trace.iter().any(|r| r.limited_by.is_some()));
    assert_same_bytes(&built, &ended, &trace);
    // Interrupted in the race and in the re-check; a run without a value.
    for n in [4, 20] {
        let (ended, mut trace, _) = tw_cancelled_after(n);
        assert_same_bytes(&no_space(), &ended, &trace);
        trace[0].value = f64::NAN;
        trace[0].limited_by = None;
        assert_same_bytes(&no_space(), &ended, &trace);
    }
}

/// `--recheck --json`'s output against the `json!` builder it replaced.
#[test]
fn recheck_output_has_the_bytes_of_the_json_builder_it_replaced() {
    let accepted = vec![
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
    ];
    for budget in [20, 10] {
        let rc = RecheckConfig {
            repeats: 5,
            budget,
            seed: 9,
            min_effect_pct: 2.0,
            statistic: model::stats::Statistic::Median,
        };
        let (report, _) = recheck_on_fake(&accepted, &[], &rc);
        let mut old = json!({
            "all_hold": report.all_hold(),
            "rows": report.rows.iter().map(|r| json!({
                "changes": r.label,
                "combined": r.combined,
                "effect": r.effect.as_ref().map(old_effect_json),
                "holds": r.holds,
            })).collect::<Vec<_>>(),
            "runs_used": report.trace.len(),
            "trace": report.trace.iter().map(|r| json!({"seq": r.seq, "arm": r.arm, "value": r.value, "values": r.values, "drops": r.drops})).collect::<Vec<_>>(),
        });
        old["objective"] = json!("max-cps");
        old["results"] = json!(std::path::Path::new("/tmp/a/results.json"));
        let mut new = report.output();
        new.objective = Some("max-cps".into());
        new.results = Some("/tmp/a/results.json".into());
        assert_eq!(
            new.to_json_pretty().unwrap(),
            serde_json::to_string_pretty(&old).unwrap()
        );
    }
}
