//! `nettune guest up`: boot QEMU guests with a real NIC driver, joined to
//! one server by UDP socket netdevs on 127.0.0.1, write their fleet
//! inventory, run a command against them (or wait), power them off.
//! The machines are `guest::study` (docs/guests.md, "Studies").

use anyhow::Context;
use clap::{Parser, Subcommand};
use guest::claim::{ports_free, DirLock};
use guest::initramfs::BUSYBOX;
use guest::kernel::Kernel;
use guest::run::{find_qemu, Shutdown};
use guest::study::{boot_star, Build, Star, MAX_CLIENTS};
use guest::{Accel, NicModel};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
Examples:
  nettune guest up --nic e1000-82545em                  a server and one client; Enter powers them off
  nettune guest up --nic e1000-82545em -- nettune experiment examples/guest-itr-rr.toml
  nettune guest up --nic e1000e --clients 3 -- nettune experiment examples/guest-many-clients.toml
  nettune guest up --nic e1000-82545em --guest-nettune target/release/nettune -- \\
      nettune autotune --objective min-p99 --inventory /run/nettune-guest/inventory.toml \\
      --server server --clients clients

The guests are `server` (one NIC per client, 10.77.N.1/24) and `client1`..`clientN` (eth0
10.77.N.2/24), each running `nettune agent --stdio` on a virtio-serial port joined to
DIR/NAME/agent.sock. DIR/inventory.toml names them for `nettune fleet`, `experiment` and
`autotune` (roles `server` and `clients`, each client's `server_address`). The COMMAND runs
with NETTUNE_GUEST_INVENTORY set to it; its exit status is this command's. Needs QEMU
(qemu-system-x86), busybox-static, ethtool and the guest kernel (.ci/guest-kernel).
NETTUNE_GUEST_ACCEL=kvm asks for KVM; TCG otherwise. The devices are emulated: see
/usr/share/doc/nettune/docs/guests.md for what they can tell about real hardware.";

/// Arguments of `nettune guest`.
#[derive(Debug, Parser)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: GuestCommand,
}

/// `nettune guest` subcommands.
#[derive(Debug, Subcommand)]
pub enum GuestCommand {
    /// Boot a server guest and N client guests joined by UDP socket netdevs, write their inventory.
    Up(UpArgs),
}

/// Arguments of `nettune guest up`.
#[derive(Debug, Parser)]
#[command(after_help = EXAMPLES)]
pub struct UpArgs {
    /// The emulated NIC of every guest: e1000-82545em, e1000, e1000e, vmxnet3, virtio-net-pci.
    #[arg(long, default_value = "e1000-82545em", value_parser = parse_nic)]
    pub nic: NicModel,
    /// Client guests, each joined to its own NIC of the server.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=MAX_CLIENTS as i64))]
    pub clients: u8,
    /// Where the guests' sockets, consoles and the inventory go (created; held with DIR/lock while they run: a second `guest up` needs its own --dir and --base-port).
    #[arg(long, default_value = "/run/nettune-guest", value_name = "DIR")]
    pub dir: PathBuf,
    /// The first of the 2 x clients UDP ports on 127.0.0.1 the links use.
    #[arg(long, default_value_t = 40000, value_name = "PORT")]
    pub base_port: u16,
    /// Memory of each guest, MiB (even, 256..=65536).
    #[arg(long, default_value_t = 512, value_name = "MIB")]
    pub mem: u32,
    /// The nettune binary the guests run (default: this one; a release build runs the bench faster).
    #[arg(long, value_name = "PATH")]
    pub guest_nettune: Option<PathBuf>,
    /// Seconds each guest may take to boot before it is killed.
    #[arg(long, default_value_t = 240, value_name = "SECONDS")]
    pub boot_timeout: u64,
    /// A command to run once every guest is ready (after `--`); without it, Enter powers them off.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn parse_nic(s: &str) -> Result<NicModel, String> {
    NicModel::from_device(s).ok_or_else(|| {
        let all: Vec<&str> = NicModel::ALL.iter().map(|m| m.device()).collect();
        format!("{s:?}: one of {}", all.join(", "))
    })
}

/// Run the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        GuestCommand::Up(a) => up(a),
    }
}

const ETHTOOL: &str = "/usr/sbin/ethtool";

fn up(a: UpArgs) -> anyhow::Result<ExitCode> {
    let qemu = find_qemu()?;
    let kernel = Kernel::from_env()?;
    if !Path::new(ETHTOOL).is_file() {
        anyhow::bail!("no {ETHTOOL}: install the Debian package ethtool");
    }
    let nettune = match a.guest_nettune {
        Some(p) => p,
        None => std::env::current_exe().context("the path of this nettune")?,
    };
    let star = Star {
        model: a.nic,
        clients: usize::from(a.clients),
        base_port: a.base_port,
    };
    let members = star.members()?;
    std::fs::create_dir_all(&a.dir).with_context(|| format!("{}", a.dir.display()))?;
    // held until the guests are off: a second `guest up` on DIR is refused
    let _lock = DirLock::take(&a.dir)?;
    let (first, last) = star.port_range();
    ports_free(first, last)?;
    let accel = Accel::from_env();
    let build = Build {
        qemu: qemu.clone(),
        kernel: kernel.clone(),
        busybox: BUSYBOX.into(),
        nettune,
        ethtool: ETHTOOL.into(),
        accel,
        mem_mib: a.mem,
    };
    eprintln!(
        "nettune: booting {} guests ({}, driver {}; {}; -accel {}; kernel {}) in {}",
        members.len(),
        a.nic.device(),
        a.nic.driver(),
        qemu_version(&qemu),
        accel.arg(),
        kernel.release,
        a.dir.display()
    );
    let t0 = Instant::now();
    let guests = boot_star(
        &build,
        &star,
        &members,
        &a.dir,
        Duration::from_secs(a.boot_timeout),
    )?;
    let inv = a.dir.join("inventory.toml");
    std::fs::write(&inv, star.inventory(&members, &a.dir))
        .with_context(|| format!("{}", inv.display()))?;
    for m in &members {
        let addrs: Vec<String> = m.addrs.iter().map(|x| format!("{x}/24")).collect();
        eprintln!("  {:<9} {}", m.name.as_str(), addrs.join(" "));
    }
    eprintln!(
        "nettune: {} guests ready in {:.1} s; inventory {}",
        guests.len(),
        t0.elapsed().as_secs_f64(),
        inv.display()
    );
    let code = if let Some((prog, rest)) = a.command.split_first() {
        let st = Command::new(prog)
            .args(rest)
            .env("NETTUNE_GUEST_INVENTORY", &inv)
            .status()
            .with_context(|| format!("cannot run {prog}"))?;
        u8::try_from(st.code().unwrap_or(1)).unwrap_or(1)
    } else {
        eprintln!("nettune: press Enter (or close stdin) to power the guests off");
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        0
    };
    for g in guests {
        let name = g.name().to_string();
        match g.shutdown(Duration::from_secs(60)) {
            Shutdown::Clean => eprintln!("nettune: {name} powered off"),
            Shutdown::Killed => eprintln!("nettune: {name} did not power off within 60 s: killed"),
        }
    }
    Ok(ExitCode::from(code))
}

/// The first line of `qemu --version`.
fn qemu_version(qemu: &Path) -> String {
    Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "QEMU version unknown".to_string())
}
