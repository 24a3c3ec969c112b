//! `read_owners` (what `verify` reads beside its knobs) gives exactly the
//! `owners` of a whole snapshot, on fixtures with and without irqbalance
//! and tuned.

#![allow(clippy::unwrap_used)]

use nettune_host::Root;

#[test]
fn read_owners_is_the_snapshots_owners() {
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut with = 0;
    for name in [
        "tuner-two-socket-32c",
        "two-socket-16q",
        "c4-8xlarge",
        "kvm-2vcpu-6.18",
    ] {
        let root = Root::new(base.join(name));
        let o = nettune_host::read_owners(&root);
        assert_eq!(o, nettune_host::read_snapshot(&root).owners, "{name}");
        with += usize::from(o.irqbalance.is_some() || o.tuned.is_some());
    }
    // The comparison covered owners that are there, not only empty ones.
    assert!(with >= 2, "{with}");
}
