//! `[[factor]] hosts` (which hosts take a factor's levels) and the ring
//! factors: parsing, the names a lab or a fleet accepts, and the check
//! against a fleet's resolved hosts.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::inventory::{self, Format};

const LAB: &str = "[hosts.lab]\nhosts = 2\n";
const FLEET: &str =
    "[hosts.fleet]\ninventory = \"hosts.ini\"\nserver = \"server\"\nclients = \"clients\"\n";
const INVENTORY: &str = "[server]\nsrv1\n[clients]\ncli1\ncli2\n[probe]\nmon1\n";

/// A file on `hosts` with the given `[[factor]]` tables.
fn file(hosts: &str, factors: &str) -> String {
    format!(
        "{hosts}[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\n{factors}[responses]\nmetrics = [\"transactions\"]\n"
    )
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn ring_factors_take_descriptor_counts_up_to_65536() {
    let e = parse(&file(
        FLEET,
        "[[factor]]\nname = \"rx_ring\"\nlevels = [512, 4096]\n[[factor]]\nname = \"tx_ring\"\nlevels = [65536]\n",
    ))
    .unwrap();
    assert_eq!(e.factors[0].knob, Knob::RxRing);
    assert_eq!(e.factors[1].levels, [Level::Int(65536)]);
    for bad in ["0", "65537", "\"4k\""] {
        let m = err(&file(
            FLEET,
            &format!("[[factor]]\nname = \"rx_ring\"\nlevels = [{bad}]\n"),
        ));
        assert!(
            m.contains("key `factor[0].levels[0]`")
                && m.contains("an integer of descriptors 1..=65536"),
            "{m}"
        );
    }
}

#[test]
fn a_factor_without_hosts_applies_everywhere_and_serializes_as_before() {
    let e = parse(&file(
        LAB,
        "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n",
    ))
    .unwrap();
    assert!(e.factor_hosts.is_empty());
    assert!(e.factor_applies(0, &[]));
    assert!(!serde_json::to_string(&e).unwrap().contains("factor_hosts"));
    assert!(e.scope_notes().is_empty());
    let c = &e.cells()[1];
    assert_eq!(e.cell_label(c), c.label());
}

#[test]
fn a_lab_factor_names_the_server_or_the_client() {
    let e = parse(&file(
        LAB,
        "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\nhosts = [\"server\"]\n",
    ))
    .unwrap();
    assert_eq!(e.factor_hosts.get(&0).unwrap(), &["server"]);
    assert!(e.factor_applies(0, &["server".into()]));
    assert!(!e.factor_applies(0, &["client".into()]));
    // A single scoped factor keeps the knob's name in labels and results.
    assert_eq!(e.cell_label(&e.cells()[1]), "tcp_tw_reuse=1");
    assert_eq!(
        e.scope_notes(),
        ["factor[0] tcp_tw_reuse: its levels are applied on server only (hosts = [\"server\"]); the other hosts keep their own setting"]
    );
    let m = err(&file(
        LAB,
        "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\nhosts = [\"server\", \"clients\"]\n",
    ));
    assert_eq!(
        m,
        "line 9, key `factor[0].hosts[1]`: `clients` is not \"server\" or \"client\" (the lab's two ends)"
    );
}

#[test]
fn bad_hosts_lists_are_refused_naming_the_key() {
    let f = |hosts: &str, knob: &str| {
        err(&file(
            FLEET,
            &format!("[[factor]]\nname = \"{knob}\"\nlevels = [1]\nhosts = {hosts}\n"),
        ))
    };
    let m = f("[]", "rx_ring");
    assert!(
        m.contains("key `factor[0].hosts`") && m.contains("at least one"),
        "{m}"
    );
    let m = f("[\"server\", \"server\"]", "rx_ring");
    assert!(
        m.contains("key `factor[0].hosts[1]`: `server` appears twice"),
        "{m}"
    );
    let m = f("[\"web*\"]", "rx_ring");
    assert!(
        m.contains("key `factor[0].hosts[0]`") && m.contains("inventory name"),
        "{m}"
    );
    let m = f("\"server\"", "rx_ring");
    assert!(m.contains("factor[0].hosts"), "{m}");
    // A bench option is the run's, not a host's.
    let m = f("[\"server\"]", "flows");
    assert!(
        m.contains("key `factor[0].hosts`") && m.contains("drop `hosts`"),
        "{m}"
    );
    assert!(!m.contains('\n'));
}

#[test]
fn one_knob_in_two_factors_needs_disjoint_hosts() {
    let two = |a: &str, b: &str| {
        file(
            FLEET,
            &format!(
                "[[factor]]\nname = \"coalesce_rx_usecs\"\nlevels = [3, 0]\n{a}[[factor]]\nname = \"coalesce_rx_usecs\"\nlevels = [3, 0]\n{b}"
            ),
        )
    };
    let e = parse(&two("hosts = [\"server\"]\n", "hosts = [\"clients\"]\n")).unwrap();
    assert_eq!(e.cell_count(), 4);
    assert_eq!(e.factor_label(0), "coalesce_rx_usecs@server");
    assert_eq!(e.factor_label(1), "coalesce_rx_usecs@clients");
    let c = &e.cells()[2];
    assert_eq!(
        e.cell_label(c),
        "coalesce_rx_usecs@server=0 coalesce_rx_usecs@clients=3"
    );
    assert_eq!(
        e.cell_levels(c),
        [
            ("coalesce_rx_usecs@server".to_string(), "0".to_string()),
            ("coalesce_rx_usecs@clients".to_string(), "3".to_string())
        ]
    );
    let m = err(&two(
        "hosts = [\"server\"]\n",
        "hosts = [\"clients\", \"server\"]\n",
    ));
    assert!(
        m.contains("key `factor[1].hosts`") && m.contains("share no name"),
        "{m}"
    );
    let m = err(&two("hosts = [\"server\"]\n", ""));
    assert!(
        m.contains("key `factor[1].hosts`") && m.contains("every host"),
        "{m}"
    );
    let m = err(&two("", ""));
    assert!(
        m.contains("key `factor[1].name`: `coalesce_rx_usecs` appears twice"),
        "{m}"
    );
    // In a loopback lab the two ends are one host.
    let lo = file(
        "[hosts.lab]\npath = \"loopback\"\n",
        "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0]\nhosts = [\"server\"]\n[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [1]\nhosts = [\"client\"]\n",
    );
    assert!(err(&lo).contains("loopback"), "{}", err(&lo));
}

fn fleet_check(factors: &str) -> Result<(), FleetRoleError> {
    let e = parse(&file(FLEET, factors)).unwrap();
    let Hosts::Fleet(f) = &e.hosts else { panic!() };
    let inv = inventory::parse(INVENTORY, Format::AnsibleIni).unwrap();
    let roles = f.resolve(&inv).unwrap();
    assert_eq!(
        roles.scope_names(),
        [
            vec!["server".to_string(), "srv1".into()],
            vec!["clients".to_string(), "cli1".into()],
            vec!["clients".to_string(), "cli2".into()],
        ]
    );
    roles.check_factor_hosts(&e)
}

#[test]
fn fleet_hosts_are_roles_or_hosts_of_the_run() {
    assert_eq!(
        fleet_check(
            "[[factor]]\nname = \"rx_ring\"\nlevels = [512]\nhosts = [\"srv1\", \"cli2\"]\n"
        ),
        Ok(())
    );
    let e = fleet_check(
        "[[factor]]\nname = \"rx_ring\"\nlevels = [512]\nhosts = [\"clients\", \"mon1\"]\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "factor[0].hosts: \"mon1\" is no role or host of this experiment (known: server, clients, srv1, cli1, cli2)"
    );
    // "server" and "srv1" are one host: two levels of one knob there.
    let e = fleet_check(
        "[[factor]]\nname = \"rx_ring\"\nlevels = [512]\nhosts = [\"server\"]\n[[factor]]\nname = \"rx_ring\"\nlevels = [1024]\nhosts = [\"srv1\"]\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "factor[1].hosts: srv1 also takes factor[0]'s rx_ring; one knob takes one level per host"
    );
}

#[test]
fn a_large_fleet_lists_the_first_sixteen_hosts_it_knows() {
    let e = parse(&file(
        FLEET,
        "[[factor]]\nname = \"rx_ring\"\nlevels = [512]\nhosts = [\"cli99\"]\n",
    ))
    .unwrap();
    let Hosts::Fleet(f) = &e.hosts else { panic!() };
    let inv = inventory::parse(
        "[server]\nsrv1\n[clients]\ncli[01:20]\n",
        Format::AnsibleIni,
    )
    .unwrap();
    let m = f
        .resolve(&inv)
        .unwrap()
        .check_factor_hosts(&e)
        .unwrap_err()
        .to_string();
    assert!(
        m.ends_with("(known: server, clients, srv1, cli01, cli02, cli03, cli04, cli05, cli06, cli07, cli08, cli09, cli10, cli11, cli12, cli13, cli14, cli15 and 5 more)"),
        "{m}"
    );
}

const ITR: &str =
    "[[factor]]\nname = \"module_param\"\nmodule = \"e1000e\"\nparam = \"InterruptThrottleRate\"\n";

/// A `module_param` factor names its module and parameter; its levels are
/// strings or integers of a safe charset, shown `module.param=value`, and
/// carry the factor's `reload`.
#[test]
fn a_module_param_factor_names_module_and_param_and_may_allow_the_reload() {
    let e = parse(&file(
        FLEET,
        &format!("{ITR}levels = [\"3\", 0, \"1,1\"]\nreload = true\nhosts = [\"server\"]\n"),
    ))
    .unwrap();
    let f = &e.factors[0];
    assert_eq!(f.knob, Knob::ModuleParam);
    let shown: Vec<String> = f.levels.iter().map(Level::to_string).collect();
    assert_eq!(
        shown,
        [
            "e1000e.InterruptThrottleRate=3",
            "e1000e.InterruptThrottleRate=0",
            "e1000e.InterruptThrottleRate=1,1"
        ]
    );
    assert!(matches!(&f.levels[0], Level::ModuleParam(m) if m.reload && m.value == "3"));
    assert_eq!(
        serde_json::to_value(&f.levels[1]).unwrap(),
        serde_json::json!("e1000e.InterruptThrottleRate=0")
    );
    // Without `reload` the levels are parsed (the runner marks the cells n/a).
    let e = parse(&file(FLEET, &format!("{ITR}levels = [\"3\"]\n"))).unwrap();
    assert!(matches!(&e.factors[0].levels[0], Level::ModuleParam(m) if !m.reload));
    // The text of a level reads back (without the reload, which it does not say).
    let back = Knob::ModuleParam.level_from_text("e1000e.InterruptThrottleRate=3");
    assert!(matches!(back, Some(Level::ModuleParam(m)) if m.module == "e1000e" && m.value == "3"));
    for bad in ["e1000e=3", "E1000.x=3", "e1000e.x=a b", "e1000e.x="] {
        assert_eq!(Knob::ModuleParam.level_from_text(bad), None, "{bad}");
    }
    // Two parameters (or two modules) are two factors; one twice is refused.
    let two = format!(
        "{ITR}levels = [\"3\"]\n[[factor]]\nname = \"module_param\"\nmodule = \"ixgbevf\"\nparam = \"InterruptThrottleRate\"\nlevels = [\"1\"]\n"
    );
    assert_eq!(parse(&file(FLEET, &two)).unwrap().factors.len(), 2);
    let twice = format!("{ITR}levels = [\"3\"]\n{ITR}levels = [\"1\"]\n");
    assert!(err(&file(FLEET, &twice)).contains("factor[1].name"));
}

#[test]
fn a_module_param_factor_refuses_bad_names_values_and_the_lab() {
    for (factor, key, what) in [
        (
            "[[factor]]\nname = \"module_param\"\nparam = \"p\"\nlevels = [\"1\"]\n".to_string(),
            "factor[0].module",
            "names its `module` and `param`",
        ),
        (
            "[[factor]]\nname = \"module_param\"\nmodule = \"e1000e/../x\"\nparam = \"p\"\nlevels = [\"1\"]\n".into(),
            "factor[0].module",
            "a module name: 1 to 64 of a-z 0-9 _",
        ),
        (
            "[[factor]]\nname = \"module_param\"\nmodule = \"e1000e\"\nparam = \"a.b\"\nlevels = [\"1\"]\n".into(),
            "factor[0].param",
            "a parameter name",
        ),
        (
            format!("{ITR}levels = [\"1;reboot\"]\n"),
            "factor[0].levels[0]",
            "a module parameter value",
        ),
        (
            format!("{ITR}levels = [true]\n"),
            "factor[0].levels[0]",
            "a module parameter value",
        ),
        (
            "[[factor]]\nname = \"rx_ring\"\nmodule = \"e1000e\"\nlevels = [512]\n".into(),
            "factor[0].module",
            "only a `module_param` factor",
        ),
        (
            "[[factor]]\nname = \"rx_ring\"\nreload = true\nlevels = [512]\n".into(),
            "factor[0].reload",
            "only a `module_param` factor",
        ),
    ] {
        let m = err(&file(FLEET, &factor));
        assert!(m.contains(&format!("key `{key}`")) && m.contains(what), "{m}");
        assert_eq!(m.lines().count(), 1, "{m}");
    }
    let m = err(&file(
        LAB,
        &format!("{ITR}levels = [\"1\"]\nreload = true\n"),
    ));
    assert!(
        m.contains("factor[0].name") && m.contains("needs real hosts"),
        "{m}"
    );
}

/// The `module_param` factors the fleet ITR examples carry commented out
/// parse when put in place of the examples' own factors.
#[test]
fn the_examples_commented_module_param_factors_parse() {
    for (text, module, n) in [
        (
            include_str!("../../../../examples/fleet-interrupt-rate.toml"),
            "ixgbevf",
            1,
        ),
        (
            include_str!("../../../../examples/fleet-itr-rr.toml"),
            "e1000",
            2,
        ),
    ] {
        let start = text.find("# [[factor]]").unwrap();
        let block: String = text[start..]
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{}\n", l.trim_start_matches('#').trim_start()))
            .collect();
        let factors: toml::Value = toml::from_str(&block).unwrap();
        let mut doc: toml::Value = toml::from_str(text).unwrap();
        doc["factor"] = factors["factor"].clone();
        let e = parse(&toml::to_string(&doc).unwrap()).unwrap();
        assert_eq!(e.factors.len(), n);
        for f in &e.factors {
            assert!(
                matches!(&f.levels[0], Level::ModuleParam(m) if m.module == module && m.reload),
                "{f:?}"
            );
        }
    }
}
