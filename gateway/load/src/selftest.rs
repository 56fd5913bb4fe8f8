//! `--self-test`: the generator's own ceiling. The mock backend (`mcpgw mock-backend`, zero latency) is
//! started in this process on a loopback port and loaded exactly as `--url` would be, so that a figure
//! measured against a real target can be compared with what the generator reaches against a target that
//! costs next to nothing. The mock runs on its own threads (an actix System) until the process exits;
//! the report shows the CPU of the generator's threads and of the mock's apart.
//!
//! The same starter serves the tests of this crate, with latency and error injection.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mock::{EraMode, LatencyDist, MockArgs, Scope};

use super::LoadError;

/// How long the mock may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The mock's settings for `--self-test`: zero latency, no errors, the default tools.
pub(crate) fn mock_args() -> MockArgs {
    MockArgs {
        stdio: false,
        listen: None,
        tools: 3,
        latency_ms: 0,
        latency_dist: LatencyDist::Fixed,
        payload_bytes: 0,
        error_rate: 0.0,
        crash_after: None,
        name: "mock-backend".into(),
        era: EraMode::Dual,
        ttl_ms: 0,
        cache_scope: Scope::Public,
        unimplemented: Vec::new(),
        failing: Vec::new(),
        tls_cert: None,
        tls_key: None,
        tls_client_ca: None,
    }
}

/// Starts the mock backend with `args` on a free loopback port in this process; returns its `/mcp` URL
/// once it accepts connections.
pub(crate) fn start_mock(mut args: MockArgs) -> Result<String, LoadError> {
    let fail = |why: String| LoadError::SelfTest(why);
    // The port is chosen by the system, released, and bound again by the mock: starts are serialised so
    // that two mocks of this process never race for one port.
    static STARTING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = STARTING.lock().unwrap_or_else(|p| p.into_inner());
    let addr: SocketAddr = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| fail(format!("no free loopback port: {e}")))?;
    args.listen = Some(addr);
    args.stdio = false;
    args.crash_after = None; // it would end this process
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("mock-backend".into())
        .spawn(move || {
            let r = mock::run(args, None);
            let _ = tx.send(r.map_err(|e| e.to_string()));
        })
        .map_err(|e| fail(e.to_string()))?;
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        match rx.try_recv() {
            Ok(Err(e)) => return Err(fail(e)),
            Ok(Ok(())) => return Err(fail("it stopped at once".into())),
            Err(_) => {}
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(format!("http://{addr}/mcp"));
        }
        if Instant::now() >= deadline {
            return Err(fail(format!(
                "it did not listen on {addr} within {} s",
                READY_WITHIN.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
