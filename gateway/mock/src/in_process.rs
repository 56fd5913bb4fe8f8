//! The mock backend inside the gateway process (`builtin = ["mock-backend", ...]` in the config): the same
//! dispatcher as `--stdio` and `--listen`, answering 2026-07-28 requests handed over as bytes by the
//! gateway's in-process link (`handlers::InProcessServer`), with no pipe, socket or child process.
//!
//! The flags that make sense inside a gateway are accepted (tools, latency, payload, error rate, name,
//! ttl); `--stdio`, `--listen`, `--crash-after` (which would end the gateway's process) and a legacy-only
//! `--era` are refused.

use std::sync::Arc;

use clap::Parser;
use handlers::{InProcessAnswer, InProcessServer};
use protocol::message::{Parsed, parse};
use protocol::shape::response_bytes;
use protocol::{Error, ErrorCode, Generation, Message, Response};

use super::dispatch::Mock;
use super::{EraMode, MockArgs};

const MODERN: Generation = Generation::V2026_07_28;

/// The mock as an in-process server.
#[derive(Debug)]
pub struct InProcessMock(Arc<Mock>);

#[derive(Debug, Parser)]
#[command(name = "mock-backend", no_binary_name = true)]
struct Words {
    #[command(flatten)]
    args: MockArgs,
}

impl InProcessMock {
    /// A mock configured by `mock-backend` command-line words (without `mock-backend` itself); why not,
    /// in one line.
    pub fn from_words(words: &[String]) -> Result<InProcessMock, String> {
        let args = Words::try_parse_from(words)
            .map_err(|e| {
                e.render()
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })?
            .args;
        if args.stdio || args.listen.is_some() {
            return Err("--stdio and --listen do not apply to a builtin backend".to_owned());
        }
        if args.crash_after.is_some() {
            return Err("--crash-after would end the gateway's own process".to_owned());
        }
        if args.era == EraMode::Legacy {
            return Err("a builtin backend serves 2026-07-28 (--era dual or modern)".to_owned());
        }
        if !(0.0..=1.0).contains(&args.error_rate) {
            return Err(format!(
                "--error-rate must be between 0 and 1, not {}",
                args.error_rate
            ));
        }
        Ok(InProcessMock(Arc::new(Mock::new(&args))))
    }
}

impl InProcessServer for InProcessMock {
    fn handle(&self, message: Vec<u8>) -> InProcessAnswer {
        let mock = Arc::clone(&self.0);
        Box::pin(async move {
            match parse(&message) {
                Ok(Parsed::Single(Message::Request(request))) => {
                    Some(mock.answer(MODERN, &request).await.body)
                }
                Ok(Parsed::Single(_)) => None,
                Ok(Parsed::Batch(_)) => Some(response_bytes(
                    &Response::error(
                        None,
                        Error::new(ErrorCode::InvalidRequest, "batches are not served"),
                    ),
                    MODERN,
                )),
                Err(e) => Some(response_bytes(&Response::error(None, e.error), MODERN)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    async fn ask(mock: &InProcessMock, body: Value) -> Value {
        let answer = mock.handle(body.to_string().into_bytes()).await.unwrap();
        serde_json::from_slice(&answer).unwrap()
    }

    #[actix_rt::test]
    async fn it_answers_2026_requests_handed_over_as_bytes() {
        let mock =
            InProcessMock::from_words(&words(&["--tools", "2", "--name", "inside"])).unwrap();
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
        let discover = ask(
            &mock,
            json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
            "params": {"_meta": meta}}),
        )
        .await;
        assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
        let echo = ask(
            &mock,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"_meta": meta, "name": "echo", "arguments": {"text": "hi"}}}),
        )
        .await;
        assert_eq!(echo["id"], 7);
        assert_eq!(echo["result"]["content"][0]["text"], "hi");
        assert!(
            mock.handle(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec())
                .await
                .is_none()
        );
        let garbage = mock.handle(b"{nope".to_vec()).await.unwrap();
        let garbage: Value = serde_json::from_slice(&garbage).unwrap();
        assert_eq!(garbage["error"]["code"], -32700);
    }

    #[test]
    fn flags_that_do_not_apply_inside_the_gateway_are_refused() {
        for bad in [
            &["--stdio"][..],
            &["--listen", "127.0.0.1:1"],
            &["--crash-after", "3"],
            &["--era", "legacy"],
            &["--error-rate", "2"],
            &["--no-such-flag"],
        ] {
            assert!(InProcessMock::from_words(&words(bad)).is_err(), "{bad:?}");
        }
        assert!(
            InProcessMock::from_words(&words(&["--latency-ms", "1", "--era", "modern"])).is_ok()
        );
    }
}
