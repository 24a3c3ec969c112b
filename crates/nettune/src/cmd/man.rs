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
    let (own_exit, notes) = split_exit(&notes);
    if !examples.is_empty() {
        section(&mut w, "EXAMPLES", &literal(&examples));
    }
    if !notes.is_empty() {
        section(&mut w, "NOTES", &literal(&notes));
    }
    let name = cmd.get_name();
    let top = cmd.get_display_name().is_none_or(|d| d == "nettune");
    section(&mut w, "EXIT STATUS", &literal(&exit_status(top, own_exit)));
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
5    apply: a knob the plan writes is absent on this host (rolled back)
6    apply: a write refused for want of privileges (not root)
130  interrupted by Ctrl-C (SIGINT)
doctor: 0 nothing above info, 1 warnings, 2 critical findings, 3 it could not run.
A closed stdout (nettune ... | head) is not an error: the command stops and exits 0.";

/// What every subcommand without codes of its own exits with.
const EXIT_COMMON: &str = "\
0    success
1    error: one line on stderr names the file, knob or address
2    usage error (unknown flag, bad value)";

/// Said on every page after the codes.
const EXIT_ALWAYS: &str = "\
130  interrupted by Ctrl-C (SIGINT)
A closed stdout (nettune ... | head) is not an error: the command stops and exits 0.";

/// A page's EXIT STATUS: the whole table on nettune(1); a subcommand's own
/// codes (from its help) or the common ones, then Ctrl-C and a closed stdout.
fn exit_status(top: bool, own: Option<String>) -> String {
    if top {
        return EXIT_STATUS.to_string();
    }
    let codes = own.unwrap_or_else(|| EXIT_COMMON.to_string());
    if codes.contains("130") {
        format!(
            "{codes}\n{}",
            EXIT_ALWAYS.lines().nth(1).unwrap_or_default()
        )
    } else {
        format!("{codes}\n{EXIT_ALWAYS}")
    }
}

/// A command's own exit codes out of its notes: from "Exit codes:" or "Exit
/// status:" to the end of that paragraph, short of a trailing "JSON shape:"
/// or documentation path (which stay in the notes); and the notes without them.
fn split_exit(notes: &str) -> (Option<String>, String) {
    let Some(at) = ["Exit codes:", "Exit status:"]
        .iter()
        .filter_map(|m| notes.find(m))
        .min()
    else {
        return (None, notes.to_string());
    };
    let end = notes[at..].find("\n\n").map_or(notes.len(), |e| at + e);
    let para = &notes[at..end];
    let cut = [
        " JSON shape:",
        "\nJSON shape:",
        " /usr/share/doc/",
        "\n/usr/share/doc/",
    ]
    .iter()
    .filter_map(|m| para.find(m))
    .min()
    .unwrap_or(para.len());
    let own = para[..cut].trim().to_string();
    let mut kept: Vec<&str> = Vec::new();
    let before = notes[..at].trim();
    let tail = para[cut..].trim();
    let head = match (before.is_empty(), tail.is_empty()) {
        (true, _) => tail.to_string(),
        (false, true) => before.to_string(),
        // The paragraph's text around the codes stays one paragraph.
        (false, false) => format!("{before}\n{tail}"),
    };
    if !head.is_empty() {
        kept.push(&head);
    }
    let after = notes[end..].trim();
    if !after.is_empty() {
        kept.push(after);
    }
    (Some(own), kept.join("\n\n"))
}

const ENVIRONMENT: &str = "\
NETTUNE_TOKEN  the shared token of serve and bench (instead of --token-file): with it both
               ends prove they hold it (HMAC) before any test runs";

const FILES: &str = "\
/var/lib/nettune          the journal of every apply and rollback (--state-dir elsewhere)
/etc/nettune/plan.json    the plan apply --persist applies again at boot
/usr/lib/systemd/system/nettune.service  the packaged boot unit apply --persist enables
/etc/systemd/system/nettune.service  the boot unit apply --persist writes without a package";

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

#[cfg(test)]
mod tests {
    use super::{exit_status, split_exit};

    /// Issue 38: a command's own exit codes leave NOTES for EXIT STATUS, and
    /// the text after them in the same paragraph stays a note.
    #[test]
    fn own_exit_codes_move_out_of_the_notes() {
        let notes = "Each finding has an id and a source. Exit status: 0 nothing above info, 1\nwarnings, 2 critical. JSON shape: docs/doctor.md.\n\nMore.";
        let (own, rest) = split_exit(notes);
        assert_eq!(
            own.as_deref(),
            Some("Exit status: 0 nothing above info, 1\nwarnings, 2 critical.")
        );
        assert_eq!(
            rest,
            "Each finding has an id and a source.\nJSON shape: docs/doctor.md.\n\nMore."
        );
        let (none, same) = split_exit("No codes here.");
        assert_eq!((none, same.as_str()), (None, "No codes here."));
        let page = exit_status(false, own);
        assert!(
            page.contains("2 critical") && page.contains("130"),
            "{page}"
        );
        assert!(!exit_status(false, None).contains("verify"));
        assert!(exit_status(true, None).contains("verify"));
    }
}
