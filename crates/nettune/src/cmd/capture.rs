//! `nettune capture --out DIR`: record this host for `--root DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `nettune capture`.
#[derive(Debug, clap::Args)]
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
