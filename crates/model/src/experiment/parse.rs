//! The entry point: size limit, TOML, then each section in file order.

use toml::Spanned;

use super::factors::parse_factors;
use super::hosts::parse_hosts;
use super::ranges::{FloatRange, IntRange};
use super::raw::RawFile;
use super::responses::parse_responses;
use super::validate::{is_name, key_at, line_of, to_u32, Ctx, NAME_EXPECTED};
use super::workloads::parse_workloads;
use super::{ErrorKind, Experiment, ExperimentError, UntilCi, MAX_FILE_BYTES, MAX_REPEATS};

/// Parse and validate an experiment file's text.
pub fn parse(text: &str) -> Result<Experiment, ExperimentError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ExperimentError {
            line: 1,
            key: "(file)".into(),
            kind: ErrorKind::TooMany {
                what: "bytes",
                count: text.len(),
                max: MAX_FILE_BYTES,
            },
        });
    }
    let raw: RawFile = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    let ctx = Ctx { text };

    // The name becomes a directory name (`nettune-experiment-NAME`) and is
    // printed: a name like a workload's, never a path or escape codes.
    let name = match &raw.name {
        None => "experiment".to_string(),
        Some(n) if is_name(n.get_ref()) => n.get_ref().clone(),
        Some(n) => return Err(ctx.bad(n.span(), "name", n.get_ref(), NAME_EXPECTED)),
    };
    let (repeats, warmup, until_ci) = parse_repeats(&ctx, &raw)?;
    let hosts = parse_hosts(&ctx, &raw.hosts)?;
    let workloads = parse_workloads(&ctx, &raw.workload)?;
    let (factors, factor_hosts) = parse_factors(&ctx, &raw.factor, &hosts)?;
    let responses = parse_responses(&ctx, &raw.responses)?;
    Ok(Experiment {
        name,
        description: raw.description.unwrap_or_default(),
        seed: raw.seed.unwrap_or(1),
        repeats,
        warmup,
        until_ci,
        hosts,
        workloads,
        factors,
        factor_hosts,
        responses,
    })
}

/// A TOML syntax or schema error, at its line and key.
fn toml_error(text: &str, e: &toml::de::Error) -> ExperimentError {
    let span = e.span().unwrap_or(0..0);
    ExperimentError {
        line: line_of(text, span.start),
        key: key_at(text, &span),
        kind: ErrorKind::Toml {
            message: e
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        },
    }
}

/// Repeats per cell; its top is [`MAX_REPEATS`].
const REPEATS: IntRange = int_range!(1..=1000);
const _: () = assert!(REPEATS.hi == MAX_REPEATS as i64);

/// `repeats`, `warmup`, and `until_ci` with its `max_repeats`.
fn parse_repeats(
    ctx: &Ctx<'_>,
    raw: &RawFile,
) -> Result<(u32, u32, Option<UntilCi>), ExperimentError> {
    let repeats = ctx.int(&raw.repeats, "repeats", 5, REPEATS)?;
    let warmup = ctx.int(&raw.warmup, "warmup", 1, int_range!(0..=100))?;
    let target = FloatRange {
        lo: 0.01,
        hi: 100.0,
        expected: "a percentage above 0, at most 100",
    };
    let until_ci = match ctx.float(&raw.until_ci, "until_ci", target)? {
        None => {
            if let Some(m) = &raw.max_repeats {
                return Err(ctx.err(
                    m.span(),
                    "max_repeats",
                    ErrorKind::Structure("max_repeats needs until_ci"),
                ));
            }
            None
        }
        Some(target_pct) => {
            let lo = repeats.max(3);
            let range = IntRange {
                lo,
                hi: REPEATS.hi,
                expected: "an integer from repeats (at least 3) to 1000",
            };
            let max = ctx.int(
                &raw.max_repeats,
                "max_repeats",
                lo.saturating_mul(4).min(REPEATS.hi),
                range,
            )?;
            if repeats < 3 {
                let span = raw.repeats.as_ref().map_or(0..0, Spanned::span);
                return Err(ctx.bad(
                    span,
                    "repeats",
                    repeats,
                    "at least 3 with until_ci (the minimum before stopping)",
                ));
            }
            Some(UntilCi {
                target_pct,
                max_repeats: to_u32(max),
            })
        }
    };
    Ok((to_u32(repeats), to_u32(warmup), until_ci))
}
