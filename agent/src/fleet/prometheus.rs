//! A minimal Prometheus HTTP API client: `GET /api/v1/query` over HTTP/1.1
//! (hyper-util), its answer bounded in size and read as an instant vector.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::http::{Request, Uri, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

use super::Series;

/// The most one answer may hold. A fleet of 4,096 GPUs answers a query in
/// about 2 MiB (~500 bytes of labels per series).
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// A Prometheus base URL, checked when the agent starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusUrl {
    /// `http://host:port/prefix`, no trailing slash.
    base: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not a URL: {0}")]
    Invalid(String),
    #[error(
        "only http:// is supported (the relay has no TLS client); reach Prometheus inside the cluster or through a local proxy"
    )]
    NotHttp,
    #[error("the URL has no host")]
    NoHost,
    #[error("give the server's base URL, without a query or fragment")]
    HasQuery,
}

impl PrometheusUrl {
    /// `http://prometheus:9090` or `http://host/prometheus` (behind a path prefix).
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        let text = text.trim();
        if text.contains(['?', '#']) {
            return Err(UrlError::HasQuery);
        }
        let uri: Uri = text.parse().map_err(|e: axum::http::uri::InvalidUri| UrlError::Invalid(e.to_string()))?;
        if uri.scheme_str() != Some("http") {
            return Err(UrlError::NotHttp);
        }
        let Some(authority) = uri.authority() else { return Err(UrlError::NoHost) };
        let path = uri.path().trim_end_matches('/');
        Ok(Self { base: format!("http://{authority}{path}") })
    }

    fn query_uri(&self, promql: &str) -> Result<Uri, QueryError> {
        let q: String = form_urlencoded::byte_serialize(promql.as_bytes()).collect();
        format!("{}/api/v1/query?query={q}", self.base).parse().map_err(|_| QueryError::Request)
    }
}

impl std::fmt::Display for PrometheusUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.base)
    }
}

/// Why a round of queries gave no snapshot. Logged by the agent; the client
/// only learns that Prometheus did not answer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("could not build the request")]
    Request,
    #[error("Prometheus unreachable: {0}")]
    Unreachable(String),
    #[error("Prometheus answered HTTP {0}")]
    Status(u16),
    #[error("the answer was over {MAX_ANSWER_BYTES} bytes or broke off: {0}")]
    Body(String),
    #[error("not a Prometheus instant-vector answer: {0}")]
    Malformed(String),
    #[error("Prometheus did not answer in time")]
    Timeout,
}

#[derive(Debug)]
pub struct Client {
    url: PrometheusUrl,
    http: HyperClient<HttpConnector, Empty<Bytes>>,
}

impl Client {
    pub fn new(url: PrometheusUrl) -> Self {
        Self { url, http: HyperClient::builder(TokioExecutor::new()).build_http() }
    }

    /// One instant query, evaluated now.
    pub async fn query(&self, promql: &str) -> Result<Vec<Series>, QueryError> {
        let request = Request::get(self.url.query_uri(promql)?)
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, concat!("headroom/", env!("CARGO_PKG_VERSION")))
            .body(Empty::new())
            .map_err(|_| QueryError::Request)?;
        let response = self.http.request(request).await.map_err(|e| QueryError::Unreachable(e.to_string()))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| QueryError::Body(e.to_string()))?
            .to_bytes();
        // Prometheus answers 400/422 with a JSON error body; say the status.
        if !status.is_success() {
            return Err(QueryError::Status(status.as_u16()));
        }
        parse_vector(&body)
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    metric: BTreeMap<String, String>,
    /// `[unix seconds, "value"]`.
    value: (f64, String),
}

/// An instant-vector answer of `/api/v1/query`.
pub fn parse_vector(body: &[u8]) -> Result<Vec<Series>, QueryError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| QueryError::Malformed(e.to_string()))?;
    if answer.status != "success" {
        return Err(QueryError::Malformed(answer.error.unwrap_or(answer.status)));
    }
    let data = answer.data.ok_or_else(|| QueryError::Malformed("no data".into()))?;
    if data.result_type != "vector" {
        return Err(QueryError::Malformed(format!("a {} instead of a vector", data.result_type)));
    }
    // Prometheus writes NaN and ±Inf as strings; `parse` reads them, `join` drops them.
    Ok(data
        .result
        .into_iter()
        .map(|s| Series { labels: s.metric, value: s.value.1.parse().unwrap_or(f64::NAN) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert_eq!(PrometheusUrl::parse("http://prom:9090/").unwrap().to_string(), "http://prom:9090");
        assert_eq!(PrometheusUrl::parse("http://h/prom/").unwrap().to_string(), "http://h/prom");
        assert_eq!(PrometheusUrl::parse("https://prom:9090"), Err(UrlError::NotHttp));
        assert_eq!(PrometheusUrl::parse("prom:9090"), Err(UrlError::NotHttp));
        assert_eq!(PrometheusUrl::parse("http://prom/?x=1"), Err(UrlError::HasQuery));
        let uri = PrometheusUrl::parse("http://p:1").unwrap().query_uri("up{a=\"\"}").unwrap();
        assert_eq!(uri.to_string(), "http://p:1/api/v1/query?query=up%7Ba%3D%22%22%7D");
    }

    #[test]
    fn answers_are_read_as_instant_vectors() {
        let ok = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"gpu":"0","instance":"a:1"},"value":[1767225600.5,"2048"]},
            {"metric":{"gpu":"1"},"value":[1767225600.5,"NaN"]}]}}"#;
        let v = parse_vector(ok).unwrap();
        assert_eq!((v.len(), v[0].value, v[0].labels["instance"].as_str()), (2, 2048.0, "a:1"));
        assert!(v[1].value.is_nan());
        let err = br#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        assert!(matches!(parse_vector(err), Err(QueryError::Malformed(m)) if m == "parse error"));
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(matches!(parse_vector(matrix), Err(QueryError::Malformed(_))));
        assert!(matches!(parse_vector(b"<html>"), Err(QueryError::Malformed(_))));
    }
}
