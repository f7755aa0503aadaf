//! arbor-formats: every trace format arbor reads and writes, and the
//! identity of a corpus.
//!
//! Modules: [`manifest`] (a corpus's identity: each file's SHA-256 and the
//! manifest hash over them).
#![forbid(unsafe_code)]

pub mod manifest;
