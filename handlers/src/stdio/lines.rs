//! Reading newline-delimited output with a bound on the length of a line: an over-long line is skipped
//! (reported, never buffered whole), invalid UTF-8 is the caller's business (lines are bytes).

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`next_line`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line is in the buffer (without its `\n`; the last line may lack one).
    Complete,
    /// A line longer than the limit was skipped; this many bytes were dropped.
    TooLong(usize),
    /// End of input.
    Eof,
}

/// How much of an over-long line's start, and of its end, `next_line` keeps.
pub(crate) const KEPT: usize = 256;

/// Reads the next line into `buf` (cleared first), keeping at most `max` bytes of it. Of a longer line
/// (`Line::TooLong`), `buf` holds its first and its last `KEPT` bytes (at most) with a newline between them:
/// the reader may name it by either.
pub(crate) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut dropped = 0usize;
    let mut tail: Vec<u8> = Vec::new();
    let too_long = |buf: &mut Vec<u8>, tail: &[u8], dropped: usize| {
        buf.push(b'\n');
        buf.extend_from_slice(tail);
        Line::TooLong(dropped)
    };
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (dropped, buf.is_empty()) {
                (0, true) => Line::Eof,
                (0, false) => Line::Complete,
                (n, _) => too_long(buf, &tail, n),
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if dropped == 0 && buf.len() + chunk.len() <= max {
            buf.extend_from_slice(chunk);
        } else {
            if dropped == 0 {
                dropped = buf.len();
                tail.extend_from_slice(&buf[buf.len().saturating_sub(KEPT)..]);
                buf.truncate(KEPT);
            }
            let room = KEPT.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..room.min(chunk.len())]);
            tail.extend_from_slice(&chunk[chunk.len().saturating_sub(KEPT)..]);
            if tail.len() > KEPT {
                tail.drain(..tail.len() - KEPT);
            }
            dropped += chunk.len();
        }
        let consumed = newline.map_or(available.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(if dropped == 0 {
                Line::Complete
            } else {
                too_long(buf, &tail, dropped)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<(Line, String)> {
        // A tiny buffer makes lines span several fills.
        let mut reader = tokio::io::BufReader::with_capacity(3, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = next_line(&mut reader, &mut buf, max).await.unwrap();
            out.push((line, String::from_utf8_lossy(&buf).into_owned()));
            if line == Line::Eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_skips_long_ones() {
        let got = all(b"ab\n\nabcdefgh\nxyz\nlast", 5).await;
        assert_eq!(
            got,
            vec![
                (Line::Complete, "ab".into()),
                (Line::Complete, "".into()),
                (Line::TooLong(8), "abcdefgh\nabcdefgh".into()),
                (Line::Complete, "xyz".into()),
                (Line::Complete, "last".into()),
                (Line::Eof, "".into()),
            ]
        );
    }

    #[tokio::test]
    async fn long_last_line_and_empty_input() {
        assert_eq!(
            all(b"abcdefgh", 4).await,
            vec![
                (Line::TooLong(8), "abcdefgh\nabcdefgh".into()),
                (Line::Eof, "".into())
            ]
        );
        assert_eq!(all(b"", 4).await, vec![(Line::Eof, "".into())]);
        // Of a line far over the bound, its first and last `KEPT` bytes are kept.
        let long = format!("a{}z\n", "y".repeat(1000));
        let got = all(long.as_bytes(), 10).await;
        let (start, end) = (&long[..KEPT], &long[long.len() - 1 - KEPT..long.len() - 1]);
        assert_eq!(got[0], (Line::TooLong(1002), format!("{start}\n{end}")));
    }
}
