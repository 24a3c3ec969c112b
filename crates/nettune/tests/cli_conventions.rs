//! Issue 9 items 6 and 7: exit codes (verify's drift is not clap's usage
//! error), examples in every command's long help, shell completions and man
//! pages generated from the clap definitions.

#![allow(clippy::unwrap_used)]

use clap::CommandFactory;
use nettune::cli::Cli;

mod fixture_copy;
use fixture_copy::{bin, copy, nettune, ok, text};

/// Every subcommand path (`["plan"]`, `["profile", "show"]`, ...), hidden ones
/// included, without clap's generated `help`.
fn subcommand_paths() -> Vec<Vec<String>> {
    fn walk(c: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for s in c.get_subcommands() {
            if s.get_name() == "help" {
                continue;
            }
            let mut p = prefix.to_vec();
            p.push(s.get_name().to_string());
            walk(s, &p, out);
            out.push(p);
        }
    }
    let mut c = Cli::command();
    c.build();
    let mut out = Vec::new();
    walk(&c, &[], &mut out);
    out
}

#[test]
fn every_subcommand_long_help_has_examples() {
    let paths = subcommand_paths();
    // The walk sees nested commands too, so a new one is covered by itself.
    assert!(paths.iter().any(|p| p == &["profile", "show"]), "{paths:?}");
    assert!(paths.iter().any(|p| p == &["verify"]), "{paths:?}");
    let mut top = Cli::command();
    let help = top.render_long_help().to_string();
    assert!(help.contains("Examples:"), "nettune --help:\n{help}");
    let mut missing = Vec::new();
    for p in &paths {
        let mut c = Cli::command();
        c.build();
        let mut sub = &mut c;
        for name in p {
            sub = sub.find_subcommand_mut(name).unwrap();
        }
        let help = sub.render_long_help().to_string();
        if !help.contains("Examples") {
            missing.push(p.join(" "));
        }
    }
    assert!(missing.is_empty(), "no Examples in --help of: {missing:?}");
}

#[test]
fn help_of_the_binary_shows_examples_for_every_command() {
    for p in subcommand_paths() {
        let o = bin().args(&p).arg("--help").output().unwrap();
        assert!(o.status.success(), "{p:?}: {}", text(&o));
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(
            s.contains("Examples"),
            "nettune {} --help:\n{s}",
            p.join(" ")
        );
    }
}

#[test]
fn verify_exits_3_on_drift_distinct_from_usage_error_2_and_error_1() {
    let c = copy("c4-8xlarge");
    // No applied plan yet: an error, exit 1.
    let o = nettune(&c, &["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let o = nettune(&c, &["verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    std::fs::write(
        c.root.join("sys/class/net/eth0/queues/rx-1/rps_cpus"),
        "0\n",
    )
    .unwrap();
    let o = nettune(&c, &["verify"]);
    assert_eq!(o.status.code(), Some(3), "drift: {}", text(&o));
    let o = nettune(&c, &["verify", "--json"]);
    assert_eq!(o.status.code(), Some(3), "drift --json: {}", text(&o));
    // clap's usage error keeps 2, so a script can tell the two apart.
    let o = nettune(&c, &["verify", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2), "usage: {}", text(&o));
    assert_eq!(nettune::exit::DRIFT, 3);
    assert_ne!(nettune::exit::DRIFT, nettune::exit::USAGE);
}

#[test]
fn exit_codes_doc_lists_every_command() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/exit-codes.md"),
    )
    .unwrap();
    let mut c = Cli::command();
    c.build();
    for s in c.get_subcommands() {
        let name = s.get_name();
        if name == "help" {
            continue;
        }
        assert!(
            doc.contains(&format!("`nettune {name}")),
            "docs/exit-codes.md does not cover `nettune {name}`"
        );
    }
}

#[test]
fn completions_name_every_subcommand() {
    let mut c = Cli::command();
    c.build();
    let visible: Vec<String> = c
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect();
    for shell in ["bash", "zsh", "fish"] {
        let o = bin().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{shell}: {}", text(&o));
        let s = String::from_utf8(o.stdout).unwrap();
        assert!(s.contains("nettune"), "{shell}");
        for name in &visible {
            assert!(s.contains(name.as_str()), "{shell} completion lacks {name}");
        }
        // Flags of a subcommand are completed too (fish spells them `-l NAME`).
        let long = if shell == "fish" { "-l " } else { "--" };
        for flag in ["profile", "state-dir"] {
            assert!(s.contains(&format!("{long}{flag}")), "{shell}: no {flag}");
        }
    }
    let o = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "unknown shell is a usage error");
}

#[test]
fn man_pages_render_for_the_command_and_each_subcommand() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("man");
    let o = bin().args(["man", "--out"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let main = std::fs::read_to_string(out.join("nettune.1")).unwrap();
    assert!(main.contains(".TH nettune 1"), "{main}");
    for p in subcommand_paths() {
        let mut c = Cli::command();
        c.build();
        let mut sub = &c;
        for name in &p {
            sub = sub.find_subcommand(name).unwrap();
        }
        if sub.is_hide_set() {
            continue;
        }
        let stem = format!("nettune-{}", p.join("-"));
        let page = std::fs::read_to_string(out.join(format!("{stem}.1")))
            .unwrap_or_else(|e| panic!("{stem}.1: {e}"));
        assert!(page.contains(&format!(".TH {stem} 1")), "{stem}: {page}");
        // The sections a man page reader looks for, not clap_mangen's EXTRA;
        // the footer names nettune, not the subcommand.
        for sec in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH \"SEE ALSO\""] {
            assert!(page.contains(sec), "{stem}: no {sec}");
        }
        assert!(!page.contains(".SH EXTRA"), "{stem}: EXTRA section");
        // Issue 38: exit codes are in EXIT STATUS, never in NOTES, and a
        // page's EXIT STATUS is its command's (no other command's codes).
        let exit = page.split(".SH \"EXIT STATUS\"").nth(1).unwrap_or_default();
        let exit = exit.split("\n.SH ").next().unwrap_or_default();
        if let Some(n) = page.split(".SH NOTES").nth(1) {
            let n = n.split("\n.SH ").next().unwrap_or_default();
            assert!(
                !n.contains("Exit codes") && !n.contains("Exit status"),
                "{stem}: {n}"
            );
        }
        match p.join(" ").as_str() {
            "verify" => assert!(exit.contains("3 drift"), "{stem}: {exit}"),
            "doctor" => assert!(exit.contains("2 critical"), "{stem}: {exit}"),
            "inspect" | "plan" => assert!(
                !exit.contains("verify") && !exit.contains("fleet"),
                "{stem}: {exit}"
            ),
            _ => {}
        }
        let th = page.lines().find(|l| l.starts_with(".TH ")).unwrap();
        assert!(th.contains("\"nettune 0.1.0\""), "{stem}: {th}");
        if p.len() == 1 {
            // The main page lists the subcommand.
            // roff escapes the hyphen: nettune\-plan(1).
            let listed = format!("{}(1)", stem.replace('-', "\\-"));
            assert!(main.contains(&listed), "{listed} not in nettune.1");
        }
    }
    for sec in [".SH ENVIRONMENT", ".SH FILES"] {
        assert!(main.contains(sec), "nettune.1: no {sec}");
    }
    let serve = std::fs::read_to_string(out.join("nettune-serve.1")).unwrap();
    assert!(serve.contains("NETTUNE_TOKEN"), "{serve}");
    let apply = std::fs::read_to_string(out.join("nettune-apply.1")).unwrap();
    assert!(apply.contains("/var/lib/nettune"), "{apply}");
    // `man` is listed (issue 38: how to get pages from a checkout); the
    // hidden agent has no page.
    assert!(out.join("nettune-man.1").exists(), "nettune-man.1");
    assert!(
        !out.join("nettune-agent.1").exists(),
        "the hidden command has no page"
    );
    // man(1) renders it, when installed.
    if std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_ok()
    {
        let r = std::process::Command::new("man")
            .arg("-l")
            .arg(out.join("nettune-verify.1"))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&r.stdout);
        assert!(r.status.success() && s.contains("drift"), "{s}");
    }
}

/// Where `text` names a file of the source tree (`docs/...`, `crates/...`)
/// rather than an installed one (`/usr/share/doc/nettune/docs/...`).
fn source_paths(text: &str) -> Vec<String> {
    const INSTALLED: &str = "/usr/share/doc/nettune/";
    let mut bad = Vec::new();
    for word in ["docs/", "crates/", "tests/", "profiles/"] {
        for (at, _) in text.match_indices(word) {
            if !text[..at].ends_with(INSTALLED) {
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                bad.push(text[line_start..line_end].to_string());
            }
        }
    }
    bad
}

/// Issue 21 item 5: a man page or --help on an installed system points to
/// a man page section or to the installed documentation, never into the
/// source tree.
#[test]
fn man_pages_and_help_cite_no_source_tree_path() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("man");
    let o = bin().args(["man", "--out"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut bad = Vec::new();
    let mut pages = 0;
    for e in std::fs::read_dir(&out).unwrap() {
        let path = e.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        pages += 1;
        for l in source_paths(&page) {
            bad.push(format!("{}: {l}", path.display()));
        }
    }
    assert!(pages > 10, "{pages} pages");
    let mut paths = subcommand_paths();
    paths.push(Vec::new());
    for p in &paths {
        let mut c = Cli::command();
        c.build();
        let mut sub = &mut c;
        for name in p {
            sub = sub.find_subcommand_mut(name).unwrap();
        }
        let help = sub.render_long_help().to_string();
        for l in source_paths(&help) {
            bad.push(format!("nettune {} --help: {l}", p.join(" ")));
        }
    }
    assert!(bad.is_empty(), "source-tree paths:\n{}", bad.join("\n"));
    // The installed documents they name are shipped by the package.
    let cargo = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
    )
    .unwrap();
    for asset in [
        "[\"../../docs/*.md\", \"usr/share/doc/nettune/docs/\"",
        "[\"../../docs/schema/*.json\", \"usr/share/doc/nettune/docs/schema/\"",
        "[\"../../profiles/example.toml\", \"usr/share/doc/nettune/examples/profile.toml\"",
    ] {
        assert!(cargo.contains(asset), "no asset {asset}");
    }
}

/// Issue 38, the first hour: `nettune --help` lists `man` (how to get the
/// pages without the package) and says where the reference is in a source
/// checkout, where /usr/share/doc/nettune does not exist.
#[test]
fn top_level_help_lists_man_and_the_checkouts_docs() {
    let o = bin().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(
        help.lines().any(|l| l.trim_start().starts_with("man ")),
        "{help}"
    );
    assert!(help.contains("/usr/share/doc/nettune/docs"), "{help}");
    assert!(help.contains("source checkout"), "{help}");
}

/// Issue 38, the first hour: `fleet --help` shows an inventory, and what it
/// shows is TOML an inventory reader takes (hosts with names).
#[test]
fn fleet_help_shows_an_inventory() {
    let o = bin().args(["fleet", "--help"]).output().unwrap();
    assert!(o.status.success());
    let help = String::from_utf8(o.stdout).unwrap();
    let block: String = help
        .split("An inventory, hosts.toml")
        .nth(1)
        .unwrap_or_else(|| panic!("no inventory example: {help}"))
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    let v: toml::Value = block.parse().unwrap_or_else(|e| panic!("{e}: {block}"));
    let hosts = v["host"].as_array().unwrap();
    assert!(hosts.len() >= 2, "{block}");
    assert!(hosts.iter().all(|h| h["name"].is_str()), "{block}");
}
