//! `nettune completions SHELL`: a completion script generated from the clap
//! definitions, printed on stdout.

use clap::CommandFactory;
use clap_complete::Shell;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune completions bash > /etc/bash_completion.d/nettune
  nettune completions zsh > \"${fpath[1]}/_nettune\"
  nettune completions fish > ~/.config/fish/completions/nettune.fish
  source <(nettune completions bash)          this shell only

The Debian package installs all three in the standard places
(/usr/share/bash-completion/completions, /usr/share/zsh/vendor-completions,
/usr/share/fish/vendor_completions.d). Besides commands and flags they complete
the built-in profile names (and files) after --profile and `profile show`, this
host's interfaces (listed from /sys/class/net at TAB time) after --iface and
--bind-dev, and the test names after `bench --test`.";

/// Flags of `nettune completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The shell: bash, zsh, fish (elvish and powershell work too).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Run `nettune completions`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    write(args.shell, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// Write the completion script for `shell` to `w`.
pub fn write(shell: Shell, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    w.write_all(script(shell).as_bytes())?;
    w.flush()
}

/// Stand-in possible value of a profile argument, replaced per shell.
const PROFILES: &str = "__nettune_profiles__";
/// Stand-in possible value of an interface argument, replaced per shell.
const IFACES: &str = "__nettune_ifaces__";

/// What an argument's values are, beyond what clap knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// A built-in profile name or a TOML file.
    Profile,
    /// A network interface of this host, listed when completing.
    Interface,
}

/// The completion script for `shell`: clap_complete's static script, with
/// profile arguments completing the built-in profile names (and files, for a
/// TOML profile) and interface arguments the entries of /sys/class/net at
/// completion time. clap_complete's dynamic engine (`unstable-dynamic`)
/// would need new crates (shlex, is_executable) and calls back into the
/// binary on every TAB; a stand-in possible value replaced by a few lines of
/// shell keeps the script static.
pub fn script(shell: Shell) -> String {
    let mut marked = Vec::new();
    let mut cmd = mark(super::cli::Cli::command(), &mut Vec::new(), &mut marked);
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "nettune", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let names = tune::profile::BUILTINS.join(" ");
    match shell {
        Shell::Bash => text
            .replace(
                &format!("compgen -W \"{PROFILES}\" -- \"${{cur}}\")"),
                &format!("compgen -W \"{names}\" -- \"${{cur}}\") $(compgen -f -- \"${{cur}}\")"),
            )
            .replace(PROFILES, &names)
            .replace(IFACES, "$(command ls /sys/class/net 2>/dev/null)"),
        Shell::Zsh => {
            let helpers = format!(
                "_nettune_profiles() {{\n    _alternative 'profiles:profile:({names})' 'files:TOML profile:_files'\n}}\n\n\
                 _nettune_ifaces() {{\n    local -a ifs\n    ifs=(/sys/class/net/*(N:t))\n    compadd -a ifs\n}}\n\n"
            );
            let text = text
                .replace(&format!("({PROFILES})"), "_nettune_profiles")
                .replace(&format!("({IFACES})"), "_nettune_ifaces");
            let tail = "if [ \"$funcstack[1]\" = \"_nettune\" ]; then";
            match text.rfind(tail) {
                Some(at) => format!("{}{helpers}{}", &text[..at], &text[at..]),
                None => format!("{text}\n{helpers}"),
            }
        }
        Shell::Fish => {
            let mut text = text
                .replace(
                    &format!("-f -a \"{PROFILES}\\t''\""),
                    &format!("-F -a \"{names}\""),
                )
                .replace(
                    &format!("-a \"{IFACES}\\t''\""),
                    "-a \"(command ls /sys/class/net 2>/dev/null)\"",
                );
            // clap's fish script completes no positional arguments: one line
            // each for `nettune A B NAME` (`profile show NAME`).
            for m in marked.iter().filter(|m| m.positional) {
                let (Some(a), Some(b), 3) = (m.path.get(1), m.path.get(2), m.path.len()) else {
                    continue;
                };
                let values = match m.values {
                    Values::Profile => format!("-F -a \"{names}\""),
                    Values::Interface => {
                        "-f -a \"(command ls /sys/class/net 2>/dev/null)\"".to_string()
                    }
                };
                text.push_str(&format!(
                    "complete -c nettune -n \"__fish_nettune_using_subcommand {a}; and __fish_seen_subcommand_from {b}\" {values}\n"
                ));
            }
            text
        }
        _ => text.replace(PROFILES, &names).replace(IFACES, ""),
    }
}

/// An argument given [`Values`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marked {
    /// The command path, e.g. `["nettune", "profile", "show"]`.
    pub path: Vec<String>,
    /// The argument's clap id (`profile`, `iface`, `name`, ...).
    pub id: String,
    /// Its values.
    pub values: Values,
    /// A positional argument (no flag).
    pub positional: bool,
}

/// Every argument given [`Values`]: `--profile`/`-p` and `profile show
/// NAME`, `--iface` and `--bind-dev`.
pub fn marked() -> Vec<Marked> {
    let mut out = Vec::new();
    mark(super::cli::Cli::command(), &mut Vec::new(), &mut out);
    out
}

fn values_of(path: &[String], arg: &clap::Arg) -> Option<Values> {
    let id = arg.get_id().as_str();
    let long = arg.get_long().unwrap_or_default();
    let in_show =
        path.len() >= 2 && path[path.len() - 2] == "profile" && path[path.len() - 1] == "show";
    if long == "profile" || (in_show && id == "name") {
        return Some(Values::Profile);
    }
    let names_if = arg.get_value_names().is_some_and(|v| {
        v.iter()
            .any(|n| n.as_str() == "IF" || n.as_str() == "IFACE")
    });
    if matches!(long, "iface" | "bind-dev") || names_if {
        return Some(Values::Interface);
    }
    None
}

/// `cmd` with the stand-in possible value on each argument [`values_of`]
/// picks, recursively; each one is recorded in `out`.
fn mark(mut cmd: clap::Command, path: &mut Vec<String>, out: &mut Vec<Marked>) -> clap::Command {
    path.push(cmd.get_name().to_string());
    let picked: Vec<Marked> = cmd
        .get_arguments()
        .filter_map(|a| {
            values_of(path, a).map(|values| Marked {
                path: path.clone(),
                id: a.get_id().to_string(),
                values,
                positional: a.is_positional(),
            })
        })
        .collect();
    for m in picked {
        let stand_in = match m.values {
            Values::Profile => PROFILES,
            Values::Interface => IFACES,
        };
        let id = m.id.clone();
        out.push(m);
        cmd = cmd.mut_arg(id, |a| {
            a.value_parser(clap::builder::PossibleValuesParser::new([stand_in]))
        });
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, |s| mark(s, path, out));
    }
    path.pop();
    cmd
}
