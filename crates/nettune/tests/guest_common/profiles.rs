//! On the real e1000e (82574L, behind the node-1 bridge): every built-in
//! profile applies, verifies and rolls back; a value the driver refuses
//! rolls the whole apply back and is named; doctor finds no placement
//! warning after the plan is applied; the fleet reaches the guest from an
//! inventory.

use super::*;
use fleet::client::Agent;
use fleet::proto::Request;
use guest::Guest;
use serde_json::Value;
use std::ffi::OsStr;

/// The knobs as inspect reads them and as each change of `plan` reads its
/// own (module parameters, pm_qos files and all).
fn state(agent: &mut Agent, plan: &Value) -> (Value, Vec<(String, String, Value, bool)>) {
    (knobs(&inspect(agent)), preview(agent, plan))
}

/// Each built-in profile's plan, applied by the real e1000e driver's guest
/// through the agent, verifies without drift and rolls back to every knob
/// as it was (read back by inspect, counters aside).
pub fn every_profile_applies_verifies_and_rolls_back(agent: &mut Agent) {
    for profile in ["latency", "throughput", "balanced"] {
        let plan = plan(agent, profile);
        let (before, was) = state(agent, &plan);
        assert!(
            was.iter().all(|c| !c.3),
            "{profile}: a change the host already holds: {was:?}"
        );
        let applied = ask(agent, &apply(&plan, false), &format!("apply {profile}"));
        verify_no_drift(agent, profile);
        let changed = knobs(&inspect(agent));
        // Every value the plan wrote reads back as written.
        let now = preview(agent, &plan);
        assert!(
            now.iter().all(|c| c.3),
            "{profile}: not held after apply: {now:?}"
        );
        rollback(agent, profile);
        let (after, back) = state(agent, &plan);
        assert_eq!(
            back, was,
            "{profile}: a knob reads otherwise after rollback"
        );
        let differ = differences(&before, &after);
        assert!(
            differ.is_empty(),
            "{profile}: after rollback {differ:?}; applied {applied:#}"
        );
        assert_ne!(
            changed, before,
            "{profile}: the apply changed nothing inspect reads"
        );
        let targets: Vec<String> = plan["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["target"].to_string())
            .collect();
        eprintln!("{profile}: applied and rolled back {targets:?}");
    }
}

/// The value e1000e refuses: `rx-usecs` 8 (e1000_set_coalesce takes 0-4
/// and 10-10000, so 5-9 are EINVAL).
const REFUSED_USECS: &str = "8";

/// The latency plan with its `rx-usecs` of `eth0` (if any) taken out and
/// [`REFUSED_USECS`] written last, so that every other change (sysctls,
/// PM QoS, the module parameter's snippet) is written before the driver
/// refuses.
fn with_refused_usecs(mut plan: Value) -> Value {
    let changes = plan["changes"].as_array_mut().unwrap();
    changes.retain(|c| !(c["target"]["kind"] == "ethtool" && c["target"]["attr"] == "rx-usecs"));
    changes.push(serde_json::json!({
        "phase": "coalescing",
        "knob": "rx-usecs",
        "target": {"kind": "ethtool", "iface": "eth0", "group": "coalesce", "attr": "rx-usecs"},
        "before": null,
        "after": REFUSED_USECS,
        "rule": "coalesce",
        "reason": "a value e1000e refuses (test)",
        "source": "e1000e's ethtool.c, e1000_set_coalesce"
    }));
    plan
}

/// A value the real driver refuses in the middle of an apply: the apply
/// fails, names the knob and the value, and every knob it had written
/// reads back as before, byte for byte.
pub fn a_refused_value_rolls_the_whole_apply_back(agent: &mut Agent) {
    let plan = with_refused_usecs(plan(agent, "latency"));
    let (before, was) = state(agent, &plan);
    // A failed apply is the agent's error (its message), or a report
    // with a failing exit status.
    let said = match agent.json(&apply(&plan, false), AGENT_DEADLINE) {
        Ok((v, code)) => {
            assert_ne!(code, 0, "the driver took rx-usecs {REFUSED_USECS}: {v:#}");
            v.to_string()
        }
        Err(e) => e.to_string(),
    };
    assert!(
        said.contains("rx-usecs") && said.contains(REFUSED_USECS),
        "the error does not name rx-usecs {REFUSED_USECS}: {said}"
    );
    assert!(
        said.contains("Invalid argument") || said.contains("EINVAL"),
        "the error does not say the driver refused: {said}"
    );
    let written = plan["changes"].as_array().unwrap().len() - 1;
    assert!(written > 0, "nothing before rx-usecs in {plan:#}");
    let (after, back) = state(agent, &plan);
    assert_eq!(back, was, "a knob reads otherwise after the refusal");
    let differ = differences(&before, &after);
    assert!(differ.is_empty(), "after the refusal {differ:?}: {said}");
    assert!(said.contains("rolled back"), "{said}");
    eprintln!("e1000e refused rx-usecs {REFUSED_USECS} after {written} changes: {said}");
}

/// The placement findings: a queue IRQ on the wrong node, several nodes,
/// an isolated CPU, one CPU for all, stacked IRQs, RPS on the IRQ's CPU.
const PLACEMENT: [&str; 8] = [
    "irq-remote-node",
    "irq-affinity-spans-nodes",
    "irq-on-isolated-cpu",
    "irqs-on-one-cpu",
    "irqs-on-smt-siblings",
    "irq-stacked",
    "rps-includes-irq-cpu",
    "rps-on-irq-sibling",
];

/// The placement findings of a live doctor run (1 s of sampling).
fn placement_findings(agent: &mut Agent) -> Vec<Value> {
    let req = Request::Doctor {
        seconds: Some(1.0),
        root: None,
        profile: None,
        bdp: None,
        allowance: None,
    };
    let (v, _code) = agent
        .json(&req, AGENT_DEADLINE)
        .unwrap_or_else(|e| panic!("doctor: {e}"));
    assert!(v["findings"].is_array(), "doctor: {v:#}");
    v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| PLACEMENT.contains(&f["id"].as_str().unwrap_or("")))
        .cloned()
        .collect()
}

/// doctor on the 2-node guest after each profile's plan is applied: the
/// NIC sits behind the node-1 bridge, and no placement warning remains.
pub fn doctor_sees_no_placement_warning_after_the_apply(agent: &mut Agent) {
    for profile in ["latency", "throughput", "balanced"] {
        let plan = plan(agent, profile);
        ask(agent, &apply(&plan, false), &format!("apply {profile}"));
        let found = placement_findings(agent);
        rollback(agent, profile);
        assert!(
            found.is_empty(),
            "{profile}: doctor after the applied plan: {found:#?}"
        );
    }
}

/// The CLI's fleet reaches the same guest from an inventory, like any host.
pub fn the_fleet_reaches_the_guest_from_an_inventory(g: &Guest) {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("guests.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\nname = \"e1000e\"\ntransport = \"guest\"\nsocket = \"{}\"\n",
            g.agent_socket().display()
        ),
    )
    .unwrap();
    let [a, b, c, d] = ["fleet", "inspect", "--json", "--inventory"].map(OsStr::new);
    let out = nettune(&[a, b, c, d, inv.as_os_str()]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("\"e1000e\""), "{text}");
    assert!(text.contains("eth0-rx-0"), "{text}");
}
