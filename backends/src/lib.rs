//! arbor-backends: drivers that run the engine.
//!
//! `virtual_clock` runs the scheduler against a service model on a virtual
//! clock, as fast as the CPU allows (the one virtual loop: `arbor plan` and
//! the property tests, through its hooks, run it); `live` runs it against a
//! real server over HTTP on tokio. Both only decide where `now` and
//! completions come from. `side_by_side` runs independent virtual plans
//! (a capacity sweep's points) on the machine's cores. Beside the drivers:
//! `endpoint` (the server's base URL, headers, key, TLS trust, request
//! options and redaction), `scrape` (the server's Prometheus metrics
//! during a live run) and `doctor` (probing a server before benchmarking
//! it, over the live client) and `preflight` (what a live run checks before
//! its clock starts: the server is ready, the scheme, base path, key,
//! model and context length are right). Beside them, arbor's other HTTP: `record`
//! (the recording proxy of `arbor record`: forwarding, the tap of the
//! stream, the scan of its chunks, feeding `arbor_formats::capture`) and
//! `fetch` (downloading a registry dataset, resumed and verified).
#![forbid(unsafe_code)]

mod agent_keys;
pub mod doctor;
pub mod endpoint;
pub mod fetch;
pub mod live;
pub mod preflight;
pub mod record;
pub mod reuse;
pub mod scrape;
pub mod side_by_side;
pub mod virtual_clock;
