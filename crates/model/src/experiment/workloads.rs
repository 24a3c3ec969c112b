//! `[[workload]]`: what runs in every cell (bench options).

use std::collections::BTreeSet;

use toml::Spanned;

use super::ranges::IntRange;
use super::raw::RawWorkload;
use super::validate::{is_name, to_u32, truncate, Ctx, NAME_EXPECTED};
use super::{ErrorKind, ExperimentError, TestKind, Workload, MAX_WORKLOADS};

/// Application socket buffers (`sndbuf`, `rcvbuf`).
const BUFFER: IntRange = int_range!("a buffer of" 4096 to 2147483647 "bytes");

/// The `[[workload]]` tables: 1 to [`MAX_WORKLOADS`], distinct names.
pub(super) fn parse_workloads(
    ctx: &Ctx<'_>,
    raw: &[RawWorkload],
) -> Result<Vec<Workload>, ExperimentError> {
    if raw.is_empty() {
        return Err(ExperimentError {
            line: 1,
            key: "workload".into(),
            kind: ErrorKind::Structure("at least one [[workload]] is needed"),
        });
    }
    if raw.len() > MAX_WORKLOADS {
        return Err(ctx.err(
            raw[MAX_WORKLOADS].name.span(),
            format!("workload[{MAX_WORKLOADS}]"),
            ErrorKind::TooMany {
                what: "workloads",
                count: raw.len(),
                max: MAX_WORKLOADS,
            },
        ));
    }
    let mut workloads = Vec::new();
    let mut names = BTreeSet::new();
    for (i, w) in raw.iter().enumerate() {
        let name = w.name.get_ref();
        if !is_name(name) {
            return Err(ctx.bad(
                w.name.span(),
                &format!("workload[{i}].name"),
                name,
                NAME_EXPECTED,
            ));
        }
        if !names.insert(name.clone()) {
            return Err(ctx.err(
                w.name.span(),
                format!("workload[{i}].name"),
                ErrorKind::Duplicate {
                    value: truncate(name),
                },
            ));
        }
        workloads.push(parse_workload(ctx, w, i)?);
    }
    Ok(workloads)
}

/// `workload[i]`, its name already checked.
fn parse_workload(ctx: &Ctx<'_>, w: &RawWorkload, i: usize) -> Result<Workload, ExperimentError> {
    let k = |f: &str| format!("workload[{i}].{f}");
    let given = w.test.get_ref().as_str();
    let Ok(test) = given.parse::<TestKind>() else {
        let names = crate::catalogue::NAMES;
        return Err(ctx.bad(w.test.span(), &k("test"), given, names));
    };
    let size = int_range!("a size of" 1 to 16777216 "bytes");
    let buf = |v: &Option<Spanned<i64>>, f: &str| -> Result<Option<u32>, ExperimentError> {
        Ok(ctx.opt_int(v, &k(f), BUFFER)?.map(to_u32))
    };
    Ok(Workload {
        name: w.name.get_ref().clone(),
        test,
        size: ctx.opt_int(&w.size, &k("size"), size)?.map(to_u32),
        flows: to_u32(ctx.int(&w.flows, &k("flows"), 1, int_range!(1..=1024))?),
        duration_s: ctx
            .float(
                &w.duration_s,
                &k("duration_s"),
                float_range!("a duration of" 0.1 to 600 "s"),
            )?
            .unwrap_or(5.0),
        nodelay: w.nodelay.unwrap_or(false),
        sndbuf: buf(&w.sndbuf, "sndbuf")?,
        rcvbuf: buf(&w.rcvbuf, "rcvbuf")?,
    })
}
