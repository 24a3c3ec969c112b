//! `nettune capture --out DIR`: record this host for `--root DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune capture --out /tmp/host-a
  nettune inspect --root /tmp/host-a              the same view, read from the capture
  nettune stat --root /tmp/host-a -c 1            the counters as they were

Records every file `inspect` reads (plus the counters `stat` reads), the sysfs symlinks
between them and ethtool state as ethtool/IF.json, so the tree can be sent and read back
with --root. The directory must not exist yet.";

/// Flags of `nettune capture`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory to write (`sys/`, `proc/`, `etc/`, `ethtool/`, `LABEL`).
    #[arg(long)]
    pub out: PathBuf,
}

/// Run `nettune capture`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let eth = host::ethtool::default_source(&host::Root::live());
    let r = host::capture::capture(&args.out, eth.as_ref())?;
    println!(
        "captured {} files and {} symlinks into {} ({} interfaces, {} IRQs, {} notes)",
        r.files,
        r.links,
        args.out.display(),
        r.snapshot.interfaces.len(),
        r.snapshot.irqs.len(),
        r.snapshot.notes.len()
    );
    if !r.skipped.is_empty() {
        println!(
            "{} files exist but could not be read (often the kernel saying unset or unknown); they read back as absent:",
            r.skipped.len()
        );
        for (p, why) in &r.skipped {
            println!("  {}: {why}", p.display());
        }
    }
    println!(
        "check it with: nettune inspect --root {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
