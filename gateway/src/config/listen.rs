//! Listen addresses as people write them: `7800` (loopback), `localhost:7800`, `127.0.0.1:7800`,
//! `0.0.0.0:7800`, `[::1]:7800`. A host name other than `localhost` is refused with what is expected: the
//! gateway binds an address, and resolving a name to pick one would bind whatever DNS says today.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// What a listen address may be, for the error message.
const EXPECTED: &str = "expected PORT (on 127.0.0.1), localhost:PORT, or IP:PORT such as 127.0.0.1:7800, 0.0.0.0:7800 or [::1]:7800";

/// Reads a listen address: a port alone listens on loopback; `localhost` is 127.0.0.1.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some((host, port)) = text.rsplit_once(':')
        && host.eq_ignore_ascii_case("localhost")
    {
        return port
            .parse::<u16>()
            .map(|port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
            .map_err(|_| {
                format!("{text:?}: the port is not a number from 0 to 65535; {EXPECTED}")
            });
    }
    Err(format!("{text:?} is not a listen address: {EXPECTED}"))
}

/// `serde` reading of a listen address (a TOML string) through [`parse_listen`].
pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
    parse_listen(&text).map_err(serde::de::Error::custom)
}

/// The same for an optional address (`[admin] listen`).
pub(super) fn deserialize_option<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let text = <Option<std::borrow::Cow<'de, str>> as serde::Deserialize>::deserialize(d)?;
    text.map(|t| parse_listen(&t).map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_as_people_write_them() {
        let ok = [
            ("7800", "127.0.0.1:7800"),
            (" 7800 ", "127.0.0.1:7800"),
            ("localhost:7800", "127.0.0.1:7800"),
            ("LOCALHOST:0", "127.0.0.1:0"),
            ("127.0.0.1:7800", "127.0.0.1:7800"),
            ("0.0.0.0:7800", "0.0.0.0:7800"),
            ("[::1]:7800", "[::1]:7800"),
            ("[::]:443", "[::]:443"),
        ];
        for (text, want) in ok {
            assert_eq!(
                parse_listen(text).map(|a| a.to_string()),
                Ok(want.to_owned()),
                "{text}"
            );
        }
        let refused = [
            (
                "example.com:7800",
                "\"example.com:7800\" is not a listen address: expected PORT",
            ),
            (
                "localhost",
                "\"localhost\" is not a listen address: expected PORT",
            ),
            (
                "localhost:http",
                "\"localhost:http\": the port is not a number from 0 to 65535",
            ),
            ("70000", "\"70000\" is not a listen address"),
            ("", "\"\" is not a listen address"),
        ];
        for (text, starts) in refused {
            let e = parse_listen(text).expect_err(text);
            assert!(e.starts_with(starts), "{text}: {e}");
        }
    }

    #[test]
    fn the_config_reads_them_too_and_names_the_field_when_it_cannot() {
        use std::path::Path;
        let toml = "[server]\nlisten = \"7800\"\n[admin]\nlisten = \"localhost:7801\"\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n";
        let config = crate::config::Config::from_toml_str(toml, Path::new("l.toml")).unwrap();
        assert_eq!(config.server.listen.to_string(), "127.0.0.1:7800");
        assert_eq!(
            config.admin.listen.map(|a| a.to_string()).as_deref(),
            Some("127.0.0.1:7801")
        );
        let bad = toml.replace("\"7800\"", "\"example.com:7800\"");
        let e = crate::config::Config::from_toml_str(&bad, Path::new("l.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("listen") && e.contains("expected PORT"), "{e}");
    }
}
