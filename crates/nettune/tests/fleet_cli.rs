//! `nettune fleet` end to end: hosts that are network namespaces made by
//! the test (`ip netns exec`, as root) or `local` agents, each on its own
//! copy of a fixture root (`--root-template` / inventory labels), so no
//! test touches the machine's own knobs. ssh hosts only change the
//! inventory (the transport is the fleet crate's).

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{copy, tree, Copy};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

/// An inventory of `hosts` (`name`, TOML transport keys) in `dir`.
fn inventory(dir: &Path, hosts: &[(&str, String)]) -> String {
    let mut t = String::new();
    for (name, keys) in hosts {
        t.push_str(&format!("[[host]]\nname = \"{name}\"\n{keys}\n"));
    }
    let p = dir.join("inv.toml");
    std::fs::write(&p, t).unwrap();
    p.to_str().unwrap().to_string()
}

/// A local host on `c`'s root and state dir (inventory labels).
fn local(c: &Copy) -> String {
    format!(
        "transport = \"local\"\nlabels = {{ root = \"{}\", state_dir = \"{}\" }}",
        c.root.display(),
        c.state.display()
    )
}

fn fleet(args: &[&str]) -> Output {
    Command::new(BIN).arg("fleet").args(args).output().unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["host"].as_str().unwrap().to_string(),
                h["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn inspect_over_three_namespaces_equals_each_hosts_inspect_and_a_missing_one_fails_alone() {
    if !lab::require_root("fleet_cli::inspect_over_three_namespaces") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let fixtures = ["c4-8xlarge", "nic-ena", "nic-mlx5"];
    let ns: Vec<lab::Netns> = (0..3)
        .map(|_| lab::Netns::create("ntfleet").unwrap())
        .collect();
    let mut hosts: Vec<(&str, String)> = Vec::new();
    let names = ["h0", "h1", "h2"];
    for (i, n) in ns.iter().enumerate() {
        let root = t.path().join(names[i]);
        std::fs::create_dir(&root).unwrap();
        let st = Command::new("cp")
            .arg("-a")
            .arg(fixture_copy::fixture(fixtures[i]))
            .arg(root.join("root"))
            .status()
            .unwrap();
        assert!(st.success());
        hosts.push((
            names[i],
            format!("transport = \"netns\"\nnetns = \"{}\"", n.name()),
        ));
    }
    let gone = format!("ntfleet-gone-{}", std::process::id());
    hosts.push(("gone", format!("transport = \"netns\"\nnetns = \"{gone}\"")));
    let inv = inventory(t.path(), &hosts);
    let tpl = format!("{}/{{host}}/root", t.path().display());
    let o = fleet(&[
        "inspect",
        "--inventory",
        &inv,
        "--root-template",
        &tpl,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["failed"], serde_json::json!(["gone"]));
    for (i, name) in names.iter().enumerate() {
        let h = &v["hosts"][i];
        assert_eq!(h["host"], *name);
        assert_eq!(h["outcome"], "ok", "{h}");
        assert_eq!(h["transport"], format!("netns {}", ns[i].name()));
        let own = Command::new(BIN)
            .args(["inspect", "--json", "--root"])
            .arg(t.path().join(name).join("root"))
            .output()
            .unwrap();
        assert!(own.status.success());
        assert_eq!(h["result"], json(&own), "{name}");
    }
    let g = &v["hosts"][3];
    assert_eq!(g["outcome"], "failed");
    let why = g["error"]["message"].as_str().unwrap();
    assert!(why.contains("Cannot open network namespace"), "{why}");
    // stderr names the failed host with the transport's own reason
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "nettune: fleet inspect: gone (netns {gone}) failed:"
        )),
        "{e}"
    );
    assert!(e.contains(&gone), "{e}");

    // Live and read-only: doctor in each namespace (a sample of its own
    // counters), the missing one failing alone.
    let o = fleet(&["doctor", "--inventory", &inv, "--sample", "0.5", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    for h in &v["hosts"].as_array().unwrap()[..3] {
        assert_eq!(h["outcome"], "ok", "{h}");
        assert!(h["findings"]["info"].is_u64(), "{h}");
        assert!(h["result"]["findings"].is_array(), "{h}");
    }
    assert_eq!(v["failed"], serde_json::json!(["gone"]));

    // The table says the same.
    let o = fleet(&[
        "inspect",
        "--inventory",
        &inv,
        "--root-template",
        &tpl,
        "--parallel",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(4));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("4 host(s): 3 ok, 1 failed (gone)"),
        "{table}"
    );
}

/// Make the copy's `rel` file unwritable: immutable as root (root ignores
/// modes), read-only otherwise. Returns the undo.
fn lock(c: &Copy, rel: &str) -> impl FnOnce() {
    let p = c.root.join(rel);
    let root = lab::is_root();
    if root {
        assert!(Command::new("chattr")
            .arg("+i")
            .arg(&p)
            .status()
            .unwrap()
            .success());
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    move || {
        if root {
            let _ = Command::new("chattr").arg("-i").arg(&p).status();
        }
    }
}

#[test]
fn apply_on_four_hosts_rolls_back_the_one_that_fails_and_the_others_verify_and_roll_back() {
    let t = tempfile::tempdir().unwrap();
    let copies: Vec<Copy> = (0..4).map(|_| copy("c4-8xlarge")).collect();
    let before: Vec<_> = copies.iter().map(|c| tree(&c.root)).collect();
    let names = ["a", "b", "c", "d"];
    let hosts: Vec<(&str, String)> = names
        .iter()
        .zip(&copies)
        .map(|(n, c)| (*n, local(c)))
        .collect();
    let inv = inventory(t.path(), &hosts);
    // One plan for all: its last change is tcp_wmem, which b cannot write.
    let plan = t.path().join("plan.json");
    let o = Command::new(BIN)
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&copies[0].root)
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::write(&plan, &o.stdout).unwrap();
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    let last = p["changes"].as_array().unwrap().last().unwrap()["target"]["path"]
        .as_str()
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let unlock = lock(&copies[1], &last);

    let plan = plan.to_str().unwrap();
    let o = fleet(&[
        "apply",
        "--inventory",
        &inv,
        "--plan",
        plan,
        "--json",
        "--yes",
    ]);
    unlock();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        outcomes(&v),
        [("a", "ok"), ("b", "rolled_back"), ("c", "ok"), ("d", "ok")]
            .map(|(h, x)| (h.to_string(), x.to_string()))
    );
    assert_eq!(v["failed"], serde_json::json!(["b"]));
    let e = stderr(&o);
    assert!(
        e.lines()
            .any(|l| l.starts_with("nettune: fleet apply: b (")
                && l.contains(") failed, rolled back:")),
        "{e}"
    );
    assert!(e.contains(&last), "{e}");
    // b is as it was; the others changed.
    fixture_copy::assert_same(&before[1], &tree(&copies[1].root));
    assert_ne!(before[0], tree(&copies[0].root));

    let ok3 = "a,c,d";
    let o = fleet(&["verify", "--inventory", &inv, "--limit", ok3, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for h in json(&o)["hosts"].as_array().unwrap() {
        assert_eq!(h["drifted"], serde_json::json!([]), "{h}");
    }
    let o = fleet(&["verify", "--inventory", &inv]);
    assert_eq!(o.status.code(), Some(4), "b has no plan in force");
    // A knob changed behind a's back: drift, exit 3 (no host failed).
    std::fs::write(copies[0].root.join(&last), "4096 16384 4194304\n").unwrap();
    let o = fleet(&["verify", "--inventory", &inv, "--limit", "a,c", "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(outcomes(&v)[0], ("a".to_string(), "drift".to_string()));
    let d = v["hosts"][0]["drifted"].as_array().unwrap();
    assert!(
        d.len() == 1 && d[0].as_str().unwrap().contains(&last),
        "{d:?}"
    );
    assert_eq!(v["hosts"][1]["drifted"], serde_json::json!([]));

    let o = fleet(&["rollback", "--inventory", &inv, "--limit", ok3]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for i in [0, 2, 3] {
        fixture_copy::assert_same(&before[i], &tree(&copies[i].root));
    }
    let o = fleet(&["history", "--inventory", &inv, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for h in json(&o)["hosts"].as_array().unwrap() {
        let g = &h["result"]["generations"][0];
        assert!(!g["rolled_back_at"].is_null(), "{h}");
    }
}

#[test]
fn an_apply_past_its_deadline_is_killed_and_rolled_back_by_the_controller() {
    let t = tempfile::tempdir().unwrap();
    let copies: Vec<Copy> = (0..2).map(|_| copy("c4-8xlarge")).collect();
    let before: Vec<_> = copies.iter().map(|c| tree(&c.root)).collect();
    let hosts: Vec<(&str, String)> = vec![("a", local(&copies[0])), ("b", local(&copies[1]))];
    let inv = inventory(t.path(), &hosts);
    // The agents inherit the hook: each apply sleeps after 2 writes.
    let o = Command::new(BIN)
        .args([
            "fleet",
            "apply",
            "--inventory",
            &inv,
            "--profile",
            "throughput",
        ])
        .args(["--timeout", "4", "--json", "--yes"])
        .env("NETTUNE_TEST_PAUSE_AFTER_WRITES", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json(&o);
    for h in v["hosts"].as_array().unwrap() {
        assert_eq!(h["outcome"], "rolled_back", "{h}");
        assert_eq!(h["error"]["kind"], "timeout", "{h}");
        assert_eq!(h["rollback"]["error"], Value::Null, "{h}");
    }
    for (c, b) in copies.iter().zip(&before) {
        fixture_copy::assert_same(b, &tree(&c.root));
    }
}

#[test]
fn inventory_and_flag_errors_exit_1_or_2_before_any_host() {
    let t = tempfile::tempdir().unwrap();
    let c = copy("c4-8xlarge");
    let inv = inventory(t.path(), &[("a", local(&c))]);
    let o = fleet(&["verify", "--inventory", &inv, "--limit", "nosuch"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("\"nosuch\" matches no host"),
        "{}",
        stderr(&o)
    );
    let o = fleet(&["verify", "--inventory", "/nonexistent/inv.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/inv.toml"));
    let o = fleet(&["verify", "--inventory", &inv, "--parallel", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = fleet(&["apply", "--inventory", &inv]);
    assert_eq!(o.status.code(), Some(2), "apply needs --profile or --plan");
    let o = fleet(&["--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Exit codes: 0 every host ok; 4"));
}

/// Issue 35: `fleet apply` shows each host's changes, read on that host,
/// before any host applies. `--dry-run` writes nothing; without `--yes` a
/// stdin that is not a terminal is refused before any host is reached;
/// with `--yes` the changes are printed above the table and then applied.
#[test]
fn apply_shows_each_hosts_changes_against_its_own_values_before_it_applies() {
    let t = tempfile::tempdir().unwrap();
    let copies: Vec<Copy> = (0..2).map(|_| copy("c4-8xlarge")).collect();
    let hosts: Vec<(&str, String)> = vec![("a", local(&copies[0])), ("b", local(&copies[1]))];
    let inv = inventory(t.path(), &hosts);
    let o = Command::new(BIN)
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&copies[0].root)
        .output()
        .unwrap();
    assert!(o.status.success());
    let plan = t.path().join("plan.json");
    std::fs::write(&plan, &o.stdout).unwrap();
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    let sysctl = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["target"]["path"]
                .as_str()
                .is_some_and(|s| s.starts_with("/proc/sys/net/core/"))
        })
        .expect("a core sysctl in the throughput plan");
    let path = sysctl["target"]["path"].as_str().unwrap();
    let after = sysctl["after"].as_str().unwrap();
    let rel = path.trim_start_matches('/');
    // a now differs from the plan's `before`; b already holds the value.
    std::fs::write(copies[0].root.join(rel), "123457\n").unwrap();
    std::fs::write(copies[1].root.join(rel), format!("{after}\n")).unwrap();
    let before: Vec<_> = copies.iter().map(|c| tree(&c.root)).collect();
    let plan = plan.to_str().unwrap();

    let o = fleet(&["apply", "--inventory", &inv, "--plan", plan, "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let n = p["changes"].as_array().unwrap().len();
    assert!(out.contains(&format!("a: {n} change(s)\n")), "{out}");
    assert!(
        out.contains(&format!("b: {} change(s), 1 already set\n", n - 1)),
        "{out}"
    );
    assert!(
        out.contains(&format!("{path}: 123457 -> {after}\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!("{path}: {after} -> {after} (already)\n")),
        "{out}"
    );
    assert!(out.contains("not applied"), "{out}");
    for (c, b) in copies.iter().zip(&before) {
        fixture_copy::assert_same(b, &tree(&c.root));
    }

    let o = fleet(&["apply", "--inventory", &inv, "--plan", plan]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("refusing without --yes"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "no host was reached");
    for (c, b) in copies.iter().zip(&before) {
        fixture_copy::assert_same(b, &tree(&c.root));
    }

    let o = fleet(&["apply", "--inventory", &inv, "--plan", plan, "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let shown = out.find(&format!("{path}: 123457 -> {after}")).unwrap();
    let table = out.find("HOST").unwrap();
    assert!(shown < table, "{out}");
    for c in &copies {
        let now = std::fs::read_to_string(c.root.join(rel)).unwrap();
        assert_eq!(now.trim(), after);
    }
}
