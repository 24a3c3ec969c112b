//! `inspect --json` on every fixture has exactly the shape documented in
//! `docs/snapshot.md` (the `shape` block), so accidental changes fail here.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FIXTURES: &[&str] = &["kvm-2vcpu-6.18", "c4-8xlarge", "two-socket-16q"];
/// Maps whose keys are data, written `*` in the shape.
const DYNAMIC: &[&str] = &[
    "sysctls",
    "coalesce.value",
    "features.value",
    "stats.value.driver",
    "stats.value.standard",
];

struct Decl {
    types: BTreeSet<String>,
    optional: bool,
}

fn documented() -> BTreeMap<String, Decl> {
    let doc = std::fs::read_to_string(repo().join("docs/snapshot.md")).unwrap();
    let start = doc.find("```shape\n").expect("shape block") + 9;
    let end = start + doc[start..].find("```").unwrap();
    let mut out = BTreeMap::new();
    for line in doc[start..end].lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert!(
            f.len() == 2 || (f.len() == 3 && f[2] == "?"),
            "bad line {line:?}"
        );
        let types = f[1].split('|').map(str::to_string).collect();
        out.insert(
            f[0].to_string(),
            Decl {
                types,
                optional: f.len() == 3,
            },
        );
    }
    out
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        serde_json::Value::Number(_) => "float",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

fn walk(v: &serde_json::Value, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
    if !path.is_empty() {
        out.entry(path.to_string())
            .or_default()
            .insert(kind(v).to_string());
    }
    match v {
        serde_json::Value::Object(m) => {
            let dynamic = DYNAMIC.iter().any(|d| path.ends_with(d));
            for (k, x) in m {
                let p = match (path.is_empty(), dynamic) {
                    (true, _) => k.clone(),
                    (false, true) => format!("{path}.*"),
                    (false, false) => format!("{path}.{k}"),
                };
                walk(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                walk(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

fn check_documented(what: &str, v: &serde_json::Value, doc: &BTreeMap<String, Decl>) {
    let mut paths = BTreeMap::new();
    walk(v, "", &mut paths);
    for (p, types) in &paths {
        let d = doc
            .get(p)
            .unwrap_or_else(|| panic!("{what}: path {p} is not in docs/snapshot.md"));
        for t in types {
            assert!(
                d.types.contains(t),
                "{what}: {p} is {t}, docs/snapshot.md says {:?}",
                d.types
            );
        }
    }
}

#[test]
fn live_json_shape_is_documented() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["inspect", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    check_documented("live host", &v, &documented());
}

fn inspect_json(fixture: &str) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["inspect", "--json", "--root"])
        .arg(repo().join("tests/fixtures").join(fixture))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn json_shape_matches_docs_on_every_fixture() {
    let doc = documented();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for f in FIXTURES {
        let v = inspect_json(f);
        let mut paths = BTreeMap::new();
        walk(&v, "", &mut paths);
        for (p, types) in &paths {
            let d = doc
                .get(p)
                .unwrap_or_else(|| panic!("{f}: path {p} is not in docs/snapshot.md"));
            for t in types {
                assert!(
                    d.types.contains(t),
                    "{f}: {p} is {t}, docs/snapshot.md says {:?}",
                    d.types
                );
            }
        }
        seen.extend(paths.into_keys());
        // Deterministic: same tree, same JSON.
        assert_eq!(v, inspect_json(f), "{f}: two runs differ");
    }
    for (p, d) in &doc {
        assert!(
            d.optional || seen.contains(p),
            "docs/snapshot.md lists {p} but no fixture shows it (mark it `?` or fix the type)"
        );
    }
}

#[test]
fn fixture_ethtool_files_have_the_inspect_json_shape() {
    // ethtool/<iface>.json is the `ethtool` object inspect prints.
    for f in FIXTURES {
        let v = inspect_json(f);
        for i in v["interfaces"].as_array().unwrap() {
            let name = i["name"].as_str().unwrap();
            let p = repo()
                .join("tests/fixtures")
                .join(f)
                .join(format!("ethtool/{name}.json"));
            let file: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            assert_eq!(file, i["ethtool"], "{}", p.display());
        }
    }
}
