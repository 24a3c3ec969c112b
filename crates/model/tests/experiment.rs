//! The experiment file: a valid file, every class of error (one line naming
//! the line and key), cells and run order, and the shipped examples.
#![allow(clippy::unwrap_used)]

use nettune_model::experiment::{
    parse, ErrorKind, FleetRoleError, Hosts, Knob, Level, TestKind, MAX_CELLS, MAX_LAB_HOSTS,
};
use nettune_model::inventory::{self, Format};

const VALID: &str = r#"
name = "demo"
seed = 42
repeats = 4
warmup = 2
until_ci = 5.0
max_repeats = 12

[hosts.lab]
hosts = 2
queues = 2
rate_mbit = 100
delay_ms = 10
jitter_ms = 1
loss_pct = 0.1

[[workload]]
name = "rr"
test = "tcp-rr"
size = 64
flows = 8
duration_s = 3
nodelay = true

[[factor]]
name = "gro_flush_timeout"
levels = [0, 20000]

[[factor]]
name = "congestion_control"
levels = ["cubic", "bbr", "reno"]

[[factor]]
name = "ip_local_port_range"
levels = [[32768, 60999]]

[responses]
metrics = ["transactions", "latency_p99"]
probe = { kind = "icmp", interval_ms = 10 }
"#;

/// Every test of bench's catalogue is a workload: udp-rr included; an
/// unknown test is refused naming the whole catalogue.
#[test]
fn every_bench_test_is_a_workload() {
    for kind in TestKind::ALL {
        let text = VALID.replace("test = \"tcp-rr\"", &format!("test = \"{kind}\""));
        assert_eq!(parse(&text).unwrap().workloads[0].test, kind, "{kind}");
    }
    let e = parse(&VALID.replace("test = \"tcp-rr\"", "test = \"sctp\"")).unwrap_err();
    assert!(
        e.to_string()
            .contains("tcp-stream, udp-stream, tcp-rr, udp-rr or tcp-crr"),
        "{e}"
    );
}

#[test]
fn a_valid_file() {
    let e = parse(VALID).unwrap();
    assert_eq!(
        (e.name.as_str(), e.seed, e.repeats, e.warmup),
        ("demo", 42, 4, 2)
    );
    let u = e.until_ci.unwrap();
    assert_eq!((u.target_pct, u.max_repeats), (5.0, 12));
    let Hosts::Lab(lab) = &e.hosts else {
        panic!("lab expected")
    };
    assert_eq!((lab.hosts, lab.queues, lab.rate_mbit), (2, 2, Some(100.0)));
    assert_eq!(e.workloads[0].test, TestKind::TcpRr);
    assert_eq!(e.factors.len(), 3);
    assert_eq!(e.factors[2].levels, [Level::Range([32768, 60999])]);
    assert_eq!(e.cell_count(), 6);
}

#[test]
fn cells_are_the_full_factorial_with_the_baseline_first() {
    let e = parse(VALID).unwrap();
    let cells = e.cells();
    assert_eq!(cells.len(), 6);
    let labels: Vec<String> = cells.iter().map(|c| c.label()).collect();
    insta::assert_snapshot!(labels.join("\n"));
    assert_eq!(cells[0].levels[0], (Knob::GroFlushTimeout, Level::Int(0)));
    // Every combination once.
    let mut uniq = labels.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), 6);
}

#[test]
fn run_order_is_a_permutation_fixed_by_the_seed() {
    let e = parse(VALID).unwrap();
    let a = e.run_order();
    assert_eq!(a, e.run_order());
    let mut sorted = a.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..6).collect::<Vec<_>>());
    // Another seed gives another order for at least one of a few seeds.
    let others: Vec<Vec<usize>> = (1..5)
        .map(|s| {
            parse(&VALID.replace("seed = 42", &format!("seed = {s}")))
                .unwrap()
                .run_order()
        })
        .collect();
    assert!(others.iter().any(|o| *o != a));
    // The order for seed 42 is pinned: a change to the shuffle or the RNG
    // would silently change published run orders.
    insta::assert_snapshot!(format!("{a:?}"));
}

/// Each class of error: one line naming the line and key.
#[test]
fn errors_name_the_line_and_key() {
    let cases: Vec<(&str, String)> = vec![
        ("syntax", VALID.replace("repeats = 4", "repeats = = 4")),
        ("unknown key", VALID.replace("warmup = 2", "warmpu = 2")),
        ("unknown key in a table", VALID.replace("queues = 2", "queue = 2")),
        ("unknown key in a workload", VALID.replace("nodelay = true", "nagle = false")),
        ("wrong type", VALID.replace("repeats = 4", "repeats = \"four\"")),
        ("repeats out of range", VALID.replace("repeats = 4", "repeats = 100000")),
        ("bad level", VALID.replace("levels = [0, 20000]", "levels = [0, -5]")),
        ("bad level type", VALID.replace("levels = [0, 20000]", "levels = [0, \"fast\"]")),
        ("bad port range", VALID.replace("[[32768, 60999]]", "[[60999, 32768]]")),
        ("unknown factor", VALID.replace("name = \"gro_flush_timeout\"", "name = \"itr\"")),
        ("duplicate factor", VALID.replace("name = \"congestion_control\"", "name = \"gro_flush_timeout\"")),
        ("empty levels", VALID.replace("levels = [0, 20000]", "levels = []")),
        ("duplicate level", VALID.replace("[\"cubic\", \"bbr\", \"reno\"]", "[\"cubic\", \"cubic\"]")),
        (
            "too many cells",
            VALID.replace(
                "levels = [0, 20000]",
                &format!("levels = [{}]", (0..30).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")),
            )
            .replace("[[32768, 60999]]", "[[32768, 60999], [1024, 65535], [2000, 3001]]"),
        ),
        ("bad test", VALID.replace("test = \"tcp-rr\"", "test = \"tcp-maerts\"")),
        ("bad metric", VALID.replace("\"latency_p99\"]", "\"latency_p999\"]")),
        ("missing workload", VALID.replace("[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nsize = 64\nflows = 8\nduration_s = 3\nnodelay = true\n", "")),
        ("lab and agents", VALID.replace("[hosts.lab]", "[hosts]\nagents = [\"192.0.2.7\"]\n[hosts.lab]")),
        ("bad agent", VALID.replace("[hosts.lab]\nhosts = 2\nqueues = 2\nrate_mbit = 100\ndelay_ms = 10\njitter_ms = 1\nloss_pct = 0.1\n", "[hosts]\nagents = [\"not an address\"]\n")),
        ("jitter above delay", VALID.replace("jitter_ms = 1", "jitter_ms = 50")),
        ("max_repeats without until_ci", VALID.replace("until_ci = 5.0\n", "")),
        ("unknown key in an inline table", VALID.replace("interval_ms = 10", "interval_ms = 10, count = 3")),
        ("unknown table", VALID.replace("[responses]", "[respones]")),
        ("missing key", VALID.replace("test = \"tcp-rr\"\n", "")),
        ("duplicate key", VALID.replace("warmup = 2", "warmup = 2\nwarmup = 3")),
        ("probe kind", VALID.replace("kind = \"icmp\"", "kind = \"udp\"")),
        ("until_ci out of range", VALID.replace("until_ci = 5.0", "until_ci = 0.0")),
    ];
    let mut out = String::new();
    for (name, text) in &cases {
        let e = parse(text).unwrap_err();
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{name}: more than one line: {msg}");
        assert!(msg.starts_with("line "), "{name}: {msg}");
        assert!(!e.key.is_empty(), "{name}: no key: {msg}");
        out.push_str(&format!("{name}: {msg}\n"));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn error_classes_are_typed() {
    let e = parse(&VALID.replace("name = \"gro_flush_timeout\"", "name = \"itr\"")).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::UnknownFactor { ref name, .. } if name == "itr"));
    assert_eq!(e.key, "factor[0].name");
    assert_eq!(
        e.line,
        VALID
            .lines()
            .position(|l| l.contains("gro_flush_timeout"))
            .unwrap()
            + 1
    );
    let e = parse(&VALID.replace("levels = [0, 20000]", "levels = []")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::EmptyLevels);
    let e = parse(&VALID.replace("warmup = 2", "warmpu = 2")).unwrap_err();
    assert_eq!(e.key, "warmpu");
    assert_eq!(e.line, 5);
}

#[test]
fn hostile_input_is_refused_not_panicked() {
    for text in [
        "",
        "[[[",
        "hosts = 3",
        &"x".repeat(2 << 20),
        "[hosts]\n[[workload]]\nname=\"\u{1F600}\"\ntest=\"tcp-rr\"\n[responses]\nmetrics=[\"throughput\"]",
    ] {
        assert!(parse(text).is_err());
    }
    assert_eq!(MAX_CELLS, 256);
}

#[test]
fn the_shipped_examples_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // examples/autotune-*.toml are `nettune autotune --workload` files.
        let autotune = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("autotune-"));
        if path.extension().is_some_and(|e| e == "toml") && !autotune {
            let text = std::fs::read_to_string(&path).unwrap();
            let e = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(e.cell_count() >= 2, "{}", path.display());
            names.push(e.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "congestion-control",
            "fleet-ceilings",
            "fleet-interrupt-rate",
            "fleet-itr-rr",
            "fleet-rings-channels",
            "guest-itr-levels",
            "guest-itr-rr",
            "guest-many-clients",
            "interrupt-load",
            "rhel6-bdp",
            "rps-on-off",
            "time-wait"
        ]
    );
}

/// A name with an escaped newline (`"a\\nb"` in TOML) is echoed escaped:
/// found by the proptest below, whose message then spanned two lines.
#[test]
fn control_characters_in_names_are_escaped_in_errors() {
    let text = "[hosts.lab]\nhosts = 2\n[[workload]]\nname = \"w\"\ntest = \"tcp-stream\"\n[[factor]]\nname = \"ip_local_por\\nge\"\nlevels = [1]\n[responses]\nmetrics = [\"throughput\"]\n";
    let e = parse(text).unwrap_err();
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("ip_local_por\\nge"), "{msg}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any edit of a valid file parses or gives one line naming a line of the file.
    #[test]
    fn edits_never_panic_and_errors_stay_one_line(
        at in 0usize..2000,
        cut in 0usize..8,
        insert in "[ -~\n]{0,6}",
    ) {
        let at = at % VALID.len();
        let end = (at + cut).min(VALID.len());
        let text = format!("{}{}{}", &VALID[..at], insert, &VALID[end..]);
        if let Err(e) = parse(&text) {
            let msg = e.to_string();
            proptest::prop_assert!(!msg.contains('\n'), "{}", msg);
            proptest::prop_assert!(e.line >= 1 && e.line <= text.lines().count() + 1, "{}", msg);
        }
    }
}

/// The text an error gives for each out-of-range value, as worded before the
/// ranges were derived from one declaration (issue 18): each range written
/// once must still read the same.
#[test]
fn range_errors_keep_their_wording() {
    const BASE: &str = "[hosts.lab]\n[[workload]]\nname = \"a\"\ntest = \"tcp-stream\"\n[responses]\nmetrics = [\"throughput\"]\n";
    let expected_of = |text: &str| match parse(text).unwrap_err().kind {
        ErrorKind::BadValue { expected, .. } => expected,
        other => panic!("not a bad value: {other:?}"),
    };
    let factors = [
        ("rps_flow_cnt", "an integer 0..=1048576"),
        ("gro_flush_timeout", "an integer of ns 0..=1000000000"),
        ("napi_defer_hard_irqs", "an integer 0..=2147483647"),
        ("channels", "an integer 1..=1024"),
        ("rmem_max", "an integer of bytes 4096..=2147483647"),
        ("wmem_max", "an integer of bytes 4096..=2147483647"),
        ("tcp_tw_reuse", "0, 1 or 2"),
        ("coalesce_rx_usecs", "an integer of µs 0..=100000"),
        ("coalesce_tx_usecs", "an integer of µs 0..=100000"),
        ("flows", "an integer 1..=1024"),
        ("busy_poll", "an integer of µs 0..=1000000"),
        ("sndbuf", "an integer 0..=2147483647"),
        ("rcvbuf", "an integer 0..=2147483647"),
        ("threaded_napi", "true or false"),
        ("rps_cpus", "a CPU list such as \"0-1,3\", or \"off\""),
        ("profile", "a name (letters, digits, _ or -, at most 32)"),
        (
            "tcp_rmem",
            "[min, default, max] bytes, 0 < min <= default <= max <= 2147483647",
        ),
        (
            "ip_local_port_range",
            "[low, high] ports, 1 <= low < high <= 65535",
        ),
    ];
    for (name, want) in factors {
        for bad in ["-1", "3000000000", "\"x y\"", "[0, 0, 0]"] {
            let text = format!("{BASE}[[factor]]\nname = \"{name}\"\nlevels = [{bad}]\n");
            if let Err(e) = parse(&text) {
                if let ErrorKind::BadValue { expected, .. } = e.kind {
                    assert_eq!(expected, want, "{name} = {bad}");
                }
            }
        }
        let knob = Knob::from_name(name).unwrap();
        assert_eq!(knob.accepts(), want, "{name}");
    }
    let keys = [
        ("repeats = 0\n", "an integer 1..=1000"),
        ("warmup = 101\n", "an integer 0..=100"),
        ("until_ci = 0.0\n", "a percentage above 0, at most 100"),
        (
            "until_ci = 5.0\nmax_repeats = 2\n",
            "an integer from repeats (at least 3) to 1000",
        ),
    ];
    for (top, want) in keys {
        assert_eq!(expected_of(&format!("{top}{BASE}")), want, "{top}");
    }
    let lab = [
        ("hosts = 33", "an integer 2..=32"),
        ("queues = 65", "an integer 1..=64"),
        ("rate_mbit = 0.0", "a rate of 0.001 to 100000 Mbit/s"),
        ("delay_ms = 10001.0", "a delay of 0 to 10000 ms"),
        ("jitter_ms = -1.0", "a jitter of 0 to 10000 ms"),
        ("loss_pct = 101.0", "a loss of 0 to 100 %"),
    ];
    for (line, want) in lab {
        let text = BASE.replace("[hosts.lab]\n", &format!("[hosts.lab]\n{line}\n"));
        assert_eq!(expected_of(&text), want, "{line}");
    }
    let workload = [
        ("size = 0", "a size of 1 to 16777216 bytes"),
        ("flows = 1025", "an integer 1..=1024"),
        ("duration_s = 0.0", "a duration of 0.1 to 600 s"),
        ("sndbuf = 4095", "a buffer of 4096 to 2147483647 bytes"),
        (
            "rcvbuf = 2147483648",
            "a buffer of 4096 to 2147483647 bytes",
        ),
    ];
    for (line, want) in workload {
        let text = BASE.replace(
            "test = \"tcp-stream\"\n",
            &format!("test = \"tcp-stream\"\n{line}\n"),
        );
        assert_eq!(expected_of(&text), want, "{line}");
    }
    let probe = format!("{BASE}[responses.probe]\nkind = \"rr\"\ninterval_ms = 0.5\n");
    assert_eq!(expected_of(&probe), "an interval of 1 to 10000 ms");
}

/// The factor table of docs/experiment.md gives each numeric factor the
/// range the parser checks (the ranges are written once in the code; the
/// docs are held to them here).
#[test]
fn the_docs_give_each_numeric_factor_its_range() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/experiment.md");
    let docs = std::fs::read_to_string(path).unwrap();
    for &k in Knob::ALL {
        let accepts = k.accepts();
        let range = if accepts.starts_with("an integer") {
            accepts.rsplit(' ').next().unwrap()
        } else if accepts.starts_with(|c: char| c.is_ascii_digit()) {
            accepts
        } else {
            continue;
        };
        let name = format!("`{}`", k.name());
        let row = docs
            .lines()
            .find(|l| l.starts_with("| ") && l.contains(&name))
            .unwrap_or_else(|| panic!("no row for {name} in docs/experiment.md"));
        // sndbuf/rcvbuf: the docs word the range as "bytes, 0 for the default".
        if range == "0..=2147483647" && row.contains("0 for the default") {
            continue;
        }
        assert!(
            row.contains(range),
            "{name}: docs say {row:?}, the parser {accepts:?}"
        );
    }
}

/// `VALID` with its `[hosts.lab]` table replaced by `hosts`.
fn with_hosts(hosts: &str) -> String {
    VALID.replace(
        "[hosts.lab]\nhosts = 2\nqueues = 2\nrate_mbit = 100\ndelay_ms = 10\njitter_ms = 1\nloss_pct = 0.1\n",
        hosts,
    )
}

const FLEET: &str = "[hosts.fleet]\ninventory = \"hosts.ini\"\nserver = \"srv1\"\nclients = \"loaders\"\nprobe = \"pinger\"\nlimit = \"rack1\"\n";

#[test]
fn a_fleet_names_an_inventory_and_its_roles() {
    let e = parse(&with_hosts(FLEET)).unwrap();
    let Hosts::Fleet(f) = &e.hosts else {
        panic!("fleet expected: {:?}", e.hosts)
    };
    assert_eq!(
        (f.inventory.as_str(), f.server.as_str(), f.clients.as_str()),
        ("hosts.ini", "srv1", "loaders")
    );
    assert_eq!(
        (f.probe.as_deref(), f.limit.as_deref()),
        (Some("pinger"), Some("rack1"))
    );
    // probe and limit are optional.
    let e = parse(&with_hosts(
        "[hosts.fleet]\ninventory = \"k8s.yml\"\nserver = \"server\"\nclients = \"clients\"\n",
    ))
    .unwrap();
    let Hosts::Fleet(f) = &e.hosts else { panic!() };
    assert_eq!((f.probe.as_ref(), f.limit.as_ref()), (None, None));
}

#[test]
fn fleet_errors_name_the_line_and_key() {
    // (replacement of FLEET's text, the expected line of the error, its key, a piece of its message)
    let cases = [
        (
            "server = \"srv1\"\n",
            9,
            "hosts.fleet",
            "missing field `server`",
        ),
        (
            "inventory = \"hosts.ini\"",
            10,
            "hosts.fleet.inventory",
            "an inventory file",
        ),
        (
            "server = \"srv1\"",
            11,
            "hosts.fleet.server",
            "a host or role name",
        ),
        (
            "clients = \"loaders\"",
            12,
            "hosts.fleet.clients",
            "other hosts than the server",
        ),
        (
            "probe = \"pinger\"",
            13,
            "hosts.fleet.probe",
            "another host than the server",
        ),
        (
            "limit = \"rack1\"",
            14,
            "hosts.fleet.limit",
            "a --limit pattern",
        ),
        (
            "limit = \"rack1\"",
            14,
            "hosts.fleet.lmit",
            "unknown field `lmit`",
        ),
    ];
    let bad = [
        "",
        "inventory = \"hosts.txt\"",
        "server = \"web*\"",
        "clients = \"srv1\"",
        "probe = \"srv1\"",
        "limit = \" \"",
        "lmit = \"rack1\"",
    ];
    for ((from, line, key, what), to) in cases.iter().zip(bad) {
        let text = with_hosts(&FLEET.replace(from, to));
        let e = parse(&text).unwrap_err();
        let msg = e.to_string();
        assert_eq!((e.line, e.key.as_str()), (*line, *key), "{msg}");
        assert!(msg.contains(what), "{msg}");
    }
    // Lab and fleet together; none at all.
    let both = VALID.replace("[hosts.lab]", &format!("{FLEET}[hosts.lab]"));
    let msg = parse(&both).unwrap_err().to_string();
    assert!(
        msg.contains("give one of hosts.lab, hosts.agents and hosts.fleet"),
        "{msg}"
    );
    let msg = parse(&with_hosts("[hosts]\n")).unwrap_err().to_string();
    assert!(msg.contains("hosts.fleet (an inventory)"), "{msg}");
}

#[test]
fn the_lab_takes_up_to_32_hosts() {
    assert_eq!(MAX_LAB_HOSTS, 32);
    let e = parse(&VALID.replace("hosts = 2\n", "hosts = 32\n")).unwrap();
    let Hosts::Lab(lab) = &e.hosts else { panic!() };
    assert_eq!(lab.hosts, 32);
    assert!(parse(&VALID.replace("hosts = 2\n", "hosts = 33\n")).is_err());
}

const INVENTORY: &str = "[servers]\nsrv1\nsrv2\n[loaders]\ncli1\ncli2\ncli3\n[rack1]\nsrv1\ncli1\ncli2\n[pinger]\nmon1\n";

#[test]
fn fleet_roles_resolve_in_the_inventory() {
    let inv = inventory::parse(INVENTORY, Format::AnsibleIni).unwrap();
    let Hosts::Fleet(f) = parse(&with_hosts(FLEET)).unwrap().hosts else {
        panic!()
    };
    let names = |hs: &[inventory::Host]| hs.iter().map(|h| h.name.to_string()).collect::<Vec<_>>();
    // limit = rack1 leaves the probe's host out.
    assert_eq!(
        f.resolve(&inv).unwrap_err(),
        FleetRoleError::NoMatch {
            key: "probe",
            term: "pinger".into(),
            limited: true
        }
    );
    // Without the probe: rack1 keeps cli1 and cli2 of the loaders.
    let mut p = f.clone();
    p.probe = None;
    let r = p.resolve(&inv).unwrap();
    assert_eq!(r.server.name.as_str(), "srv1");
    assert_eq!(names(&r.clients), ["cli1", "cli2"]);
    assert!(r.probe.is_none());
    let mut g = f.clone();
    g.limit = None;
    let r = g.resolve(&inv).unwrap();
    assert_eq!(names(&r.clients), ["cli1", "cli2", "cli3"]);
    assert_eq!(r.probe.unwrap().name.as_str(), "mon1");
    // A server role of two hosts, a server among the clients, a name nowhere, a bad limit.
    let mut h = g.clone();
    h.server = "servers".into();
    let msg = h.resolve(&inv).unwrap_err().to_string();
    assert_eq!(
        msg,
        "hosts.fleet.server: \"servers\" is 2 hosts (srv1, srv2); name one host"
    );
    h.server = "cli1".into();
    assert!(matches!(
        h.resolve(&inv),
        Err(FleetRoleError::Overlap {
            role: "a client",
            ..
        })
    ));
    h.server = "srv9".into();
    let msg = h.resolve(&inv).unwrap_err().to_string();
    assert_eq!(
        msg,
        "hosts.fleet.server: \"srv9\" is no host or role of the inventory"
    );
    h.server = "srv1".into();
    h.limit = Some("rack9".into());
    assert!(matches!(h.resolve(&inv), Err(FleetRoleError::Limit(_))));
}

/// The shipped fleet examples name roles their shipped inventory has.
#[test]
fn the_fleet_examples_resolve_in_their_inventory() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("fleet-") && name.ends_with(".toml")) {
            continue;
        }
        let e = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Hosts::Fleet(f) = &e.hosts else {
            panic!("{name}: not [hosts.fleet]")
        };
        let inv = inventory::load(&dir.join(&f.inventory)).unwrap();
        let r = f.resolve(&inv).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!r.clients.is_empty(), "{name}");
        r.check_factor_hosts(&e)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        n += 1;
    }
    assert_eq!(n, 4);
}
