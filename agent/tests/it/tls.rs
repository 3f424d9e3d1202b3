//! HTTPS and wss:// through the rustls listener, with the test certificate in
//! `tests/fixtures/`.

use std::path::Path;
use std::sync::Arc;

use agent::server::{self, AppState, tls};
use agent::telemetry::sampler::{Sampler, SamplerConfig};
use agent::telemetry::simulated::{SimSpec, SimulatedBackend};
use futures_util::StreamExt;
use shared::protocol::ServerMessage;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{self, TOKEN, hello};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[tokio::test]
async fn wss_handshake_over_tls() {
    let tls_config = tls::load(&fixture("tls-cert.pem"), &fixture("tls-key.pem")).unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let listener = tls::TlsListener::new(tcp, tls_config).unwrap();
    let mut config = support::config();
    config.tls = true;
    let backend = SimulatedBackend::new(SimSpec::parse("l4").unwrap());
    let sampler = Sampler::start(Box::new(backend), SamplerConfig::default()).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, AppState::new(config, sampler), async {
        let _ = stopped.await;
    }));

    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(fixture("tls-cert.pem")).unwrap()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream =
        TlsConnector::from(Arc::new(client)).connect(ServerName::try_from("localhost").unwrap(), tcp).await.unwrap();
    // The page served over https:// has an https:// origin.
    let mut request = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!(
        "wss://localhost:{}/ws",
        addr.port()
    ))
    .unwrap();
    request.headers_mut().insert("Origin", format!("https://localhost:{}", addr.port()).parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::client_async(request, stream).await.unwrap();
    futures_util::SinkExt::send(&mut ws, Message::text(hello(TOKEN).encode())).await.unwrap();
    let Some(Ok(Message::Text(text))) = ws.next().await else { panic!("no welcome") };
    let ServerMessage::Welcome(welcome) = ServerMessage::decode(&text).unwrap() else { panic!("{text}") };
    assert_eq!(welcome.host.gpus[0].catalog_id.as_deref(), Some("l4"));
    // The host's RAM travels with it (a simulated host's: 256 GiB).
    assert_eq!(welcome.host.memory_total_bytes, shared::protocol::Field::Value(256 << 30));

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[test]
fn bad_tls_files_are_clear_errors() {
    let err = tls::load(&fixture("missing.pem"), &fixture("tls-key.pem")).unwrap_err();
    assert!(err.to_string().contains("missing.pem"), "{err}");
    let err = tls::load(&fixture("tls-key.pem"), &fixture("tls-key.pem")).unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
}
