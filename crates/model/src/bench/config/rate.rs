//! `--rate`: the total over the flows of a direction, split evenly, and the
//! bounds a flow's share must keep for the pacer to send it.
//!
//! The workloads pace each flow at [`TestConfig::flow_rate`] (bits/s for
//! streams, transactions/s for request/response), in whole messages: a
//! `--size` write or datagram, or one transaction. So a flow's share must be
//! at least one message a second (less would send nothing in most
//! intervals), at most one message a nanosecond (the resolution of the
//! clock the pacer computes send times with), and, for streams, at most
//! [`MAX_FLOW_BITS`] (no link or loopback carries more on one flow).

use super::{human_bytes, TestConfig};
use crate::metric::{fmt_bits, format_value, TRANSACTIONS_PER_SEC};
use thiserror::Error;

/// Fewest messages a second one paced flow may be asked to send.
pub const MIN_FLOW_MSGS: f64 = 1.0;
/// Most messages a second one paced flow may be asked to send: one a
/// nanosecond, the resolution of the clock the pacer reads.
pub const MAX_FLOW_MSGS: f64 = 1e9;
/// Most bits a second one paced stream flow may be asked to send: 1 Tbit/s,
/// above any one link (800 Gbit/s ports) or loopback flow.
pub const MAX_FLOW_BITS: f64 = 1e12;

/// A `--rate` the pacer cannot send as asked; the message is one line
/// naming the rate per flow and what to change.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RateError {
    /// Not a positive, finite number.
    #[error("--rate must be a positive number ({})", unit_word(*stream))]
    NotPositive {
        /// A stream test (bits/s) or request/response (transactions/s).
        stream: bool,
    },
    /// A flow's share is below one message a second.
    #[error(
        "--rate {} over {flows} flow{} is {} per flow, below one {} a second per flow{}: \
         raise --rate (or -b, per flow){}",
        show(*stream, *total), plural(*flows), show(*stream, total / f64::from(*flows)),
        message(*stream, *size), floor(*stream, *size),
        if *stream { ", or lower --flows or --size" } else { " or lower --flows" }
    )]
    BelowOnePerSecond {
        /// A stream test.
        stream: bool,
        /// `--rate`, total over the flows of a direction.
        total: f64,
        /// Flows per direction.
        flows: u32,
        /// `--size`.
        size: u32,
    },
    /// A flow's share is more than a flow can carry or the pacer time.
    #[error(
        "--rate {} over {flows} flow{} is {} per flow, above what one flow can be paced at \
         ({}): lower --rate or add --flows",
        show(*stream, *total), plural(*flows), show(*stream, total / f64::from(*flows)),
        ceiling(*stream, *size)
    )]
    AboveFlowCapacity {
        /// A stream test.
        stream: bool,
        /// `--rate`, total over the flows of a direction.
        total: f64,
        /// Flows per direction.
        flows: u32,
        /// `--size`.
        size: u32,
    },
}

fn unit_word(stream: bool) -> &'static str {
    if stream {
        "bits/s"
    } else {
        "transactions/s"
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn show(stream: bool, v: f64) -> String {
    if stream {
        fmt_bits(v)
    } else {
        format_value(TRANSACTIONS_PER_SEC, v)
    }
}

/// One message of a test: `128 KiB message`, `transaction`.
fn message(stream: bool, size: u32) -> String {
    if stream {
        format!("{} message", human_bytes(u64::from(size)))
    } else {
        "transaction".into()
    }
}

/// Bits per message of a stream test.
fn msg_bits(size: u32) -> f64 {
    f64::from(size) * 8.0
}

fn floor(stream: bool, size: u32) -> String {
    if stream {
        format!(" ({})", fmt_bits(MIN_FLOW_MSGS * msg_bits(size)))
    } else {
        String::new()
    }
}

fn ceiling(stream: bool, size: u32) -> String {
    if stream {
        let bits = MAX_FLOW_BITS.min(MAX_FLOW_MSGS * msg_bits(size));
        format!(
            "{}: one flow's link, or one message a nanosecond",
            fmt_bits(bits)
        )
    } else {
        format!(
            "{}: one transaction a nanosecond",
            format_value(TRANSACTIONS_PER_SEC, MAX_FLOW_MSGS)
        )
    }
}

impl TestConfig {
    /// `--rate` per flow: the total over the flows of one direction split
    /// evenly, whatever the number of worker threads (bits/s for streams,
    /// transactions/s for request/response). Each paced flow sends this.
    pub fn flow_rate(&self) -> Option<f64> {
        self.rate.map(|r| r / f64::from(self.flows.max(1)))
    }

    /// Check that each flow's share of `--rate` is one the pacer can send:
    /// at least one message a second, at most one a nanosecond, and for
    /// streams at most [`MAX_FLOW_BITS`].
    pub fn check_rate(&self) -> Result<(), RateError> {
        let Some(total) = self.rate else {
            return Ok(());
        };
        let stream = self.test.is_stream();
        if !(total.is_finite() && total > 0.0) {
            return Err(RateError::NotPositive { stream });
        }
        let flows = self.flows.max(1);
        let per_flow = total / f64::from(flows);
        let msgs = if stream {
            per_flow / msg_bits(self.size.max(1))
        } else {
            per_flow
        };
        let size = self.size.max(1);
        if msgs < MIN_FLOW_MSGS {
            return Err(RateError::BelowOnePerSecond {
                stream,
                total,
                flows,
                size,
            });
        }
        if msgs > MAX_FLOW_MSGS || (stream && per_flow > MAX_FLOW_BITS) {
            return Err(RateError::AboveFlowCapacity {
                stream,
                total,
                flows,
                size,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::bench::config::TestKind;

    fn cfg(test: TestKind, flows: u32, size: u32, rate: f64) -> TestConfig {
        TestConfig {
            test,
            flows,
            threads: flows,
            size,
            rate: Some(rate),
            ..TestConfig::default()
        }
    }

    /// The rate is split over the flows of a direction, not the flows of a
    /// worker thread: `-P 2 --threads 2 --rate 10k` is 5k per flow.
    #[test]
    fn the_rate_is_split_over_all_flows() {
        let c = cfg(TestKind::UdpRr, 2, 1, 10_000.0);
        assert_eq!(c.flow_rate(), Some(5_000.0));
        let c = TestConfig {
            threads: 1,
            ..cfg(TestKind::UdpStream, 4, 1000, 40e6)
        };
        assert_eq!(c.flow_rate(), Some(10e6));
        assert_eq!(TestConfig::default().flow_rate(), None);
    }

    #[test]
    fn bounds_of_a_flows_share() {
        // One 1000-byte datagram a second per flow is the floor.
        cfg(TestKind::UdpStream, 2, 1000, 16_000.0)
            .check_rate()
            .unwrap();
        let e = cfg(TestKind::UdpStream, 2, 1000, 15_000.0)
            .check_rate()
            .unwrap_err();
        assert!(matches!(e, RateError::BelowOnePerSecond { .. }), "{e}");
        let t = e.to_string();
        assert!(t.contains("over 2 flows is 7.50 kbit/s per flow"), "{t}");
        assert!(
            t.contains("1000 B message a second per flow (8.00 kbit/s)"),
            "{t}"
        );
        // Transactions: one a second per flow.
        cfg(TestKind::TcpRr, 4, 1, 4.0).check_rate().unwrap();
        let t = cfg(TestKind::TcpRr, 4, 1, 3.0)
            .check_rate()
            .unwrap_err()
            .to_string();
        assert!(
            t.contains("0.750 tps per flow, below one transaction a second"),
            "{t}"
        );
        // Above: 1 Tbit/s per stream flow, one message a nanosecond.
        cfg(TestKind::TcpStream, 2, 131_072, 2e12)
            .check_rate()
            .unwrap();
        let e = cfg(TestKind::TcpStream, 1, 131_072, 2e12)
            .check_rate()
            .unwrap_err();
        assert!(matches!(e, RateError::AboveFlowCapacity { .. }), "{e}");
        let e = cfg(TestKind::TcpStream, 1, 1, 9e9)
            .check_rate()
            .unwrap_err();
        assert!(e.to_string().contains("8.00 Gbit/s"), "{e}");
        let e = cfg(TestKind::UdpRr, 1, 1, 2e9).check_rate().unwrap_err();
        assert!(e.to_string().contains("1.00 Gtps"), "{e}");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = cfg(TestKind::UdpRr, 1, 1, bad).check_rate().unwrap_err();
            assert_eq!(e, RateError::NotPositive { stream: false });
        }
        // Every message is one line.
        for e in [
            cfg(TestKind::UdpStream, 65_536, 65_507, 1.0).check_rate(),
            cfg(TestKind::TcpStream, 1, 1, f64::MAX).check_rate(),
        ] {
            assert!(!e.unwrap_err().to_string().contains('\n'));
        }
    }
}
