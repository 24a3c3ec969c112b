use super::*;
use cpio::Source;

#[derive(Debug)]
struct NoLibs;

impl Ldd for NoLibs {
    fn libraries(&self, _: &Path) -> Result<Vec<PathBuf>, GuestError> {
        Ok(Vec::new())
    }
}

/// `/init` loads the base modules, then the NIC's driver, brings the
/// interfaces up (the NICs request their IRQs), then loads virtio-rng: the
/// host's entropy, late so that the NICs' IRQ numbers and vectors do not
/// move (with it loaded before the interfaces came up, vmxnet3's event IRQ
/// landed on CPU 0 instead of its golden's CPU 1).
#[test]
fn init_loads_virtio_rng_once_the_interfaces_are_up() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = Kernel {
        release: "6.1.0-57-amd64".into(),
        root: dir.path().into(),
    };
    std::fs::create_dir_all(kernel.modules_dir()).unwrap();
    std::fs::write(
        kernel.modules_dep(),
        "kernel/drivers/virtio/virtio_ring.ko:\n\
         kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n\
         kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
         kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
         kernel/drivers/char/hw_random/virtio-rng.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
         kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko:\n",
    )
    .unwrap();
    let prog = dir.path().join("prog");
    std::fs::write(&prog, "").unwrap();
    let c = Contents {
        busybox: prog.clone(),
        nettune: prog.clone(),
        ethtool: prog,
        kernel,
        drivers: vec!["e1000e".into()],
    };
    let a = c.archive(&NoLibs).unwrap();
    let init = a.entries().iter().find(|e| e.path == "init").unwrap();
    let Source::Bytes(b) = &init.source else {
        panic!("init is not bytes: {init:?}")
    };
    let text = String::from_utf8_lossy(b);
    let at = |m: &str| {
        text.find(&format!("insmod /lib/modules/6.1.0-57-amd64/kernel/{m}"))
            .unwrap_or_else(|| panic!("no insmod of {m}: {text}"))
    };
    assert!(
        at("drivers/char/virtio_console.ko") < at("drivers/net/ethernet/intel/e1000e/e1000e.ko")
    );
    let up = text.find("ip link set \"${i##*/}\" up").unwrap();
    assert!(at("drivers/net/ethernet/intel/e1000e/e1000e.ko") < up);
    assert!(up < at("drivers/char/hw_random/virtio-rng.ko"), "{text}");
}
