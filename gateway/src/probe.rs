//! `mcpgw probe URL`: one plain-HTTP GET with a deadline, for health checks in images that have no curl.
//! Blocking standard-library I/O: it runs alone in its own process, never inside the server.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Why a probe got no status.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Not `http://host:port/path`.
    #[error("not a plain http:// URL: {0}")]
    Url(String),
    /// No connection, or no answer in time.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An answer that is not HTTP.
    #[error("the answer is not an HTTP response")]
    NotHttp,
}

/// GETs `url` and returns the response's status code.
pub fn get(url: &str, timeout: Duration) -> Result<u16, ProbeError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ProbeError::Url(url.to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let deadline = Instant::now() + timeout;
    let addr = with_port
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| ProbeError::Url(url.to_owned()))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    stream.set_read_timeout(Some(left))?;
    stream.set_write_timeout(Some(left))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: mcpgw-probe\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        let got = stream.read(&mut head[n..])?;
        if got == 0 {
            break;
        }
        n += got;
    }
    let line = std::str::from_utf8(&head[..n]).map_err(|_| ProbeError::NotHttp)?;
    let status = line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|code| code.parse().ok())
        .ok_or(ProbeError::NotHttp)?;
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_probe_reads_the_status_and_fails_on_no_listener_or_a_bad_url() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for status in ["200 OK", "503 Service Unavailable"] {
                let (mut s, _) = listener.accept().unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 512];
                while !got.ends_with(b"\r\n\r\n") {
                    let n = s.read(&mut buf).unwrap();
                    assert!(n > 0, "the request ended early");
                    got.extend_from_slice(&buf[..n]);
                }
                write!(s, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").unwrap();
            }
        });
        let url = format!("http://{addr}/healthz");
        assert_eq!(get(&url, Duration::from_secs(5)).unwrap(), 200);
        assert_eq!(get(&url, Duration::from_secs(5)).unwrap(), 503);
        server.join().unwrap();
        assert!(
            get(&url, Duration::from_secs(1)).is_err(),
            "nothing listens now"
        );
        assert!(matches!(
            get("https://x/", Duration::from_secs(1)),
            Err(ProbeError::Url(_))
        ));
    }
}
