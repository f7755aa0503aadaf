//! `arbor emulate` ([`serve`]), and the built-in emulator's configuration
//! from its options, which `arbor run` also uses when it starts the emulator
//! in-process (no `--endpoint`; run's `--tokenizer` then counts the
//! emulator's prompt tokens too). `--profile PROFILE.toml` serves under
//! the batching server model (`arbor emulate --profile`, and `arbor run
//! --profile` for the in-process emulator). `--replicas N` serves a fleet
//! of emulators, each with its own cache, and `--router MODE` a router in
//! front of them ([`arbor_sim::emulator::serve_routed`]).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use arbor_sim::emulator::{
    serve, serve_fleet, serve_routed, serve_tls, EmulatorConfig, EmulatorFlags, EmulatorTls,
};
use arbor_sim::server::Profile;

use crate::options::{EmulateOptions, EmulatorOptions};
use crate::{runtime, Observer};
use arbor_error::Error;

/// The emulator configuration the flags describe, with the fault seed and
/// the tokenizer that counts prompt text (none: the estimate).
pub fn config(
    args: &EmulatorOptions,
    seed: u64,
    tokenizer: Option<&Path>,
) -> Result<EmulatorConfig, Error> {
    let mut config = EmulatorFlags {
        seed: Some(seed),
        ..args.flags.clone()
    }
    .into_config()
    .map_err(Error::input)?;
    config.tokenizer = tokenizer.map(crate::tokenizer::for_emulator).transpose()?;
    config.profile = args
        .profile
        .as_deref()
        .map(Profile::from_toml_path)
        .transpose()
        .map_err(Error::input)?;
    Ok(config)
}

/// The TLS `arbor emulate` serves with, if any. A self-signed certificate
/// is written where the user is told, for `--cacert`.
fn tls(args: &EmulateOptions, observer: &dyn Observer) -> Result<Option<EmulatorTls>, Error> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        return EmulatorTls::from_pem_files(cert, key)
            .map(Some)
            .map_err(Error::input);
    }
    if !args.tls_self_signed {
        return Ok(None);
    }
    let made = EmulatorTls::self_signed().map_err(Error::other)?;
    let path = args.tls_cert_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("arbor-emulate-{}-cert.pem", args.port))
    });
    std::fs::write(&path, &made.cert_pem)
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))?;
    observer.notice(&format!(
        "arbor emulate: self-signed certificate for {} written to {} (arbor run --cacert {})",
        arbor_sim::emulator::SELF_SIGNED_NAMES.join(", "),
        path.display(),
        path.display()
    ));
    Ok(Some(made.tls))
}

/// `arbor emulate`: serve until Ctrl+C (the address goes to the
/// observer's output). The soft file-descriptor limit is raised to the
/// hard one first: every client connection is a descriptor.
pub fn serve_until_interrupted(
    args: &EmulateOptions,
    observer: &dyn Observer,
) -> Result<(), Error> {
    runtime::raise_fd_limit();
    let config = config(&args.emulator, args.seed, args.tokenizer.as_deref())?;
    let tls = tls(args, observer)?;
    let runtime = runtime::two_workers()?;
    runtime.block_on(async move {
        if args.busy_poll {
            // Yielding forever keeps this worker out of its sleep: it polls
            // the sockets between yields.
            tokio::spawn(async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
        }
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        if args.replicas > 1 || args.router.is_some() {
            return serve_fleet_until_interrupted(args, config, addr, observer).await;
        }
        let served = match tls {
            Some(tls) => serve_tls(config, addr, tls).await,
            None => serve(config, addr).await,
        };
        let emulator = served.map_err(|e| Error::other(format!("cannot listen on {addr}: {e}")))?;
        observer.output(&format!(
            "arbor emulate: listening on {} (Ctrl+C stops)",
            emulator.base_url()
        ))?;
        let _ = tokio::signal::ctrl_c().await;
        emulator.shutdown().await;
        Ok(())
    })
}

/// `arbor emulate --replicas N [--router MODE]`: each replica's address,
/// then the router's (or the count), until Ctrl+C.
async fn serve_fleet_until_interrupted(
    args: &EmulateOptions,
    config: EmulatorConfig,
    addr: SocketAddr,
    observer: &dyn Observer,
) -> Result<(), Error> {
    let replicas = args.replicas.max(1);
    let served = match &args.router {
        Some(by) => serve_routed(config, replicas, by.clone(), addr).await,
        None => serve_fleet(config, replicas, addr).await,
    };
    let fleet = served.map_err(|e| Error::other(format!("cannot listen from {addr}: {e}")))?;
    for (i, url) in fleet.replica_urls().iter().enumerate() {
        observer.output(&format!("arbor emulate: replica {i} listening on {url}"))?;
    }
    let last = match (fleet.router_url(), fleet.route_by()) {
        (Some(url), Some(by)) => format!("arbor emulate: router ({by}) listening on {url}"),
        _ => format!("arbor emulate: {replicas} replicas"),
    };
    observer.output(&format!("{last} (Ctrl+C stops)"))?;
    let _ = tokio::signal::ctrl_c().await;
    fleet.shutdown().await;
    Ok(())
}
