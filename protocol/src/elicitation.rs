//! URL-mode elicitation across generations: what a backend's "the user must open this URL" becomes for a
//! client of each generation.
//!
//! On 2025-11-25 a server says it in two ways: the JSON-RPC error -32042 (`URLElicitationRequired`, its
//! `data.elicitations` a list of `{mode: "url", elicitationId, url, message}`), or an `elicitation/create`
//! request in URL mode, followed later by `notifications/elicitation/complete {elicitationId}`. On 2026-07-28
//! there is no -32042, no `elicitationId` and no completion notification: a URL elicitation is an
//! `input_required` result whose input request is `elicitation/create` with `{mode: "url", url, message}`.
//! A client can be asked only when it declared `elicitation.url`; one that cannot be asked is told the URL
//! in words ([`describe`]). The rules here are pure; the gateway holds the state (sealing, routing the
//! completion, whose consent it is).

use serde_json::{Value, json};

use crate::error::{Error, ErrorCode};
use crate::generation::Generation;
use crate::payload::{ElicitRequestParams, missing_capabilities};

/// The most URL elicitations one -32042 or one `input_required` result may carry through the gateway.
pub const MAX_ELICITATIONS: usize = 8;
/// The longest URL relayed (a longer one is refused, not cut).
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// The longest message relayed (a longer one is cut at a character boundary).
pub const MAX_MESSAGE_BYTES: usize = 2 * 1024;

/// One URL the user must open, with what to tell them and, on 2025-11-25, the server's id for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    /// The server's `elicitationId` (2025-11-25); none from a 2026-07-28 server.
    pub id: Option<String>,
    /// Where to send the user: an absolute `https://` or `http://` URL.
    pub url: String,
    /// Why.
    pub message: String,
}

/// Why a URL elicitation cannot go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not URL mode, or no `url`.
    #[error("not a url-mode elicitation")]
    NotUrlMode,
    /// The URL is not absolute `http(s)://` (a `javascript:` or `file:` URL is never shown to a client).
    #[error("the url is not an absolute http(s) url")]
    Scheme,
    /// The URL is longer than [`MAX_URL_BYTES`].
    #[error("the url is longer than {MAX_URL_BYTES} bytes")]
    TooLong,
    /// More than [`MAX_ELICITATIONS`] at once, or none.
    #[error("a url elicitation must name between 1 and {MAX_ELICITATIONS} urls")]
    Count,
}

impl UrlElicitation {
    /// The URL elicitation of `elicitation/create` params, checked; [`UrlError::NotUrlMode`] for form mode.
    pub fn from_params(params: &ElicitRequestParams) -> Result<UrlElicitation, UrlError> {
        let url = params
            .url
            .as_deref()
            .filter(|_| params.is_url_mode())
            .ok_or(UrlError::NotUrlMode)?;
        Self::checked(params.elicitation_id.clone(), url, &params.message)
    }

    /// The URL elicitation of raw `elicitation/create` params (`None`: not URL mode, or unreadable).
    pub fn from_value(params: &Value) -> Option<Result<UrlElicitation, UrlError>> {
        if params.get("mode").and_then(Value::as_str) != Some("url") {
            return None;
        }
        let params: ElicitRequestParams = match serde_json::from_value(params.clone()) {
            Ok(p) => p,
            Err(_) => return Some(Err(UrlError::NotUrlMode)),
        };
        Some(Self::from_params(&params))
    }

    fn checked(id: Option<String>, url: &str, message: &str) -> Result<UrlElicitation, UrlError> {
        if url.len() > MAX_URL_BYTES {
            return Err(UrlError::TooLong);
        }
        let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
        let absolute = (lower.starts_with("https://") && url.len() > 8)
            || (lower.starts_with("http://") && url.len() > 7);
        if !absolute || url.chars().any(|c| c.is_control() || c == ' ') {
            return Err(UrlError::Scheme);
        }
        Ok(UrlElicitation {
            id,
            url: url.to_owned(),
            message: cut(message, MAX_MESSAGE_BYTES).to_owned(),
        })
    }

    /// `elicitation/create` params for a 2025-11-25 client, under `id`.
    pub fn legacy_params(&self, id: &str) -> Value {
        json!({"mode": "url", "elicitationId": id, "url": self.url, "message": self.message})
    }

    /// `elicitation/create` params for a 2026-07-28 client (no `elicitationId`).
    pub fn modern_params(&self) -> Value {
        json!({"mode": "url", "url": self.url, "message": self.message})
    }
}

/// The URL elicitations of a -32042 error (`data.elicitations`), checked: `None` for another code;
/// an error when the data holds none, too many, or one that is not a relayable URL.
pub fn required(error: &Error) -> Option<Result<Vec<UrlElicitation>, UrlError>> {
    if error.code() != ErrorCode::UrlElicitationRequiredError {
        return None;
    }
    let listed = error
        .data()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array);
    let Some(listed) = listed.filter(|l| !l.is_empty() && l.len() <= MAX_ELICITATIONS) else {
        return Some(Err(UrlError::Count));
    };
    Some(
        listed
            .iter()
            .map(|e| UrlElicitation::from_value(e).unwrap_or(Err(UrlError::NotUrlMode)))
            .collect(),
    )
}

/// A -32042 error for a 2025-11-25 client, the elicitations under the ids given.
pub fn required_error(
    message: impl Into<std::borrow::Cow<'static, str>>,
    elicitations: &[(String, UrlElicitation)],
) -> Error {
    let listed: Vec<Value> = elicitations
        .iter()
        .map(|(id, e)| e.legacy_params(id))
        .collect();
    Error::new(ErrorCode::UrlElicitationRequiredError, message)
        .with_data(json!({ "elicitations": listed }))
}

/// How a URL elicitation reaches a client of `generation` that declared `capabilities`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// 2025-11-25 with `elicitation.url`: the -32042 error as it is, or the `elicitation/create` request.
    Legacy,
    /// 2026-07-28 with `elicitation.url`: an `input_required` result with URL-mode input requests.
    InputRequired,
    /// Any client that cannot be asked: the URL said in words ([`describe`]), a tool error on `tools/call`.
    Described,
}

/// Whether `capabilities` (a client's `ClientCapabilities`) declare URL-mode elicitation.
pub fn accepts_url(capabilities: Option<&Value>) -> bool {
    capabilities.is_some_and(|declared| {
        missing_capabilities(&json!({"elicitation": {"url": {}}}), declared).is_none()
    })
}

/// How a URL elicitation reaches a client: asked when it can be (its generation has URL mode and it
/// declared `elicitation.url`), else described.
pub fn delivery(generation: Generation, capabilities: Option<&Value>) -> Delivery {
    match (generation, accepts_url(capabilities)) {
        (g, true) if g.is_modern() => Delivery::InputRequired,
        (Generation::V2025_11_25, true) => Delivery::Legacy,
        _ => Delivery::Described,
    }
}

/// The URLs said for a person: what a client that cannot be asked shows (the model reads it in a tool
/// error, and can tell the user).
pub fn describe(elicitations: &[UrlElicitation]) -> String {
    let mut out = String::from("the user must open ");
    for (i, e) in elicitations.iter().enumerate() {
        if i > 0 {
            out.push_str(", then ");
        }
        out.push_str(&e.url);
        if !e.message.is_empty() {
            out.push_str(" (");
            out.push_str(&e.message);
            out.push(')');
        }
    }
    out.push_str(" and then retry");
    out
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(url: &str) -> Value {
        json!({"mode": "url", "elicitationId": "e1", "url": url, "message": "sign in"})
    }

    #[test]
    fn which_urls_go_through() {
        // (url, relayed)
        let table: [(&str, Result<(), UrlError>); 8] = [
            ("https://idp.example/consent?x=1", Ok(())),
            ("http://127.0.0.1:9/consent/e1", Ok(())),
            ("HTTPS://IDP.EXAMPLE/", Ok(())),
            ("javascript:alert(1)", Err(UrlError::Scheme)),
            ("file:///etc/passwd", Err(UrlError::Scheme)),
            ("https://", Err(UrlError::Scheme)),
            ("https://a.example/\nx", Err(UrlError::Scheme)),
            ("/relative", Err(UrlError::Scheme)),
        ];
        for (url, want) in table {
            let got = UrlElicitation::from_value(&e(url)).unwrap().map(|_| ());
            assert_eq!(got, want, "{url}");
        }
        let long = format!("https://a.example/{}", "x".repeat(MAX_URL_BYTES));
        assert_eq!(
            UrlElicitation::from_value(&e(&long)).unwrap(),
            Err(UrlError::TooLong)
        );
        assert!(UrlElicitation::from_value(&json!({"message": "form"})).is_none());
    }

    #[test]
    fn a_minus_32042_lists_its_elicitations() {
        let error = Error::new(ErrorCode::UrlElicitationRequiredError, "auth")
            .with_data(json!({"elicitations": [e("https://a.example/1")]}));
        let got = required(&error).unwrap().unwrap();
        assert_eq!(got[0].id.as_deref(), Some("e1"));
        assert_eq!(got[0].url, "https://a.example/1");
        // (data, what it gives)
        let bad = [
            json!({}),
            json!({"elicitations": []}),
            json!({"elicitations": vec![e("https://a.example/"); MAX_ELICITATIONS + 1]}),
        ];
        for data in bad {
            let error = Error::new(ErrorCode::UrlElicitationRequiredError, "x").with_data(data);
            assert_eq!(required(&error).unwrap(), Err(UrlError::Count));
        }
        let form = Error::new(ErrorCode::UrlElicitationRequiredError, "x")
            .with_data(json!({"elicitations": [{"mode": "form", "message": "m"}]}));
        assert_eq!(required(&form).unwrap(), Err(UrlError::NotUrlMode));
        assert!(required(&Error::new(ErrorCode::InternalError, "x")).is_none());
    }

    #[test]
    fn delivery_by_generation_and_capability() {
        let url = json!({"elicitation": {"url": {}}});
        let both = json!({"elicitation": {"form": {}, "url": {}}});
        let form = json!({"elicitation": {}});
        // (generation, capabilities, delivery)
        let table = [
            (Generation::V2025_11_25, Some(&url), Delivery::Legacy),
            (Generation::V2025_11_25, Some(&both), Delivery::Legacy),
            (Generation::V2025_11_25, Some(&form), Delivery::Described),
            (Generation::V2025_11_25, None, Delivery::Described),
            (Generation::V2025_06_18, Some(&url), Delivery::Described),
            (Generation::V2026_07_28, Some(&url), Delivery::InputRequired),
            (Generation::V2026_07_28, Some(&form), Delivery::Described),
        ];
        for (g, caps, want) in table {
            assert_eq!(delivery(g, caps), want, "{g} {caps:?}");
        }
    }

    #[test]
    fn params_per_generation_and_the_words() {
        let u = UrlElicitation::from_value(&e("https://a.example/c"))
            .unwrap()
            .unwrap();
        assert_eq!(
            u.modern_params(),
            json!({"mode": "url", "url": "https://a.example/c", "message": "sign in"})
        );
        assert_eq!(u.legacy_params("g1")["elicitationId"], "g1");
        assert_eq!(
            describe(std::slice::from_ref(&u)),
            "the user must open https://a.example/c (sign in) and then retry"
        );
        let err = required_error("needs you", &[("g1".into(), u)]);
        assert_eq!(err.code().code(), -32042);
        assert_eq!(
            err.data().unwrap()["elicitations"][0]["elicitationId"],
            "g1"
        );
    }

    #[test]
    fn what_is_written_for_each_generation_conforms_to_its_schema() {
        use crate::schema_check::check;
        let u = UrlElicitation::from_value(&e("https://a.example/c"))
            .unwrap()
            .unwrap();
        check(
            Generation::V2025_11_25,
            "ElicitRequestURLParams",
            &u.legacy_params("g1"),
        )
        .unwrap();
        check(
            Generation::V2026_07_28,
            "ElicitRequestURLParams",
            &u.modern_params(),
        )
        .unwrap();
        let err = required_error("needs you", &[("g1".into(), u)]);
        let wire = json!({"jsonrpc": "2.0", "id": 1, "error": {
            "code": err.code().wire_code(Generation::V2025_11_25),
            "message": err.message(), "data": err.data()}});
        check(
            Generation::V2025_11_25,
            "URLElicitationRequiredError",
            &wire,
        )
        .unwrap();
        let complete = json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
            "params": {"elicitationId": "g1"}});
        check(
            Generation::V2025_11_25,
            "ElicitationCompleteNotification",
            &complete,
        )
        .unwrap();
    }
}
