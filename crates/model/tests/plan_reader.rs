//! The plan reader (`Plan::from_json`) on hostile input: arbitrary bytes and
//! mutations of a real plan never panic, CPU sets stay within `MAX_CPU`, and
//! an unknown `schema_version` is refused naming the versions understood.
//!
//! `data/plan-c4-8xlarge-throughput.json` is the output of
//! `nettune plan --profile throughput --root tests/fixtures/c4-8xlarge --json
//! --cpus 0-35 --exclude-cpus 2-3 --bdp 10gbit,20ms` (one of the plans the
//! golden tests print); `crates/nettune/tests/tune_plan.rs` checks that every
//! golden plan the binary prints reads back.

#![allow(clippy::unwrap_used)]

use nettune_model::cpuset::MAX_CPU;
use nettune_model::plan::{Plan, PlanReadError, ValueFormat};
use nettune_model::CpuSet;
use proptest::prelude::*;
use serde_json::{json, Value};

const GOLDEN: &str = include_str!("data/plan-c4-8xlarge-throughput.json");

fn with_schema(v: &str) -> String {
    GOLDEN.replacen(
        "\"schema_version\": 1,",
        &format!("\"schema_version\": {v},"),
        1,
    )
}

#[test]
fn the_golden_plan_reads() {
    let p = Plan::from_json(GOLDEN).unwrap();
    assert_eq!(p.schema_version, 1);
    assert_eq!(p.changes.len(), 13);
    assert_eq!(p.options.exclude_cpus.to_list(), "2-3");
    assert_eq!(p.options.bdp.unwrap().rtt_us, 20_000);
}

#[test]
fn unknown_schema_versions_are_refused_naming_those_understood() {
    for v in ["2", "0", "-1", "1.5", "\"1\"", "4294967297", "[1]"] {
        let e = Plan::from_json(&with_schema(v)).unwrap_err();
        assert!(
            matches!(e, PlanReadError::UnknownSchema { .. }),
            "{v}: {e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("schema_version {v} ")) && msg.contains("reads schema_version 1"),
            "{v}: {msg}"
        );
    }
    let missing = GOLDEN.replacen("\"schema_version\": 1,", "", 1);
    for text in [missing, with_schema("null")] {
        let e = Plan::from_json(&text).unwrap_err().to_string();
        assert!(
            e.contains("no schema_version") && e.contains("reads schema_version 1"),
            "{e}"
        );
    }
}

#[test]
fn a_newer_shape_gets_the_version_message_not_a_field_error() {
    let newer = json!({"schema_version": 2, "steps": [{"set": "x"}]}).to_string();
    let e = Plan::from_json(&newer).unwrap_err().to_string();
    assert!(e.contains("schema_version 2"), "{e}");
}

#[test]
fn huge_cpu_numbers_in_a_plan_are_refused_not_allocated() {
    for (field, value) in [
        ("cpus", "0-4294967295"),
        ("exclude_cpus", "4294967295"),
        ("exclude_cpus", "32768"),
        ("cpus", "0-65535"),
    ] {
        let mut v: Value = serde_json::from_str(GOLDEN).unwrap();
        v["options"][field] = json!(value);
        let e = Plan::from_json(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains("too large"), "{field} {value}: {e}");
    }
    // The widest set that can exist reads, from a megabyte of whole-range elements.
    let mut v: Value = serde_json::from_str(GOLDEN).unwrap();
    let big = vec!["0-32767"; (1 << 20) / 8].join(",");
    v["options"]["cpus"] = json!(big);
    let p = Plan::from_json(&v.to_string()).unwrap();
    assert_eq!(p.options.cpus.unwrap().len(), MAX_CPU as usize + 1);
}

#[test]
fn absurd_bdp_options_are_refused() {
    for (rate, rtt) in [
        (0u64, 1000u64),
        (u64::MAX, 1000),
        (1_000_000, 0),
        (1_000_000, u64::MAX),
    ] {
        let mut v: Value = serde_json::from_str(GOLDEN).unwrap();
        v["options"]["bdp"] = json!({"rate_bps": rate, "rtt_us": rtt});
        let e = Plan::from_json(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains("options.bdp"), "{rate} {rtt}: {e}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"a\":"] {
        let text = format!("{{\"schema_version\": 1, \"x\": {}", open.repeat(100_000));
        assert!(Plan::from_json(&text).is_err());
    }
}

/// What apply does with a plan it read: compare values in their format
/// (parsing CPU masks and lists) and print targets. None of it may panic.
fn use_plan(p: &Plan) {
    let sets = [p.options.cpus.clone(), Some(p.options.exclude_cpus.clone())];
    for s in sets.iter().flatten() {
        assert!(s.last().into_iter().all(|l| l <= MAX_CPU));
    }
    for c in &p.changes {
        let _ = c.target.describe();
        for f in [ValueFormat::Text, ValueFormat::Mask, ValueFormat::List] {
            let _ = f.same(&c.after, c.before.as_deref().unwrap_or(""));
        }
        if let Ok(s) = CpuSet::parse_mask(&c.after) {
            assert!(s.last().into_iter().all(|l| l <= MAX_CPU));
        }
    }
    // What was read writes back to the same plan.
    let again = Plan::from_json(&serde_json::to_string(p).unwrap()).unwrap();
    assert_eq!(&again, p);
}

/// Every JSON pointer of a value, for targeted replacement.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        _ => {}
    }
}

fn hostile() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(1e300)),
        Just(json!(0)),
        Just(json!(2)),
        Just(json!("0-4294967295")),
        Just(json!("0-32767")),
        Just(json!("4294967295")),
        Just(json!("ffffffff,".repeat(1100))),
        Just(json!("")),
        Just(json!(null)),
        Just(json!([])),
        Just(json!({})),
        Just(json!(true)),
        Just(json!("\u{1b}[2J\u{0}")),
        Just(json!("x".repeat(10_000))),
        Just(json!({"kind": "created", "path": "/../../x", "what": "file"})),
        Just(json!({"kind": "irq_affinity", "irq": u64::MAX, "iface": "eth0"})),
        Just(json!({"rate_bps": u64::MAX, "rtt_us": u64::MAX})),
        any::<i64>().prop_map(|n| json!(n)),
        "\\PC{0,40}".prop_map(|s| json!(s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(p) = Plan::from_json_slice(&bytes) {
            use_plan(&p);
        }
    }

    #[test]
    fn byte_mutations_of_a_real_plan_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..8),
        token in prop::sample::select(vec![
            "4294967295", "-1", "1e999", "\"0-4294967295\"", "[[[[[[[[", "null",
            "\"\\u0000\"", "{}", "18446744073709551616", "\"ffffffff,ffffffff\"", ",", "\"",
        ]),
    ) {
        let mut b = GOLDEN.as_bytes().to_vec();
        for (at, kind, byte) in edits {
            if b.is_empty() {
                break;
            }
            let i = at.index(b.len());
            match kind {
                0 => b[i] = byte,
                1 => b.insert(i, byte),
                2 => { b.remove(i); }
                _ => { b.splice(i..i, token.bytes()); }
            }
        }
        if let Ok(p) = Plan::from_json_slice(&b) {
            use_plan(&p);
        }
    }

    #[test]
    fn hostile_values_anywhere_in_a_real_plan_never_panic(
        at in any::<prop::sample::Index>(),
        value in hostile(),
    ) {
        let mut v: Value = serde_json::from_str(GOLDEN).unwrap();
        let mut ptrs = Vec::new();
        pointers(&v, String::new(), &mut ptrs);
        let ptr = &ptrs[at.index(ptrs.len())];
        if let Some(slot) = v.pointer_mut(ptr) {
            *slot = value;
        }
        match Plan::from_json(&v.to_string()) {
            Ok(p) => use_plan(&p),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
