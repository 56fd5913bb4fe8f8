//! Following the other replicas' events: the `mcpgw:session` channel and this replica's answer channel,
//! with no gap. Pub/sub delivers only to whoever is subscribed at the moment, so when the subscription is
//! lost (Redis restarted, a connection cut or silent) the events of the gap are read back from the
//! `mcpgw:events` stream once subscribed again: subscribe first, then read the stream after the last
//! position known to have been delivered, so every event arrives at least once (applying one twice is
//! harmless: each sets a state). That position advances at each heartbeat: read before a PING that comes
//! back on the subscription, every event up to it was delivered on it (each is added to the stream and
//! published in one MULTI/EXEC).

use std::time::Duration;

use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::mpsc;

use super::redis::{
    ClusterEvent, DEADLINE, EVENTS_KEPT, EVENTS_STREAM, RedisLink, SESSION_CHANNEL,
};

/// How often the subscription is checked with a PING on its own connection.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// Stream entries read per round trip while catching up.
const CATCH_UP_BATCH: usize = 1_000;

/// A stream entry as Redis answers it: its id and its fields, flat.
type Entry = (String, Vec<String>);

/// Why following stopped.
enum Stopped {
    /// The subscription ended or stopped answering: subscribe again.
    Lost,
    /// Nobody takes the events any more: the gateway is ending.
    Closed,
}

impl RedisLink {
    /// Listens to the session channel and this replica's answer channel for as long as `events` is open,
    /// subscribing again (every second) when Redis goes away or stops answering, and reading back what was
    /// missed meanwhile; publishes the kept revocations whenever it (re)subscribes.
    pub async fn listen(&self, events: mpsc::Sender<ClusterEvent>) {
        let answers = format!("mcpgw:answer:{}", self.replica);
        let mut was_down = false;
        // The stream position up to which every event has reached this replica (none before the first
        // subscription: a replica that just started holds no session an earlier event could concern).
        let mut delivered: Option<String> = None;
        while !events.is_closed() {
            let subscribed = match self.subscribe(&answers).await {
                Some((sink, messages)) => {
                    match self.catch_up(delivered.as_deref(), &events).await {
                        Ok(Some(position)) => Some((sink, messages, position)),
                        Ok(None) => None,
                        Err(Stopped::Closed) => return,
                        Err(Stopped::Lost) => None,
                    }
                }
                None => None,
            };
            let Some((sink, messages, position)) = subscribed else {
                if !was_down {
                    tracing::warn!(
                        "redis is unreachable: established sessions go on; answers across replicas fail until it is back"
                    );
                    was_down = true;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            };
            delivered = Some(position);
            if was_down {
                tracing::info!("redis is reachable again");
                was_down = false;
            }
            let sent = self.flush_pending().await;
            if sent > 0 {
                tracing::info!(sent, "DELETEs kept while redis was down are published");
            }
            if let Stopped::Closed = self.follow(sink, messages, &events, &mut delivered).await {
                return;
            }
        }
    }

    /// A subscription to the session channel and `answers`, made within the deadline.
    async fn subscribe(&self, answers: &str) -> Option<(PubSubSink, PubSubStream)> {
        let made = async {
            let (mut sink, messages) = self.client.get_async_pubsub().await?.split();
            sink.subscribe(SESSION_CHANNEL).await?;
            sink.subscribe(answers).await?;
            Ok::<_, redis::RedisError>((sink, messages))
        };
        tokio::time::timeout(DEADLINE, made).await.ok()?.ok()
    }

    /// Passes on the stream's events after `from` (none to pass on without one); the position reached.
    /// `Ok(None)` when Redis did not answer in time (subscribe again later).
    async fn catch_up(
        &self,
        from: Option<&str>,
        events: &mpsc::Sender<ClusterEvent>,
    ) -> Result<Option<String>, Stopped> {
        let Some(from) = from else {
            return Ok(self.last_position().await);
        };
        let mut position = from.to_owned();
        let mut read = 0;
        let mut missed = 0u64;
        // Bounded: the stream keeps about EVENTS_KEPT entries.
        while read <= EVENTS_KEPT {
            let mut pipe = redis::pipe();
            pipe.cmd("XRANGE")
                .arg(EVENTS_STREAM)
                .arg(format!("({position}"))
                .arg("+")
                .arg("COUNT")
                .arg(CATCH_UP_BATCH);
            let Ok((entries,)) = self.run::<(Vec<Entry>,)>(&pipe, 1).await else {
                return Ok(None);
            };
            let batch = entries.len();
            for (id, fields) in entries {
                if let Some(event) = event_of(&fields) {
                    events.send(event).await.map_err(|_| Stopped::Closed)?;
                    missed += 1;
                }
                position = id;
            }
            read += batch;
            if batch < CATCH_UP_BATCH {
                break;
            }
        }
        if missed > 0 {
            tracing::info!(
                events = missed,
                "events other replicas published while this one was not subscribed are applied"
            );
        }
        Ok(Some(position))
    }

    /// The id of the stream's last entry (`0-0` while it is empty); `None` when Redis did not answer.
    async fn last_position(&self) -> Option<String> {
        let mut pipe = redis::pipe();
        pipe.cmd("XREVRANGE")
            .arg(EVENTS_STREAM)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1);
        let (last,) = self.run::<(Vec<Entry>,)>(&pipe, 1).await.ok()?;
        Some(
            last.into_iter()
                .next()
                .map_or_else(|| "0-0".to_owned(), |(id, _)| id),
        )
    }

    /// Passes the subscription's messages on until it ends, or until a PING on it goes unanswered within
    /// the deadline (every [`HEARTBEAT`]): a connection whose far end vanished without a reset would
    /// otherwise be waited on forever, every event missed. Each answered PING advances `delivered` to the
    /// stream's last position read just before it.
    async fn follow(
        &self,
        mut sink: PubSubSink,
        mut messages: PubSubStream,
        events: &mpsc::Sender<ClusterEvent>,
        delivered: &mut Option<String>,
    ) -> Stopped {
        let mut beat = tokio::time::interval(HEARTBEAT);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                msg = futures_util::StreamExt::next(&mut messages) => {
                    let Some(msg) = msg else {
                        return Stopped::Lost; // the connection ended: Redis went away
                    };
                    let Ok(payload) = msg.get_payload::<String>() else {
                        continue;
                    };
                    match serde_json::from_str::<ClusterEvent>(&payload) {
                        Ok(event) => {
                            if events.send(event).await.is_err() {
                                return Stopped::Closed;
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "a cluster message that is not ours"),
                    }
                }
                _ = beat.tick() => {
                    let position = self.last_position().await;
                    let pong = tokio::time::timeout(DEADLINE, sink.ping::<redis::Value>()).await;
                    if !matches!(pong, Ok(Ok(_))) {
                        tracing::warn!("the redis subscription stopped answering: subscribing again");
                        return Stopped::Lost;
                    }
                    if position.is_some() {
                        *delivered = position;
                    }
                }
            }
        }
    }
}

/// The event an entry of the stream carries (its field `e`).
fn event_of(fields: &[String]) -> Option<ClusterEvent> {
    let text = fields
        .chunks(2)
        .find(|pair| pair[0] == "e")
        .and_then(|pair| pair.get(1))?;
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_entry_gives_its_event_and_anything_else_none() {
        let event = || ClusterEvent::Revoke {
            session: super::super::redis::Named::key("00112233445566778899aabbccddeeff"),
            expires_at: 1,
        };
        let revoke = serde_json::to_string(&event()).unwrap();
        let cases: [(Vec<&str>, Option<ClusterEvent>); 4] = [
            (vec!["e", &revoke], Some(event())),
            (vec!["x", "1", "e", &revoke], Some(event())),
            (vec!["e", "not json"], None),
            (vec!["e"], None),
        ];
        for (fields, want) in cases {
            let fields: Vec<String> = fields.into_iter().map(str::to_owned).collect();
            assert_eq!(event_of(&fields), want, "{fields:?}");
        }
    }
}
