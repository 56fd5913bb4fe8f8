//! Why an exchange has no answer: [`Failure`], and which broken connections a request is sent again for.

use super::MAX_BODY;
use crate::stats::Outcome;

/// Whether an exchange failed because its connection was closed or reset after the request went out and
/// before any byte of an answer came back, on a connection that had been made (not a refused connect, not
/// a timeout). That is what a keep-alive connection meets when the server, or a load balancer in front of
/// it (nginx on `-s reload` closes its idle client connections, also one whose next request has just
/// arrived), closes it as the request crosses: the request was never read. Browsers send such a request
/// again on a new connection; so does the generator, once, and counts it (`resent`).
pub(super) fn closed_before_any_answer(error: &reqwest::Error) -> bool {
    if error.is_connect() || error.is_timeout() || !error.is_request() {
        return false;
    }
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{
                BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof,
            };
            return matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            );
        }
        if e.to_string()
            .contains("connection closed before message completed")
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// The kinds of [`Failure::Transport`], a closed set (they key a report's `transport_reasons`).
const REFUSED: &str = "connection refused";
const CONNECT: &str = "cannot connect";
const CLOSED_BEFORE_ANSWER: &str = "closed before any answer";
const BODY: &str = "answer cut short";
const OTHER: &str = "other";

/// Why there is no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No whole answer within the request deadline (connecting included).
    Timeout,
    /// The connection could not be made or broke: its kind (a report's `transport_reasons` key, from a
    /// closed set) and why, plainly ("connection refused").
    Transport(&'static str, String),
    TooLarge,
}

impl Failure {
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Failure::Timeout => Outcome::Timeout,
            Failure::Transport(kind, _) => Outcome::Transport(kind),
            Failure::TooLarge => Outcome::Invalid("body too large"),
        }
    }

    /// What reqwest's error means for the exchange: a timeout, or a transport failure said plainly. Its
    /// `Display` repeats every layer ("error sending request for url (...)"); what a user needs is the
    /// innermost cause, and "connection refused" when nothing listens.
    pub(super) fn of(error: &reqwest::Error) -> Failure {
        if error.is_timeout() {
            return Failure::Timeout;
        }
        let mut innermost: &dyn std::error::Error = error;
        let mut source = std::error::Error::source(error);
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                match io.kind() {
                    std::io::ErrorKind::ConnectionRefused => {
                        return Failure::Transport(REFUSED, "connection refused".to_owned());
                    }
                    std::io::ErrorKind::TimedOut => return Failure::Timeout,
                    _ => {}
                }
            }
            innermost = e;
            source = e.source();
        }
        let why = innermost.to_string();
        if error.is_connect() {
            return Failure::Transport(CONNECT, format!("cannot connect: {why}"));
        }
        let kind = if closed_before_any_answer(error) {
            CLOSED_BEFORE_ANSWER
        } else if error.is_body() || error.is_decode() {
            BODY
        } else {
            OTHER
        };
        Failure::Transport(kind, why)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("no answer within the request deadline (--timeout)"),
            Failure::Transport(_, why) => f.write_str(why),
            Failure::TooLarge => write!(f, "an answer larger than {} MiB", MAX_BODY >> 20),
        }
    }
}
