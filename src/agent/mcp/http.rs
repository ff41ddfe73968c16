//! The Streamable HTTP transport: rmcp's, over a reqwest 0.13 client that
//! verifies certificates as lancet's providers do (rustls with ring, the
//! webpki roots; no system trust store, no aws-lc C build), with the
//! configured headers and bearer token.
//!
//! Owns: building the client and the transport. Does not own: reading the
//! token from the environment (the binary does). Invariant: a header that is
//! not a valid HTTP header is an error naming it, never dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest_mcp::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::agent::words;

/// The transport to `url`, sending `headers` and `bearer` with every request.
pub(super) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer: Option<&str>,
) -> Result<StreamableHttpClientTransport<reqwest_mcp::Client>, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = bearer.map(str::to_owned);
    for (name, value) in headers {
        let n =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| words::mcp::bad_header(name))?;
        let v = HeaderValue::from_str(value).map_err(|_| words::mcp::bad_header(name))?;
        config.custom_headers.insert(n, v);
    }
    Ok(StreamableHttpClientTransport::with_client(
        client()?,
        config,
    ))
}

/// A client with lancet's TLS: rustls, ring, the webpki roots.
fn client() -> Result<reqwest_mcp::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest_mcp::Client::builder()
        // As rmcp's own default: no idle pooling (a reused connection whose
        // body was not read to its end stalls on delayed ACKs), and no
        // redirects to another origin (they would replay the headers).
        .pool_max_idle_per_host(0)
        .redirect(reqwest_mcp::redirect::Policy::none())
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| e.to_string())
}
