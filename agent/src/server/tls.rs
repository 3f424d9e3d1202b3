//! HTTPS and `wss://` with rustls (`--tls-cert`, `--tls-key`): a listener
//! that hands axum finished TLS streams. Handshakes run in their own tasks,
//! bounded in number and time, so a slow or silent client cannot stall
//! accepting others.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

const MAX_HANDSHAKES: usize = 64;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the certificate chain from {path}: {source}")]
    Cert { path: String, source: rustls::pki_types::pem::Error },
    #[error("cannot read the private key from {path}: {source}")]
    Key { path: String, source: rustls::pki_types::pem::Error },
    #[error("{path} holds no certificate")]
    NoCert { path: String },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// Reads a PEM certificate chain and private key into a server configuration.
pub fn load(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let cert_path = cert.display().to_string();
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|source| TlsError::Cert { path: cert_path.clone(), source })?;
    if chain.is_empty() {
        return Err(TlsError::NoCert { path: cert_path });
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|source| TlsError::Key { path: key.display().to_string(), source })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener whose connections come out TLS-terminated.
#[derive(Debug)]
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    acceptor: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Must be called on a tokio runtime.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(MAX_HANDSHAKES);
        let acceptor = tokio::spawn(accept_loop(tcp, TlsAcceptor::from(config), tx));
        Ok(Self { ready, local, acceptor })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

async fn accept_loop(tcp: TcpListener, acceptor: TlsAcceptor, ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>) {
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let (stream, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = handshakes.clone().acquire_owned().await else { return };
        let (acceptor, handoff) = (acceptor.clone(), ready.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = handoff.send((tls, peer)).await;
                }
                Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
        if ready.is_closed() {
            return;
        }
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept loop ended; axum has no way to stop on an error here.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
