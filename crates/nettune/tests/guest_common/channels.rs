//! `ethtool -L` renumbers IRQs: a plan that changes the channel count and
//! places IRQs must place the IRQs that exist after the change. On the real
//! vmxnet3 (two combined channels and an event vector with 2 vCPUs).

use super::*;
use fleet::client::Agent;
use fleet::proto::Request;
use guest::Guest;
use serde_json::Value;

/// `eth0`'s combined channels, from inspect.
fn combined(v: &Value) -> Option<u64> {
    v["interfaces"]
        .as_array()?
        .iter()
        .find(|i| i["name"] == "eth0")?["ethtool"]["channels"]["value"]["combined"]
        .as_u64()
}

/// `(number, name, smp_affinity)` of every IRQ of `eth0`.
fn irqs(v: &Value) -> Vec<(u64, String, String)> {
    v["irqs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["interface"] == "eth0")
        .map(|q| {
            (
                q["number"].as_u64().unwrap_or(0),
                q["name"].as_str().unwrap_or("").to_string(),
                q["smp_affinity"].to_string(),
            )
        })
        .collect()
}

/// `plan` with a channel change of `eth0` to `n` combined in front.
fn with_channels(mut plan: Value, n: u64) -> Value {
    let change = serde_json::json!({
        "phase": "channels",
        "knob": "combined",
        "target": {"kind": "ethtool", "iface": "eth0", "group": "channels", "attr": "combined"},
        "before": null,
        "after": n.to_string(),
        "rule": "channels",
        "reason": "fewer channels than CPUs (test)",
        "source": "Documentation/networking/scaling.rst"
    });
    plan["changes"].as_array_mut().unwrap().insert(0, change);
    plan
}

fn apply_with(plan: &Value, replan: bool) -> Request {
    Request::Apply {
        dry_run: false,
        plan: plan.clone(),
        confirm_within: None,
        root: None,
        state_dir: None,
        force: false,
        replan,
    }
}

/// The IRQ numbers the apply report wrote affinities to
/// (`/proc/irq/N/smp_affinity_list` targets), and the report's lines for
/// them.
pub fn placed(report: &Value) -> Vec<(u64, Value)> {
    let mut out: Vec<(u64, Value)> = report["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let t = c["target"].as_str()?;
            let n = t
                .strip_prefix("/proc/irq/")?
                .strip_suffix("/smp_affinity_list")?;
            Some((n.parse().ok()?, c.clone()))
        })
        .collect();
    out.sort_by_key(|x| x.0);
    out
}

/// vmxnet3 has no `set_channels` (its ethtool ops only read them): a plan
/// changing its channel count fails at that change, says the driver does
/// not support it, and leaves every knob as it was.
pub fn vmxnet3_refuses_a_channel_change(mut agent: Agent, _g: &Guest) {
    let agent = &mut agent;
    let first = inspect(agent);
    let was = combined(&first).unwrap_or_else(|| panic!("no channels: {first:#}"));
    let plan = with_channels(plan(agent, "latency"), if was > 1 { 1 } else { 2 });
    let was_preview = preview(agent, &plan);
    let said = match agent.json(&apply_with(&plan, true), AGENT_DEADLINE) {
        Ok((v, code)) => {
            assert_ne!(code, 0, "vmxnet3 took a channel change: {v:#}");
            v.to_string()
        }
        Err(e) => e.to_string(),
    };
    assert!(
        said.contains("ethtool -L eth0 combined") && said.contains("Operation not supported"),
        "{said}"
    );
    assert!(said.contains("rolled back"), "{said}");
    assert_eq!(preview(agent, &plan), was_preview);
    let differ = differences(&knobs(&first), &knobs(&inspect(agent)));
    assert!(differ.is_empty(), "after the refusal {differ:?}");
}

pub fn channels_then_irqs(mut agent: Agent, _g: &Guest) {
    let agent = &mut agent;
    let first = inspect(agent);
    let was = combined(&first).unwrap_or_else(|| panic!("no channels: {first:#}"));
    let target = if was > 1 { 1 } else { 2 };
    let before = knobs(&first);
    // On CPU 1 only: the driver spreads its IRQs one per CPU by itself
    // (again after a channel change), which is the plan's spread too.
    let plan = with_channels(plan_on(agent, "latency", Some("1")), target);

    // Without --replan the apply stops after the channel change: the later
    // changes name IRQs of the old count, and none of them is written.
    let (v, code) = agent
        .json(&apply_with(&plan, false), AGENT_DEADLINE)
        .unwrap();
    assert!(
        v["stopped"].is_object(),
        "exit {code}, not stopped after channels: {v:#}"
    );
    assert!(
        placed(&v).is_empty(),
        "IRQs placed from the old plan: {v:#}"
    );
    assert_eq!(combined(&inspect(agent)), Some(target));
    rollback(agent, "channels, no replan");
    let back = inspect(agent);
    assert_eq!(combined(&back), Some(was), "channels after rollback");

    // With --replan the later phases are planned again for the IRQs that
    // exist after the change, and those are the ones placed.
    let report = ask(agent, &apply_with(&plan, true), "apply channels --replan");
    let now = inspect(agent);
    assert_eq!(combined(&now), Some(target), "{report:#}");
    let exist: Vec<u64> = irqs(&now).iter().map(|q| q.0).collect();
    let wrote: Vec<u64> = placed(&report).into_iter().map(|x| x.0).collect();
    eprintln!("replan: placed {wrote:?}, eth0's IRQs now {:?}", irqs(&now));
    assert!(!wrote.is_empty(), "no IRQ placed: {report:#}");
    for n in &wrote {
        assert!(
            exist.contains(n),
            "IRQ {n} placed but not eth0's now ({exist:?}): {report:#}"
        );
    }
    verify_no_drift(agent, "channels --replan");
    rollback(agent, "channels --replan");
    let after = inspect(agent);
    assert_eq!(combined(&after), Some(was));
    let differ = differences(&before, &knobs(&after));
    assert!(differ.is_empty(), "after rollback {differ:?}");
}
