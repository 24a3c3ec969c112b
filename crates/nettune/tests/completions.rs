//! Issue 21 item 5: completions offer the built-in profile names (and TOML
//! files) for profile arguments, this host's interfaces (listed from
//! /sys/class/net when completing) for interface arguments, and the test
//! names for `bench -t`.

#![allow(clippy::unwrap_used)]

use clap_complete::Shell;
use nettune::cmd::completions::{marked, script, Values};
use std::process::Command;

const NAMES: [&str; 3] = ["latency", "throughput", "balanced"];

#[test]
fn profile_and_interface_arguments_are_all_found() {
    let got: Vec<String> = marked()
        .iter()
        .map(|m| {
            let kind = match m.values {
                Values::Profile => "profile",
                Values::Interface => "iface",
            };
            format!("{} {} {kind}", m.path[1..].join(" "), m.id)
        })
        .collect();
    for want in [
        "plan profile profile",
        "apply profile profile",
        "doctor profile profile",
        "profile show name profile",
        "inspect iface iface",
        "stat iface iface",
        "top iface iface",
        "plan iface iface",
        "apply iface iface",
        "profile show iface iface",
        "bench bind_dev iface",
    ] {
        assert!(got.iter().any(|g| g == want), "{want} not marked: {got:?}");
    }
    assert_eq!(tune::profile::BUILTINS, NAMES);
}

#[test]
fn every_script_offers_profile_names_and_a_live_interface_list() {
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let s = script(shell);
        assert!(!s.contains("__nettune_"), "{shell}: a stand-in is left");
        assert!(s.contains(&NAMES.join(" ")), "{shell}: no profile names");
        assert!(s.contains("/sys/class/net"), "{shell}: no interface list");
        // bench -t offers the tests (clap possible values).
        assert!(s.contains("tcp-crr"), "{shell}: no test names");
    }
    let zsh = script(Shell::Zsh);
    assert!(zsh.contains(":PROFILE:_nettune_profiles'"), "{zsh}");
    assert!(zsh.contains(":IF:_nettune_ifaces'"));
    assert!(zsh.contains(":name -- "));
    assert!(zsh.find("_nettune_ifaces() {") < zsh.rfind("compdef _nettune nettune"));
    let fish = script(Shell::Fish);
    assert!(fish.contains("-l profile -d 'Profile: latency, throughput, balanced, or a path to a TOML profile' -r -F -a \"latency throughput balanced\""), "{fish}");
    assert!(fish.contains("-l bind-dev -d 'Bind every socket to this interface (SO_BINDTODEVICE)' -r -f -a \"(command ls /sys/class/net 2>/dev/null)\""));
    assert!(
        fish.contains("__fish_seen_subcommand_from show\" -F -a \"latency throughput balanced\"")
    );
    // The binary prints the same script.
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), script(Shell::Bash));
}

/// COMPREPLY of bash's completion function for `words` (the last one is
/// the word being completed), run in `dir`.
fn bash_complete(dir: &std::path::Path, words: &[&str]) -> Option<Vec<String>> {
    let file = dir.join("nettune.bash");
    std::fs::write(&file, script(Shell::Bash)).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let cur = words[cword];
    let prog = format!(
        "source {f}\nCOMP_WORDS=({w})\nCOMP_CWORD={cword}\nCOMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n_nettune nettune '{cur}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        f = file.display(),
        w = quoted.join(" "),
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &prog])
        .current_dir(dir)
        .output()
        .ok()?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn bash_completes_profiles_interfaces_and_tests() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("skipped: no bash");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("mine.toml"), "").unwrap();
    let r = |w: &[&str]| bash_complete(t.path(), w).unwrap();

    let got = r(&["nettune", "plan", "--profile", ""]);
    for n in NAMES {
        assert!(got.iter().any(|g| g == n), "plan --profile: {got:?}");
    }
    assert!(got.iter().any(|g| g == "mine.toml"), "a TOML file: {got:?}");
    assert_eq!(r(&["nettune", "apply", "-p", "thr"]), ["throughput"]);
    assert_eq!(r(&["nettune", "doctor", "--profile", "bal"]), ["balanced"]);
    let got = r(&["nettune", "profile", "show", ""]);
    assert!(got.iter().any(|g| g == "latency"), "profile show: {got:?}");

    if std::path::Path::new("/sys/class/net/lo").exists() {
        for w in [
            ["nettune", "inspect", "--iface", ""],
            ["nettune", "stat", "--iface", ""],
            ["nettune", "plan", "--iface", ""],
            ["nettune", "bench", "--bind-dev", ""],
        ] {
            let got = r(&w);
            assert!(got.iter().any(|g| g == "lo"), "{w:?}: {got:?}");
            assert!(!got.iter().any(|g| g == "mine.toml"), "{w:?}: {got:?}");
        }
        assert_eq!(r(&["nettune", "top", "--iface", "l"]), ["lo"]);
    }

    let got = r(&["nettune", "bench", "-t", "tcp-"]);
    assert_eq!(got, ["tcp-stream", "tcp-rr", "tcp-crr"]);
}

/// Whether `shell` runs here.
fn has(shell: &str) -> bool {
    Command::new(shell)
        .arg("-c")
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn fish_completes_profiles_interfaces_and_tests() {
    if !has("fish") {
        eprintln!("skipped: no fish");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("mine.toml"), "").unwrap();
    let file = t.path().join("nettune.fish");
    std::fs::write(&file, script(Shell::Fish)).unwrap();
    let complete = |line: &str| -> Vec<String> {
        let o = Command::new("fish")
            .args(["--no-config", "-c"])
            .arg(format!("source {}; complete -C '{line}'", file.display()))
            .current_dir(t.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    for line in ["nettune plan --profile ", "nettune profile show "] {
        let got = complete(line);
        for n in NAMES.iter().chain(&["mine.toml"]) {
            assert!(got.iter().any(|g| g == n), "{line}: {got:?}");
        }
    }
    if std::path::Path::new("/sys/class/net/lo").exists() {
        assert_eq!(complete("nettune bench --bind-dev l"), ["lo"]);
        let got = complete("nettune inspect --iface ");
        assert!(got.iter().any(|g| g == "lo"), "{got:?}");
    }
    assert_eq!(
        complete("nettune bench -t tcp-"),
        ["tcp-crr", "tcp-rr", "tcp-stream"]
    );
}

#[test]
fn zsh_script_parses_and_its_helpers_list_profiles_and_interfaces() {
    if !has("zsh") {
        eprintln!("skipped: no zsh");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("_nettune");
    std::fs::write(&file, script(Shell::Zsh)).unwrap();
    let o = Command::new("zsh").arg("-n").arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Outside a completion widget: compadd and _alternative print what
    // they are given.
    let o = Command::new("zsh")
        .arg("-f")
        .arg("-c")
        .arg(format!(
            "compdef() {{ :; }}; compadd() {{ print -l -- \"${{(@P)${{@[-1]}}}}\"; }}; \
             _alternative() {{ print -l -- \"$@\"; }}; source {}; \
             _nettune_profiles; print -r -- SPLIT; _nettune_ifaces",
            file.display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let (profiles, ifaces) = out.split_once("SPLIT\n").unwrap();
    assert!(
        profiles.contains("(latency throughput balanced)") && profiles.contains("_files"),
        "{profiles}"
    );
    if std::path::Path::new("/sys/class/net/lo").exists() {
        assert!(ifaces.lines().any(|l| l == "lo"), "{ifaces}");
    }
}
