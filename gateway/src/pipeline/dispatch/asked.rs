//! What a backend asks the client while it serves the client's call — its own request relayed (a legacy
//! backend's sampling, elicitation or roots) or one of a 2026-07-28 backend's `inputRequests` asked of a
//! legacy client — judged by `[redaction]` before the client sees it, as the backend's answers are
//! (`Redactor::question`, `Redactor::asked`). A question a 2026-07-28 client gets inside an
//! `input_required` result is part of that answer, judged by the redaction stage with it.

use std::collections::BTreeMap;

use protocol::shape::Refusal;
use protocol::{Error, Request};

use super::Dispatch;
use crate::bridge::input::AskedRequest;
use crate::pipeline::response::Outcome;

impl Dispatch<'_> {
    /// `request`, which `backend` sends the client, as the client may see it; `Err` with the error the
    /// backend is answered instead when it is withheld.
    pub(crate) fn question(&self, backend: &str, request: Request) -> Result<Request, Error> {
        match &self.gw.live().redaction {
            Some(redactor) => redactor.question(
                &self.gw.metrics,
                backend,
                self.principal.as_deref().unwrap_or("-"),
                request,
            ),
            None => Ok(request),
        }
    }

    /// The `inputRequests` of `backend`'s `input_required`, as a legacy client may be asked them; `Err`
    /// with the call's outcome when one is withheld (the backend waits for every answer, so the call is
    /// refused, in its method's shape, as an answer holding it would be).
    pub(crate) fn questions(
        &self,
        backend: &str,
        requests: &mut BTreeMap<String, AskedRequest>,
    ) -> Result<(), Outcome> {
        let Some(redactor) = &self.gw.live().redaction else {
            return Ok(());
        };
        let principal = self.principal.as_deref().unwrap_or("-");
        for asked in requests.values_mut() {
            let (method, params) = asked.parts_mut();
            redactor
                .asked(&self.gw.metrics, backend, principal, method, params)
                .map_err(|held| {
                    Outcome::Refused(Refusal::ToolError {
                        message: format!(
                            "the request of backend {backend} to the client was withheld: it held {held}"
                        ),
                        meta: None,
                    })
                })?;
        }
        Ok(())
    }
}
