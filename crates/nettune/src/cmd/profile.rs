//! `nettune profile list | show NAME | active`: the profiles, what one would
//! change on this host, and what is applied now (like `tuned-adm list`,
//! `tuned-adm profile_info` and `tuned-adm active`).

use super::plan::{make_plan, open_root, JournalArgs, PlanFlags};
use host::journal::{format_utc, Record};
use model::text::printable;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use tune::profile::{self, Profile};

const EXAMPLES: &str = "\
Examples:
  nettune profile list
  nettune profile show throughput
  nettune profile show latency --root host-a
  nettune profile show /usr/share/doc/nettune/examples/profile.toml --json
  nettune profile active

`show` prints the profile's rules (rationale and source), its settings and the plan it
would make on this host (or on --root). `active` reads the journal: the newest applied
generation that is not rolled back, its profile and when it was applied, or `none`.
The --json shapes are in /usr/share/doc/nettune/docs/tune.md (\"nettune profile\") and
/usr/share/doc/nettune/docs/schema/profile-*.json.";

pub use crate::ops::profile::load;

/// Flags of `nettune profile`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// What to show.
    #[command(subcommand)]
    pub what: What,
}

/// `nettune profile` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// The built-in profiles, one line each.
    #[command(after_help = "Examples:\n  nettune profile list\n  nettune profile list --json")]
    List {
        /// Print JSON: {schema_version, profiles: [{name, description, builtin}]}.
        #[arg(long)]
        json: bool,
    },
    /// A profile's rules and settings, and the plan it would make here.
    #[command(after_help = "Examples:\n  nettune profile show throughput\n  \
nettune profile show latency --root host-a\n  \
nettune profile show /usr/share/doc/nettune/examples/profile.toml --json")]
    Show {
        /// latency, throughput, balanced, or a path to a TOML profile.
        name: String,
        /// Directory standing for `/` (a fixture or a `nettune capture`).
        #[arg(long, default_value = "/")]
        root: PathBuf,
        /// Planner options.
        #[command(flatten)]
        flags: PlanFlags,
        /// Print JSON: {schema_version, name, description, base, rules: [{id,
        /// rationale, source}], settings, plan}.
        #[arg(long)]
        json: bool,
    },
    /// What is applied now, from the journal.
    #[command(after_help = "Examples:\n  nettune profile active\n  nettune profile active --json")]
    Active {
        /// `--root` and `--state-dir`.
        #[command(flatten)]
        journal: JournalArgs,
        /// Print JSON: {schema_version, active, generation, profile, applied_at,
        /// applied_at_utc, status, writes}.
        #[arg(long)]
        json: bool,
    },
}

/// `profile list --json`: `{"schema_version": 1, "profiles": [...]}`.
#[derive(Serialize)]
struct List<'a> {
    profiles: &'a [ListEntry],
}

#[derive(Serialize)]
struct ListEntry {
    name: String,
    description: String,
    builtin: bool,
}

#[derive(Serialize)]
struct RuleEntry {
    id: String,
    rationale: &'static str,
    source: &'static str,
}

#[derive(Serialize)]
struct Show<'a> {
    name: &'a str,
    description: &'a str,
    base: &'a str,
    rules: Vec<RuleEntry>,
    settings: &'a profile::Settings,
    plan: &'a model::plan::Plan,
}

/// What `profile active` reports.
#[derive(Serialize, Default)]
struct Active {
    active: bool,
    generation: Option<u32>,
    profile: Option<String>,
    applied_at: Option<u64>,
    applied_at_utc: Option<String>,
    status: Option<String>,
    writes: usize,
}

/// Run `nettune profile`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::List { json } => list(json),
        What::Show {
            name,
            root,
            flags,
            json,
        } => show(&name, &root, &flags, json),
        What::Active { journal, json } => active(&journal, json),
    }
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    for name in profile::BUILTINS {
        let p = profile::builtin(name)?;
        out.push(ListEntry {
            name: p.name,
            description: p.description,
            builtin: true,
        });
    }
    if json {
        let doc = super::Versioned::new(List { profiles: &out });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Built-in profiles (a TOML file can inherit one; see /usr/share/doc/nettune/docs/tune.md):"
    );
    for e in &out {
        println!("- {:<11} {}", e.name, e.description);
    }
    Ok(ExitCode::SUCCESS)
}

fn rules(p: &Profile) -> Vec<RuleEntry> {
    p.rules
        .iter()
        .filter_map(|id| tune::rules::find(*id))
        .map(|r| RuleEntry {
            id: r.id().to_string(),
            rationale: r.rationale(),
            source: r.source(),
        })
        .collect()
}

fn show(
    name: &str,
    root: &std::path::Path,
    flags: &PlanFlags,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let p = load(name)?;
    let shown_root = root.display().to_string();
    let root = open_root(root)?;
    let (plan, _) = make_plan(&root, name, flags)?;
    let shown = Show {
        name: &p.name,
        description: &p.description,
        base: &p.base,
        rules: rules(&p),
        settings: &p.settings,
        plan: &plan,
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&super::Versioned::new(&shown))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Profile {} ({})",
        printable(&p.name),
        printable(&p.description)
    );
    if p.base != p.name {
        println!("Inherits: {}", printable(&p.base));
    }
    println!("\nRules, in the order they run:");
    for r in &shown.rules {
        println!("  {}: {}\n      source: {}", r.id, r.rationale, r.source);
    }
    println!("\nSettings:");
    if let serde_json::Value::Object(m) = serde_json::to_value(&p.settings)? {
        for (k, v) in m {
            println!("  {k} = {v}");
        }
    }
    println!("\nOn this host (root {}):", printable(&shown_root));
    print!("{}", tune::render::human(&plan));
    Ok(ExitCode::SUCCESS)
}

fn active(journal: &JournalArgs, json: bool) -> anyhow::Result<ExitCode> {
    let (_root, state) = journal.open()?;
    let mut a = Active::default();
    let gens = state.load_all()?;
    if let Some(g) = gens.iter().rev().find(|g| g.finished() && g.active()) {
        let (at, prof) = g
            .begin()
            .map(|(t, p)| (t, p.to_string()))
            .unwrap_or_default();
        a = Active {
            active: true,
            generation: Some(g.id),
            profile: Some(prof),
            applied_at: Some(at),
            applied_at_utc: Some(format_utc(at)),
            status: g.ended().map(|s| s.name().to_string()),
            writes: g
                .records
                .iter()
                .filter(|r| matches!(r, Record::Before { .. }))
                .count(),
        };
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&super::Versioned::new(&a))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    match (&a.profile, a.generation, &a.applied_at_utc) {
        (Some(p), Some(g), Some(t)) => println!(
            "Current active profile: {} (generation {g}, applied {t}, {} writes{})",
            printable(p),
            a.writes,
            if a.status.as_deref() == Some("stopped") {
                ", stopped after a channel change"
            } else {
                ""
            }
        ),
        _ => println!(
            "No current active profile: none applied, or all rolled back ({}).",
            state.path().display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::load;
    use tune::profile::MAX_PROFILE_BYTES;

    /// A FIFO named as the profile hung `plan`; a device node was read
    /// without limit. Now read through host::files: refused at once.
    #[test]
    fn profile_must_be_a_small_regular_file() {
        let dir = std::env::temp_dir().join(format!("nettune-prof-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.toml");
        let _ = std::fs::remove_file(&fifo);
        mkfifo(&fifo);
        let e = load(fifo.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("not a regular file (FIFO)"), "{e}");
        let e = load("/dev/zero").unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let big = dir.join("big.toml");
        std::fs::write(&big, "#".repeat(MAX_PROFILE_BYTES as usize + 1)).unwrap();
        let e = load(big.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        assert!(
            matches!(load("no-such-profile"), Err(tune::ProfileError::Unknown(_))),
            "a bare unknown name"
        );
        let e = load(dir.join("absent.toml").to_str().unwrap()).unwrap_err();
        assert!(matches!(e, tune::ProfileError::Read { .. }), "{e}");
        let ok = dir.join("mine.toml");
        std::fs::write(&ok, "inherit = \"latency\"\n").unwrap();
        assert_eq!(load(ok.to_str().unwrap()).unwrap().base, "latency");
        assert_eq!(load("throughput").unwrap().name, "throughput");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn mkfifo(p: &std::path::Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mkfifo");
    }
}
