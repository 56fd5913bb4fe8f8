//! TLS of the gateway's own listeners — the front door (`[server] tls_cert_file`, `tls_key_file`,
//! `tls_client_ca_file`) and `mcpgw mock-backend --tls-cert` (loaded here by the binary, the configuration
//! handed to the `mock` crate) — with rustls and the ring provider: HTTP/2 and HTTP/1.1 by ALPN, client
//! certificates required when a client CA is given, and a certificate that is read again on reload
//! (`reload`: SIGHUP, the admin POST, `--watch`) and served from the next handshake on, without dropping a connection: a
//! certificate resolver holds the current one.
//!
//! It must not read anything but the configured files, and never drops the certificate in use for one that
//! does not load.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

use crate::reloadable::Reload;

/// Why a listener's TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read.
    #[error("{field} {path}: {error}")]
    Read {
        /// The config field that names it.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// Why (in the message: not a `source` too, which would print it twice).
        error: std::io::Error,
    },
    /// A file holds no usable PEM of the kind expected, or rustls refuses what it holds.
    #[error("{field} {path}: {reason}")]
    Invalid {
        /// The config field that names it.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The files of one listener's TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM), leaf first.
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// When given, clients must present a certificate issued by one of these (PEM).
    pub client_ca: Option<PathBuf>,
}

/// A listener's TLS: the rustls configuration to serve with, whose certificate [`ServerTls::reload`] replaces.
#[derive(Debug, Clone)]
pub struct ServerTls {
    config: Arc<ServerConfig>,
    cert: Arc<CurrentCert>,
}

impl ServerTls {
    /// Reads every file and builds the configuration; an error names the field and the file.
    pub fn load(files: TlsFiles) -> Result<ServerTls, TlsError> {
        let provider = handlers::tls_provider();
        let key = certified_key(&files, &provider)?;
        let cert = Arc::new(CurrentCert {
            current: RwLock::new(Arc::new(key)),
            files: files.clone(),
            provider: Arc::clone(&provider),
        });
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("tls_cert_file", &files.cert, e))?;
        let builder = match &files.client_ca {
            Some(path) => {
                let roots = Arc::new(root_store(path, "tls_client_ca_file")?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| invalid("tls_client_ca_file", path, e))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config =
            builder.with_cert_resolver(Arc::clone(&cert) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(ServerTls {
            config: Arc::new(config),
            cert,
        })
    }

    /// The rustls configuration for actix-web's listener.
    pub fn server_config(&self) -> ServerConfig {
        (*self.config).clone()
    }

    /// Reads the certificate and key again; on success the next handshake serves them, on failure the
    /// current ones stay.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = certified_key(&self.cert.files, &self.cert.provider)?;
        *self
            .cert
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
        Ok(())
    }
}

impl Reload for ServerTls {
    fn part(&self) -> &'static str {
        "tls certificate"
    }

    fn reload(&self) -> Result<(), String> {
        ServerTls::reload(self).map_err(|e| e.to_string())
    }
}

/// The certificate served now; its lock is held only to clone or replace an `Arc`.
#[derive(Debug)]
struct CurrentCert {
    current: RwLock<Arc<CertifiedKey>>,
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
}

impl ResolvesServerCert for CurrentCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.current.read().unwrap_or_else(PoisonError::into_inner),
        ))
    }
}

fn invalid(field: &'static str, path: &Path, reason: impl std::fmt::Display) -> TlsError {
    TlsError::Invalid {
        field,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn read(field: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read {
        field,
        path: path.to_owned(),
        error,
    })
}

fn certificates(
    field: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(field, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(field, path, e))?;
    if certs.is_empty() {
        return Err(invalid(field, path, "no PEM certificate in it"));
    }
    Ok(certs)
}

fn certified_key(files: &TlsFiles, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let chain = certificates("tls_cert_file", &files.cert)?;
    let pem = read("tls_key_file", &files.key)?;
    let key =
        PrivateKeyDer::from_pem_slice(&pem).map_err(|e| invalid("tls_key_file", &files.key, e))?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid("tls_key_file", &files.key, e))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| {
        invalid(
            "tls_key_file",
            &files.key,
            format!("does not match tls_cert_file: {e}"),
        )
    })?;
    Ok(certified)
}

fn root_store(path: &Path, field: &'static str) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(field, path)? {
        roots.add(cert).map_err(|e| invalid(field, path, e))?;
    }
    Ok(roots)
}

/// A throw-away PKI for tests of the gateway's own TLS listeners: a CA and a leaf certificate it issued.
#[cfg(test)]
pub(crate) mod test_pki {
    #![allow(clippy::unwrap_used)]

    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    use super::{ServerTls, TlsFiles};

    /// What [`server`] made.
    pub(crate) struct Issued {
        /// The CA's certificate (PEM).
        pub(crate) ca: String,
        /// The listener's TLS, loaded from the files.
        pub(crate) tls: ServerTls,
        /// The leaf's certificate file.
        pub(crate) cert: std::path::PathBuf,
        /// Its key's file.
        pub(crate) key: std::path::PathBuf,
    }

    /// A leaf certificate for `name`, its files written under a directory named after `test`.
    pub(crate) fn server(test: &str, name: &str) -> Issued {
        let dir = std::env::temp_dir().join(format!("mcpgw-tls-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let (cert, key_file) = (dir.join("server.pem"), dir.join("server.key"));
        std::fs::write(&cert, leaf.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        let tls = ServerTls::load(TlsFiles {
            cert: cert.clone(),
            key: key_file.clone(),
            client_ca: None,
        })
        .unwrap();
        Issued {
            ca: issuer.pem(),
            tls,
            cert,
            key: key_file,
        }
    }

    /// A client's rustls configuration trusting only `ca`, offering `alpn`.
    pub(crate) fn client(ca: &str, alpn: &[&[u8]]) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let mut config = rustls::ClientConfig::builder_with_provider(handlers::tls_provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config
    }
}
