//! The TLS fields of the config, checked at start: the front door's certificate, key and client CA load
//! (the same loading that serves them), and a backend's TLS settings go with an `https://` URL, come in the
//! pairs they need, name files that load, and skip verification only where `[server] strict` allows it.

use super::{BackendEntry, ConfigError, ServerConfig, invalid};
use crate::tls::{ServerTls, TlsFiles};

/// The front door's TLS: both files or neither, and they load.
pub(super) fn validate_server(s: &ServerConfig) -> Result<(), ConfigError> {
    match (&s.tls_cert_file, &s.tls_key_file) {
        (None, None) if s.tls_client_ca_file.is_some() => Err(invalid(
            "server.tls_client_ca_file",
            "client certificates need tls_cert_file and tls_key_file",
        )),
        (None, None) => Ok(()),
        (Some(_), None) => Err(invalid("server.tls_key_file", "tls_cert_file needs it")),
        (None, Some(_)) => Err(invalid("server.tls_cert_file", "tls_key_file needs it")),
        (Some(cert), Some(key)) => ServerTls::load(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: s.tls_client_ca_file.clone(),
        })
        .map(drop)
        .map_err(|e| match e {
            crate::tls::TlsError::Read { field, .. }
            | crate::tls::TlsError::Invalid { field, .. } => {
                invalid(format!("server.{field}"), e.to_string())
            }
        }),
    }
}

/// The front door's TLS files, when it serves HTTPS.
pub fn server_files(s: &ServerConfig) -> Option<TlsFiles> {
    match (&s.tls_cert_file, &s.tls_key_file) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: s.tls_client_ca_file.clone(),
        }),
        _ => None,
    }
}

/// A backend's TLS settings; `field` names a field of this backend.
pub(super) fn validate_backend(
    b: &BackendEntry,
    strict: bool,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let https = b.url.as_deref().is_some_and(|u| u.starts_with("https://"));
    let set = [
        ("tls_ca_file", b.tls_ca_file.is_some()),
        ("tls_client_cert_file", b.tls_client_cert_file.is_some()),
        ("tls_client_key_file", b.tls_client_key_file.is_some()),
        ("tls_server_name", b.tls_server_name.is_some()),
        ("tls_insecure_skip_verify", b.tls_insecure_skip_verify),
    ];
    if let Some((name, _)) = set.iter().find(|(_, given)| *given).filter(|_| !https) {
        return Err(invalid(field(name), "applies to https:// backends only"));
    }
    if b.http2 && b.url.is_none() {
        return Err(invalid(field("http2"), "applies to url backends only"));
    }
    match (&b.tls_client_cert_file, &b.tls_client_key_file) {
        (Some(_), None) => {
            return Err(invalid(
                field("tls_client_key_file"),
                "tls_client_cert_file needs it",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid(
                field("tls_client_cert_file"),
                "tls_client_key_file needs it",
            ));
        }
        _ => {}
    }
    if let Some(name) = &b.tls_server_name {
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-')
            });
        if !valid {
            return Err(invalid(
                field("tls_server_name"),
                format!("{name:?} is not a DNS name"),
            ));
        }
    }
    if b.tls_insecure_skip_verify && strict {
        return Err(invalid(
            field("tls_insecure_skip_verify"),
            "refused under [server] strict = true",
        ));
    }
    // The handlers' messages start with the field they are about; one about the platform's own roots is
    // about the backend's https url.
    handlers::check_tls(&b.tls()).map_err(|why| {
        let name = ["tls_ca_file", "tls_client_cert_file", "tls_client_key_file"]
            .into_iter()
            .find(|f| why.starts_with(f))
            .unwrap_or("url");
        invalid(field(name), why)
    })
}
