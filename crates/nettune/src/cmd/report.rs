//! `nettune report DIR [--html FILE] [--markdown FILE]`: render a results
//! directory (`DIR/results.json`, written by `nettune experiment`,
//! `nettune lab` or `nettune autotune`) as a self-contained HTML page and a
//! Markdown summary.

use anyhow::Context as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune report nettune-report                 writes nettune-report/report.html and report.md
  nettune report results/bdp --html /tmp/bdp.html
  nettune report results/rps --markdown - | less     the summary on stdout

The page is one file: inline CSS and SVG charts (bars with 95 % confidence intervals
per cell, throughput and per-CPU softirq % over time, latency CDFs, a per-CPU heat
map), the machine, lab, host facts, plans applied, doctor findings before and after,
the per-cell table with verdicts, n/a cells with their reasons, and the lab's overhead.
No scripts, fonts or network fetches: open it anywhere, mail it, attach it.
`nettune lab`, `nettune experiment` and `nettune autotune` write both files at their end
(autotune's page: the search trace chart, the accepted and rejected changes). A results.json
written by a newer nettune is refused (see /usr/share/doc/nettune/docs/report.md).";

/// Flags of `nettune report`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Results directory holding results.json.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to write the HTML page (default DIR/report.html; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where to write the Markdown summary (default DIR/report.md; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Run `nettune report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let autotune = report::read_autotune(&args.dir).context("report")?;
    let html = args
        .html
        .unwrap_or_else(|| args.dir.join(report::HTML_FILE));
    let markdown = args
        .markdown
        .unwrap_or_else(|| args.dir.join(report::MARKDOWN_FILE));
    let (page, summary) = match &autotune {
        // `nettune autotune`'s results: the search trace chart and its tables.
        Some(at) => (
            report::render_autotune_html(at).context("report")?,
            report::render_autotune_markdown(at),
        ),
        None => {
            let results = report::read_results(&args.dir).context("report")?;
            (
                report::render_html(&results).context("report")?,
                report::render_markdown(&results),
            )
        }
    };
    for (path, text) in [(&html, page), (&markdown, summary)] {
        if path.as_os_str() == "-" {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(e).context("report: cannot write to stdout")
                }
                _ => {}
            }
        } else {
            report::write_file(path, &text).context("report")?;
            eprintln!("nettune: report: wrote {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
