//! arbor-capacity's integration tests, in process (no binary, no port):
//! virtual searches and sweeps whose knees are known by hand, with what
//! they write. The command's own tests (its flags, console, live probes)
//! are the CLI's (`cli/tests/it/capacity.rs`).

mod virtual_search;
