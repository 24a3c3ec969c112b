//! `[[factor]]`: the knobs an experiment varies and their levels. Each
//! factor's accepted values come from its [`KnobType`], written once in the
//! `knobs!` table and used both to check a level and to word the error.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use toml::Spanned;

use super::ranges::IntRange;
use super::raw::RawFactor;
use super::validate::{is_name, truncate, Ctx, NAME_EXPECTED};
use super::{ErrorKind, ExperimentError, Hosts, LabPath, MAX_CELLS, MAX_FACTORS, MAX_LEVELS};
use crate::inventory::HostName;
use crate::CpuSet;

/// Most names in one factor's `hosts`.
const MAX_SCOPE_NAMES: usize = 64;

/// The value type a knob takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KnobType {
    /// Integer in an inclusive range.
    Int(IntRange),
    /// true/false.
    Bool,
    /// A CPU list (`"0-1"`) or `""`/`"off"` for none.
    Cpus,
    /// A name such as a congestion control or a profile.
    Name,
    /// `[min, default, max]` bytes.
    Triple,
    /// `[low, high]` ports.
    PortRange,
    /// A module parameter's value; the factor names the module and the
    /// parameter (`module`, `param`), so a level is made in [`parse_factors`].
    ModuleParam,
}

/// Largest value of a `Triple` (the kernel reads an `int`).
const TRIPLE_MAX: i64 = i32::MAX as i64;

impl KnobType {
    /// What a level of this type may be, for errors and help.
    fn expected(self) -> &'static str {
        match self {
            KnobType::Int(range) => range.expected,
            KnobType::Bool => "true or false",
            KnobType::Cpus => "a CPU list such as \"0-1,3\", or \"off\"",
            KnobType::Name => NAME_EXPECTED,
            KnobType::Triple => {
                "[min, default, max] bytes, 0 < min <= default <= max <= 2147483647"
            }
            KnobType::PortRange => "[low, high] ports, 1 <= low < high <= 65535",
            KnobType::ModuleParam => PARAM_VALUE_EXPECTED,
        }
    }

    /// The level `v` stands for, if it is one of this type.
    fn level(self, v: &toml::Value) -> Option<Level> {
        let ints = |a: &[toml::Value]| -> Vec<i64> {
            a.iter().filter_map(toml::Value::as_integer).collect()
        };
        match (self, v) {
            (KnobType::Int(range), toml::Value::Integer(i)) if range.contains(*i) => {
                Some(Level::Int(*i))
            }
            (KnobType::Bool, toml::Value::Boolean(b)) => Some(Level::Bool(*b)),
            (KnobType::Name, toml::Value::String(s)) if is_name(s) => Some(Level::Name(s.clone())),
            (KnobType::Cpus, toml::Value::String(s)) if s.is_empty() || s == "off" => {
                Some(Level::Cpus(Vec::new()))
            }
            (KnobType::Cpus, toml::Value::String(s)) => match CpuSet::parse_list(s) {
                Ok(set) if !set.is_empty() && set.len() <= 4096 => {
                    Some(Level::Cpus(set.iter().collect()))
                }
                _ => None,
            },
            (KnobType::Triple, toml::Value::Array(a)) => match ints(a).as_slice() {
                [x, y, z] if a.len() == 3 && 0 < *x && x <= y && y <= z && *z <= TRIPLE_MAX => {
                    Some(Level::Triple([*x as u64, *y as u64, *z as u64]))
                }
                _ => None,
            },
            (KnobType::PortRange, toml::Value::Array(a)) => match ints(a).as_slice() {
                [lo, hi] if a.len() == 2 && 1 <= *lo && lo < hi && *hi <= 65535 => {
                    Some(Level::Range([*lo as u16, *hi as u16]))
                }
                _ => None,
            },
            (KnobType::ModuleParam, _) => None,
            _ => None,
        }
    }
}

macro_rules! knobs {
    ($( $variant:ident = $name:literal : $ty:expr, $doc:literal; )*) => {
        /// A factor: a profile, a single knob or a bench option.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Knob { $( #[doc = $doc] $variant, )* }

        impl Knob {
            /// Every knob.
            pub const ALL: &'static [Knob] = &[$(Knob::$variant),*];
            /// Its name in the file.
            pub fn name(self) -> &'static str { match self { $(Knob::$variant => $name,)* } }
            /// Its value type.
            fn ty(self) -> KnobType { match self { $(Knob::$variant => $ty,)* } }
        }
        const KNOWN: &str = concat!($($name, " "),*);
    };
}

// The integer ranges below are each the only place their bounds are written.
knobs! {
    Profile = "profile": KnobType::Name, "A tuning profile by name (`untuned` for none).";
    RpsCpus = "rps_cpus": KnobType::Cpus, "RPS CPUs of every receive queue.";
    RpsFlowCnt = "rps_flow_cnt": KnobType::Int(int_range!(0..=1048576)), "RFS flow count per queue.";
    XpsCpus = "xps_cpus": KnobType::Cpus, "XPS CPUs of every transmit queue.";
    GroFlushTimeout = "gro_flush_timeout": KnobType::Int(int_range!(0..=1000000000, "ns")), "GRO flush timeout, ns.";
    NapiDeferHardIrqs = "napi_defer_hard_irqs": KnobType::Int(int_range!(0..=2147483647)), "NAPI deferred hard IRQs.";
    ThreadedNapi = "threaded_napi": KnobType::Bool, "Threaded NAPI.";
    Channels = "channels": KnobType::Int(int_range!(1..=1024)), "Combined channels (queues).";
    RmemMax = "rmem_max": KnobType::Int(int_range!(4096..=2147483647, "bytes")), "net.core.rmem_max, bytes.";
    WmemMax = "wmem_max": KnobType::Int(int_range!(4096..=2147483647, "bytes")), "net.core.wmem_max, bytes.";
    TcpRmem = "tcp_rmem": KnobType::Triple, "net.ipv4.tcp_rmem [min, default, max].";
    TcpWmem = "tcp_wmem": KnobType::Triple, "net.ipv4.tcp_wmem [min, default, max].";
    CongestionControl = "congestion_control": KnobType::Name, "net.ipv4.tcp_congestion_control.";
    TcpTwReuse = "tcp_tw_reuse": KnobType::Int(int_range!(0, 1 or 2)), "net.ipv4.tcp_tw_reuse.";
    IpLocalPortRange = "ip_local_port_range": KnobType::PortRange, "net.ipv4.ip_local_port_range [low, high].";
    CoalesceRxUsecs = "coalesce_rx_usecs": KnobType::Int(int_range!(0..=100000, "µs")), "NIC rx-usecs coalescing.";
    CoalesceTxUsecs = "coalesce_tx_usecs": KnobType::Int(int_range!(0..=100000, "µs")), "NIC tx-usecs coalescing.";
    AdaptiveRx = "adaptive_rx": KnobType::Bool, "NIC adaptive rx coalescing.";
    RxRing = "rx_ring": KnobType::Int(int_range!(1..=65536, "descriptors")), "NIC RX ring size (`ethtool -G rx`), descriptors.";
    TxRing = "tx_ring": KnobType::Int(int_range!(1..=65536, "descriptors")), "NIC TX ring size (`ethtool -G tx`), descriptors.";
    Flows = "flows": KnobType::Int(int_range!(1..=1024)), "Bench option: parallel flows.";
    BusyPoll = "busy_poll": KnobType::Int(int_range!(0..=1000000, "µs")), "Bench option: SO_BUSY_POLL, µs.";
    CpuPin = "cpu_pin": KnobType::Cpus, "Bench option: pin bench threads to these CPUs.";
    Sndbuf = "sndbuf": KnobType::Int(int_range!(0..=2147483647)), "Bench option: SO_SNDBUF, bytes (0: default).";
    Rcvbuf = "rcvbuf": KnobType::Int(int_range!(0..=2147483647)), "Bench option: SO_RCVBUF, bytes (0: default).";
    ForceBuffers = "force_buffers": KnobType::Bool, "Bench option: --force-buffers (SO_RCVBUFFORCE/SO_SNDBUFFORCE past rmem_max/wmem_max).";
    UdpGso = "udp_gso": KnobType::Bool, "Bench option: --udp-gso (UDP_SEGMENT: one send carries many datagrams).";
    UdpGro = "udp_gro": KnobType::Bool, "Bench option: --udp-gro (UDP_GRO: one receive takes many datagrams).";
    ModuleParam = "module_param": KnobType::ModuleParam, "A kernel module parameter (`module`, `param`): a modprobe.d snippet, in effect only when the factor has `reload = true`.";
}

/// What a module parameter's level may be.
const PARAM_VALUE_EXPECTED: &str =
    "a string or integer of 1 to 256 of A-Z a-z 0-9 _ , . - (a module parameter value)";
/// What a module name may be.
const MODULE_EXPECTED: &str = "a module name: 1 to 64 of a-z 0-9 _";
/// What a parameter name may be.
const PARAM_EXPECTED: &str = "a parameter name: 1 to 64 of A-Z a-z 0-9 _";

/// A module name as modprobe takes it (`e1000e`, `ixgbevf`).
pub fn is_module_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A module parameter name (`InterruptThrottleRate`).
pub fn is_param_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A module parameter value nettune writes (`3`, `0,0`, `1.5`).
pub fn is_param_value(s: &str) -> bool {
    (1..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b'.' | b'-'))
}

/// One level of a `module_param` factor: `module.param=value`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModuleParamLevel {
    /// The module (`e1000e`).
    pub module: String,
    /// The parameter (`InterruptThrottleRate`).
    pub param: String,
    /// The value (`3`).
    pub value: String,
    /// Whether the module is reloaded so the value takes effect (the
    /// factor's `reload = true`); without it the level changes nothing a
    /// bench could measure.
    pub reload: bool,
}

impl ModuleParamLevel {
    /// `module.param=value`, checked; `reload` is false (the text does not say it).
    fn from_text(t: &str) -> Option<ModuleParamLevel> {
        let (name, value) = t.split_once('=')?;
        let (module, param) = name.split_once('.')?;
        (is_module_name(module) && is_param_name(param) && is_param_value(value)).then(|| {
            ModuleParamLevel {
                module: module.into(),
                param: param.into(),
                value: value.into(),
                reload: false,
            }
        })
    }
}

impl fmt::Display for ModuleParamLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}={}", self.module, self.param, self.value)
    }
}

/// Written as it is shown (`e1000e.InterruptThrottleRate=3`).
impl Serialize for ModuleParamLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Knob {
    /// Look a knob up by its file name.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// What a level of this factor may be, as errors word it
    /// (`an integer of µs 0..=100000`).
    pub fn accepts(self) -> &'static str {
        self.ty().expected()
    }

    /// The level a TOML value stands for (as in a `[[factor]]`'s `levels`,
    /// or a profile's `[levels]`), if it is one of this factor's type.
    pub fn level_of(self, v: &toml::Value) -> Option<Level> {
        self.ty().level(v)
    }

    /// The level `text` stands for, written as a level is shown (`1`,
    /// `true`, `cubic`, `0,1` or `off`, `4096 131072 6291456`,
    /// `1024-65535`), checked as a file's level is; `None` when this knob
    /// does not take it ([`Knob::accepts`] words what it takes).
    pub fn level_from_text(self, text: &str) -> Option<Level> {
        let t = text.trim();
        let ints = |sep: &[char]| -> Option<toml::Value> {
            t.split(|c: char| c.is_whitespace() || sep.contains(&c))
                .filter(|p| !p.is_empty())
                .map(|p| p.parse::<i64>().ok().map(toml::Value::Integer))
                .collect::<Option<Vec<_>>>()
                .map(toml::Value::Array)
        };
        let ty = self.ty();
        let v = match ty {
            KnobType::Int(_) => toml::Value::Integer(t.parse().ok()?),
            KnobType::Bool => toml::Value::Boolean(t.parse().ok()?),
            KnobType::Cpus | KnobType::Name => toml::Value::String(t.to_string()),
            KnobType::Triple => ints(&[','])?,
            KnobType::PortRange => ints(&['-', ','])?,
            KnobType::ModuleParam => return ModuleParamLevel::from_text(t).map(Level::ModuleParam),
        };
        ty.level(&v)
    }

    /// Whether the knob is an option of the bench run (both ends of every
    /// flow) rather than a setting of a host: the bench options and the
    /// per-socket congestion control. Such a factor takes no `hosts`.
    pub fn is_run_option(self) -> bool {
        matches!(
            self,
            Knob::Flows
                | Knob::BusyPoll
                | Knob::CpuPin
                | Knob::Sndbuf
                | Knob::Rcvbuf
                | Knob::ForceBuffers
                | Knob::UdpGso
                | Knob::UdpGro
                | Knob::CongestionControl
        )
    }
}

/// One level of a factor.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Level {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A name (profile, congestion control).
    Name(String),
    /// A CPU list; empty for none.
    Cpus(Vec<u32>),
    /// `[min, default, max]`.
    Triple([u64; 3]),
    /// `[low, high]`.
    Range([u16; 2]),
    /// A module parameter's value (`e1000e.InterruptThrottleRate=3`).
    ModuleParam(ModuleParamLevel),
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Int(v) => write!(f, "{v}"),
            Level::Bool(v) => write!(f, "{v}"),
            Level::Name(v) => f.write_str(v),
            Level::Cpus(v) if v.is_empty() => f.write_str("off"),
            Level::Cpus(v) => {
                let s: Vec<String> = v.iter().map(u32::to_string).collect();
                write!(f, "{}", s.join(","))
            }
            Level::Triple([a, b, c]) => write!(f, "{a} {b} {c}"),
            Level::Range([a, b]) => write!(f, "{a}-{b}"),
            Level::ModuleParam(m) => m.fmt(f),
        }
    }
}

/// A factor and its levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factor {
    /// The knob.
    pub knob: Knob,
    /// Its levels, in file order.
    pub levels: Vec<Level>,
}

/// One level of `knob`, checked against its type.
fn parse_level(
    ctx: &Ctx<'_>,
    knob: Knob,
    v: &Spanned<toml::Value>,
    key: &str,
) -> Result<Level, ExperimentError> {
    let ty = knob.ty();
    ty.level(v.get_ref())
        .ok_or_else(|| ctx.bad(v.span(), key, v.get_ref(), ty.expected()))
}

/// Factors and their `hosts` (by factor index), as [`parse_factors`] gives them.
type ParsedFactors = (Vec<Factor>, BTreeMap<usize, Vec<String>>);

/// The `[[factor]]` tables: known knobs with distinct levels, at most
/// [`MAX_CELLS`] cells in all. A knob appears once, or in several factors
/// whose `hosts` share no name (one level per host).
pub(super) fn parse_factors(
    ctx: &Ctx<'_>,
    raw: &[RawFactor],
    hosts: &Hosts,
) -> Result<ParsedFactors, ExperimentError> {
    if raw.len() > MAX_FACTORS {
        return Err(ctx.err(
            raw[MAX_FACTORS].name.span(),
            format!("factor[{MAX_FACTORS}]"),
            ErrorKind::TooMany {
                what: "factors",
                count: raw.len(),
                max: MAX_FACTORS,
            },
        ));
    }
    let mut factors: Vec<Factor> = Vec::new();
    let mut scopes: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut cells: usize = 1;
    for (i, f) in raw.iter().enumerate() {
        let name = f.name.get_ref();
        let Some(knob) = Knob::from_name(name) else {
            return Err(ctx.err(
                f.name.span(),
                format!("factor[{i}].name"),
                ErrorKind::UnknownFactor {
                    name: truncate(name),
                    known: KNOWN.trim_end(),
                },
            ));
        };
        let scope = match &f.hosts {
            None => None,
            Some(h) => Some(parse_scope(ctx, knob, h, hosts, i)?),
        };
        let module_param = parse_module_param(ctx, knob, f, hosts, i)?;
        for (j, g) in factors.iter().enumerate() {
            if g.knob != knob || module_param_key(g) != module_param_key_of(&module_param) {
                continue;
            }
            let other = scopes.get(&j);
            let span = f.name.span();
            match (&scope, other) {
                (Some(a), Some(b)) if !a.iter().any(|n| b.contains(n)) => {
                    if matches!(hosts, Hosts::Lab(t) if t.path == LabPath::Loopback) {
                        return Err(ctx.err(
                            span,
                            format!("factor[{i}].hosts"),
                            ErrorKind::Structure(
                                "in a loopback lab the server and the client are one host: a knob may appear in one factor only",
                            ),
                        ));
                    }
                }
                (Some(_), Some(_)) => {
                    return Err(ctx.err(
                        span,
                        format!("factor[{i}].hosts"),
                        ErrorKind::Structure(
                            "another factor sets this knob on one of these hosts; a knob appears twice only with `hosts` lists that share no name",
                        ),
                    ))
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(ctx.err(
                        span,
                        format!("factor[{i}].hosts"),
                        ErrorKind::Structure(
                            "another factor sets this knob on every host; a knob appears twice only when each factor has `hosts` and the lists share no name",
                        ),
                    ))
                }
                (None, None) => {
                    return Err(ctx.err(
                        span,
                        format!("factor[{i}].name"),
                        ErrorKind::Duplicate {
                            value: truncate(name),
                        },
                    ))
                }
            }
        }
        let levels = parse_levels(ctx, knob, &f.levels, i, module_param.as_ref())?;
        cells = cells.saturating_mul(levels.len());
        if cells > MAX_CELLS {
            return Err(ctx.err(
                f.levels.span(),
                format!("factor[{i}].levels"),
                ErrorKind::TooMany {
                    what: "cells",
                    count: cells,
                    max: MAX_CELLS,
                },
            ));
        }
        if let Some(s) = scope {
            scopes.insert(i, s);
        }
        factors.push(Factor { knob, levels });
    }
    Ok((factors, scopes))
}

/// A `module_param` factor's module, parameter and `reload`.
type ModuleParamSpec = (String, String, bool);

/// The module and parameter a `module_param` factor sets (`None` for another knob).
fn module_param_key(f: &Factor) -> Option<(&str, &str)> {
    f.levels.first().and_then(|l| match l {
        Level::ModuleParam(m) => Some((m.module.as_str(), m.param.as_str())),
        _ => None,
    })
}

fn module_param_key_of(spec: &Option<ModuleParamSpec>) -> Option<(&str, &str)> {
    spec.as_ref().map(|(m, p, _)| (m.as_str(), p.as_str()))
}

/// `factor[i].module`, `.param` and `.reload`: required names for a
/// `module_param` factor (refused in a lab, whose veth has no driver to
/// reload), refused on any other factor.
fn parse_module_param(
    ctx: &Ctx<'_>,
    knob: Knob,
    f: &RawFactor,
    hosts: &Hosts,
    i: usize,
) -> Result<Option<ModuleParamSpec>, ExperimentError> {
    if knob != Knob::ModuleParam {
        let extra = [
            f.module.as_ref().map(|v| ("module", v.span())),
            f.param.as_ref().map(|v| ("param", v.span())),
            f.reload.as_ref().map(|v| ("reload", v.span())),
        ];
        if let Some((key, span)) = extra.into_iter().flatten().next() {
            return Err(ctx.err(
                span,
                format!("factor[{i}].{key}"),
                ErrorKind::Structure(
                    "only a `module_param` factor takes `module`, `param` and `reload`",
                ),
            ));
        }
        return Ok(None);
    }
    if matches!(hosts, Hosts::Lab(_)) {
        return Err(ctx.err(
            f.name.span(),
            format!("factor[{i}].name"),
            ErrorKind::Structure(
                "a module parameter needs real hosts ([hosts.fleet]): a lab's veth and loopback have no driver to reload",
            ),
        ));
    }
    let name = |v: &Option<Spanned<String>>,
                key: &str,
                ok: fn(&str) -> bool,
                expected: &'static str|
     -> Result<String, ExperimentError> {
        let key = format!("factor[{i}].{key}");
        match v {
            None => Err(ctx.err(
                f.name.span(),
                key,
                ErrorKind::Structure(
                    "a `module_param` factor names its `module` and `param` (module = \"e1000e\", param = \"InterruptThrottleRate\")",
                ),
            )),
            Some(s) if ok(s.get_ref()) => Ok(s.get_ref().clone()),
            Some(s) => Err(ctx.bad(s.span(), &key, s.get_ref(), expected)),
        }
    };
    let module = name(&f.module, "module", is_module_name, MODULE_EXPECTED)?;
    let param = name(&f.param, "param", is_param_name, PARAM_EXPECTED)?;
    let reload = f.reload.as_ref().is_some_and(|r| *r.get_ref());
    Ok(Some((module, param, reload)))
}

/// One level of a `module_param` factor: a string or integer value.
fn parse_param_level(
    ctx: &Ctx<'_>,
    spec: &ModuleParamSpec,
    v: &Spanned<toml::Value>,
    key: &str,
) -> Result<Level, ExperimentError> {
    let value = match v.get_ref() {
        toml::Value::String(s) if is_param_value(s) => s.clone(),
        toml::Value::Integer(n) => n.to_string(),
        other => return Err(ctx.bad(v.span(), key, other, PARAM_VALUE_EXPECTED)),
    };
    let (module, param, reload) = spec;
    Ok(Level::ModuleParam(ModuleParamLevel {
        module: module.clone(),
        param: param.clone(),
        value,
        reload: *reload,
    }))
}

/// `factor[i].hosts`: 1 to [`MAX_SCOPE_NAMES`] distinct names. In a lab
/// (or with agents) `server` and `client`; on a fleet the roles `server`
/// and `clients` or inventory host names (found in the inventory when the
/// run starts: `FleetRoles::check_factor_hosts`). Not for a run option.
fn parse_scope(
    ctx: &Ctx<'_>,
    knob: Knob,
    raw: &Spanned<Vec<Spanned<String>>>,
    hosts: &Hosts,
    i: usize,
) -> Result<Vec<String>, ExperimentError> {
    let key = format!("factor[{i}].hosts");
    if knob.is_run_option() {
        return Err(ctx.err(
            raw.span(),
            key,
            ErrorKind::Structure(
                "this factor is an option of the bench run (both ends of every flow), not of a host: drop `hosts`",
            ),
        ));
    }
    let names = raw.get_ref();
    if names.is_empty() {
        return Err(ctx.err(
            raw.span(),
            key,
            ErrorKind::Structure("name at least one host or role, or drop `hosts` for every host"),
        ));
    }
    if names.len() > MAX_SCOPE_NAMES {
        return Err(ctx.err(
            raw.span(),
            key,
            ErrorKind::TooMany {
                what: "names",
                count: names.len(),
                max: MAX_SCOPE_NAMES,
            },
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (j, n) in names.iter().enumerate() {
        let s = n.get_ref();
        let key = format!("factor[{i}].hosts[{j}]");
        let ok = match hosts {
            Hosts::Fleet(_) => HostName::new(s).is_some() && !s.contains(['*', '?', ':', '!']),
            Hosts::Lab(_) | Hosts::Agents(_) => s == "server" || s == "client",
        };
        if !ok {
            let expected = match hosts {
                Hosts::Fleet(_) => {
                    "\"server\", \"clients\" or the inventory name of the server or a client"
                }
                Hosts::Lab(_) | Hosts::Agents(_) => "\"server\" or \"client\" (the lab's two ends)",
            };
            return Err(ctx.bad(n.span(), &key, s, expected));
        }
        if out.contains(s) {
            return Err(ctx.err(n.span(), key, ErrorKind::Duplicate { value: truncate(s) }));
        }
        out.push(s.clone());
    }
    Ok(out)
}

/// `factor[i].levels`: 1 to [`MAX_LEVELS`] distinct levels of `knob`.
fn parse_levels(
    ctx: &Ctx<'_>,
    knob: Knob,
    raw: &Spanned<Vec<Spanned<toml::Value>>>,
    i: usize,
    module_param: Option<&ModuleParamSpec>,
) -> Result<Vec<Level>, ExperimentError> {
    let levels_raw = raw.get_ref();
    if levels_raw.is_empty() {
        return Err(ctx.err(
            raw.span(),
            format!("factor[{i}].levels"),
            ErrorKind::EmptyLevels,
        ));
    }
    if levels_raw.len() > MAX_LEVELS {
        return Err(ctx.err(
            raw.span(),
            format!("factor[{i}].levels"),
            ErrorKind::TooMany {
                what: "levels",
                count: levels_raw.len(),
                max: MAX_LEVELS,
            },
        ));
    }
    let mut levels: Vec<Level> = Vec::new();
    for (j, v) in levels_raw.iter().enumerate() {
        let key = format!("factor[{i}].levels[{j}]");
        let level = match module_param {
            Some(spec) => parse_param_level(ctx, spec, v, &key)?,
            None => parse_level(ctx, knob, v, &key)?,
        };
        if levels.contains(&level) {
            return Err(ctx.err(
                v.span(),
                key,
                ErrorKind::Duplicate {
                    value: truncate(&level.to_string()),
                },
            ));
        }
        levels.push(level);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::{Knob, Level};

    /// A level as shown reads back as the same level; text a knob does
    /// not take is refused.
    #[test]
    fn a_level_reads_back_from_its_text() {
        let levels = [
            (Knob::TcpTwReuse, Level::Int(1)),
            (Knob::BusyPoll, Level::Int(50)),
            (Knob::ThreadedNapi, Level::Bool(true)),
            (Knob::CongestionControl, Level::Name("cubic".into())),
            (Knob::RpsCpus, Level::Cpus(vec![0, 1])),
            (Knob::RpsCpus, Level::Cpus(Vec::new())),
            (Knob::TcpRmem, Level::Triple([4096, 131_072, 33_554_432])),
            (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
        ];
        for (knob, level) in levels {
            assert_eq!(
                knob.level_from_text(&level.to_string()),
                Some(level.clone()),
                "{knob:?} {level}"
            );
        }
        assert_eq!(
            Knob::RpsCpus.level_from_text("1"),
            Some(Level::Cpus(vec![1]))
        );
        for (knob, text) in [
            (Knob::TcpTwReuse, "3"),
            (Knob::BusyPoll, "-1"),
            (Knob::ThreadedNapi, "yes"),
            (Knob::RpsCpus, "x"),
            (Knob::TcpRmem, "1 2"),
            (Knob::IpLocalPortRange, "2000-1000"),
            (Knob::CongestionControl, "a b"),
        ] {
            assert_eq!(knob.level_from_text(text), None, "{knob:?} {text}");
        }
    }
}
