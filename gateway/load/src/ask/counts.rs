//! What the asks did besides their outcomes, per era: how many were sent and ended in a plain result, how
//! many questions were answered (and declined, -32601), how many answers a legacy server refused, how many
//! `input_required` results a 2026-07-28 one gave. Kept in each shard of the statistics and added up for the report, where it
//! stands beside the ask operation's outcomes (`operations.ask` in the JSON).

/// What one ask did besides its outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Questions answered with a result: legacy, server requests whose answer was accepted (202);
    /// 2026-07-28, entries of `inputResponses` sent.
    pub(crate) questions: u64,
    /// Legacy: questions of a method this client does not answer, declined with -32601 (accepted, 202).
    pub(crate) declined: u64,
    /// Legacy: answers not accepted with 202.
    pub(crate) refused: u64,
    /// 2026-07-28: `input_required` results followed up.
    pub(crate) rounds: u64,
}

/// The asks of one era.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EraAsks {
    /// Asks sent (overflowed ones are not).
    pub requests: u64,
    /// … that ended in a plain result (`ok`).
    pub ok: u64,
    /// Questions answered with a result: legacy, server requests on the call's stream whose answer was
    /// accepted with 202; 2026-07-28, entries of `inputResponses` sent in a retry.
    pub questions_answered: u64,
    /// Legacy: questions of another method than elicitation, sampling and roots, declined with -32601.
    pub questions_declined: u64,
    /// Legacy: answer POSTs not accepted with 202 (each ends its ask as an error).
    pub answers_refused: u64,
    /// 2026-07-28: `input_required` results answered with a retry.
    pub input_required_rounds: u64,
}

impl EraAsks {
    fn add(&mut self, t: &Tally, ok: bool) {
        self.requests += 1;
        self.ok += u64::from(ok);
        self.questions_answered += t.questions;
        self.questions_declined += t.declined;
        self.answers_refused += t.refused;
        self.input_required_rounds += t.rounds;
    }

    fn merge(&mut self, o: &EraAsks) {
        self.requests += o.requests;
        self.ok += o.ok;
        self.questions_answered += o.questions_answered;
        self.questions_declined += o.questions_declined;
        self.answers_refused += o.answers_refused;
        self.input_required_rounds += o.input_required_rounds;
    }
}

/// The asks of legacy sessions and of 2026-07-28 clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AskEras {
    pub legacy: EraAsks,
    pub modern: EraAsks,
}

impl AskEras {
    /// Counts one ask of a modern or legacy session.
    pub(crate) fn add(&mut self, modern: bool, t: &Tally, ok: bool) {
        let era = if modern {
            &mut self.modern
        } else {
            &mut self.legacy
        };
        era.add(t, ok);
    }

    pub(crate) fn merge(&mut self, o: &AskEras) {
        self.legacy.merge(&o.legacy);
        self.modern.merge(&o.modern);
    }
}

/// The ask operation's own counts, beside its outcomes in the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AskReport {
    /// Questions answered with a result, both eras.
    pub questions_answered: u64,
    /// Questions declined with -32601 (legacy).
    pub questions_declined: u64,
    /// Answer POSTs refused (legacy).
    pub answers_refused: u64,
    /// Per era.
    pub by_era: AskEras,
}

impl AskReport {
    /// Adds another report's counts (`merge`).
    pub(crate) fn add(&mut self, o: &AskReport) {
        self.questions_answered += o.questions_answered;
        self.questions_declined += o.questions_declined;
        self.answers_refused += o.answers_refused;
        self.by_era.merge(&o.by_era);
    }

    pub(crate) fn of(eras: &AskEras) -> AskReport {
        AskReport {
            questions_answered: eras.legacy.questions_answered + eras.modern.questions_answered,
            questions_declined: eras.legacy.questions_declined + eras.modern.questions_declined,
            answers_refused: eras.legacy.answers_refused + eras.modern.answers_refused,
            by_era: *eras,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_add_up_per_era_and_in_all() {
        let mut a = AskEras::default();
        let asked = |questions, declined, refused, rounds| Tally {
            questions,
            declined,
            refused,
            rounds,
        };
        for (modern, tally, ok) in [
            (false, asked(1, 0, 0, 0), true),
            (false, asked(2, 1, 0, 0), true),
            (false, asked(0, 0, 1, 0), false),
            (true, asked(1, 0, 0, 1), true),
            (true, asked(4, 0, 0, 4), false),
        ] {
            a.add(modern, &tally, ok);
        }
        let mut b = AskEras::default();
        b.merge(&a);
        b.merge(&a);
        let want_legacy = EraAsks {
            requests: 6,
            ok: 4,
            questions_answered: 6,
            questions_declined: 2,
            answers_refused: 2,
            input_required_rounds: 0,
        };
        let want_modern = EraAsks {
            requests: 4,
            ok: 2,
            questions_answered: 10,
            questions_declined: 0,
            answers_refused: 0,
            input_required_rounds: 10,
        };
        assert_eq!((b.legacy, b.modern), (want_legacy, want_modern));
        let r = AskReport::of(&b);
        assert_eq!(
            (
                r.questions_answered,
                r.questions_declined,
                r.answers_refused
            ),
            (16, 2, 2)
        );
        let json = serde_json::to_value(r).unwrap();
        assert_eq!(json["by_era"]["modern"]["input_required_rounds"], 10);
        assert_eq!(json["by_era"]["legacy"]["answers_refused"], 2);
    }
}
