//! Allocations per call (issue 34: "an allocation count per call (a counting allocator in the bench) with a
//! budget").
//!
//! The bench's global allocator is the `mcpgw` binary's, mimalloc, behind counters: atomic counts of
//! allocations, reallocations and bytes allocated (a reallocation's growth counted as bytes allocated), no
//! lock. They count only while [`count`] runs: otherwise an allocation costs one relaxed load of a flag
//! (a plain load on x86) and a branch, so the criterion benches measure mimalloc as the binary has it. The
//! impl is the workspace's one `unsafe` (the lint is `deny` for it, allowed here alone): every call is passed
//! to mimalloc unchanged.
//!
//! After the criterion benches, [`report`] runs [`CALLS`] requests (after [`WARM_UP`] uncounted) through
//! each of: the pipeline with no middleware, the pipeline with the two built-ins, the mock alone (as
//! `baseline_mock_alone` runs it, handed its own copy of the bytes the gateway hands it), each as the
//! criterion bench of that name runs it (the pipeline's calls are `run`'s, the request's headers cloned per
//! call as the HTTP front does); it prints allocations, reallocations and bytes allocated per call, and the
//! pipeline's allocations beyond the mock's own work (the mock alone less the bench's copy of the bytes: the
//! gateway writes that `Vec` itself). The counters are the process's, so an allocation by another thread
//! during a count is counted too (the in-process pipeline runs on this one).
//!
//! [`ALLOCATION_BUDGET_PER_CALL`] is the budget of the pipeline with the two middlewares, the configuration
//! issue 34 requires: what it allocated when the budget was set, plus about 10%.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use handlers::InProcessServer;
use mcpgw::config::Config;
use mimalloc::MiMalloc;

/// mimalloc, counted while [`COUNTING`] is set.
struct CountingMimalloc;

#[global_allocator]
static ALLOCATOR: CountingMimalloc = CountingMimalloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
fn counted(counter: &AtomicU64, bytes: usize) {
    if COUNTING.load(Relaxed) {
        counter.fetch_add(1, Relaxed);
        BYTES.fetch_add(bytes as u64, Relaxed);
    }
}

// SAFETY: each method passes its arguments to mimalloc's own and returns what it returns; the counting
// touches only atomics (no allocation, no lock, no panic).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingMimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(&ALLOCATIONS, layout.size());
        // SAFETY: the caller's guarantees for `alloc` are mimalloc's.
        unsafe { MiMalloc.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(&ALLOCATIONS, layout.size());
        // SAFETY: as `alloc`.
        unsafe { MiMalloc.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by mimalloc with `layout` (every allocation here is mimalloc's).
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(&REALLOCATIONS, new_size.saturating_sub(layout.size()));
        // SAFETY: as `dealloc`, and the caller's guarantees on `new_size` are mimalloc's.
        unsafe { MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// The calls counted per configuration.
pub const CALLS: u64 = 10_000;
/// The calls run first, uncounted (lazily built state, pools and buffers reach their size).
pub const WARM_UP: u64 = 1_000;
/// Allocations per call allowed through the pipeline with the two middlewares (`access_log`, then
/// `allow_methods`): 108.05 measured at b1dd9c3 (135.05 at e479d31), plus ~10%.
pub const ALLOCATION_BUDGET_PER_CALL: f64 = 120.0;

/// What one call allocated, on average over a count.
#[derive(Clone, Copy, Debug)]
struct PerCall {
    allocations: f64,
    reallocations: f64,
    bytes: f64,
}

/// Counts what `calls` calls of `f` allocate.
fn count(calls: u64, f: impl FnOnce()) -> PerCall {
    for counter in [&ALLOCATIONS, &REALLOCATIONS, &BYTES] {
        counter.store(0, Relaxed);
    }
    COUNTING.store(true, Relaxed);
    f();
    COUNTING.store(false, Relaxed);
    let per = |counter: &AtomicU64| counter.load(Relaxed) as f64 / calls as f64;
    PerCall {
        allocations: per(&ALLOCATIONS),
        reallocations: per(&REALLOCATIONS),
        bytes: per(&BYTES),
    }
}

fn print(what: &str, c: PerCall) {
    println!(
        "  {what}: {:.2} allocations, {:.2} reallocations, {:.0} bytes allocated per call",
        c.allocations, c.reallocations, c.bytes
    );
}

/// Counts and prints the allocations per call of the pipeline (with no middleware, with two) and of the
/// mock alone, and whether the pipeline with the two middlewares is within [`ALLOCATION_BUDGET_PER_CALL`].
pub fn report() {
    let system = actix_rt::System::new();
    let headers = super::headers();
    let mut pipelines = Vec::new();
    for (what, middlewares) in [
        ("pipeline_no_middleware", ""),
        ("pipeline_two_middlewares", super::TWO_MIDDLEWARES),
    ] {
        let gw = super::start(&system, middlewares);
        super::run(&system, &gw, &headers, WARM_UP);
        let c = count(CALLS, || {
            super::run(&system, &gw, &headers, CALLS);
        });
        gw.shutdown();
        pipelines.push((what, c));
    }
    let handed = super::mock_alone::bytes_the_gateway_hands_the_mock(
        &system,
        Config::from_toml_str(super::MOCK, Path::new("bench.toml")).unwrap(),
        headers.clone(),
        super::REQUEST.as_bytes(),
    );
    let mock = super::mock_alone::the_builtin_mock();
    let mock_alone = |calls: u64| {
        system.block_on(async {
            for _ in 0..calls {
                black_box(mock.handle(black_box(&handed).clone()).await);
            }
        })
    };
    mock_alone(WARM_UP);
    let alone = count(CALLS, || mock_alone(CALLS));
    let copy = count(CALLS, || {
        for _ in 0..CALLS {
            black_box(black_box(&handed).clone());
        }
    });
    let own = PerCall {
        allocations: alone.allocations - copy.allocations,
        reallocations: alone.reallocations - copy.reallocations,
        bytes: alone.bytes - copy.bytes,
    };

    println!();
    println!("allocations per call ({CALLS} calls each after {WARM_UP} uncounted):");
    for &(what, c) in &pipelines {
        print(what, c);
    }
    print("baseline_mock_alone", alone);
    print("  of which the bench's copy of the bytes", copy);
    for &(what, c) in &pipelines {
        println!(
            "  {what} beyond the mock's own work: {:.2} allocations, {:.2} reallocations, {:.0} bytes per call",
            c.allocations - own.allocations,
            c.reallocations - own.reallocations,
            c.bytes - own.bytes
        );
    }
    let (what, chained) = pipelines[1];
    println!(
        "{what}: {:.2} allocations per call (budget <= {ALLOCATION_BUDGET_PER_CALL}: {})",
        chained.allocations,
        if chained.allocations <= ALLOCATION_BUDGET_PER_CALL {
            "met"
        } else {
            "MISSED"
        }
    );
}
