//! TLS for the live client: the client configuration and the plain words
//! for what went wrong in a handshake.
//!
//! Owns which certificates are trusted (the system's roots, read with
//! rustls-native-certs, falling back to the webpki-roots bundle when the
//! system has none; or only the PEM file of `cacert`, whose certificates
//! are anchors as curl and OpenSSL take them: the server's own
//! self-signed certificate is trusted even when it is marked `CA:TRUE`),
//! skipping verification (`insecure`), ALPN `http/1.1`, and [`explain`]: a rustls
//! error as a sentence a user can act on (expired, unknown issuer, name
//! mismatch, ...). The crypto provider is ring (it builds with the C
//! compiler alone). Names no command-line flag: callers add the hint.
//!
//! Must not touch connections: `stream` does the handshake with the
//! configuration built here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

pub use rustls::ClientConfig;

/// What to trust when connecting over TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Trust only the certificates of this PEM file (instead of the
    /// system's roots).
    pub cacert: Option<PathBuf>,
    /// Accept any certificate: no verification at all.
    pub insecure: bool,
}

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("{path}: cannot read the CA certificates: {reason}")]
    Cacert { path: String, reason: String },
    #[error("{path}: holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")]
    NoCertificate { path: String },
    #[error("no trusted root certificates: neither the system's nor the built-in bundle")]
    NoRoots,
    #[error("cannot set up TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The ALPN protocol offered: arbor speaks HTTP/1.1 only.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The crypto provider every TLS configuration of arbor uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration `options` describe: roots, verification,
/// ALPN `http/1.1`. SNI is sent (rustls sends it for a host name, never
/// for an IP address).
pub fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let mut config = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth()
    } else if let Some(path) = &options.cacert {
        let verifier = CacertVerifier::new(path, provider)?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(system_roots()?)
            .with_no_client_auth()
    };
    config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
    Ok(Arc::new(config))
}

/// The certificates of a PEM file.
fn certs_from_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let shown = path.display().to_string();
    let bad = |reason: String| TlsSetupError::Cacert {
        path: shown.clone(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(pem_words(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(pem_words(&e)))?;
    if certs.is_empty() {
        return Err(TlsSetupError::NoCertificate { path: shown });
    }
    Ok(certs)
}

/// `cacert`: the file's certificates are the only roots, verified by
/// webpki, with one rule more, as curl and OpenSSL have it: a server
/// whose own certificate is byte for byte one of the file's is trusted
/// even when that certificate is marked `CA:TRUE` (what `openssl req
/// -x509` makes by default), which webpki refuses as
/// `CaUsedAsEndEntity`. The name is still checked; so are the dates
/// (webpki checks them before the CA flag, so a certificate refused for
/// the flag alone is within its dates) and the handshake's signatures.
#[derive(Debug)]
struct CacertVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

impl CacertVerifier {
    fn new(path: &Path, provider: Arc<CryptoProvider>) -> Result<CacertVerifier, TlsSetupError> {
        let given = certs_from_pem(path)?;
        let mut roots = RootCertStore::empty();
        for cert in &given {
            roots.add(cert.clone()).map_err(|e| TlsSetupError::Cacert {
                path: path.display().to_string(),
                reason: format!("not a usable certificate: {}", explain(&e)),
            })?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| TlsSetupError::Cacert {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(CacertVerifier { webpki, given })
    }
}

/// Whether a certificate error is webpki's `CaUsedAsEndEntity`.
fn is_ca_used_as_end_entity(e: &CertificateError) -> bool {
    match e {
        CertificateError::Other(other) => {
            other.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity)
        }
        _ => false,
    }
}

impl ServerCertVerifier for CacertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(e))
                if is_ca_used_as_end_entity(&e)
                    && self.given.iter().any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let cert = ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            verdict => verdict,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

fn pem_words(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        other => format!("not valid PEM ({other:?})"),
    }
}

/// The system's roots; the webpki-roots bundle when it has none.
fn system_roots() -> Result<RootCertStore, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if roots.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    if roots.is_empty() {
        return Err(TlsSetupError::NoRoots);
    }
    Ok(roots)
}

/// `insecure`: every certificate is accepted; handshake signatures are
/// still checked (they prove the peer holds the key it showed).
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What a handshake settled on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// `TLSv1.3`, `TLSv1.2`.
    pub version: String,
    /// The IANA name, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: String,
    /// The ALPN protocol the server chose (`http/1.1`), if it chose one.
    pub alpn: Option<String>,
}

impl Negotiated {
    /// What a client connection settled on, once its handshake is done.
    pub fn of(connection: &rustls::ClientConnection) -> Negotiated {
        let version = match connection.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
            Some(other) => format!("{other:?}"),
            None => "unknown".to_string(),
        };
        let cipher = connection
            .negotiated_cipher_suite()
            .and_then(|suite| suite.suite().as_str())
            .unwrap_or("unknown")
            .to_string();
        let alpn = connection
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        Negotiated {
            version,
            cipher,
            alpn,
        }
    }
}

/// Is this handshake failure about the server's certificate (so that
/// trusting it, or skipping verification, would help)?
pub fn is_certificate_problem(e: &rustls::Error) -> bool {
    matches!(
        e,
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
    )
}

/// A rustls error in plain words.
pub fn explain(e: &rustls::Error) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => certificate_words(c),
        E::NoCertificatesPresented => "the server presented no certificate".into(),
        E::AlertReceived(alert) => format!("the server refused the handshake (alert: {alert:?})"),
        E::NoApplicationProtocol => {
            "the server does not speak HTTP/1.1 over TLS (ALPN http/1.1 refused)".into()
        }
        E::PeerIncompatible(why) => {
            format!("the server offers no TLS version or cipher arbor supports ({why:?})")
        }
        E::InvalidMessage(why) => {
            format!("the server's answer is not TLS (is it plain http://?) ({why:?})")
        }
        other => other.to_string(),
    }
}

fn certificate_words(c: &CertificateError) -> String {
    use CertificateError as C;
    match c {
        C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet (check the clocks)".into()
        }
        C::UnknownIssuer => {
            "the server's certificate is signed by an unknown issuer (self-signed, or a CA that is not trusted)".into()
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "the server's certificate does not match the host name (name mismatch)".into()
        }
        C::Revoked => "the server's certificate has been revoked".into(),
        C::BadSignature => "the server's certificate has a bad signature".into(),
        C::BadEncoding => "the server's certificate cannot be parsed".into(),
        other if is_ca_used_as_end_entity(other) => {
            "the server's own certificate is marked as a CA (CA:TRUE) and is not one of the \
             trusted certificates"
                .into()
        }
        other => format!("the server's certificate is not valid ({other:?})"),
    }
}

/// `e` in plain words when it carries a rustls error (as tokio-rustls
/// reports them), else its own text.
pub fn explain_io(e: &std::io::Error) -> String {
    match rustls_error(e) {
        Some(inner) => explain(inner),
        None => e.to_string(),
    }
}

/// The rustls error inside an I/O error, if any.
pub fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_problems_are_named_in_plain_words() {
        let words = |c| explain(&rustls::Error::InvalidCertificate(c));
        assert!(words(CertificateError::Expired).contains("expired"));
        assert!(words(CertificateError::UnknownIssuer).contains("unknown issuer"));
        assert!(words(CertificateError::NotValidForName).contains("name mismatch"));
        assert!(is_certificate_problem(&rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer
        )));
        assert!(!is_certificate_problem(
            &rustls::Error::NoApplicationProtocol
        ));
    }

    #[test]
    fn a_missing_or_empty_cacert_is_refused_with_its_path() {
        let missing = TlsOptions {
            cacert: Some("/nonexistent/ca.pem".into()),
            insecure: false,
        };
        let e = client_config(&missing).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let dir = std::env::temp_dir().join(format!("arbor-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = client_config(&TlsOptions {
            cacert: Some(empty),
            insecure: false,
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn configurations_offer_http11_only() {
        let insecure = client_config(&TlsOptions {
            cacert: None,
            insecure: true,
        })
        .unwrap();
        assert_eq!(insecure.alpn_protocols, vec![ALPN_HTTP11.to_vec()]);
    }
}
