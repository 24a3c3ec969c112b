//! Plans and the plan a journal generation keeps, written before a change's
//! origin was typed ([`Origin`]), read into today's types and written again
//! byte for byte: the `rule` word of every change survives.
//!
//! `data/generation-c4-8xlarge/` is `nettune apply --profile throughput
//! --bdp 10gbit,20ms --persist` on a copy of `tests/fixtures/c4-8xlarge`
//! (rule, persist origins), by the binary before this change, with the
//! unit's `ExecStart` path then set to `/usr/sbin/nettune` (checksums
//! recomputed); its `journal.log` records carry no origin.

#![allow(clippy::unwrap_used)]

use nettune_model::plan::{Origin, Plan, RuleId};

fn data(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `text` read as a plan and written as `nettune plan --json` and the journal
/// write it (pretty JSON, a newline after it on stdout).
fn round_trip(text: &str) -> Plan {
    let plan = Plan::from_json(text).unwrap();
    let again = serde_json::to_string_pretty(&plan).unwrap();
    assert!(
        again == text || format!("{again}\n") == text,
        "the plan no longer writes as it was read"
    );
    plan
}

#[test]
fn plan_json_golden_is_byte_identical_through_typed_origins() {
    let plan = round_trip(&data("plan-c4-8xlarge-throughput.json"));
    assert!(plan
        .changes
        .iter()
        .all(|c| matches!(c.rule, Origin::Rule(_))));
    assert!(plan.changes.iter().any(|c| c.rule == RuleId::IrqAffinity));
}

#[test]
fn journal_generation_plan_is_byte_identical_through_typed_origins() {
    let plan = round_trip(&data("generation-c4-8xlarge/plan.json"));
    assert!(plan.changes.iter().any(|c| c.rule == Origin::Persist));
    assert!(plan.changes.iter().any(|c| c.rule == RuleId::SocketBuffers));
    for line in data("generation-c4-8xlarge/journal.log").lines() {
        assert!(!line.contains("\"rule\""), "{line}");
    }
}
