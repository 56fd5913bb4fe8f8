//! What the gateway presents to an HTTP backend as its own credential: one header (`Authorization: Bearer
//! …`, or another name), fixed (from an environment variable or a file) or rotating (a token the gateway
//! fetches and refreshes, set here by it). Never a client's credential: the handlers build every backend
//! request's headers themselves and add only this. Redacted in `Debug`, and marked sensitive so that no
//! `HeaderMap` debug print shows it.

use std::sync::{Arc, RwLock};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// A backend's credential (none by default). Cheap to clone: clones share the value, so the gateway's
/// refresher and every request of the backend see the same token.
#[derive(Clone, Default)]
pub struct Credential(Option<Arc<Slot>>);

struct Slot {
    name: HeaderName,
    value: RwLock<Option<HeaderValue>>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Credential(none)"),
            Some(slot) => write!(f, "Credential({}: <redacted>)", slot.name),
        }
    }
}

impl Eq for Credential {}

impl PartialEq for Credential {
    fn eq(&self, other: &Credential) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

fn sensitive(value: &str) -> Result<HeaderValue, String> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| "the credential is not a valid header value".to_owned())?;
    v.set_sensitive(true);
    Ok(v)
}

impl Credential {
    /// A header whose value is set later ([`Credential::set`]); until then requests carry none.
    pub fn rotating(name: &str) -> Result<Credential, String> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a valid header name"))?;
        Ok(Credential(Some(Arc::new(Slot {
            name,
            value: RwLock::new(None),
        }))))
    }

    /// A fixed header with a value made already (marked sensitive here).
    pub fn of_value(name: HeaderName, mut value: HeaderValue) -> Credential {
        value.set_sensitive(true);
        Credential(Some(Arc::new(Slot {
            name,
            value: RwLock::new(Some(value)),
        })))
    }

    /// A fixed header.
    pub fn fixed(name: &str, value: &str) -> Result<Credential, String> {
        let c = Credential::rotating(name)?;
        c.set(value)?;
        Ok(c)
    }

    /// The header's name (`Authorization` when none is configured).
    pub fn header_name(&self) -> HeaderName {
        self.0
            .as_ref()
            .map_or(reqwest::header::AUTHORIZATION, |s| s.name.clone())
    }

    /// Whether there is one.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Sets the value every request carries from now on.
    pub fn set(&self, value: &str) -> Result<(), String> {
        let Some(slot) = &self.0 else {
            return Ok(());
        };
        let v = sensitive(value)?;
        match slot.value.write() {
            Ok(mut g) => *g = Some(v),
            Err(p) => *p.into_inner() = Some(v),
        }
        Ok(())
    }

    /// Takes the value away: requests carry none from now on.
    pub fn clear(&self) {
        if let Some(slot) = &self.0 {
            match slot.value.write() {
                Ok(mut g) => *g = None,
                Err(p) => *p.into_inner() = None,
            }
        }
    }

    /// Adds the header to `headers` (replacing one of the same name).
    pub fn apply(&self, headers: &mut HeaderMap) {
        let Some(slot) = &self.0 else {
            return;
        };
        let value = slot
            .value
            .read()
            .map_or_else(|p| p.into_inner().clone(), |g| g.clone());
        if let Some(v) = value {
            headers.insert(slot.name.clone(), v);
        }
    }

    /// The header alone, as a map.
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        self.apply(&mut h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_redacted_and_shared_by_its_clones() {
        let c = Credential::rotating("Authorization").unwrap();
        assert!(c.headers().is_empty(), "nothing until set");
        let seen_by_requests = c.clone();
        c.set("Bearer s3cret-token").unwrap();
        let h = seen_by_requests.headers();
        assert_eq!(h.get("authorization").unwrap(), "Bearer s3cret-token");
        assert!(h.get("authorization").unwrap().is_sensitive());
        for shown in [format!("{c:?}"), format!("{h:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
        }
        assert!(Credential::fixed("bad name", "x").is_err());
        assert!(Credential::fixed("X-Key", "line\nbreak").is_err());
    }
}
