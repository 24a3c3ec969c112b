//! Cost of one live `Sampler::sample()` + `Sample::delta()`, the work
//! `nettune stat` and the engine do once per interval.

use criterion::{criterion_group, criterion_main, Criterion};
use nettune_host::sampler::Sampler;
use nettune_host::Root;
use std::hint::black_box;

fn sample_and_delta(c: &mut Criterion) {
    let mut s = Sampler::new(Root::live());
    let Ok(mut prev) = s.sample() else {
        eprintln!("cannot sample this host; skipping");
        return;
    };
    c.bench_function("sample+delta (live)", |b| {
        b.iter(|| {
            let Ok(now) = s.sample() else { return };
            black_box(now.delta(&prev));
            prev = now;
        })
    });
    c.bench_function("sample (live)", |b| {
        b.iter(|| black_box(s.sample().is_ok()))
    });
    c.bench_function("delta only", |b| {
        let Ok(now) = s.sample() else { return };
        b.iter(|| black_box(now.delta(&prev)))
    });
}

criterion_group!(benches, sample_and_delta);
criterion_main!(benches);
