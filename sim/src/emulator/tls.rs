//! The emulator's TLS: a server configuration from a certificate and key
//! (PEM files), or from a self-signed certificate made on the spot
//! (rcgen), whose PEM a client is then given to trust.
//!
//! Owns only building the rustls server configuration (ring provider,
//! ALPN `http/1.1`); `server` does the handshakes.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

/// A TLS configuration the emulator serves https with.
#[derive(Clone)]
pub struct EmulatorTls {
    pub(super) config: Arc<ServerConfig>,
}

impl std::fmt::Debug for EmulatorTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EmulatorTls")
    }
}

/// Why a TLS configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: cannot read the certificate: {reason}")]
    Cert { path: String, reason: String },
    #[error("{path}: holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")]
    NoCert { path: String },
    #[error("{path}: cannot read the private key: {reason}")]
    Key { path: String, reason: String },
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(String),
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(String),
}

/// A self-signed certificate: the configuration that serves it, and its
/// PEM (what a client trusts, e.g. with `--cacert`).
#[derive(Debug)]
pub struct SelfSigned {
    pub tls: EmulatorTls,
    pub cert_pem: String,
}

/// Names a self-signed certificate is valid for: the emulator binds
/// 127.0.0.1, reached as `127.0.0.1` or `localhost`.
pub const SELF_SIGNED_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

impl EmulatorTls {
    /// From a PEM certificate chain and a PEM private key.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<EmulatorTls, TlsError> {
        let cert_path = cert.display().to_string();
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TlsError::Cert {
                path: cert_path.clone(),
                reason: pem_words(&e),
            })?;
        if chain.is_empty() {
            return Err(TlsError::NoCert { path: cert_path });
        }
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
            path: key.display().to_string(),
            reason: pem_words(&e),
        })?;
        EmulatorTls::from_der(chain, key)
    }

    /// From the PEM texts of a certificate and its key (tests make them
    /// with rcgen).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<EmulatorTls, TlsError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Cert {
                path: "(certificate text)".into(),
                reason: pem_words(&e),
            })?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| TlsError::Key {
            path: "(key text)".into(),
            reason: pem_words(&e),
        })?;
        EmulatorTls::from_der(chain, key)
    }

    /// The rustls server configuration (for tests that serve TLS with
    /// their own server).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.config)
    }

    /// A fresh self-signed certificate for [`SELF_SIGNED_NAMES`].
    pub fn self_signed() -> Result<SelfSigned, TlsError> {
        let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| n.to_string()).collect();
        let made = rcgen::generate_simple_self_signed(names)
            .map_err(|e| TlsError::SelfSigned(e.to_string()))?;
        let cert_pem = made.cert.pem();
        let tls = EmulatorTls::from_pem(&cert_pem, &made.key_pair.serialize_pem())?;
        Ok(SelfSigned { tls, cert_pem })
    }

    fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<EmulatorTls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(EmulatorTls {
            config: Arc::new(config),
        })
    }
}

fn pem_words(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM item of that kind found".into(),
        other => format!("not valid PEM ({other:?})"),
    }
}
