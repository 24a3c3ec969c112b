//! Doctor's reports of several hosts as one: results.json's
//! `doctor_before`/`doctor_after`, written by the lab and read by the
//! report page. Typed: each finding and each skipped rule is the model's,
//! with its host beside it.
//!
//! The JSON is the shape these fields have always had: doctor's `--json`
//! report whose every subject (and skipped reason) carries its host as a
//! `HOST: ` prefix, with a `host` field added, and every object's keys in
//! alphabetical order (the merge went through a `serde_json::Value`).
//! [`HostReports`] writes exactly that and reads it back into the types;
//! it also reads the older report per end (`{"client": REPORT, ...}`).

use super::{Finding, FindingId, Report, Skipped, REPORT_SCHEMA_VERSION};
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::ser::{Error as _, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One item of a host's report, with the host it is about (none in a report
/// of one host).
#[derive(Debug, Clone, PartialEq)]
pub struct OnHost<T> {
    /// The host's name (`lab-h0`), when the report merges several.
    pub host: Option<String>,
    /// The item, as the host's doctor reported it.
    pub item: T,
}

/// The reports of several hosts as one: findings of the first host, then of
/// the next, and the same for skipped rules.
#[derive(Debug, Clone, PartialEq)]
pub struct HostReports {
    /// [`REPORT_SCHEMA_VERSION`] of the reports.
    pub schema_version: u32,
    /// Every host's findings, each with its host.
    pub findings: Vec<OnHost<Finding>>,
    /// Every host's skipped rules, each with its host.
    pub skipped: Vec<OnHost<Skipped>>,
}

impl HostReports {
    /// The reports of `reports`' hosts, in that order.
    pub fn merge(reports: &[(String, Report)]) -> HostReports {
        let on = |host: &str| Some(host.to_string());
        HostReports {
            schema_version: REPORT_SCHEMA_VERSION,
            findings: reports
                .iter()
                .flat_map(|(h, r)| {
                    r.findings.iter().map(|f| OnHost {
                        host: on(h),
                        item: f.clone(),
                    })
                })
                .collect(),
            skipped: reports
                .iter()
                .flat_map(|(h, r)| {
                    r.skipped.iter().map(|s| OnHost {
                        host: on(h),
                        item: s.clone(),
                    })
                })
                .collect(),
        }
    }

    /// Host `host`'s report, as its doctor wrote it.
    pub fn host(&self, host: &str) -> Report {
        let mine = |h: &Option<String>| h.as_deref() == Some(host);
        Report {
            schema_version: self.schema_version,
            findings: self
                .findings
                .iter()
                .filter(|f| mine(&f.host))
                .map(|f| f.item.clone())
                .collect(),
            skipped: self
                .skipped
                .iter()
                .filter(|s| mine(&s.host))
                .map(|s| s.item.clone())
                .collect(),
        }
    }

    /// Whether any host's doctor found `id`.
    pub fn has(&self, id: FindingId) -> bool {
        self.findings.iter().any(|f| f.item.id == id)
    }
}

/// An item whose one text field carries the host prefix in JSON.
trait Tagged: Serialize + DeserializeOwned {
    /// The JSON key of that field.
    const KEY: &'static str;
    /// The field.
    fn text_mut(&mut self) -> &mut String;
}

impl Tagged for Finding {
    const KEY: &'static str = "subject";
    fn text_mut(&mut self) -> &mut String {
        &mut self.subject
    }
}

impl Tagged for Skipped {
    const KEY: &'static str = "reason";
    fn text_mut(&mut self) -> &mut String {
        &mut self.reason
    }
}

/// The JSON object of `x`: its item's, with `HOST: ` before its text and a
/// `host` field when it has a host.
fn tagged<T: Tagged>(x: &OnHost<T>) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(&x.item)?;
    if let (Some(host), Some(o)) = (&x.host, v.as_object_mut()) {
        let old = o.get(T::KEY).and_then(Value::as_str).unwrap_or("");
        let tagged = format!("{host}: {old}");
        o.insert(T::KEY.into(), tagged.into());
        o.insert("host".into(), host.as_str().into());
    }
    Ok(v)
}

/// An item from its JSON object, the host's prefix taken off its text.
fn untagged<T: Tagged>(v: Value) -> serde_json::Result<OnHost<T>> {
    let mut o: Map<String, Value> = serde_json::from_value(v)?;
    let host = match o.remove("host") {
        Some(Value::String(h)) => Some(h),
        Some(Value::Null) | None => None,
        Some(_) => {
            return Err(<serde_json::Error as serde::de::Error>::custom(
                "`host` is not a string",
            ))
        }
    };
    let mut item: T = serde_json::from_value(Value::Object(o))?;
    if let Some(h) = &host {
        let text = item.text_mut();
        if let Some(rest) = text
            .strip_prefix(h.as_str())
            .and_then(|r| r.strip_prefix(": "))
        {
            *text = rest.to_string();
        }
    }
    Ok(OnHost { host, item })
}

impl HostReports {
    /// The JSON value results.json holds (keys in alphabetical order).
    pub fn to_value(&self) -> serde_json::Result<Value> {
        let findings: serde_json::Result<Vec<Value>> = self.findings.iter().map(tagged).collect();
        let skipped: serde_json::Result<Vec<Value>> = self.skipped.iter().map(tagged).collect();
        Ok(serde_json::json!({
            "schema_version": self.schema_version,
            "findings": findings?,
            "skipped": skipped?,
        }))
    }

    /// The reports from results.json's value: the merged shape, or a report
    /// per host keyed by its name.
    pub fn from_value(v: Value) -> serde_json::Result<HostReports> {
        #[derive(Deserialize)]
        struct Merged {
            schema_version: u32,
            findings: Vec<Value>,
            skipped: Vec<Value>,
        }
        if v.get("findings").is_some() {
            let m: Merged = serde_json::from_value(v)?;
            return Ok(HostReports {
                schema_version: m.schema_version,
                findings: m
                    .findings
                    .into_iter()
                    .map(untagged)
                    .collect::<Result<_, _>>()?,
                skipped: m
                    .skipped
                    .into_iter()
                    .map(untagged)
                    .collect::<Result<_, _>>()?,
            });
        }
        let per_end: BTreeMap<String, Report> = serde_json::from_value(v)?;
        Ok(HostReports::merge(&per_end.into_iter().collect::<Vec<_>>()))
    }
}

impl Serialize for HostReports {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().map_err(S::Error::custom)?.serialize(s)
    }
}

impl<'de> Deserialize<'de> for HostReports {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        HostReports::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}
