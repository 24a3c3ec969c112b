//! `nettune autotune --workload FILE`: the workload as a small TOML file
//! instead of `--test`, `--size`, `--flows` and `--duration`
//! (examples/autotune-crr.toml):
//!
//! ```toml
//! test = "tcp-crr"        # tcp-stream, udp-stream, tcp-rr, udp-rr or tcp-crr
//! size = 64               # message or datagram size, bytes
//! flows = 4               # parallel flows, 1 to 64
//! duration = 3            # seconds of each run, 1 to 60
//! args = ["--nodelay"]    # more `nettune bench` options
//! ```
//!
//! Every key is optional. `args` takes only the bench options that shape the
//! load and that the search never sets itself ([`EXTRA_OPTIONS`]); each is
//! checked by the bench's own parser. Errors name the file and the key.

use model::experiment::TestKind;
use std::path::Path;

use clap::Parser;
use serde::Deserialize;

/// Largest workload file read.
const MAX_BYTES: u64 = 64 * 1024;

/// Bench options `args` may hold: the load's shape. The search sets the
/// test, size, flows, duration, warm-up, source address and output itself,
/// and congestion control, busy polling and the receive buffer are factors.
pub const EXTRA_OPTIONS: &[&str] = &[
    "--nodelay",
    "--sndbuf",
    "--outstanding",
    "--threads",
    "--cpus",
    "--rate",
    "--reverse",
    "--bidir",
    "--tos",
    "--mss",
    "--zerocopy",
    "--udp-gso",
    "--udp-gro",
    "--max-memory",
];

/// Tests a workload may name.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    test: Option<String>,
    size: Option<i64>,
    flows: Option<i64>,
    duration: Option<i64>,
    #[serde(default)]
    args: Vec<String>,
}

/// A checked workload file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadFile {
    /// The test, if given.
    pub test: Option<TestKind>,
    /// Message or datagram size, bytes.
    pub size: Option<u32>,
    /// Parallel flows.
    pub flows: Option<u32>,
    /// Seconds per run.
    pub duration: Option<u32>,
    /// More bench options, checked.
    pub args: Vec<String>,
}

/// Parses `nettune bench` options the way the bench does.
#[derive(Debug, Parser)]
#[command(name = "bench", no_binary_name = false)]
struct BenchCheck {
    #[command(flatten)]
    args: crate::cmd::bench::Args,
}

fn int(file: &str, key: &str, v: Option<i64>, lo: u32, hi: u32) -> Result<Option<u32>, String> {
    match v {
        None => Ok(None),
        Some(n) => match u32::try_from(n) {
            Ok(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(format!("{file}: key `{key}`: {n} is not from {lo} to {hi}")),
        },
    }
}

/// Parse the text of workload file `file`; the error is one line naming the
/// file and the key.
pub fn parse(text: &str, file: &str) -> Result<WorkloadFile, String> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        // toml's message spans several lines (the line, a caret): keep its
        // first line and the key it names.
        let msg = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(s) => {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!("{file}:{line}: {msg}")
            }
            None => format!("{file}: {msg}"),
        }
    })?;
    let test = match raw.test.as_deref() {
        None => None,
        Some(t) => Some(t.parse::<TestKind>().map_err(|_| {
            format!(
                "{file}: key `test`: `{}` is not one of {}",
                model::text::Printable(t),
                model::bench::config::catalogue::NAMES
            )
        })?),
    };
    let size = int(file, "size", raw.size, 1, 1 << 30)?;
    let flows = int(file, "flows", raw.flows, 1, 64)?;
    let duration = int(file, "duration", raw.duration, 1, 60)?;
    check_args(file, &raw.args)?;
    Ok(WorkloadFile {
        test,
        size,
        flows,
        duration,
        args: raw.args,
    })
}

/// `args`: only [`EXTRA_OPTIONS`], and what the bench's parser takes.
fn check_args(file: &str, args: &[String]) -> Result<(), String> {
    let mut takes_value = false;
    for (i, a) in args.iter().enumerate() {
        if takes_value {
            takes_value = false;
            continue;
        }
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if !EXTRA_OPTIONS.contains(&name) {
            return Err(format!(
                "{file}: key `args`: `{}` is not an option a workload may add (only {}; the search sets the test, size, flows, duration and its factors itself)",
                model::text::Printable(a),
                EXTRA_OPTIONS.join(", ")
            ));
        }
        // An option with a value takes the next element unless given as `--opt=V`.
        takes_value = !a.contains('=')
            && !matches!(
                name,
                "--nodelay" | "--reverse" | "--bidir" | "--zerocopy" | "--udp-gso" | "--udp-gro"
            );
        if takes_value && i + 1 == args.len() {
            return Err(format!("{file}: key `args`: `{a}` needs a value"));
        }
    }
    let argv = ["bench", "127.0.0.1"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    BenchCheck::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        format!("{file}: key `args`: {}", model::text::Printable(first))
    })?;
    Ok(())
}

/// Read and parse workload file `path`.
pub fn read(path: &Path) -> Result<WorkloadFile, String> {
    let file = path.display().to_string();
    let text =
        host::files::read_bounded_text(path, MAX_BYTES).map_err(|e| format!("--workload: {e}"))?;
    parse(&text, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file() {
        let w = parse(
            "test = \"tcp-crr\"\nsize = 64\nflows = 4\nduration = 2\nargs = [\"--nodelay\", \"--outstanding\", \"2\"]\n",
            "w.toml",
        )
        .unwrap();
        assert_eq!(w.test, Some(TestKind::TcpCrr));
        assert_eq!((w.size, w.flows, w.duration), (Some(64), Some(4), Some(2)));
        assert_eq!(w.args, ["--nodelay", "--outstanding", "2"]);
        assert_eq!(parse("", "w.toml").unwrap(), WorkloadFile::default());
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let e = |t: &str| parse(t, "w.toml").unwrap_err();
        assert!(
            e("sise = 3").starts_with("w.toml:1: unknown field `sise`"),
            "{}",
            e("sise = 3")
        );
        assert_eq!(e("flows = 0"), "w.toml: key `flows`: 0 is not from 1 to 64");
        assert_eq!(
            e("duration = 61"),
            "w.toml: key `duration`: 61 is not from 1 to 60"
        );
        assert!(e("test = \"sctp\"").starts_with("w.toml: key `test`: `sctp` is not one of"));
        assert!(
            e("flows = \"4\"").starts_with("w.toml:1: invalid type"),
            "{}",
            e("flows = \"4\"")
        );
        assert!(e("args = [\"--congestion\", \"bbr\"]")
            .contains("key `args`: `--congestion` is not an option"));
        assert!(
            e("args = [\"--outstanding\"]").contains("key `args`: `--outstanding` needs a value")
        );
        let bad = e("args = [\"--outstanding\", \"many\"]");
        assert!(
            bad.starts_with("w.toml: key `args`: invalid value 'many'"),
            "{bad}"
        );
        assert!(!bad.contains('\n'));
        assert!(!e("test = [").contains('\n'));
    }
}
