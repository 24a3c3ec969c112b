//! An arm is the runner's step: every host it changed is rolled back when
//! the apply fails part-way or the bench is cancelled.

use super::*;
use crate::autotune::drive::measure;

#[test]
fn a_failed_apply_and_a_cancelled_bench_roll_every_host_back() {
    let changes = vec![
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::ThreadedNapi, Level::Bool(true)),
    ];
    let c = cfg(Arc::new(AtomicBool::new(false)));
    // The second change cannot be written: the apply fails, the host
    // that took the arm's plan is rolled back, nothing was benched.
    let mut fake = Fake::new();
    fake.refuse = Some("threaded");
    let err = measure(&mut fake, &c, &changes, 0).unwrap_err();
    assert!(err.to_string().contains("write failed"), "{err}");
    assert_eq!(fake.benches, 0);
    assert!(fake.rollbacks >= 1 && fake.rollbacks >= fake.applies);
    assert!(fake.applied.iter().all(Vec::is_empty));
    // Ctrl-C during the bench: Cancelled, both hosts rolled back.
    let mut fake = Fake::new();
    fake.cancel_after = Some((1, Arc::new(AtomicBool::new(false))));
    let err = measure(&mut fake, &c, &changes[..1], 0).unwrap_err();
    assert!(matches!(err, ExecError::Cancelled), "{err}");
    assert_eq!((fake.applies, fake.rollbacks), (2, 2));
    assert!(fake.applied.iter().all(Vec::is_empty));
}
