//! JWT verification (`[auth.jwt]`) with `jsonwebtoken`: every key is pinned to one algorithm (the JWK's
//! `alg`, else the one its type and curve allow), and a token whose header names another is refused before
//! any signature is checked — RS256 → HS256 key confusion and `alg: none` cannot get through. HS256 only
//! with a configured secret, which is never a key of the JWK set (symmetric keys in a published set are
//! skipped). `iss`, `aud`, `exp` and `nbf` are checked with the configured leeway; `exp` is required.

use std::collections::HashSet;
use std::str::FromStr;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::principal::{Principal, Reason};
use crate::config::JwtConfig;

/// A verification key and the one algorithm it verifies.
#[derive(Clone)]
pub struct PinnedKey {
    /// Its `kid` (none for the HS256 secret).
    pub kid: Option<String>,
    /// Its algorithm.
    pub alg: Algorithm,
    key: DecodingKey,
}

impl std::fmt::Debug for PinnedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl PinnedKey {
    /// The HS256 secret as a key.
    pub fn secret(secret: &[u8]) -> PinnedKey {
        PinnedKey {
            kid: None,
            alg: Algorithm::HS256,
            key: DecodingKey::from_secret(secret),
        }
    }
}

/// The algorithm a JWK verifies: its `alg` when given, else what its type and curve allow (RSA: RS256).
fn algorithm_of(jwk: &Jwk) -> Result<Algorithm, String> {
    let stated = jwk.common.key_algorithm.map(|a| format!("{a:?}"));
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            ref other => return Err(format!("curve {other:?} is not supported")),
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => Algorithm::EdDSA,
            ref other => return Err(format!("curve {other:?} is not supported")),
        },
        AlgorithmParameters::OctetKey(_) => {
            return Err("a symmetric key in a published key set is skipped".to_owned());
        }
    };
    let Some(stated) = stated else {
        return Ok(implied);
    };
    let alg = Algorithm::from_str(&stated).map_err(|_| format!("alg {stated} is not supported"))?;
    let family_fits = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        _ => alg == implied,
    };
    if family_fits {
        Ok(alg)
    } else {
        Err(format!("alg {stated} does not fit the key's type"))
    }
}

/// The keys of a JWK set that verify one of `allowed`, each pinned; what was skipped and why.
pub fn pinned_keys(set: &JwkSet, allowed: &[Algorithm]) -> (Vec<PinnedKey>, Vec<String>) {
    let mut keys = Vec::new();
    let mut skipped = Vec::new();
    for jwk in &set.keys {
        let kid = jwk.common.key_id.clone();
        let name = kid.clone().unwrap_or_else(|| "(no kid)".to_owned());
        if jwk
            .common
            .public_key_use
            .as_ref()
            .is_some_and(|u| !matches!(u, jsonwebtoken::jwk::PublicKeyUse::Signature))
        {
            skipped.push(format!("{name}: not a signing key"));
            continue;
        }
        match algorithm_of(jwk) {
            Ok(alg) if allowed.contains(&alg) => match DecodingKey::from_jwk(jwk) {
                Ok(key) => keys.push(PinnedKey { kid, alg, key }),
                Err(e) => skipped.push(format!("{name}: {e}")),
            },
            Ok(alg) => skipped.push(format!("{name}: {alg:?} is not in auth.jwt.algorithms")),
            Err(why) => skipped.push(format!("{name}: {why}")),
        }
    }
    (keys, skipped)
}

/// What a token is checked against.
#[derive(Debug, Clone)]
pub struct Rules {
    issuer: String,
    audiences: Vec<String>,
    leeway: u64,
    principal_claim: String,
    groups_claim: String,
    /// The algorithms configured.
    pub allowed: Vec<Algorithm>,
}

impl Rules {
    /// From `[auth.jwt]`; `resource` (the OAuth resource URI) is an accepted audience too.
    pub fn new(config: &JwtConfig, resource: Option<&str>) -> Rules {
        let mut audiences = config.audience.to_vec();
        if let Some(r) = resource {
            audiences.push(r.to_owned());
        }
        Rules {
            issuer: config.issuer.clone(),
            audiences,
            leeway: config.leeway_secs,
            principal_claim: config.principal_claim.clone(),
            groups_claim: config.groups_claim.clone(),
            allowed: config
                .algorithms
                .iter()
                .filter_map(|a| Algorithm::from_str(a).ok())
                .collect(),
        }
    }

    /// The key of `kid`/`alg` among `keys` (and `secret`), or why there is none.
    fn key_for<'k>(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        keys: &'k [PinnedKey],
        secret: Option<&'k PinnedKey>,
    ) -> Result<&'k PinnedKey, Reason> {
        if !self.allowed.contains(&alg) {
            return Err(Reason::Algorithm);
        }
        if alg == Algorithm::HS256 {
            // Only the configured secret verifies HS256, never a published key (key confusion).
            return secret.ok_or(Reason::Algorithm);
        }
        let key = match kid {
            Some(kid) => keys
                .iter()
                .find(|k| k.kid.as_deref() == Some(kid))
                .ok_or(Reason::UnknownKey)?,
            None => {
                let mut fitting = keys.iter().filter(|k| k.alg == alg);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => only,
                    _ => return Err(Reason::UnknownKey),
                }
            }
        };
        if key.alg != alg {
            return Err(Reason::Algorithm);
        }
        Ok(key)
    }

    /// Verifies `token` with `keys` (and the HS256 `secret`); the principal it names.
    pub fn verify(
        &self,
        token: &str,
        keys: &[PinnedKey],
        secret: Option<&PinnedKey>,
    ) -> Result<Principal, Reason> {
        // `alg: none` and unknown algorithms fail here, as malformed.
        let header = jsonwebtoken::decode_header(token).map_err(|_| Reason::Malformed)?;
        let key = self.key_for(header.kid.as_deref(), header.alg, keys, secret)?;
        let mut validation = Validation::new(key.alg);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audiences);
        validation.required_spec_claims = ["exp", "iss", "aud"]
            .into_iter()
            .map(str::to_owned)
            .collect::<HashSet<_>>();
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| Reason::of(e.kind()))?;
        self.principal(&data.claims)
    }

    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, Reason> {
        let name = match claims.get(&self.principal_claim) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(Reason::NoPrincipal),
        };
        let issuer = claims.get("iss").and_then(Value::as_str).map(str::to_owned);
        Ok(Principal {
            name,
            source: super::principal::PrincipalSource::Jwt { issuer },
            groups: strings(claims.get(&self.groups_claim)),
            scopes: strings(
                claims
                    .get("scope")
                    .filter(|v| !v.is_null())
                    .or_else(|| claims.get("scp")),
            ),
            token: None,
        })
    }
}

/// A claim holding a list of strings or one space-separated string.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

impl Reason {
    fn of(kind: &jsonwebtoken::errors::ErrorKind) -> Reason {
        use jsonwebtoken::errors::ErrorKind as K;
        match kind {
            K::ExpiredSignature => Reason::Expired,
            K::ImmatureSignature => Reason::NotYetValid,
            K::InvalidAudience => Reason::Audience,
            K::InvalidIssuer => Reason::Issuer,
            K::InvalidSignature => Reason::Signature,
            K::InvalidAlgorithm | K::InvalidAlgorithmName => Reason::Algorithm,
            K::MissingRequiredClaim(_) => Reason::MissingClaim,
            _ => Reason::Malformed,
        }
    }
}

#[cfg(test)]
mod tests;
