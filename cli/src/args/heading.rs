//! Help headings, in the order `arbor run --help` shows them (clap orders
//! headings by their first flag, so the flag groups come in this order).

pub const INPUT: &str = "Input";
pub const POLICY: &str = "Workload policy";
pub const LOAD: &str = "Load";
pub const SERVER: &str = "Server and request";
pub const OUTPUT: &str = "Output";
pub const AGENTX: &str = "AgentX";
pub const EMULATOR: &str = "Emulator";
