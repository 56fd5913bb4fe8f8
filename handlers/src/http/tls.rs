//! TLS towards `https://` backends: rustls with the ring provider, the platform's roots plus the backend's
//! own (`tls_ca_file`), a client certificate for backends that require one, a server name other than the
//! URL's host (sent as SNI and verified), or no verification at all when the configuration says so.
//!
//! The rustls configuration is built once per backend ([`client_config`], kept by its link context) and
//! handed to every HTTP client of the backend, so the platform's roots are read once, not per client; a
//! plain `http://` backend gets a configuration with no roots at all ([`plain`]) and never reads them.
//!
//! A name override works by connecting to the URL's host under the configured name: the request URL carries
//! the name ([`request_url`]) and the client's resolver maps it back to the URL's host ([`ConnectTo`]), so
//! SNI, verification and `Host` all use the name while the connection goes where the URL says.

use std::net::SocketAddr;
use std::sync::{Arc, Once};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{ClientBuilder, Url};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::config::TlsClient;

/// Installs ring as the process's rustls provider, once; every TLS client and server of the process uses it.
pub fn install_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err: a provider is installed already (by the embedding program); that one is used.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Reads and checks every file `tls` names, and builds the configuration they make: what a backend's
/// configuration would fail on at run time.
pub fn check(tls: &TlsClient) -> Result<(), String> {
    client_config(tls, true).map(drop)
}

/// The process's provider (ring), installed on first use.
pub fn provider() -> Arc<CryptoProvider> {
    install_provider();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// The configuration of a plain `http://` client: no roots (it never verifies anything).
pub fn plain() -> ClientConfig {
    ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| unreachable!("ring supports the default versions"))
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
}

/// The rustls configuration of a backend (`https` says whether its URL is https; a plain one gets
/// [`plain`]). HTTP/2 and HTTP/1.1 are offered by ALPN.
pub(crate) fn client_config(tls: &TlsClient, https: bool) -> Result<ClientConfig, String> {
    if !https {
        return Ok(plain());
    }
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        Arc::new(NoVerification(provider))
    } else {
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots(roots(tls)?, provider)
                .map_err(|e| match &tls.ca_file {
                    Some(ca) => format!("tls_ca_file {}: {e}", ca.display()),
                    None => format!("the platform's roots: {e}"),
                })?;
        Arc::new(verifier)
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity(tls)? {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            format!(
                "tls_client_cert_file {}: {e}",
                tls.client_cert_file
                    .as_deref()
                    .unwrap_or_else(|| std::path::Path::new(""))
                    .display()
            )
        })?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// `builder` with the backend's TLS configuration and, for a server name override, its resolver.
pub(crate) fn configure(
    builder: ClientBuilder,
    config: ClientConfig,
    tls: &TlsClient,
    url: &str,
) -> Result<ClientBuilder, String> {
    let mut builder = builder.tls_backend_preconfigured(config);
    if let Some(name) = &tls.server_name {
        let url = Url::parse(url).map_err(|e| format!("invalid backend url: {e}"))?;
        let host = url
            .host_str()
            .ok_or_else(|| "the backend url has no host".to_owned())?
            .trim_matches(['[', ']'])
            .to_owned();
        builder = builder.dns_resolver(Arc::new(ConnectTo {
            name: name.to_ascii_lowercase(),
            host,
        }));
    }
    Ok(builder)
}

/// The URL requests go to: the backend's, with the configured server name as its host.
pub(crate) fn request_url(mut url: Url, tls: &TlsClient) -> Result<Url, String> {
    if let Some(name) = &tls.server_name {
        url.set_host(Some(name))
            .map_err(|e| format!("invalid tls_server_name {name:?}: {e}"))?;
    }
    Ok(url)
}

fn read(path: &std::path::Path, field: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{field} {}: {e}", path.display()))
}

fn certificates(
    path: &std::path::Path,
    field: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(path, field)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{field} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{field} {}: no PEM certificate in it",
            path.display()
        ));
    }
    Ok(certs)
}

/// The extra roots of `tls_ca_file` (none without one).
fn roots(tls: &TlsClient) -> Result<Vec<CertificateDer<'static>>, String> {
    match &tls.ca_file {
        Some(path) => certificates(path, "tls_ca_file"),
        None => Ok(Vec::new()),
    }
}

/// The client certificate chain and key, when both are configured.
fn identity(
    tls: &TlsClient,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, String> {
    let (Some(cert), Some(key)) = (&tls.client_cert_file, &tls.client_key_file) else {
        return Ok(None);
    };
    let chain = certificates(cert, "tls_client_cert_file")?;
    let pem = read(key, "tls_client_key_file")?;
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| format!("tls_client_key_file {}: {e}", key.display()))?;
    Ok(Some((chain, key)))
}

/// `tls_insecure_skip_verify`: every certificate is accepted (signatures are still checked by the provider,
/// so the handshake itself is sound; who is at the other end is not known).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
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
        rustls::crypto::verify_tls12_signature(
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
        rustls::crypto::verify_tls13_signature(
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

/// Resolves the configured server name to the URL's host; any other name as usual.
#[derive(Debug)]
struct ConnectTo {
    name: String,
    host: String,
}

impl Resolve for ConnectTo {
    fn resolve(&self, name: Name) -> Resolving {
        let target = if name.as_str().eq_ignore_ascii_case(&self.name) {
            self.host.clone()
        } else {
            name.as_str().to_owned()
        };
        Box::pin(async move {
            // The port is the URL's: the connector sets it on every address.
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.as_str(), 0))
                .await?
                .collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_becomes_the_request_host_and_keeps_the_port() {
        let tls = TlsClient {
            server_name: Some("backend.internal".into()),
            ..TlsClient::default()
        };
        let url = Url::parse("https://127.0.0.1:8443/mcp").unwrap();
        assert_eq!(
            request_url(url.clone(), &tls).unwrap().as_str(),
            "https://backend.internal:8443/mcp"
        );
        assert_eq!(
            request_url(url.clone(), &TlsClient::default()).unwrap(),
            url
        );
    }

    #[test]
    fn unreadable_or_empty_files_are_named() {
        let missing = TlsClient {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsClient::default()
        };
        let e = check(&missing).unwrap_err();
        assert!(e.starts_with("tls_ca_file /nonexistent/ca.pem: "), "{e}");
        let empty = std::env::temp_dir().join(format!("mcpgw-empty-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = check(&TlsClient {
            ca_file: Some(empty.clone()),
            ..TlsClient::default()
        })
        .unwrap_err();
        let _ = std::fs::remove_file(&empty);
        assert!(e.contains("no PEM certificate"), "{e}");
    }
}
