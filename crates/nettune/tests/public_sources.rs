//! Every source nettune shows a user is one the user can look up: no rule,
//! finding, plan reason, profile, `--help` or man page cites the project's
//! private field notes ("seed 000" ... "seed 004"), and the two claims once
//! misread from them say what the notes say.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn nettune(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    s
}

/// Where `text` cites a field note: `seed 000`, `seed004`, `seeds 001 and
/// 003`, `the seed's`. An experiment's random `seed = 4` is not a citation.
fn note_citation(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    for (i, _) in lower.match_indices("seed") {
        let rest = &lower[i + 4..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        let before = &lower[..i];
        let cites = rest.starts_with('0')
            || rest.starts_with("'s")
            || before.ends_with("the ")
            || before.ends_with("the seeds' ");
        if cites {
            let from = lower[..i].char_indices().rev().nth(40).map_or(0, |c| c.0);
            return Some(text[from..].chars().take(120).collect());
        }
    }
    None
}

fn assert_public(what: &str, text: &str) {
    if let Some(at) = note_citation(text) {
        panic!("{what} cites a private field note: ...{at}...");
    }
}

#[test]
fn the_detector_sees_note_citations_and_not_random_seeds() {
    for cited in [
        "seed 000 (rps_cpus)",
        "Seed 004 beside this run",
        "seeds 001 (ixgbevf)",
        "as in seed001",
        "the seed's c4.8xlarge",
        "measured as the seed found",
    ] {
        assert!(note_citation(cited).is_some(), "{cited}");
    }
    for fine in [
        "seed = 4",
        "--seed 7",
        "run order and bootstrap seed (default 1)",
    ] {
        assert!(note_citation(fine).is_none(), "{fine}");
    }
}

#[test]
fn rule_and_finding_catalogues_cite_public_sources() {
    for r in doctor::CATALOGUE {
        let id = r.id().to_string();
        assert_public(&format!("doctor {id} title"), r.title());
        assert_public(&format!("doctor {id} rationale"), r.rationale());
        assert_public(&format!("doctor {id} source"), r.source());
        assert!(!r.source().trim().is_empty(), "doctor {id}: no source");
    }
    for r in tune::rules::CATALOGUE {
        let id = format!("{:?}", r.id());
        assert_public(&format!("tune {id} rationale"), r.rationale());
        assert_public(&format!("tune {id} source"), r.source());
        assert!(!r.source().trim().is_empty(), "tune {id}: no source");
    }
    for r in model::findings::CATALOGUE {
        let id = format!("{:?}", r.id());
        assert_public(&format!("finding {id} rationale"), r.rationale());
        assert_public(&format!("finding {id} source"), r.source());
    }
}

#[test]
fn help_man_pages_profiles_plans_and_findings_cite_public_sources() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let out = nettune(&["man", "--out", man.to_str().unwrap()]);
    assert!(out.contains("man page(s) written"), "{out}");
    let mut pages = 0;
    for e in std::fs::read_dir(&man).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_public(&p.display().to_string(), &text);
        pages += 1;
        // The page's command, e.g. nettune-profile-show.1 -> profile show --help.
        let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
        let mut args: Vec<&str> = stem.split('-').skip(1).collect();
        args.push("--help");
        let help = nettune(&args);
        assert_public(&format!("nettune {} --help", args.join(" ")), &help);
    }
    assert!(pages > 10, "{pages} man pages");
    assert_public("nettune --help", &nettune(&["--help"]));

    for p in tune::profile::BUILTINS {
        assert_public(&format!("profile {p}"), &nettune(&["profile", "show", p]));
    }
    // Plans and diagnoses of every fixture host, with every intent: reasons
    // (ITR 0 on e1000 says who measured both ends), fixes and sources.
    let fixtures = repo().join("tests/fixtures");
    for e in std::fs::read_dir(&fixtures).unwrap() {
        let d = e.unwrap().path();
        if !d.join("proc").is_dir() {
            continue;
        }
        let root = d.to_str().unwrap();
        for p in tune::profile::BUILTINS {
            let plan = nettune(&["plan", "--profile", p, "--root", root]);
            assert_public(&format!("plan --profile {p} --root {root}"), &plan);
        }
        let diag = nettune(&["doctor", "--root", root, "--json"]);
        assert_public(&format!("doctor --root {root}"), &diag);
    }
}

/// Every text file under `dir` (recursively) whose name ends with one of `exts`.
fn texts(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_symlink() {
            continue;
        } else if p.is_dir() {
            texts(&p, exts, out);
        } else if exts.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// What users read besides the binary's output: the README, the docs, the
/// example experiments, the studies and results, and the LABELs `inspect`
/// prints for each fixture host.
#[test]
fn docs_examples_results_and_fixture_labels_cite_public_sources() {
    let r = repo();
    let mut files = vec![r.join("README.md")];
    texts(&r.join("docs"), &[".md"], &mut files);
    texts(&r.join("examples"), &[".toml"], &mut files);
    texts(&r.join("bench"), &[".md"], &mut files);
    texts(&r.join("packaging"), &[""], &mut files);
    texts(
        &r.join("tests/fixtures"),
        &["LABEL", "-make.py", ".conf"],
        &mut files,
    );
    assert!(files.len() > 40, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert_public(&f.display().to_string(), &text);
    }
}

#[test]
fn the_four_redis_processes_are_not_read_as_four_instances() {
    // The note's c4.4xlarge reached 400K pps with four redis processes on
    // one host; cloud-allowance no longer offers "four instances" as proof
    // that spreading over instances beats the allowance.
    let r = doctor::CATALOGUE
        .iter()
        .find(|r| r.id() == doctor::DoctorId::CloudAllowance)
        .unwrap();
    for text in [r.source(), r.rationale()] {
        assert!(!text.to_lowercase().contains("four instances"), "{text}");
        assert!(!text.contains("400K"), "{text}");
    }
    let fx = repo().join("tests/fixtures/nic-ena-allowance");
    let out = nettune(&["doctor", "--root", fx.to_str().unwrap(), "--json"]);
    assert!(!out.to_lowercase().contains("four instances"), "{out}");
    assert!(out.contains("the allowance is per instance"), "{out}");
}

#[test]
fn rps_is_not_said_to_have_lifted_the_ceiling() {
    // The note lists RPS among its attempts, records no gain from it on the
    // c4.8xlarge (still about 400K pps) and calls an added network interface
    // more direct than RSS or RPS. No source claims the opposite, and
    // cloud-allowance says host tuning such as RPS does not raise the limit.
    for r in doctor::CATALOGUE {
        let s = r.source().to_lowercase();
        assert!(!s.contains("lifted") && !s.contains("rps helping"), "{s}");
    }
    for r in tune::rules::CATALOGUE {
        let s = r.source().to_lowercase();
        assert!(!s.contains("lifted") && !s.contains("rps helping"), "{s}");
    }
    let r = doctor::CATALOGUE
        .iter()
        .find(|r| r.id() == doctor::DoctorId::CloudAllowance)
        .unwrap();
    assert!(
        r.rationale().contains(
            "no host tuning (RPS, IRQ affinity, interrupt coalescing) raises these limits"
        ),
        "{}",
        r.rationale()
    );
}
