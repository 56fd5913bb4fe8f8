//! The rate limits' buckets in Redis, shared by replicas: one Lua script (loaded once, then run by its
//! SHA; sent whole again if Redis lost it) that brings a bucket up to date on Redis's own clock (`TIME`, so
//! replicas' clocks never disagree about it) and grants up to the tokens a lease asks. A bucket is a hash
//! `mcpgw:rl:{key}` (`v` tokens, `t` microseconds) that expires once it would be full again.
//!
//! Only a worker whose lease ran out comes here, never a request that its lease covers; and nothing here
//! waits past the link's deadline (`cluster::redis::DEADLINE`).

use std::sync::Mutex;

use crate::cluster::redis::{RedisLink, Unavailable};

use super::bucket::Grant;

/// The bucket rule of `bucket::TokenBucket`, in Lua: `KEYS[1]` the bucket; `ARGV` rate a second, burst,
/// tokens wanted. Answers `{granted, ms until the next token when none was granted}`.
const SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local held = redis.call('HMGET', KEYS[1], 'v', 't')
local tokens = burst
local at = now
if held[1] and held[2] then
  tokens = tonumber(held[1])
  at = tonumber(held[2])
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
  at = now
end
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
local wait = 0
if granted < 1 then
  wait = math.max(1, math.ceil((1 - tokens) * 1000 / rate))
end
redis.call('HSET', KEYS[1], 'v', string.format('%.6f', tokens), 't', string.format('%.0f', at))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) * 1000 / rate) + 1000)
return {granted, wait}
";

/// The key of a bucket in Redis.
pub fn bucket_key(key: &str) -> String {
    format!("mcpgw:rl:{key}")
}

/// The script's SHA once Redis has it.
#[derive(Debug, Default)]
pub struct LeaseScript {
    sha: Mutex<Option<String>>,
}

impl LeaseScript {
    fn sha(&self) -> Option<String> {
        self.sha.lock().ok().and_then(|s| s.clone())
    }

    fn remember(&self, sha: Option<String>) {
        if let Ok(mut held) = self.sha.lock() {
            *held = sha;
        }
    }

    /// Up to `want` tokens of the bucket `key` (`rate` a second, `burst`), granted by Redis.
    pub async fn lease(
        &self,
        link: &RedisLink,
        key: &str,
        rate: f64,
        burst: u32,
        want: u32,
    ) -> Result<Grant, Unavailable> {
        let sha = match self.sha() {
            Some(sha) => sha,
            None => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(SCRIPT);
                let sha: String = link.query(load).await?;
                self.remember(Some(sha.clone()));
                sha
            }
        };
        let run = |cmd: &str, first: &str| {
            let mut c = redis::cmd(cmd);
            c.arg(first)
                .arg(1)
                .arg(bucket_key(key))
                .arg(rate)
                .arg(burst)
                .arg(want);
            c
        };
        let answered: Result<(i64, i64), Unavailable> = link.query(run("EVALSHA", &sha)).await;
        let (granted, wait) = match answered {
            Ok(v) => v,
            // Redis restarted or its scripts were flushed: the script once more in full (which loads it).
            Err(e) if e.0.contains("NOSCRIPT") => {
                self.remember(None);
                link.query(run("EVAL", SCRIPT)).await?
            }
            Err(e) => return Err(e),
        };
        Ok(Grant {
            granted: u32::try_from(granted.max(0)).unwrap_or(want).min(want),
            wait_ms: u64::try_from(wait.max(0)).unwrap_or(0),
        })
    }
}
