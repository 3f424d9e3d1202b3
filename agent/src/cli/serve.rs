//! `headroom serve`: flags become a validated server configuration, then the
//! agent runs until Ctrl-C or SIGTERM.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use agent::fleet::PrometheusUrl;
use agent::server::{self, AppState, Dcgm, ServerConfig, Token, auth, tls, web::WebRoot};
use agent::telemetry::{self, sampler::Sampler, sampler::SamplerConfig};
use anyhow::Context as _;
use clap::Args;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback exposes telemetry and
    /// probes (real GPU allocations) to the network: prefer an SSH tunnel, or
    /// add --tls-cert/--tls-key, and --no-probes unless they are wanted.
    #[arg(long, default_value = "127.0.0.1:7878")]
    bind: SocketAddr,
    /// The access token (16+ characters). Default: a new random one per start.
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the token from a file (keeps it out of `ps`).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Simulate GPUs from the catalog instead of reading NVML, e.g.
    /// `2xh100-sxm` or `rtx-4090,l4`. The default without an NVIDIA driver.
    #[arg(long, value_name = "SPEC")]
    simulate: Option<String>,
    /// What the simulated GPUs do: cycle (the default demo), steady,
    /// fp32-load, kv-growth, unbalanced or leftover — each reproduces a cause
    /// of the OOM checklist. Implies --simulate (2xrtx-4090 unless given).
    #[arg(long, value_name = "NAME", conflicts_with = "nvml_lib")]
    scenario: Option<String>,
    /// Load NVML from this file instead of `libnvidia-ml.so.1`.
    #[arg(long, value_name = "PATH", conflicts_with = "simulate")]
    nvml_lib: Option<PathBuf>,
    /// Another origin whose pages may open the WebSocket, e.g.
    /// `https://headroom.example` (repeatable; scheme://host[:port], never
    /// `null` or `*`). The agent's own page always may.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Another name this agent may be reached by in `Host` (repeatable), e.g.
    /// `gpu1.lab`. IP addresses, localhost and this machine's name always may.
    #[arg(long, value_name = "NAME")]
    allow_host: Vec<String>,
    /// PEM certificate chain: serve https:// and wss://.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve the page from this directory instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    web_dir: Option<PathBuf>,
    /// Most WebSocket connections at once.
    #[arg(long, default_value_t = 256)]
    max_connections: u32,
    /// Close a WebSocket silent for this many seconds (0: never).
    #[arg(long, default_value_t = 90)]
    idle_timeout: u64,
    /// Serve /metrics without the token (for a scraper on a trusted network).
    #[arg(long)]
    public_metrics: bool,
    /// Leave the dcgm-exporter-compatible `DCGM_FI_*` series out of /metrics
    /// (e.g. where NVIDIA's dcgm-exporter already runs).
    #[arg(long)]
    no_dcgm_metrics: bool,
    /// The fleet's Prometheus (http://host:9090): the page's fleet view asks
    /// it, through this agent, where a plan fits now.
    #[arg(long, value_name = "URL")]
    prometheus: Option<String>,
    /// The host name in metrics and on the page (default: this machine's).
    /// In a Kubernetes pod, pass the node's name.
    #[arg(long, value_name = "NAME")]
    hostname: Option<String>,
    /// Refuse every probe allocation.
    #[arg(long)]
    no_probes: bool,
    /// Allow largest-block and max-total probes (they take nearly all free memory for a moment).
    #[arg(long, conflicts_with = "no_probes")]
    allow_full_probes: bool,
    /// A probe never takes more than a GPU's free memory minus this.
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    probe_margin: String,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        // Telemetry for a handful of browsers needs little; two workers keep
        // the agent's footprint small on a busy GPU host.
        .worker_threads(2)
        .thread_name("headroom-worker")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(args))
}

fn init_logging() {
    let filter = EnvFilter::try_from_env("HEADROOM_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_writer(std::io::stderr).init();
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let token = match (&args.token, &args.token_file) {
        (Some(t), _) => Token::parse(t).context("--token")?,
        (None, Some(path)) => {
            let text = super::input::read_text(path, super::input::MAX_TOKEN_FILE_BYTES)?;
            Token::parse(&text).with_context(|| format!("the token in {}", path.display()))?
        }
        (None, None) => Token::generate()?,
    };
    let choice =
        super::watch::backend_choice(args.simulate.as_deref(), args.scenario.as_deref(), args.nvml_lib.as_ref())?;
    let allowed_origins = args
        .allow_origin
        .iter()
        .map(|o| auth::parse_origin(o).with_context(|| format!("--allow-origin {o}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let backend = telemetry::open(choice)?;
    let mut sampler_config = SamplerConfig::default();
    if let Some(name) = args.hostname.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        sampler_config.hostname = name.to_owned();
    }
    let prometheus = args
        .prometheus
        .as_deref()
        .map(|url| PrometheusUrl::parse(url).with_context(|| format!("--prometheus {url}")))
        .transpose()?;
    let sampler = Sampler::start(backend, sampler_config).context("starting the sampling thread")?;
    let simulated = sampler.host().simulated;

    let mut config = ServerConfig::new(token.clone());
    config.allowed_origins = allowed_origins;
    config.allowed_hosts = args.allow_host.clone();
    config.max_connections = args.max_connections.max(1);
    config.idle_timeout = (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout));
    config.public_metrics = args.public_metrics;
    config.dcgm_metrics = if args.no_dcgm_metrics { Dcgm::Off } else { Dcgm::On };
    if let Some(url) = &prometheus {
        tracing::info!("fleet view: relaying fixed queries to {url}");
    }
    config.prometheus = prometheus;
    config.web = WebRoot::detect(args.web_dir.clone());
    config.tls = args.tls_cert.is_some();
    config.probes.enabled = !args.no_probes;
    config.probes.allow_full_probes = args.allow_full_probes;
    config.probes.margin_bytes = shared::units::parse_size(&args.probe_margin)
        .with_context(|| format!("--probe-margin {}", args.probe_margin))?;
    let web = config.web.describe();
    fit_open_files(&mut config);

    let tcp = tokio::net::TcpListener::bind(args.bind).await.with_context(|| format!("binding {}", args.bind))?;
    let local = tcp.local_addr()?;
    if let Some(warning) = exposure_warning(local, &config) {
        tracing::warn!("{warning}");
    }
    let scheme = if config.tls { "https" } else { "http" };
    let url_host = match local.ip() {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let state = AppState::new(config, sampler);
    tracing::info!(
        "listening on {scheme}://{local} ({} backend, page {web})",
        if simulated { "simulated" } else { "NVML" }
    );
    // The URL goes to stdout, not the log: the token sits in the fragment,
    // which browsers never send to servers.
    println!("Headroom agent ready{}: open", if simulated { " (simulated GPUs)" } else { "" });
    println!("  {scheme}://{}/#token={}", SocketAddr::new(url_host, local.port()), token.reveal());

    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let tls_config = tls::load(cert, key)?;
            let listener = tls::TlsListener::new(tcp, tls_config)?;
            server::serve(listener, state, server::shutdown_signal()).await?;
        }
        _ => server::serve(server::LoggingTcpListener::new(tcp), state, server::shutdown_signal()).await?,
    }
    tracing::info!("stopped");
    Ok(())
}

/// Raises the open-file soft limit to the hard one, and lowers the
/// connection caps if even that cannot hold them.
fn fit_open_files(config: &mut ServerConfig) {
    match server::limits::raise_open_file_limit() {
        Ok(files) => {
            if files.now > files.before {
                tracing::debug!("raised the open-file limit from {} to {}", files.before, files.now);
            }
            if let Some(message) = server::limits::fit_to_open_files(config, files.now) {
                tracing::warn!("{message}");
            }
        }
        Err(e) => tracing::warn!("cannot raise the open-file limit: {e}"),
    }
}

/// What a non-loopback address exposes, or `None` on loopback.
fn exposure_warning(local: SocketAddr, config: &ServerConfig) -> Option<String> {
    if local.ip().is_loopback() {
        return None;
    }
    let tls = if config.tls { "" } else { " without TLS" };
    let probes = if !config.probes.enabled {
        String::new()
    } else if config.probes.allow_full_probes {
        "; and start probes that allocate nearly all free memory on its GPUs (--allow-full-probes is on; \
         --no-probes turns probes off)"
            .to_owned()
    } else {
        "; and start probes that really allocate GPU memory, which can make other jobs on them run out \
         (--no-probes turns them off)"
            .to_owned()
    };
    Some(format!(
        "listening on {local}, reachable from the network{tls}: anyone with the token can read this host's GPU telemetry{probes}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_address_warns_about_probes_and_how_to_turn_them_off() {
        let mut config = ServerConfig::new(Token::parse("0123456789abcdef").unwrap());
        let lan: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        assert_eq!(exposure_warning("127.0.0.1:7878".parse().unwrap(), &config), None);
        let warning = exposure_warning(lan, &config).unwrap();
        assert!(warning.contains("without TLS") && warning.contains("telemetry"), "{warning}");
        assert!(warning.contains("really allocate GPU memory") && warning.contains("--no-probes"), "{warning}");
        config.probes.allow_full_probes = true;
        assert!(exposure_warning(lan, &config).unwrap().contains("--allow-full-probes is on"));
        config.probes.enabled = false;
        config.tls = true;
        let warning = exposure_warning(lan, &config).unwrap();
        assert!(!warning.contains("probe") && !warning.contains("without TLS"), "{warning}");
    }
}
