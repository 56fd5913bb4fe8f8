//! Real parts for the replica tests: `redis-server` and `nginx` from Debian's packages, started on loopback
//! ports chosen at run time, and mcpgw replicas that share a key ring and the Redis. nginx runs the shipped
//! `deploy/nginx/mcpgw.conf` with only its listen address and upstream servers rewritten, and takes a replica
//! out of its upstream and back the way a Kubernetes endpoint controller does (rewrite, `nginx -s reload`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Running, TempDir, admin_base, free_port, mcpgw, start, wait_ready};

/// Whether `program` runs here (the replica tests need Debian's redis-server and nginx: `.ci/run`
/// installs them).
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The repository's `deploy/`.
fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// `redis-server` on a loopback port, no persistence; killed on drop.
pub struct Redis {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// TLS only (`--tls-port`): its certificate, key and CA files.
    tls: Option<[PathBuf; 3]>,
    /// `--requirepass`.
    password: Option<String>,
}

impl Redis {
    pub fn start(dir: &TempDir) -> Redis {
        Redis::start_with(dir, None, None)
    }

    /// Redis over TLS only (`rediss://`) with `cert`, `key` and `ca` files, and/or with a password (AUTH).
    pub fn start_with(dir: &TempDir, tls: Option<[PathBuf; 3]>, password: Option<&str>) -> Redis {
        let mut redis = Redis {
            port: free_port(),
            dir: dir.0.join("redis"),
            child: None,
            tls,
            password: password.map(str::to_owned),
        };
        std::fs::create_dir_all(&redis.dir).unwrap();
        redis.restart();
        redis
    }

    /// Starts it (again) on its port, and waits (bounded) until it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "redis is running");
        let mut cmd = Command::new("redis-server");
        match &self.tls {
            Some([cert, key, ca]) => cmd
                .args(["--port", "0", "--tls-port", &self.port.to_string()])
                .arg("--tls-cert-file")
                .arg(cert)
                .arg("--tls-key-file")
                .arg(key)
                .arg("--tls-ca-cert-file")
                .arg(ca)
                .args(["--tls-auth-clients", "no"]),
            None => cmd.args(["--port", &self.port.to_string()]),
        };
        if let Some(password) = &self.password {
            cmd.args(["--requirepass", password]);
        }
        let child = cmd
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.cli(&["PING"]).trim() != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis did not answer PING in 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        let auth = self
            .password
            .as_ref()
            .map_or(String::new(), |p| format!(":{p}@"));
        format!("{scheme}://{auth}127.0.0.1:{}", self.port)
    }

    /// `redis-cli` against it; its standard output.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some([_, _, ca]) = &self.tls {
            cmd.arg("--tls").arg("--cacert").arg(ca);
        }
        if let Some(password) = &self.password {
            cmd.env("REDISCLI_AUTH", password);
        }
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Commands Redis ran so far, but for what the tests send themselves (`INFO`, `PING`) and the
    /// replicas' subscription heartbeat (`PING`, `XREVRANGE`: once per 10 s per replica, not per request).
    pub fn commands(&self) -> u64 {
        self.command_calls()
            .into_iter()
            .filter(|(name, _)| !matches!(name.as_str(), "info" | "ping" | "xrevrange"))
            .map(|(_, n)| n)
            .sum()
    }

    /// Calls of each command so far (`INFO commandstats`), by lower-case name.
    pub fn command_calls(&self) -> std::collections::BTreeMap<String, u64> {
        self.cli(&["INFO", "commandstats"])
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("cmdstat_")?;
                let (name, stats) = rest.split_once(':')?;
                let calls = stats.strip_prefix("calls=")?.split(',').next()?;
                Some((name.to_owned(), calls.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// nginx with the shipped config in front of the replicas; stopped on drop.
pub struct Nginx {
    pub port: u16,
    dir: PathBuf,
    child: Child,
}

impl Nginx {
    pub fn start(dir: &TempDir, upstreams: &[u16]) -> Nginx {
        let dir = dir.0.join("nginx");
        std::fs::create_dir_all(dir.join("temp")).unwrap();
        let port = free_port();
        let shipped = std::fs::read_to_string(deploy_dir().join("nginx/mcpgw.conf")).unwrap();
        let server = shipped
            .replace(
                "listen 80 default_server;",
                &format!("listen 127.0.0.1:{port} default_server;"),
            )
            .replace(
                "include mcpgw/upstream.conf;",
                &format!("include {};", dir.join("upstream.conf").display()),
            );
        assert_ne!(server, shipped, "deploy/nginx/mcpgw.conf changed shape");
        std::fs::write(dir.join("mcpgw.conf"), server).unwrap();
        let temp = dir.join("temp");
        let main = format!(
            "worker_processes 1;\n\
             pid {pid};\n\
             error_log {err} warn;\n\
             daemon off;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n\
               log_format replica '$upstream_addr $status $request_method';\n\
               access_log {access} replica;\n\
               client_body_temp_path {temp}/body;\n\
               proxy_temp_path {temp}/proxy;\n\
               fastcgi_temp_path {temp}/fastcgi;\n\
               uwsgi_temp_path {temp}/uwsgi;\n\
               scgi_temp_path {temp}/scgi;\n\
               include {server};\n\
             }}\n",
            pid = dir.join("nginx.pid").display(),
            err = dir.join("error.log").display(),
            access = dir.join("access.log").display(),
            temp = temp.display(),
            server = dir.join("mcpgw.conf").display(),
        );
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        write_upstream(&dir, upstreams);
        let child = Command::new("nginx")
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let nginx = Nginx { port, dir, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen in 10 s: {}",
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Points the upstream at `upstreams` and reloads; returns once the workers of the old configuration
    /// have finished what they were serving and exited (bounded: 15 s).
    pub fn set_upstreams(&self, upstreams: &[u16]) {
        let old = self.workers();
        write_upstream(&self.dir, upstreams);
        let status = Command::new("nginx")
            .arg("-p")
            .arg(&self.dir)
            .arg("-c")
            .arg(self.dir.join("nginx.conf"))
            .args(["-s", "reload"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("nginx -s reload runs");
        assert!(status.success(), "nginx -s reload: {}", self.error_log());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let now = self.workers();
            if !now.is_empty() && now.iter().all(|w| !old.contains(w)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nginx's old workers still run 15 s after the reload"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The master's worker processes.
    fn workers(&self) -> Vec<u32> {
        let children = format!("/proc/{0}/task/{0}/children", self.child.id());
        std::fs::read_to_string(children)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Requests nginx passed to the replica on `port` so far (its access log).
    pub fn served_by(&self, port: u16) -> usize {
        let addr = format!("127.0.0.1:{port}");
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(addr.as_str()))
            .count()
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // Its workers are found through the master, so before the master goes (killed first, they would
        // outlive it, reparented: the regression, an orphaned worker left running after the suite).
        // SIGTERM is nginx's fast shutdown (SIGQUIT would wait for connections; the test is over): the
        // master ends its workers and exits; what is left after 5 s is killed, with the workers seen before.
        let workers = self.workers();
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return; // the master waited for its workers before it exited
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for worker in workers {
            let _ = Command::new("kill")
                .arg("-9")
                .arg(worker.to_string())
                .status();
        }
    }
}

/// The shipped upstream block with its server lines replaced by `upstreams` (a `server` line each).
fn write_upstream(dir: &Path, upstreams: &[u16]) {
    let shipped = std::fs::read_to_string(deploy_dir().join("nginx/upstream.conf")).unwrap();
    let mut out = String::new();
    let mut replaced = false;
    for line in shipped.lines() {
        if line.trim_start().starts_with("server ") {
            if !replaced {
                for port in upstreams {
                    out.push_str(&format!("    server 127.0.0.1:{port};\n"));
                }
                replaced = true;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(replaced, "deploy/nginx/upstream.conf has no server line");
    std::fs::write(dir.join("upstream.conf"), out).unwrap();
}

/// One mcpgw replica on a fixed port (a restart comes back where it was).
pub struct Replica {
    pub port: u16,
    config: PathBuf,
    /// The key ring in `MCPGW_SESSION_KEYS`, unless the config names a `keys_file`.
    ring: Option<String>,
    /// More environment for the process.
    pub env: Vec<(String, String)>,
    pub process: Option<Running>,
}

impl Replica {
    pub fn new(config: &Path, ring: Option<&str>) -> Replica {
        Replica {
            port: free_port(),
            config: config.to_owned(),
            ring: ring.map(str::to_owned),
            env: Vec::new(),
            process: None,
        }
    }

    /// Another replica of the same deployment (same config and ring), not started.
    pub fn sibling(&self) -> Replica {
        Replica::new(&self.config, self.ring.as_deref())
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts it and waits until it is ready.
    pub fn start(&mut self) {
        assert!(self.process.is_none(), "replica {} runs", self.port);
        let mut cmd = Command::new(mcpgw());
        cmd.args(["serve", "--config"])
            .arg(&self.config)
            .args(["--listen", &format!("127.0.0.1:{}", self.port)])
            .env("RUST_LOG", "info")
            .env_remove("MCPGW_SESSION_KEYS");
        if let Some(ring) = &self.ring {
            cmd.env("MCPGW_SESSION_KEYS", ring);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.process = Some(start(cmd, "mcpgw listening on "));
        wait_ready(&self.base());
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(p) = self.process.take() {
            p.signal("KILL");
            drop(p);
        }
    }

    /// Its admin listener's `/readyz` body, with the detail (once it answers 200; the config must have
    /// `support::ADMIN`).
    pub fn ready_body(&self) -> serde_json::Value {
        wait_ready(&admin_base(
            self.process.as_ref().expect("a running replica"),
        ))
    }

    /// Sends SIGHUP and waits (bounded: 10 s) for the log line saying the key ring was read again.
    pub fn reload_keys(&self) {
        let p = self.process.as_ref().expect("a running replica");
        p.signal("HUP");
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match p.log.recv_timeout(left) {
                Ok(line) if line.contains("key ring read") => return,
                Ok(_) => continue,
                Err(_) => break,
            }
        }
        panic!(
            "replica {} did not read its key ring again within 10 s",
            self.port
        );
    }

    /// SIGTERM, and the drain waited for (bounded); its exit status.
    pub fn stop(&mut self, within: Duration) -> std::process::ExitStatus {
        let mut p = self.process.take().expect("a running replica");
        p.signal("TERM");
        p.wait_exit(within)
            .unwrap_or_else(|| panic!("replica {} still drains after {within:?}", self.port))
    }
}
