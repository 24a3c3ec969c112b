//! The namespace lab: network namespaces and veth pairs for tests and experiments.
