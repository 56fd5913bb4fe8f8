//! Input requests (sampling, elicitation, roots: a backend's requests to a client) the gateway sends a legacy
//! client on behalf of a backend, and the
//! client's answers, which arrive as separate POSTs: the session matches them by the id the gateway minted.
//! Bounded: a session has at most [`MAX_OUTSTANDING`] questions open; waiting is bounded by the caller.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use protocol::{Error, RequestId, Response};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

/// A client's answer: its result, or the error it answered with.
pub type Answer = Result<Box<RawValue>, Error>;

/// How the ids of the gateway's questions start: `mcpgw-ask-{replica}-{n}`.
const ASK_PREFIX: &str = "mcpgw-ask-";

/// The replica that asked the question a client's response answers, when it was this gateway's.
pub fn asked_by(response: &Response) -> Option<String> {
    let id = response.id.as_ref().and_then(RequestId::as_string)?;
    let rest = id.strip_prefix(ASK_PREFIX)?;
    let (replica, _) = rest.split_once('-')?;
    Some(replica.to_owned())
}

/// Questions one session may have open at once.
pub const MAX_OUTSTANDING: usize = 64;

/// Why a question cannot be asked.
#[derive(Debug, thiserror::Error)]
pub enum InputRequestError {
    /// Too many questions are open.
    #[error("the client has {MAX_OUTSTANDING} questions open already")]
    TooMany,
}

/// The open questions of one session.
#[derive(Debug, Default)]
pub struct InputRequests {
    next: AtomicU64,
    open: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
}

/// One open question: its id (to put in the request) and where the answer arrives. Dropping it withdraws
/// the question.
#[derive(Debug)]
pub struct OpenInputRequest<'a> {
    /// The id minted for the request to the client.
    pub id: RequestId,
    /// The client's answer.
    pub answer: oneshot::Receiver<Answer>,
    asks: &'a InputRequests,
    key: String,
}

impl Drop for OpenInputRequest<'_> {
    fn drop(&mut self) {
        if let Ok(mut open) = self.asks.open.lock() {
            open.remove(&self.key);
        }
    }
}

impl InputRequests {
    /// Opens a question.
    pub fn open(&self) -> Result<OpenInputRequest<'_>, InputRequestError> {
        let key = format!(
            "{}{}-{}",
            ASK_PREFIX,
            crate::cluster::replica(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = oneshot::channel();
        let mut open = self.open.lock().map_err(|_| InputRequestError::TooMany)?;
        if open.len() >= MAX_OUTSTANDING {
            return Err(InputRequestError::TooMany);
        }
        open.insert(key.clone(), tx);
        Ok(OpenInputRequest {
            id: RequestId::string(&key),
            answer: rx,
            asks: self,
            key,
        })
    }

    /// Routes a client's response to its question; `false` when no such question is open.
    pub fn answer(&self, response: Response) -> bool {
        let Some(key) = response.id.as_ref().and_then(RequestId::as_string) else {
            return false;
        };
        let tx = match self.open.lock() {
            Ok(mut open) => open.remove(&key),
            Err(_) => None,
        };
        match tx {
            Some(tx) => tx.send(response.body).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_reach_their_question_once() {
        let asks = InputRequests::default();
        let mut ask = asks.open().unwrap();
        let result = RawValue::from_string("{\"ok\":true}".into()).unwrap();
        assert!(asks.answer(Response::result(ask.id.clone(), result)));
        assert!(ask.answer.try_recv().unwrap().is_ok());
        let again = RawValue::from_string("{}".into()).unwrap();
        assert!(
            !asks.answer(Response::result(ask.id.clone(), again)),
            "answered once"
        );
        assert!(!asks.answer(Response::result(
            RequestId::string("other"),
            RawValue::from_string("{}".into()).unwrap()
        )));
    }

    #[test]
    fn questions_are_bounded_and_withdrawn_on_drop() {
        let asks = InputRequests::default();
        let held: Vec<_> = (0..MAX_OUTSTANDING).map(|_| asks.open().unwrap()).collect();
        assert!(matches!(asks.open(), Err(InputRequestError::TooMany)));
        drop(held);
        assert!(asks.open().is_ok());
    }
}
