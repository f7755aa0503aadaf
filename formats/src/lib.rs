//! arbor-formats: workloads from and to files, and a corpus's identity.
//!
//! Owns every trace reader and writer and format detection ([`load`]: the
//! `FORMATS` table, the one JSON-lines reader, the field types, the input
//! caps; [`write`]: the writers of `arbor convert --to` and the account of
//! what each conversion kept, inferred and lost), what an input held ([`input`]: `Format`, `Loaded`, `Problem`),
//! what `arbor inspect` reports, as data ([`inspect`]), the synthetic
//! workload generator ([`synthetic`]), a corpus's identity
//! ([`manifest`]: each file's SHA-256 and the manifest hash over them),
//! which files an input stands for ([`files`]), the bundled sample's texts
//! ([`sample`]), named datasets ([`data`]: the registry, pins, `data:NAME`
//! inputs, whether inputs are a pinned corpus) and the capture file
//! `arbor record` writes ([`capture`]: its line, its writer thread,
//! `--redact`).
//! Everything here produces or reads the engine's
//! [`arbor_engine::Workload`] and reports bad input as an
//! [`arbor_engine::InputError`].
//!
//! Must not touch: scheduling, service models, drivers, the network, the
//! console or the CLI's flags. It depends on `arbor-engine` only for the
//! model, times, errors and the pure helpers `inspect` uses (derive, dag
//! validation, content hashes, stats), and on `arbor-error` for the
//! errors of `data` (the command-level error, exit codes decided by its
//! kind); the engine never depends on it.
#![forbid(unsafe_code)]

pub mod capture;
pub mod data;
pub mod files;
pub mod input;
pub mod inspect;
pub mod load;
pub mod manifest;
pub mod sample;
pub mod synthetic;
pub mod write;
