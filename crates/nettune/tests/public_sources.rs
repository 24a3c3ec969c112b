//! Every source nettune shows a user is one the user can look up: each
//! citation of a rule's or finding's source is a URL, a kernel document
//! path, a source file or function, a man page or RFC, a named publication
//! with its year, a document of this repository, or "an unpublished field
//! test (year, what)". No rule, finding, plan reason, profile, `--help`, man
//! page, doc, example, study or fixture LABEL cites the project's private
//! design notes or field notes, credits the 2016 EC2 C4 test to a
//! publication, or cites the 2007 e1000 post without saying what it is; and
//! the two claims once misread from the notes say what the notes say.
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

/// Why `text` (prose: help, docs, LABELs) cites something a reader cannot
/// look up, if it does: the private notes by name, the design document, the
/// 2016 EC2 C4 test without saying it is unpublished, that test lent to the
/// 2014 Aerospike article, or the 2007 e1000 post without what it is.
fn private_citation(text: &str) -> Option<String> {
    if let Some(at) = note_citation(text) {
        return Some(format!("a field note by name: ...{at}..."));
    }
    for para in text.split("\n\n") {
        let lower = para.to_lowercase();
        let short: String = para.chars().take(160).collect();
        if para.contains("DESIGN") || lower.contains("field note") {
            return Some(format!("the design document or its field notes: {short}"));
        }
        let c4 = lower.contains("c4.") || lower.contains("ec2 c4") || lower.contains("c4 instance");
        if c4 && lower.contains("2016") && !lower.contains("unpublished field test") {
            return Some(format!("the 2016 C4 test as if published: {short}"));
        }
        if c4 && lower.contains("aerospike") {
            return Some(format!(
                "C4 data credited to the 2014 Aerospike article: {short}"
            ));
        }
        if para.contains("엘레노아") && !(lower.contains("2007") && lower.contains("blog post"))
        {
            return Some(format!("the e1000 post without year and kind: {short}"));
        }
    }
    None
}

fn assert_public(what: &str, text: &str) {
    if let Some(why) = private_citation(text) {
        panic!("{what} cites what a reader cannot look up: {why}");
    }
}

/// Split a source into its citations at `;` outside parentheses.
fn citations(source: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out) = (0i32, 0, Vec::new());
    for (i, c) in source.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' if depth == 0 => {
                out.push(source[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(source[from..].trim());
    out
}

fn has_year(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(4).enumerate().any(|(i, w)| {
        (w.starts_with(b"19") || w.starts_with(b"20"))
            && w.iter().all(u8::is_ascii_digit)
            && !b.get(i + 4).is_some_and(u8::is_ascii_digit)
            && !(i > 0 && b[i - 1].is_ascii_digit())
    })
}

/// What kind of citation `c` is, if it is one a reader can look up.
fn citation_kind(c: &str) -> Option<&'static str> {
    let head = c.split(" (").next().unwrap_or(c);
    let word = |w: &str| {
        w.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-.:/".contains(ch))
    };
    if c.contains("http://") || c.contains("https://") {
        Some("url")
    } else if head.starts_with("Documentation/") {
        Some("kernel document")
    } else if c.starts_with("an unpublished field test (") && has_year(c) {
        Some("unpublished field test")
    } else if head.starts_with("bench/") && repo().join(head.split(' ').next()?).is_file() {
        Some("document of this repository")
    } else if head.starts_with("RFC ") {
        Some("rfc")
    } else if head.split([',', ' ']).any(|w| {
        let (name, sect) = w.split_once('(').unwrap_or((w, ""));
        !name.is_empty() && word(name) && sect.len() == 2 && sect.ends_with(')')
    }) {
        Some("man page")
    } else if source_words(head) {
        Some("source file or function")
    } else if (c.contains('"') || c.contains(" by ")) && has_year(c) {
        Some("named publication with year")
    } else {
        None
    }
}

/// `head` names source files or functions only (after an optional project
/// name): `net/ipv4/tcp.c tcp_too_many_orphans`, `netdata src/health/x.conf`.
fn source_words(head: &str) -> bool {
    let file = |w: &str| {
        w.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_-./".contains(ch))
            && [".c", ".h", ".conf", ".env", ".py"]
                .iter()
                .any(|x| w.ends_with(x))
    };
    let function = |w: &str| {
        w.contains('_')
            && w.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
    };
    let words: Vec<&str> = head.split([',', ' ']).filter(|w| !w.is_empty()).collect();
    let rest = match words.first() {
        Some(w) if !file(w) && !function(w) => &words[1..],
        _ => &words[..],
    };
    !rest.is_empty()
        && rest.iter().all(|w| file(w) || function(w))
        && rest.iter().any(|w| file(w) || w.contains('_'))
}

fn assert_citations(what: &str, source: &str) {
    assert_public(what, source);
    for c in citations(source) {
        assert!(
            citation_kind(c).is_some(),
            "{what}: \"{c}\" is not a URL, kernel document path, source function, man page, \
             RFC, named publication with year, document of this repository or unpublished \
             field test (year, what)"
        );
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
fn the_citation_grammar_takes_what_can_be_looked_up_and_nothing_else() {
    for good in [
        "Documentation/networking/scaling.rst (RPS)",
        "socket(7) SO_RCVBUF",
        "net/ipv4/udp.c (UDP_MIB_SNDBUFERRORS on ENOBUFS)",
        "ixgbevf_set_coalesce",
        "RFC 4737",
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html)",
        "an unpublished field test (2026, a 2-vCPU KVM guest): bbr near 16 Gbit/s",
        "bench/studies/time-wait.md (tcp_tw_reuse)",
        "AWS's ENA README (https://github.com/amzn/amzn-drivers)",
    ] {
        assert!(citation_kind(good).is_some(), "{good}");
    }
    for bad in [
        "measured here: 45k/s to 1k/s",
        "tuned's issue tracker (values in /etc/sysctl.d override the profile)",
        "monitoring tools (netdata) alarm on it",
        "the Aerospike EC2 article",
        "Intel AP-450 \"Interrupt Moderation Using Intel Gigabit Ethernet Controllers\"",
        "bench/studies/no-such-study.md",
        "mlnx_tune and set_irq_affinity practice",
    ] {
        assert!(citation_kind(bad).is_none(), "{bad}");
    }
    for bad in [
        "bbr over veth (DESIGN.md)",
        "synthesized from a 2016 field note on an EC2 c4.8xlarge",
        "a 2016 test of EC2 C4 instances",
        "the Aerospike EC2 article (EC2 c4.8xlarge, kernel 4.4, 2016)",
        "엘레노아's e1000 tuning",
    ] {
        assert!(private_citation(bad).is_some(), "{bad}");
    }
    assert!(private_citation("an unpublished field test of EC2 C4 instances (2016)").is_none());
}

#[test]
fn rule_and_finding_catalogues_cite_public_sources() {
    for r in doctor::CATALOGUE {
        let id = r.id().to_string();
        assert_public(&format!("doctor {id} title"), r.title());
        assert_public(&format!("doctor {id} rationale"), r.rationale());
        assert_citations(&format!("doctor {id} source"), r.source());
    }
    for r in tune::rules::CATALOGUE {
        let id = format!("{:?}", r.id());
        assert_public(&format!("tune {id} rationale"), r.rationale());
        assert_citations(&format!("tune {id} source"), r.source());
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

#[test]
fn ring_sources_claim_no_more_than_their_rules_do() {
    // The rings rule and ring-small raise rings only where the NIC drops
    // packets; their sources cite the 4096-descriptor ceiling, not a claim
    // that larger rings raise the packet rate (c4's 1024 of 4096 stays).
    let doctor_ids = [doctor::DoctorId::RingSmall, doctor::DoctorId::NicDrops];
    let mut sources: Vec<&str> = doctor::CATALOGUE
        .iter()
        .filter(|r| doctor_ids.contains(&r.id()))
        .map(|r| r.source())
        .collect();
    sources.extend(
        tune::rules::CATALOGUE
            .iter()
            .filter(|r| r.id() == tune::RuleId::Rings)
            .map(|r| r.source()),
    );
    assert_eq!(sources.len(), 3);
    for s in sources {
        let l = s.to_lowercase();
        assert!(!l.contains("raise"), "{s}");
        assert!(l.contains("4096"), "{s}");
    }
}

#[test]
fn each_study_ran_what_its_example_asks_or_says_why_not() {
    // A study in bench/studies is the report of the example of the same
    // name; where the example has no stopping rule (until_ci), every cell
    // ran its `repeats`, or the study's header says how many it ran.
    let r = repo();
    let mut checked = 0;
    for e in std::fs::read_dir(r.join("bench/studies")).unwrap() {
        let p = e.unwrap().path();
        let Some(name) = p.file_name().unwrap().to_str().unwrap().strip_suffix(".md") else {
            continue;
        };
        let Ok(example) = std::fs::read_to_string(r.join(format!("examples/{name}.toml"))) else {
            continue;
        };
        if example.lines().any(|l| l.starts_with("until_ci")) {
            continue;
        }
        let repeats = example
            .lines()
            .find_map(|l| l.strip_prefix("repeats = "))
            .unwrap_or_else(|| panic!("{name}: no repeats"))
            .trim()
            .to_string();
        let study = std::fs::read_to_string(&p).unwrap();
        let ns: Vec<&str> = study
            .lines()
            .filter(|l| l.starts_with("| #"))
            .filter_map(|l| l.split('|').nth(5).map(str::trim))
            .collect();
        assert!(!ns.is_empty(), "{name}: no result rows");
        let all = ns.iter().all(|n| *n == repeats);
        let says = study.lines().any(|l| l.starts_with("- repeats: "));
        assert!(
            all || says,
            "{name}: the example asks {repeats} repeats, the study ran {ns:?} and does not say why"
        );
        checked += 1;
    }
    assert!(checked >= 3, "{checked}");
}
