//! The traffic engine: workers, workloads, histograms, control protocol.
