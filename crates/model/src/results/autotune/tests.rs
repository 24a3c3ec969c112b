use super::*;

/// A file of before most keys (`--recheck` still reads it): defaults.
#[test]
fn an_old_partial_file_reads_with_defaults() {
    let r = AutotuneResults::from_json(
        r#"{"objective": "max-cps", "interrupted": true, "rounds": 2,
            "accepted": [{"knob": "tcp_tw_reuse", "level": "1"},
              {"knob": "busy_poll", "level": "50",
              "race": {"estimate": 3.0, "lo": 1.0, "hi": 5.0, "level": 0.95, "unit": "%",
                       "verdict": "gain", "runs": 3, "baseline_runs": 3}}],
            "workload": {"test": "tcp-crr", "duration": 1, "flows": 1, "seed": 3}}"#,
    )
    .unwrap();
    assert_eq!(r.schema_version, 0);
    assert_eq!(r.objective.as_deref(), Some("max-cps"));
    assert!(r.interrupted && r.passes.is_empty() && r.accepted[0].on_top_of.is_empty());
    assert!(r.accepted[0].race.is_none() && r.accepted[1].race.is_some());
    let w = r.workload.unwrap();
    assert_eq!((w.size, w.statistic, w.seed), (None, None, Some(3)));
}

/// Garbage is refused with a message, never a panic; lists are bounded.
#[test]
fn garbage_is_refused_and_lists_are_bounded() {
    for bad in [
        "{",
        r#"{"accepted": "not a list"}"#,
        r#"{"accepted": [{"knob": 1, "level": "1"}]}"#,
        r#"{"trace": [{"seq": -1, "arm": "baseline", "value": 1.0}]}"#,
        r#"{"workload": {"statistic": "average"}}"#,
        r#"{"rechecks": [{"changes": [1], "effect": null}]}"#,
    ] {
        let e = AutotuneResults::from_json(bad).unwrap_err().to_string();
        let want = if bad == "{" {
            "not JSON"
        } else {
            "not an autotune results file"
        };
        assert!(e.starts_with(want), "{e}");
    }
    let many = format!(
        r#"{{"excluded": [{}]}}"#,
        vec![r#"{"knob": "k", "level": null, "reason": "r"}"#; MAX_ROWS + 5].join(",")
    );
    assert_eq!(
        AutotuneResults::from_json(&many).unwrap().excluded.len(),
        MAX_ROWS
    );
}

/// NaN is written as `null` and read back as NaN; keys come out sorted.
#[test]
fn a_nan_value_round_trips_through_null() {
    let r = AutotuneResults {
        trace: vec![TraceRun {
            seq: 0,
            arm: "baseline".into(),
            value: f64::NAN,
            values: [("throughput".to_string(), f64::NAN)].into(),
            limited_by: None,
            drops: Vec::new(),
        }],
        ..AutotuneResults::default()
    };
    let text = r.to_json_pretty().unwrap();
    assert!(text.contains("\"value\": null"), "{text}");
    assert!(text.find("\"accepted\"") < text.find("\"kind\""), "{text}");
    let back = AutotuneResults::from_json(&text).unwrap();
    assert!(back.trace[0].value.is_nan());
}
