//! The test's own token issuer: signing keys made at run time (ES256 and EdDSA with rcgen, RS256 with the
//! `openssl` CLI), the tokens they sign, and a JWKS endpoint on a loopback thread whose key set and
//! availability a test changes while the gateway runs, counting what it is asked.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The `iss` of every token the test issuer signs (and the `[auth.jwt] issuer` of the configs).
pub const ISSUER: &str = "https://issuer.test.invalid";
/// The `aud` tokens name (`[auth.jwt] audience`).
pub const AUDIENCE: &str = "mcpgw-tests";

/// A private key, the one algorithm it signs with, and its public half as a JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    /// The public key as a JWK (with `kid`, `use` and `alg`).
    pub jwk: Value,
    /// RSA only: the public key as PEM (SubjectPublicKeyInfo) and the modulus' bytes.
    pub rsa_public: Option<(Vec<u8>, Vec<u8>)>,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

impl SigningKey {
    /// A fresh P-256 key (ES256).
    pub fn es256(kid: &str) -> SigningKey {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = pair.public_key_raw();
        assert_eq!(raw.len(), 65, "0x04 || x || y");
        let (x, y) = raw[1..].split_at(32);
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y),
                        "kid": kid, "use": "sig", "alg": "ES256"}),
            rsa_public: None,
        }
    }

    /// A fresh Ed25519 key (EdDSA).
    pub fn eddsa(kid: &str) -> SigningKey {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(&pair.serialize_der()),
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key_raw()),
                        "kid": kid, "use": "sig", "alg": "EdDSA"}),
            rsa_public: None,
        }
    }

    /// A fresh 2048-bit RSA key (RS256), made by the `openssl` CLI.
    pub fn rs256(kid: &str) -> SigningKey {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcpgw-it-rsa-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str| dir.join(name);
        let pem = file("key.pem");
        openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ],
            &pem,
        );
        let der = file("key.der");
        openssl_rsa(
            &pem,
            &["-traditional", "-outform", "DER", "-out"],
            Some(&der),
        );
        let public = file("public.pem");
        openssl_rsa(&pem, &["-pubout", "-out"], Some(&public));
        let modulus = openssl_rsa(&pem, &["-noout", "-modulus"], None);
        let hex = modulus
            .trim()
            .strip_prefix("Modulus=")
            .unwrap_or_else(|| panic!("openssl -modulus printed {modulus:?}"));
        let n: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .skip_while(|b| *b == 0)
            .collect();
        assert_eq!(n.len(), 256, "a 2048-bit modulus");
        let key = SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_der(&std::fs::read(&der).unwrap()),
            jwk: json!({"kty": "RSA", "n": b64(&n), "e": "AQAB",
                        "kid": kid, "use": "sig", "alg": "RS256"}),
            rsa_public: Some((std::fs::read(&public).unwrap(), n)),
        };
        let _ = std::fs::remove_dir_all(&dir);
        key
    }

    /// A token of these `claims` signed by this key, its header naming this key's `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// A token signed by this key whose header names `kid` (another key's, for a forged signature).
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// One RSA key for the whole test run (RSA keys take a moment to make; the tests only read it).
pub fn shared_rsa() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::rs256("rsa-1"))
}

fn openssl(args: &[&str], out: &PathBuf) {
    let status = Command::new("openssl")
        .args(args)
        .arg(out)
        .output()
        .expect("the openssl CLI runs");
    assert!(status.status.success(), "openssl {args:?}: {status:?}");
}

/// `openssl rsa -in PEM ARGS [OUT]`; its standard output.
fn openssl_rsa(pem: &PathBuf, args: &[&str], out: Option<&PathBuf>) -> String {
    let mut cmd = Command::new("openssl");
    cmd.arg("rsa").arg("-in").arg(pem).args(args);
    if let Some(out) = out {
        cmd.arg(out);
    }
    let output = cmd.output().expect("the openssl CLI runs");
    assert!(output.status.success(), "openssl rsa {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a token for `sub` granting `scope` (space-separated), from [`ISSUER`] for [`AUDIENCE`],
/// valid for ten minutes.
pub fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "scope": scope,
           "iat": now(), "exp": now() + 600})
}

/// A token with `alg: none` and no signature, built by hand (no library signs one).
pub fn unsigned(kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": kid});
    format!(
        "{}.{}.",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    )
}

/// An HS256 token of `claims` HMAC'd with `secret`, its header naming `kid`.
pub fn hs256(secret: &[u8], kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret)).unwrap()
}

/// How the JWKS endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// 200 with the current set.
    Up,
    /// 503.
    Unavailable,
    /// The request is read, then the connection closed with no answer.
    Closing,
}

#[derive(Debug)]
struct State {
    keys: Vec<Value>,
    availability: Availability,
}

/// A JWKS endpoint, `GET /jwks`, on a loopback port chosen at run time; stopped on drop.
pub struct Jwks {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    /// Requests for `/jwks` read, whatever they were answered.
    attempts: Arc<AtomicU64>,
    /// Requests for `/jwks` answered 200 with the set.
    served: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Jwks {
    /// Serves the public halves of `keys`.
    pub fn start(keys: &[&SigningKey], availability: Availability) -> Jwks {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            keys: keys.iter().map(|k| k.jwk.clone()).collect(),
            availability,
        }));
        let attempts = Arc::new(AtomicU64::new(0));
        let served = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (state, attempts, served, stop) = (
                state.clone(),
                attempts.clone(),
                served.clone(),
                stop.clone(),
            );
            move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (state, attempts, served) =
                        (state.clone(), attempts.clone(), served.clone());
                    std::thread::spawn(move || answer(stream, &state, &attempts, &served));
                }
            }
        });
        Jwks {
            addr,
            state,
            attempts,
            served,
            stop,
            thread: Some(thread),
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }

    /// Serves these keys from now on.
    pub fn set_keys(&self, keys: &[&SigningKey]) {
        self.state.lock().unwrap().keys = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    /// Answers this way from now on.
    pub fn set(&self, availability: Availability) {
        self.state.lock().unwrap().availability = availability;
    }

    /// Requests for the set so far, however they were answered.
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Requests for the set answered with it so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// Waits (bounded by `within`) until `count()` reaches `n`; whether it did.
    pub fn wait_until(&self, count: impl Fn(&Jwks) -> u64, n: u64, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while count(self) < n {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

impl Drop for Jwks {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (head only: a GET has no body) and answers it as the state says.
fn answer(mut stream: TcpStream, state: &Mutex<State>, attempts: &AtomicU64, served: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method != "GET" || path != "/jwks" {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    }
    let (availability, body) = {
        let s = state.lock().unwrap();
        (s.availability, json!({"keys": s.keys}).to_string())
    };
    attempts.fetch_add(1, Ordering::SeqCst);
    match availability {
        Availability::Closing => {
            let _ = stream.shutdown(Shutdown::Both);
        }
        Availability::Unavailable => {
            let _ = stream.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
        Availability::Up => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            if stream.write_all(head.as_bytes()).is_ok()
                && stream.write_all(body.as_bytes()).is_ok()
            {
                let _ = stream.flush();
                served.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}
