//! Pagination of the mock's lists: pages of [`PAGE_SIZE`] items and opaque cursors (base64url of the list's
//! name and the offset), so that a gateway's pagination is exercised when `--tools` is large. A cursor the
//! mock did not mint for this list is invalid params (-32602).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocol::{Error, ErrorCode};
use serde_json::json;

/// Items per page.
pub(crate) const PAGE_SIZE: usize = 50;

/// One page of `items` from `cursor` on, and the cursor of the next page (`None` on the last page).
pub(crate) fn page<'a, T>(
    list: &str,
    items: &'a [T],
    cursor: Option<&str>,
) -> Result<(&'a [T], Option<String>), Error> {
    let start = match cursor {
        None => 0,
        Some(c) => decode(list, c)
            .filter(|&offset| offset > 0 && offset < items.len())
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::InvalidParams,
                    format!("invalid params: invalid cursor for {list}"),
                )
                .with_data(json!({ "cursor": c }))
            })?,
    };
    let end = (start + PAGE_SIZE).min(items.len());
    let next = (end < items.len()).then(|| encode(list, end));
    Ok((&items[start..end], next))
}

fn encode(list: &str, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("mock:{list}:{offset}"))
}

fn decode(list: &str, cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let rest = text.strip_prefix("mock:")?.strip_prefix(list)?;
    let digits = rest.strip_prefix(':')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walking_the_cursors_visits_every_item_once() {
        // (number of items, expected page sizes)
        let table: [(usize, &[usize]); 5] = [
            (0, &[0]),
            (1, &[1]),
            (50, &[50]),
            (51, &[50, 1]),
            (173, &[50, 50, 50, 23]),
        ];
        for (n, sizes) in table {
            let items: Vec<usize> = (0..n).collect();
            let mut seen = Vec::new();
            let mut got_sizes = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let (items, next) = page("tools/list", &items, cursor.as_deref()).unwrap();
                got_sizes.push(items.len());
                seen.extend_from_slice(items);
                match next {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
            assert_eq!(got_sizes, sizes, "{n} items");
            assert_eq!(seen, items, "{n} items");
        }
    }

    #[test]
    fn foreign_or_broken_cursors_are_invalid_params() {
        let items: Vec<usize> = (0..120).collect();
        let (_, next) = page("tools/list", &items, None).unwrap();
        let good = next.unwrap();
        for bad in [
            "".to_owned(),
            "not base64 !".to_owned(),
            good.to_uppercase(),
            encode("prompts/list", 50),
            encode("tools/list", 0),
            encode("tools/list", 120),
            encode("tools/list", 9999),
            URL_SAFE_NO_PAD.encode("mock:tools/list:"),
            URL_SAFE_NO_PAD.encode("mock:tools/list:+5"),
        ] {
            let err = page("tools/list", &items, Some(&bad)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidParams, "{bad:?}");
            assert_eq!(err.data().unwrap()["cursor"], bad.as_str());
        }
        assert!(page("tools/list", &items, Some(&good)).is_ok());
    }
}
