use super::*;
use cpio::Source;

#[derive(Debug)]
struct NoLibs;

impl Ldd for NoLibs {
    fn libraries(&self, _: &Path) -> Result<Vec<PathBuf>, GuestError> {
        Ok(Vec::new())
    }
}

/// `/init` loads the base modules, then the NIC's driver, then virtio-rng:
/// the host's entropy, late so that the NICs' IRQ numbers do not move.
#[test]
fn init_loads_virtio_rng_after_the_nic_driver() {
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
    assert!(
        at("drivers/net/ethernet/intel/e1000e/e1000e.ko")
            < at("drivers/char/hw_random/virtio-rng.ko")
    );
}
