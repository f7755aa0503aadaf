//! arbor-capacity's integration tests, in process (no binary, no port):
//! the search over a caller's own probe (the `custom_probe` example), the
//! probes that stop a search (failed) or leave it unresolved (too small
//! to decide), the honest search over a sampled probe (intervals,
//! extensions, bounds, confirmation), and
//! virtual searches and sweeps whose knees are known by hand, with what
//! they write. The command's own tests (its flags, console, live probes)
//! are the CLI's (`cli/tests/it/capacity.rs`).

mod agents;
mod custom_probe;
mod honest;
mod intervals;
mod stops;
mod virtual_search;
