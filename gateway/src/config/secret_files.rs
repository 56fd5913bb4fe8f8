//! Secrets the config names by file rather than holds — `[[auth.api_key]] digest_file` and `[cluster]
//! redis_password_file` — read when the config is loaded (at start, by `mcpgw check`, and on every reload),
//! so that the config itself (a Kubernetes ConfigMap, a file in git) holds none: a Kubernetes Secret or a
//! compose secret is mounted where the file is named. What a file holds is put where the inline setting
//! would have put it (the digest; the password of the Redis URL), and every view of the config hides it as
//! it hides the inline one.
//!
//! It must not log or put in an error what a file holds.

use std::path::Path;

use super::auth::parse_digest;
use super::{Config, ConfigError, invalid};

/// Reads every file `config` names a secret by, into the settings they stand for.
pub(super) fn read(config: &mut Config) -> Result<(), ConfigError> {
    for (i, key) in config.auth.api_keys.iter_mut().enumerate() {
        let field = |f: &str| format!("auth.api_key[{i}].{f}");
        match (key.digest.is_empty(), &key.digest_file) {
            (false, Some(_)) => {
                return Err(invalid(
                    field("digest_file"),
                    "give digest or digest_file, not both",
                ));
            }
            (true, None) => {
                return Err(invalid(
                    field("digest"),
                    "missing: give digest (sha256:HEX) or digest_file (a file holding it)",
                ));
            }
            (false, None) => {}
            (true, Some(path)) => {
                let text = secret(path, &field("digest_file"))?;
                if parse_digest(&text.to_ascii_lowercase()).is_none() {
                    return Err(invalid(
                        field("digest_file"),
                        format!(
                            "{} does not hold sha256:<64 hex digits>, as `mcpgw auth hash-key` prints it",
                            path.display()
                        ),
                    ));
                }
                key.digest = text;
            }
        }
    }
    let cluster = &mut config.cluster;
    if let Some(path) = &cluster.redis_password_file {
        let Some(url) = &cluster.redis else {
            return Err(invalid(
                "cluster.redis_password_file",
                "a password for [cluster] redis: set redis too",
            ));
        };
        let password = secret(path, "cluster.redis_password_file")?;
        cluster.redis = Some(with_password(url, &password)?);
    }
    Ok(())
}

/// A secret file's text, without the line end an editor or `kubectl create secret --from-file` leaves.
fn secret(path: &Path, field: &str) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(field, format!("cannot read {}: {e}", path.display())))?;
    let text = text.trim_end_matches(['\n', '\r']).to_owned();
    if text.is_empty() {
        return Err(invalid(field, format!("{} is empty", path.display())));
    }
    Ok(text)
}

/// `url` with `password` as its password (percent-encoded), keeping a user it names (Redis 6's ACL user;
/// none: `default`'s password, Redis's `requirepass`).
fn with_password(url: &str, password: &str) -> Result<String, ConfigError> {
    let field = "cluster.redis_password_file";
    let mut parsed = reqwest::Url::parse(url)
        .map_err(|e| invalid("cluster.redis", format!("not a URL: {e}")))?;
    if parsed.password().is_some() {
        return Err(invalid(
            field,
            "cluster.redis already holds a password: give it in one place",
        ));
    }
    parsed
        .set_password(Some(password))
        .map_err(|()| invalid(field, "cluster.redis has no host to give a password to"))?;
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A digest as `mcpgw auth hash-key` prints one (of no key in particular).
    const DIGEST: &str = "sha256:5f0c4e1a2b3d4c5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6";

    fn dir(test: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpgw-secret-files-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn load(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, Path::new("t.toml"))
    }

    fn field(r: Result<Config, ConfigError>) -> String {
        match r {
            Err(ConfigError::Invalid { field, .. }) => field,
            other => panic!("not an invalid field: {other:?}"),
        }
    }

    #[test]
    fn an_api_keys_digest_is_read_from_its_file_and_a_bad_file_is_refused() {
        let dir = dir("digest");
        let digest = DIGEST.to_owned();
        let file = dir.join("digest");
        // As `kubectl create secret --from-file` leaves it: a line end.
        std::fs::write(&file, format!("{digest}\n")).unwrap();
        let table = |rest: &str| format!("[[auth.api_key]]\nprincipal = \"client\"\n{rest}");
        let config = load(&table(&format!(
            "digest_file = {:?}\n",
            file.display().to_string()
        )))
        .unwrap();
        assert_eq!(config.auth.api_keys[0].digest, digest);
        assert!(config.auth.enabled(), "authentication is on");

        let garbage = dir.join("garbage");
        std::fs::write(&garbage, "REPLACE ME\n").unwrap();
        let empty = dir.join("empty");
        std::fs::write(&empty, "\n").unwrap();
        for (rest, want) in [
            (
                format!("digest_file = {:?}\n", garbage.display().to_string()),
                "auth.api_key[0].digest_file",
            ),
            (
                format!("digest_file = {:?}\n", empty.display().to_string()),
                "auth.api_key[0].digest_file",
            ),
            (
                "digest_file = \"/nonexistent/mcpgw/digest\"\n".to_owned(),
                "auth.api_key[0].digest_file",
            ),
            (
                format!(
                    "digest = \"{digest}\"\ndigest_file = {:?}\n",
                    file.display().to_string()
                ),
                "auth.api_key[0].digest_file",
            ),
            (String::new(), "auth.api_key[0].digest"),
        ] {
            let got = load(&table(&rest));
            let text = format!("{got:?}");
            assert_eq!(field(got), want, "{rest}");
            assert!(
                !text.contains("REPLACE ME"),
                "a file's text in an error: {text}"
            );
        }
    }

    #[test]
    fn the_redis_password_is_read_from_its_file_into_the_url() {
        let dir = dir("redis");
        let file = dir.join("redis-password");
        std::fs::write(&file, "p@ss/word\n").unwrap();
        let text = |redis: &str| {
            format!(
                "[cluster]\nredis = \"{redis}\"\nredis_password_file = {:?}\n",
                file.display().to_string()
            )
        };
        let config = load(&text("redis://redis:6379/0")).unwrap();
        assert_eq!(
            config.cluster.redis.as_deref(),
            Some("redis://:p%40ss%2Fword@redis:6379/0")
        );
        let config = load(&text("rediss://gateway@redis.example.com:6380")).unwrap();
        assert_eq!(
            config.cluster.redis.as_deref(),
            Some("rediss://gateway:p%40ss%2Fword@redis.example.com:6380")
        );
        // The config as shown hides it.
        let shown = serde_json::to_string(&config.cluster).unwrap();
        assert!(
            !shown.contains("ss%2Fword") && !shown.contains("p@ss"),
            "{shown}"
        );
        assert_eq!(
            field(load(&text("redis://:inline@redis:6379"))),
            "cluster.redis_password_file"
        );
        assert_eq!(
            field(load(&format!(
                "[cluster]\nredis_password_file = {:?}\n",
                file.display().to_string()
            ))),
            "cluster.redis_password_file"
        );
    }
}
