//! `nettune report`: a results directory's `results.json`
//! ([`model::results::ExperimentResults`]) rendered as a self-contained HTML
//! page (inline CSS and SVG charts, no network fetches) and a Markdown
//! summary.
//!
//! [`render_html`] and [`render_markdown`] are pure; [`write_dir`] and
//! [`write_reports`] do the file I/O that `nettune report`, `nettune lab` and
//! `nettune experiment` need, naming the file in every error. The results
//! file is untrusted input: every text from it is escaped, and the work is
//! bounded (points per series, series per chart, rows per table).
//!
//! A results.json of `nettune autotune` (`"kind": "autotune"`) has a page of
//! its own (`autotune`): the search trace chart and the accepted and
//! rejected changes; [`write_dir`] and [`read_autotune`] tell the kinds apart.

mod autotune;
mod autotune_page;
mod charts;
mod data;
mod esc;
mod html;
mod markdown;
mod num;
mod rhel_bdp;
mod table;

use std::path::{Path, PathBuf};

use model::results::{ExperimentResults, ResultsError, RESULTS_FILE};

pub use autotune::{read_autotune, AutotuneResults, AUTOTUNE_KIND, AUTOTUNE_SCHEMA_VERSION};
pub use autotune_page::{render_autotune_html, render_autotune_markdown};
pub use html::render_html;
pub use markdown::render_markdown;

/// Default name of the HTML page inside a results directory.
pub const HTML_FILE: &str = "report.html";
/// Default name of the Markdown summary inside a results directory.
pub const MARKDOWN_FILE: &str = "report.md";
/// Largest `results.json` read, in bytes.
pub const MAX_RESULTS_BYTES: u64 = 256 * 1024 * 1024;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results directory does not exist or is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The directory has no `results.json`.
    #[error("{}: no {RESULTS_FILE} here (not a results directory of nettune experiment or nettune lab)", path.display())]
    NoResults {
        /// The directory.
        path: PathBuf,
    },
    /// The results file could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error (in the message, not a `source`, so that `{:#}` does
        /// not print it twice).
        error: std::io::Error,
    },
    /// The results file is larger than [`MAX_RESULTS_BYTES`].
    #[error("{}: larger than {MAX_RESULTS_BYTES} bytes, not read", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// Not a results file of this shape, or a newer schema.
    #[error("{}: {error}", path.display())]
    Results {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        error: ResultsError,
    },
    /// An autotune results.json with a field of the wrong shape.
    #[error("{}: {message}", path.display())]
    BadAutotune {
        /// The file.
        path: PathBuf,
        /// What is wrong, as serde says.
        message: String,
    },
    /// An autotune results.json of a newer schema.
    #[error("{}: autotune results of schema_version {found}, newer than this nettune reads ({AUTOTUNE_SCHEMA_VERSION})", path.display())]
    NewerAutotune {
        /// The file.
        path: PathBuf,
        /// Its schema_version.
        found: u64,
    },
    /// A report file could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The error (in the message, not a `source`, so that `{:#}` does
        /// not print it twice).
        error: std::io::Error,
    },
    /// The results file is not a regular file (a FIFO, a device), or a
    /// report file is refused (a directory or device under its name).
    #[error(transparent)]
    File(host::HostError),
    /// A chart could not be drawn.
    #[error("chart {chart}: {error}")]
    Chart {
        /// The chart's id.
        chart: String,
        /// plotters' error.
        error: plotters::drawing::DrawingAreaErrorKind<std::io::Error>,
    },
}

/// Read and check `DIR/results.json`.
pub fn read_results(dir: &Path) -> Result<ExperimentResults, ReportError> {
    if !dir.is_dir() {
        return Err(ReportError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let path = dir.join(RESULTS_FILE);
    // The one bounded reader: a FIFO or device is refused without blocking.
    let text = match host::files::read_bounded_text(&path, MAX_RESULTS_BYTES) {
        Ok(t) => t,
        Err(host::HostError::NotFound { .. }) => {
            return Err(ReportError::NoResults {
                path: dir.to_path_buf(),
            })
        }
        Err(host::HostError::TooLarge { .. }) => return Err(ReportError::TooLarge { path }),
        Err(e) => return Err(ReportError::File(e)),
    };
    ExperimentResults::from_json(&text).map_err(|error| ReportError::Results { path, error })
}

/// Render `results` and write the page to `html` and the summary to
/// `markdown`.
pub fn write_reports(
    results: &ExperimentResults,
    html: &Path,
    markdown: &Path,
) -> Result<(), ReportError> {
    let page = render_html(results)?;
    let summary = render_markdown(results);
    write_file(html, &page)?;
    write_file(markdown, &summary)
}

/// Write one rendered report to `path`, naming it in the error: through a
/// new temporary file and a rename ([`host::files::write_atomic`]), so a
/// symlink planted under that name is replaced, never written through.
pub fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    host::files::write_atomic(path, text.as_bytes()).map_err(|e| match e {
        host::HostError::Io { path, error } => ReportError::Write { path, error },
        e => match e.raw_os_error() {
            Some(n) => ReportError::Write {
                path: path.to_path_buf(),
                error: std::io::Error::from_raw_os_error(n),
            },
            None => ReportError::File(e),
        },
    })
}

/// Read `DIR/results.json` and write `DIR/report.html` and `DIR/report.md`;
/// returns their paths. What `nettune lab`, `nettune experiment` and
/// `nettune autotune` call at their end.
pub fn write_dir(dir: &Path) -> Result<(PathBuf, PathBuf), ReportError> {
    let html = dir.join(HTML_FILE);
    let markdown = dir.join(MARKDOWN_FILE);
    if let Some(at) = read_autotune(dir)? {
        write_file(&html, &render_autotune_html(&at)?)?;
        write_file(&markdown, &render_autotune_markdown(&at))?;
        return Ok((html, markdown));
    }
    let results = read_results(dir)?;
    write_reports(&results, &html, &markdown)?;
    Ok((html, markdown))
}
