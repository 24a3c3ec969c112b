//! The e1000 `InterruptThrottleRate` module parameter through a real
//! reload of the driver (QEMU's default 82540EM, which takes no
//! `ethtool -C`): the latency profile's plan, with the reload allowed as
//! `fleet apply --allow-reload` allows it, applies, verifies and rolls back.
//!
//! e1000 declares its parameters with permission 0 (`E1000_PARAM` in
//! e1000_param.c), so no `/sys/module/e1000/parameters/` file shows them;
//! what the driver took is what it says when it probes again
//! (`e1000_check_options`: "Interrupt Throttling Rate (ints/sec) turned
//! off" for 0), on the guest's console from READY on.

use super::*;
use fleet::client::Agent;
use guest::Guest;
use serde_json::Value;

/// What e1000 says when it loads with `InterruptThrottleRate=0`.
const ITR_OFF: &str = "Interrupt Throttling Rate (ints/sec) turned off";
/// What it says at every probe (e1000_probe).
const PROBED: &str = "Intel(R) PRO/1000 Network Connection";

/// The console from byte `from` on.
fn console_since(g: &Guest, from: usize) -> String {
    let b = std::fs::read(g.machine().console_log()).unwrap();
    String::from_utf8_lossy(&b[from.min(b.len())..]).into_owned()
}

fn console_len(g: &Guest) -> usize {
    std::fs::metadata(g.machine().console_log()).map_or(0, |m| m.len() as usize)
}

/// `eth0`'s line of inspect: its name, operational state and flags.
fn eth0(v: &Value) -> Value {
    v["interfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["name"] == "eth0")
        .cloned()
        .unwrap_or_else(|| panic!("no eth0: {v:#}"))
}

/// inspect once eth0's link is up again: the reload's new interface comes
/// up administratively at once, its carrier when e1000's watchdog sees the
/// emulated link (about 2 s); waited for at most [`AGENT_DEADLINE`].
fn inspect_once_up(agent: &mut Agent) -> Value {
    let t0 = std::time::Instant::now();
    loop {
        let v = inspect(agent);
        if eth0(&v)["operstate"] == "up" || t0.elapsed() > AGENT_DEADLINE {
            return v;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The knobs, without eth0's ifindex: a reload registers a new interface,
/// and its index is the kernel's next one, not a setting.
fn knobs_but_ifindex(v: &Value) -> Value {
    let mut k = knobs(v);
    for i in k["interfaces"].as_array_mut().into_iter().flatten() {
        if let Some(o) = i.as_object_mut() {
            o.remove("ifindex");
        }
    }
    k
}

pub fn itr_through_a_reload(mut agent: Agent, g: &Guest) {
    let agent = &mut agent;
    let mut plan = plan(agent, "latency");
    let itr: Vec<&Value> = plan["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["target"]["kind"] == "module_param")
        .collect();
    assert_eq!(itr.len(), 1, "{plan:#}");
    assert_eq!(itr[0]["target"]["module"], "e1000");
    assert_eq!(itr[0]["target"]["param"], "InterruptThrottleRate");
    assert_eq!(itr[0]["after"], "0");
    // As `fleet apply --allow-reload` does.
    plan["options"]["reload_modules"] = Value::Bool(true);

    let before = knobs_but_ifindex(&inspect_once_up(agent));
    let was = preview(agent, &plan);
    let from = console_len(g);
    let applied = ask(agent, &apply(&plan, false), "apply latency with a reload");
    let said = console_since(g, from);
    assert!(
        said.contains(ITR_OFF),
        "e1000 did not load again with InterruptThrottleRate=0: console {said:?}; {applied:#}"
    );
    verify_no_drift(agent, "latency with a reload");
    let now = preview(agent, &plan);
    assert!(now.iter().all(|c| c.3), "not held after apply: {now:?}");
    let up = eth0(&inspect_once_up(agent));
    assert_eq!(
        up["operstate"],
        eth0(&before)["operstate"],
        "eth0 after the reload: {up:#}"
    );

    let from = console_len(g);
    rollback(agent, "latency with a reload");
    let said = console_since(g, from);
    assert!(
        said.contains(PROBED) && !said.contains(ITR_OFF),
        "the rollback did not load e1000 again with its default: {said:?}"
    );
    let after = knobs_but_ifindex(&inspect_once_up(agent));
    let back = preview(agent, &plan);
    assert_eq!(back, was, "a knob reads otherwise after rollback");
    let differ = differences(&before, &after);
    assert!(differ.is_empty(), "after rollback {differ:?}");
}
