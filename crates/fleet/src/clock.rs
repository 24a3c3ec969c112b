//! Agents' clock offsets, NTP-style (issue 19, `fleet bench`): the
//! controller reads its CLOCK_REALTIME (t0), asks the agent for its own
//! ([`Request::Clock`](crate::proto::Request::Clock), ta), reads its clock
//! again (t1); the offset is `ta − (t0 + t1) / 2`, true within ± rtt/2
//! whatever the asymmetry of the pipe. Of several samples the one with the
//! smallest round trip is kept (the least queueing, the tightest bound).
//! The arithmetic is [`model::clock`]'s (`bench --start-at` uses it too).

pub use model::clock::{best, estimate_with, realtime_ns, Offset, Sample};

/// Samples `fleet bench` takes per agent.
pub const DEFAULT_SAMPLES: u32 = 8;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::proto::{Request, Response};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    #[test]
    fn the_smallest_round_trip_wins_and_bounds_the_offset() {
        // Agent 5 s ahead; the second sample was queued on the way back.
        let s = [
            Sample {
                t0: 1_000,
                ta: 5_000_000_000 + 1_500,
                t1: 2_000,
            },
            Sample {
                t0: 10_000,
                ta: 5_000_000_000 + 10_100,
                t1: 30_000,
            },
        ];
        let o = best(&s).unwrap();
        assert_eq!(o.offset_ns, 5_000_000_000);
        assert_eq!((o.rtt_ns, o.uncertainty_ns, o.samples), (1_000, 500, 2));
        assert_eq!(o.to_controller(5_000_001_500), 1_500);
        assert_eq!(o.to_agent(1_500), 5_000_001_500);
        // A clock behind: negative offset; never below 0 when converted.
        let b = Sample {
            t0: 10,
            ta: 0,
            t1: 20,
        };
        assert_eq!(b.offset_ns(), -15);
        assert_eq!(best(&[b]).unwrap().to_controller(0), 15);
        assert!(best(&[]).is_none());
        // The controller's clock stepped back: not a sample.
        let back = Sample {
            t0: 9,
            ta: 1,
            t1: 3,
        };
        assert!(best(&[back]).is_none());
    }

    #[test]
    fn injected_delays_leave_the_true_offset_within_the_bound() {
        // A fake clock: the controller at `c`, the agent 3 ms behind; each
        // exchange takes `out` ns to the agent and `back` ns home.
        let delays = [(400_000u64, 900_000u64), (50_000, 60_000), (2_000_000, 100)];
        let truth: i64 = -3_000_000;
        let clock = std::cell::Cell::new(1_000_000_000u64);
        let mut i = 0usize;
        let mut now_calls = 0u32;
        let o = estimate_with::<()>(
            3,
            || {
                now_calls += 1;
                clock.get()
            },
            || {
                let (out, back) = delays[i % delays.len()];
                i += 1;
                let at_agent = clock.get() + out;
                clock.set(at_agent + back);
                Ok(u64::try_from(i128::from(at_agent) + i128::from(truth)).unwrap())
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(now_calls, 6);
        assert_eq!(o.rtt_ns, 110_000);
        assert!(
            (o.offset_ns - truth).unsigned_abs() <= o.uncertainty_ns,
            "{o:?}"
        );
    }

    #[test]
    fn a_fake_clock_agent_over_an_in_memory_pipe() {
        // An agent 2 s ahead of this host, answering after 3 ms (its
        // "processing"), behind a real pipe and the real protocol loop.
        let (ctl_r, agent_w) = UnixStream::pair().unwrap();
        let (agent_r, ctl_w) = UnixStream::pair().unwrap();
        let ahead: u64 = 2_000_000_000;
        let t = std::thread::spawn(move || {
            let (mut r, mut w) = (agent_r, agent_w);
            crate::serve::serve(&mut r, &mut w, "0.0.0", &["clock"], |q| match q {
                Request::Clock => {
                    std::thread::sleep(Duration::from_millis(3));
                    Response::Json {
                        value: serde_json::json!({ "realtime_ns": realtime_ns() + ahead }),
                        code: 0,
                    }
                }
                _ => unreachable!(),
            })
        });
        let mut agent = crate::Agent::over(
            "fake clock".into(),
            ctl_r,
            ctl_w,
            None,
            None,
            "0.0.0",
            Duration::from_secs(5),
        )
        .unwrap();
        let o = estimate_with(DEFAULT_SAMPLES, realtime_ns, || {
            agent
                .json(&Request::Clock, Duration::from_secs(5))
                .map(|(v, _)| v["realtime_ns"].as_u64().unwrap())
        })
        .unwrap()
        .unwrap();
        assert_eq!(o.samples, DEFAULT_SAMPLES);
        assert!(o.rtt_ns >= 3_000_000, "{o:?}");
        let err = (o.offset_ns - ahead as i64).unsigned_abs();
        assert!(err <= o.uncertainty_ns, "{o:?}: off by {err} ns");
        drop(agent);
        t.join().unwrap().unwrap();
    }
}
