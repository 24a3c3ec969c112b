//! `nettune man --out DIR` (hidden): man pages generated from the clap
//! definitions: `nettune.1` and one page per subcommand (`nettune-plan.1`,
//! `nettune-profile-show.1`, ...). Used to build the Debian package.

use anyhow::Context;
use clap::CommandFactory;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune man --out target/man && man -l target/man/nettune.1
  nettune man --out /usr/local/share/man/man1 && mandb -q";

/// Flags of `nettune man`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory to write the pages into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Run `nettune man`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pages = generate(&args.out)?;
    println!(
        "{} man page(s) written to {}",
        pages.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Write every page into `dir`; returns their paths, `nettune.1` first.
pub fn generate(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    host::files::create_out_dir(dir)?;
    let mut cmd = super::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    page(cmd, dir, &mut out)?;
    Ok(out)
}

fn page(cmd: clap::Command, dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let man = clap_mangen::Man::new(cmd.clone())
        .manual("nettune manual")
        .source(format!("nettune {}", env!("CARGO_PKG_VERSION")));
    let path = dir.join(man.get_filename());
    let bytes =
        render(&cmd, &man).with_context(|| format!("rendering the man page {}", path.display()))?;
    host::files::write_atomic(&path, &bytes)?;
    out.push(path);
    for s in subs {
        page(s, dir, out)?;
    }
    Ok(())
}

/// The page: clap_mangen's NAME, SYNOPSIS, DESCRIPTION, OPTIONS and
/// SUBCOMMANDS, then the sections a man page reader looks for: EXAMPLES
/// (the `--help` examples), NOTES (the rest of that text), EXIT STATUS,
/// ENVIRONMENT, FILES and SEE ALSO.
fn render(cmd: &clap::Command, man: &clap_mangen::Man) -> std::io::Result<Vec<u8>> {
    let mut w = Vec::new();
    man.render_title(&mut w)?;
    man.render_name_section(&mut w)?;
    man.render_synopsis_section(&mut w)?;
    man.render_description_section(&mut w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut w)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut w)?;
    }
    let after = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let (examples, notes) = split_examples(&after);
    if !examples.is_empty() {
        section(&mut w, "EXAMPLES", &literal(&examples));
    }
    if !notes.is_empty() {
        section(&mut w, "NOTES", &literal(&notes));
    }
    section(&mut w, "EXIT STATUS", &literal(EXIT_STATUS));
    let name = cmd.get_name();
    let top = cmd.get_display_name().is_none_or(|d| d == "nettune");
    if top || matches!(name, "serve" | "bench") {
        section(&mut w, "ENVIRONMENT", &literal(ENVIRONMENT));
    }
    if top
        || matches!(
            name,
            "apply" | "rollback" | "verify" | "history" | "profile" | "active"
        )
    {
        section(&mut w, "FILES", &literal(FILES));
    }
    let see = if top {
        "ethtool(8), irqbalance(1), iperf3(1), netperf(1), ip(8), tc(8)".to_string()
    } else {
        "nettune(1), ethtool(8), irqbalance(1), iperf3(1)".to_string()
    };
    // The reference documents (JSON shapes, doctor rules, lab, exit codes per
    // command) as the Debian package installs them, not the source tree.
    let docs = literal(
        "The reference documents: /usr/share/doc/nettune/docs\n\
         (listed in /usr/share/doc/nettune/README.md).",
    );
    let see = format!("{see}\n.PP\n{docs}");
    section(&mut w, "SEE ALSO", &see);
    Ok(w)
}

const EXIT_STATUS: &str = "\
0    success (verify: no drift)
1    error: one line on stderr names the file, knob or address; a declined or stopped apply
2    usage error (unknown flag, bad value)
3    verify: the host drifted from the last applied plan
4    fleet: some host failed (each named on stderr; the others finished)
130  interrupted by Ctrl-C (SIGINT)
doctor: 0 nothing above info, 1 warnings, 2 critical findings, 3 it could not run.
A closed stdout (nettune ... | head) is not an error: the command stops and exits 0.";

const ENVIRONMENT: &str = "\
NETTUNE_TOKEN  the shared token of serve and bench (instead of --token-file): with it both
               ends prove they hold it (HMAC) before any test runs";

const FILES: &str = "\
/var/lib/nettune          the journal of every apply and rollback (--state-dir elsewhere)
/etc/nettune/plan.json    the plan apply --persist applies again at boot
/etc/systemd/system/nettune.service  the boot unit apply --persist writes";

/// The text before the first blank line after an "Examples..." first line
/// (what it says beside "Examples", e.g. "(run nettune serve on host B
/// first)", kept as the first line), and the rest.
fn split_examples(after: &str) -> (String, String) {
    let after = after.trim_start();
    let (first, rest) = after.split_once('\n').unwrap_or((after, ""));
    let Some(said) = first.strip_prefix("Examples") else {
        return (String::new(), after.trim().to_string());
    };
    let said = said.trim().trim_end_matches(':').trim();
    let (ex, notes) = match rest.split_once("\n\n") {
        Some((ex, notes)) => (ex.trim_end(), notes.trim()),
        None => (rest.trim_end(), ""),
    };
    let ex = if said.is_empty() {
        ex.to_string()
    } else {
        format!("{said}:\n{ex}")
    };
    (ex, notes.to_string())
}

/// `text` as roff, line for line (no filling), with roff's control
/// characters escaped.
fn literal(text: &str) -> String {
    let mut o = String::from(".nf\n");
    for l in text.lines() {
        let l = l.replace('\\', "\\e").replace('-', "\\-");
        if l.starts_with('.') || l.starts_with('\'') {
            o.push_str("\\&");
        }
        o.push_str(&l);
        o.push('\n');
    }
    o.push_str(".fi");
    o
}

fn section(w: &mut Vec<u8>, title: &str, body: &str) {
    let t = if title.contains(' ') {
        format!("\"{title}\"")
    } else {
        title.to_string()
    };
    w.extend_from_slice(format!(".SH {t}\n{body}\n").as_bytes());
}
