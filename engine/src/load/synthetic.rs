//! Synthetic workloads (placeholder, being written).
