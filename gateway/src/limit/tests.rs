//! The limits end to end in one process: which requests a rule counts, which bucket each lands in, and
//! a worker leasing from the process's authority.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use protocol::Method;

use super::*;
use crate::config::Config;

fn limits(tables: &str) -> Arc<Limits> {
    let config = Config::from_toml_str(tables, Path::new("test.toml")).unwrap();
    Limits::new(&config.rate_limits, None).expect("limits configured")
}

/// An API key's principal named `name` (kept for the test's life: facts borrow it).
fn who(name: &str) -> &'static crate::auth::Principal {
    Box::leak(Box::new(crate::auth::Principal {
        name: name.to_owned(),
        source: crate::auth::PrincipalSource::ApiKey,
        groups: Vec::new(),
        scopes: Vec::new(),
        token: None,
    }))
}

fn call<'a>(name: &str, backend: &'a str, tool: &'a str) -> Facts<'a> {
    Facts {
        method: Method::ToolsCall,
        subject: Subject::Principal(who(name)),
        backend: Some(backend),
        tool: Some(tool),
    }
}

/// Admits what the worker's leases and the authority admit, as the middleware does.
async fn admitted(w: &WorkerLimits, f: &Facts<'_>) -> Result<(), Refused> {
    let keys = w.limits().named(f);
    match w.check(&keys, w.limits().now()) {
        Step::Admit => Ok(()),
        Step::Refuse(r) => Err(r),
        Step::Ask(i) => w.admit(&keys, i).await,
    }
}

#[test]
fn no_table_means_no_limits() {
    assert!(Limits::new(&[], None).is_none());
}

#[test]
fn rules_count_only_the_methods_backends_and_tools_they_name() {
    let l = limits(
        "[[rate_limit]]\nrate = 1.0\nburst = 1\nmethods = [\"tools/call\"]\ntool = \"m__e*\"\n\n\
         [[rate_limit]]\nrate = 1.0\nburst = 1\nbackend = \"other\"\n\n\
         [[rate_limit]]\nname = \"all\"\nrate = 1.0\nburst = 1\n",
    );
    let rules = |f: &Facts<'_>| -> Vec<usize> { l.keys(f).iter().map(|k| k.rule).collect() };
    assert_eq!(rules(&call("u", "m", "m__echo")), [0, 2]);
    assert_eq!(rules(&call("u", "m", "m__add")), [2]);
    assert_eq!(rules(&call("u", "other", "m__echo")), [0, 1, 2]);
    let list = Facts {
        method: Method::ToolsList,
        subject: Subject::Local,
        backend: None,
        tool: None,
    };
    assert_eq!(rules(&list), [2]);
}

#[test]
fn buckets_are_kept_per_what_the_rule_names_and_nothing_else() {
    let l = limits(
        "[[rate_limit]]\nper = [\"principal\"]\nrate = 1.0\nburst = 1\n\n\
         [[rate_limit]]\nper = [\"backend\", \"tool\"]\nrate = 1.0\nburst = 1\n\n\
         [[rate_limit]]\nrate = 1.0\nburst = 1\n",
    );
    // Each bucket by its name and by its id in this process: the two always agree.
    let keys = |f: &Facts<'_>| -> Vec<(String, u64)> {
        l.named(f).into_iter().map(|k| (k.key, k.id)).collect()
    };
    let same = |x: &(String, u64), y: &(String, u64)| -> bool {
        assert_eq!(
            x.0 == y.0,
            x.1 == y.1,
            "the name and the id disagree: {x:?} {y:?}"
        );
        x.0 == y.0
    };
    let a = keys(&call("alice", "m", "m__echo"));
    let b = keys(&call("bob", "m", "m__echo"));
    let c = keys(&call("alice", "m", "m__add"));
    assert!(!same(&a[0], &b[0]), "per principal");
    assert!(same(&a[0], &c[0]), "the principal's bucket is not per tool");
    assert!(
        same(&a[1], &b[1]),
        "per backend and tool, not per principal"
    );
    assert!(!same(&a[1], &c[1]), "per tool");
    assert!(same(&a[2], &b[2]));
    assert!(same(&a[2], &c[2]), "one bucket for all");
    // A name holding the separators cannot pose as another principal's key.
    let tricky = keys(&call("a|x", "m", "m__echo"));
    let plain = keys(&call("a", "m", "m__echo"));
    assert!(!same(&tricky[0], &plain[0]));
    // An API key and a token of one name are two principals, two buckets.
    let token = crate::auth::Principal {
        source: crate::auth::PrincipalSource::Jwt { issuer: None },
        ..who("a").clone()
    };
    let by_token = keys(&Facts {
        subject: Subject::Principal(&token),
        ..call("a", "m", "m__echo")
    });
    assert!(!same(&by_token[0], &plain[0]));
    // Without a principal: the address, and on stdio one local subject.
    let caller: std::net::IpAddr = "10.0.0.1".parse().unwrap();
    let other: std::net::IpAddr = "10.0.0.2".parse().unwrap();
    let by = |subject| Facts {
        subject,
        ..call("", "m", "t")
    };
    assert!(!same(
        &keys(&by(Subject::Address(caller)))[0],
        &keys(&by(Subject::Address(other)))[0]
    ));
    assert!(same(
        &keys(&by(Subject::Address(caller)))[0],
        &keys(&by(Subject::Address(caller)))[0]
    ));
    assert!(keys(&by(Subject::Local))[0].0.contains("local"));
}

#[actix_rt::test]
async fn a_worker_admits_the_burst_then_refuses_with_the_wait_and_asks_nobody_while_empty() {
    let l =
        limits("[[rate_limit]]\nname = \"calls\"\nper = [\"principal\"]\nrate = 0.5\nburst = 3\n");
    let w = WorkerLimits::new(l.clone());
    let alice = call("alice", "m", "m__echo");
    for i in 0..3 {
        assert_eq!(admitted(&w, &alice).await, Ok(()), "request {i}");
    }
    let refused = admitted(&w, &alice)
        .await
        .expect_err("the fourth is over the burst");
    assert_eq!(&*refused.limit, "calls");
    assert!(
        (1..=2000).contains(&refused.retry_ms),
        "{}",
        refused.retry_ms
    );
    // The refusal is remembered: the next check refuses from the worker's own leases.
    let keys = l.keys(&alice);
    assert!(matches!(w.check(&keys, l.now()), Step::Refuse(_)));
    // Another principal has its own bucket.
    assert_eq!(admitted(&w, &call("bob", "m", "m__echo")).await, Ok(()));
}

#[actix_rt::test]
async fn two_workers_share_the_process_bucket_through_their_leases() {
    let l = limits("[[rate_limit]]\nrate = 0.001\nburst = 4\n");
    let (w1, w2) = (WorkerLimits::new(l.clone()), WorkerLimits::new(l.clone()));
    let f = call("u", "m", "t");
    let mut admitted_count = 0;
    for _ in 0..10 {
        for w in [&w1, &w2] {
            if admitted(w, &f).await.is_ok() {
                admitted_count += 1;
            }
        }
    }
    assert_eq!(admitted_count, 4, "the burst, whichever worker asks");
}

#[test]
fn ipv6_addresses_in_one_64_share_a_bucket() {
    let l = limits("[[rate_limit]]\nper = [\"principal\"]\nrate = 1.0\nburst = 1\n");
    let key = |ip: &str| -> (String, u64) {
        let f = Facts {
            method: Method::ToolsCall,
            subject: Subject::Address(ip.parse().unwrap()),
            backend: None,
            tool: None,
        };
        let k = l.named(&f).remove(0);
        (k.key, k.id)
    };
    // (one address, another, whether they share a bucket)
    for (a, b, shared) in [
        ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", true),
        ("2001:db8:1:2::1", "2001:db8:1:3::1", false),
        ("192.0.2.1", "::ffff:192.0.2.1", true),
        ("192.0.2.1", "192.0.2.2", false),
    ] {
        let (x, y) = (key(a), key(b));
        assert_eq!(x.0 == y.0, shared, "{a} {b}: {x:?} {y:?}");
        assert_eq!(x.1 == y.1, shared, "{a} {b}: the id and the name agree");
    }
}
