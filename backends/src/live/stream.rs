//! A connection's byte stream, plain TCP or TLS over TCP, and opening one.
//!
//! Owns [`Stream`] (an enum: the hot read path is a `match`, not a call
//! through a boxed trait object), the two things a pooled connection needs
//! without waiting (a write of what the socket takes, a probe of whether an
//! idle connection is still open), and [`Dial`]: where to connect and
//! whether to do a TLS handshake (SNI from the host name, ALPN from the
//! configuration of [`super::tls`]).
//!
//! A TLS stream's reads return decrypted bytes: the caller stamps each read
//! as it returns, as it does a plain read, so a stamp is taken after
//! decryption and before any parsing. Must not know HTTP: `http` uses it.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::record::is_client_resource;
use super::tls::{explain, is_certificate_problem, rustls_error, ClientConfig, Negotiated};

/// A connection's bytes: plain, or TLS (boxed: a TLS session is a few
/// kilobytes, and connections move in and out of the pool).
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Writes as much of `parts` as the connection takes without waiting.
    /// For TLS, "taken" means accepted by the session; what the socket did
    /// not take yet goes out with the next write or flush.
    pub fn try_write_vectored(&mut self, parts: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.try_write_vectored(parts),
            Stream::Tls(s) => {
                let mut cx = Context::from_waker(Waker::noop());
                match Pin::new(s.as_mut()).poll_write_vectored(&mut cx, parts) {
                    Poll::Ready(result) => result,
                    Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
                }
            }
        }
    }

    /// Is this idle connection still open, with nothing unread? A real
    /// zero-timeout check: a `MSG_PEEK` read of the socket that does not
    /// wait (one system call), so a close the runtime has not yet polled is
    /// seen too. A TLS session's own messages already read (a session
    /// ticket) are consumed first; a close alert, a closed socket, an error
    /// or stray bytes mean no.
    pub fn is_idle_open(&mut self) -> bool {
        let tcp = match self {
            Stream::Plain(s) => &*s,
            Stream::Tls(s) => {
                let mut probe = [0u8; 1];
                let mut cx = Context::from_waker(Waker::noop());
                let mut buf = ReadBuf::new(&mut probe);
                if Pin::new(s.as_mut()).poll_read(&mut cx, &mut buf).is_ready() {
                    return false;
                }
                s.get_ref().0
            }
        };
        let mut probe = [std::mem::MaybeUninit::<u8>::uninit(); 1];
        matches!(
            socket2::SockRef::from(tcp).peek(&mut probe),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock
        )
    }

    /// What the TLS handshake settled on; `None` for a plain stream.
    pub fn negotiated(&self) -> Option<Negotiated> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => Some(Negotiated::of(s.get_ref().1)),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot connect to {addr}: {source}")]
    Tcp { addr: SocketAddr, source: io::Error },
    #[error("TLS handshake with {host} failed: {words}")]
    Tls {
        host: String,
        /// The problem in plain words.
        words: String,
        /// It is about the server's certificate (trusting its issuer, or
        /// not verifying, would help).
        certificate: bool,
    },
}

impl ConnectError {
    /// The client ran out of something (file descriptors, buffers, memory,
    /// ephemeral ports): its own failure, not the server's.
    pub fn is_client_resource(&self) -> bool {
        matches!(self, ConnectError::Tcp { source, .. } if is_client_resource(source))
    }
}

/// How to open a connection to one server.
#[derive(Clone)]
pub struct Dial {
    addr: SocketAddr,
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dial")
            .field("addr", &self.addr)
            .field("tls", &self.tls.as_ref().map(|(_, name)| name))
            .finish()
    }
}

impl Dial {
    /// Plain TCP to `addr`.
    pub fn plain(addr: SocketAddr) -> Dial {
        Dial { addr, tls: None }
    }

    /// TLS to `addr`, verifying the certificate for `host` (a name or an
    /// IP address; a name is also sent as SNI).
    pub fn tls(addr: SocketAddr, host: &str, config: Arc<ClientConfig>) -> Result<Dial, String> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| format!("`{host}` is not a valid TLS server name"))?;
        Ok(Dial {
            addr,
            tls: Some((TlsConnector::from(config), name)),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Connects (no Nagle delay) and, for TLS, completes the handshake.
    pub async fn open(&self) -> Result<Stream, ConnectError> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .and_then(|s| s.set_nodelay(true).map(|()| s))
            .map_err(|source| ConnectError::Tcp {
                addr: self.addr,
                source,
            })?;
        let Some((connector, name)) = &self.tls else {
            return Ok(Stream::Plain(tcp));
        };
        match connector.connect(name.clone(), tcp).await {
            Ok(tls) => Ok(Stream::Tls(Box::new(tls))),
            Err(e) => Err(match rustls_error(&e) {
                Some(inner) => ConnectError::Tls {
                    host: name.to_str().into_owned(),
                    words: explain(inner),
                    certificate: is_certificate_problem(inner),
                },
                // The server closed or reset the connection mid-handshake.
                None => ConnectError::Tls {
                    host: name.to_str().into_owned(),
                    words: format!("{e} (does the server speak TLS on this port?)"),
                    certificate: false,
                },
            }),
        }
    }
}
