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

mod charts;
mod data;
mod esc;
mod html;
mod markdown;
mod num;
mod seed004;
mod table;

use std::io::Read;
use std::path::{Path, PathBuf};

use model::results::{ExperimentResults, ResultsError, RESULTS_FILE};

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
    /// A report file could not be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The error (in the message, not a `source`, so that `{:#}` does
        /// not print it twice).
        error: std::io::Error,
    },
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
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReportError::NoResults {
                path: dir.to_path_buf(),
            })
        }
        Err(error) => return Err(ReportError::Read { path, error }),
    };
    let mut text = String::new();
    let read = file
        .take(MAX_RESULTS_BYTES.saturating_add(1))
        .read_to_string(&mut text);
    if let Err(error) = read {
        return Err(ReportError::Read { path, error });
    }
    if text.len() as u64 > MAX_RESULTS_BYTES {
        return Err(ReportError::TooLarge { path });
    }
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

/// Write one rendered report to `path`, naming it in the error.
pub fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|error| ReportError::Write {
        path: path.to_path_buf(),
        error,
    })
}

/// Read `DIR/results.json` and write `DIR/report.html` and `DIR/report.md`;
/// returns their paths. What `nettune lab` and `nettune experiment` call at
/// their end.
pub fn write_dir(dir: &Path) -> Result<(PathBuf, PathBuf), ReportError> {
    let results = read_results(dir)?;
    let html = dir.join(HTML_FILE);
    let markdown = dir.join(MARKDOWN_FILE);
    write_reports(&results, &html, &markdown)?;
    Ok((html, markdown))
}
