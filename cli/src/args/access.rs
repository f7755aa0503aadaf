//! How arbor reaches a server and proves who it is: TLS trust (`--cacert`,
//! `--insecure`) and where the API key comes from (`--api-key-env`,
//! `--api-key-file`). Shared by `arbor run` and `arbor doctor`.

use std::path::PathBuf;

use arbor::backends::live::tls::TlsOptions;
use clap::Args;

use super::heading::SERVER;

#[derive(Debug, Args, Clone, Default)]
pub struct AccessArgs {
    /// Trust only the CA certificates of this PEM file for https://
    /// (instead of the system's roots).
    #[arg(long, value_name = "FILE", help_heading = SERVER)]
    pub cacert: Option<PathBuf>,

    /// Do not verify the server's TLS certificate (recorded in
    /// summary.json; prints a warning).
    #[arg(long, conflicts_with = "cacert", help_heading = SERVER)]
    pub insecure: bool,

    /// Environment variable holding the API key (sent as Authorization:
    /// Bearer, or x-api-key with --api messages; never written anywhere).
    /// Default: OPENAI_API_KEY (ANTHROPIC_API_KEY with --api messages).
    #[arg(long, value_name = "NAME", help_heading = SERVER)]
    pub api_key_env: Option<String>,

    /// Read the API key from this file instead (its first line).
    #[arg(long, value_name = "FILE", conflicts_with = "api_key_env", help_heading = SERVER)]
    pub api_key_file: Option<PathBuf>,
}

impl AccessArgs {
    /// What to trust over `https://`.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
    }
}
