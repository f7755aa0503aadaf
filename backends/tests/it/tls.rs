//! `--cacert` trust as curl and OpenSSL have it (issue 26, item 7): the
//! most common test certificate, a self-signed one made with `openssl req
//! -x509` (marked `CA:TRUE`, testdata/tls), is trusted when given with
//! `--cacert`, its name still checked; a certificate the file does not
//! hold is still refused. Handshakes with the run's own client
//! configuration against a TLS listener on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio::net::{TcpListener, TcpStream};

use arbor_backends::endpoint::certificate_hint;
use arbor_backends::live::tls::{client_config, explain_io, TlsOptions};
use arbor_sim::emulator::EmulatorTls;

use crate::http::runtime;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/tls")
        .join(name)
}

/// Serves `tls` on 127.0.0.1 (handshakes only) and shakes hands once as
/// the run's client trusting `cacert`, naming the server `name`: the
/// client's verdict, in plain words when refused.
async fn handshake(tls: EmulatorTls, cacert: &Path, name: &str) -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config());
    tokio::spawn(async move {
        if let Ok((stream, _)) = listener.accept().await {
            let _ = acceptor.accept(stream).await;
        }
    });
    let config = client_config(&TlsOptions {
        cacert: Some(cacert.to_path_buf()),
        insecure: false,
    })
    .expect("a client configuration");
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(&config));
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from(name.to_string()).expect("a name");
    match connector.connect(name, tcp).await {
        Ok(_) => Ok(()),
        Err(e) => Err(explain_io(&e)),
    }
}

fn openssl_ca_true() -> EmulatorTls {
    EmulatorTls::from_pem_files(
        &fixture("ca-true-self-signed.pem"),
        &fixture("ca-true-self-signed.key"),
    )
    .expect("the fixture serves")
}

#[test]
fn an_openssl_self_signed_ca_true_certificate_given_with_cacert_is_trusted() {
    let pem = fixture("ca-true-self-signed.pem");
    runtime().block_on(async {
        assert_eq!(
            handshake(openssl_ca_true(), &pem, "127.0.0.1").await,
            Ok(())
        );
        assert_eq!(
            handshake(openssl_ca_true(), &pem, "localhost").await,
            Ok(())
        );
    });
}

#[test]
fn the_trusted_leaf_must_still_match_the_name() {
    let pem = fixture("ca-true-self-signed.pem");
    let refused = runtime()
        .block_on(handshake(openssl_ca_true(), &pem, "example.com"))
        .expect_err("another name");
    assert!(refused.contains("name mismatch"), "{refused}");
}

#[test]
fn a_certificate_the_cacert_file_does_not_hold_is_still_refused() {
    // Another self-signed certificate (rcgen's, not a CA) as the only
    // trusted one: the openssl fixture is neither it nor signed by it.
    let other = EmulatorTls::self_signed().expect("a certificate");
    let dir = std::env::temp_dir().join(format!("arbor-tls-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let other_pem = dir.join("other.pem");
    std::fs::write(&other_pem, &other.cert_pem).expect("written");
    let refused = runtime()
        .block_on(handshake(openssl_ca_true(), &other_pem, "127.0.0.1"))
        .expect_err("not trusted");
    assert!(
        refused.contains("marked as a CA (CA:TRUE) and is not one of the trusted"),
        "{refused}"
    );
    // And the other certificate, served, is trusted by its own file (the
    // rule for a leaf that is not a CA is webpki's, unchanged).
    runtime()
        .block_on(handshake(other.tls, &other_pem, "127.0.0.1"))
        .expect("its own certificate");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_hint_names_the_cacert_that_was_given() {
    let given = certificate_hint(Some(Path::new("/etc/ca.pem")));
    assert!(given.contains("--cacert /etc/ca.pem"), "{given}");
    assert!(!given.contains("--cacert FILE"), "{given}");
    let none = certificate_hint(None);
    assert!(none.contains("--cacert FILE"), "{none}");
}
