use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use sha2::Sha256;

use super::*;

fn line(id: &str, byte: u8) -> String {
    format!("{id}:{}", STANDARD.encode([byte; 32]))
}

#[test]
fn what_one_key_seals_opens_with_any_ring_holding_it_and_no_other() {
    let old = KeyRing::parse(&line("a", 1)).unwrap();
    let both = KeyRing::parse(&format!("{}\n{}\n", line("b", 2), line("a", 1))).unwrap();
    let other = KeyRing::parse(&line("a", 3)).unwrap();
    let sealed = old.seal(Purpose::SessionId, b"x", b"hello");
    assert_eq!(
        both.open(Purpose::SessionId, b"x", &sealed).as_deref(),
        Some(&b"hello"[..])
    );
    // The same id with another secret, another purpose, another aad: none opens it.
    assert_eq!(other.open(Purpose::SessionId, b"x", &sealed), None);
    assert_eq!(old.open(Purpose::RequestState, b"x", &sealed), None);
    assert_eq!(
        old.open(Purpose::Authorization, b"x", &sealed),
        None,
        "a purpose of its own"
    );
    let token = old.seal(Purpose::Authorization, b"x", b"a token");
    assert_eq!(old.open(Purpose::SessionId, b"x", &token), None);
    assert_eq!(
        old.open(Purpose::Authorization, b"x", &token).as_deref(),
        Some(&b"a token"[..])
    );
    assert_eq!(old.open(Purpose::SessionId, b"y", &sealed), None);
    // The new first key seals; the old ring cannot open that (rotation's middle step is "add everywhere").
    let new = both.seal(Purpose::SessionId, b"x", b"hi");
    assert_eq!(old.open(Purpose::SessionId, b"x", &new), None);
    assert!(both.open(Purpose::SessionId, b"x", &new).is_some());
}

#[test]
fn every_altered_byte_is_refused() {
    let ring = KeyRing::parse(&line("a", 1)).unwrap();
    let sealed = ring.seal(Purpose::SessionId, b"", b"state of a session");
    for i in 0..sealed.len() {
        let mut altered = sealed.clone();
        altered[i] ^= 0x01;
        assert_eq!(
            ring.open(Purpose::SessionId, b"", &altered),
            None,
            "byte {i}"
        );
    }
    assert_eq!(
        ring.open(Purpose::SessionId, b"", &sealed[..OVERHEAD - 1]),
        None
    );
}

#[test]
fn bad_rings_are_refused_naming_the_line_never_the_key() {
    let cases: [(&str, KeyRingError); 6] = [
        ("", KeyRingError::Empty),
        ("# only a comment\n\n", KeyRingError::Empty),
        (
            "nokey",
            KeyRingError::Line {
                line: 1,
                why: "expected ID:BASE64",
            },
        ),
        (
            "\na:AAAA",
            KeyRingError::Line {
                line: 2,
                why: "the key must be 32 bytes (44 base64 characters)",
            },
        ),
        (
            "a b:AAAA",
            KeyRingError::Line {
                line: 1,
                why: "the key id may hold only A-Z, a-z, 0-9, '.', '_' and '-'",
            },
        ),
        (
            "a:%%%",
            KeyRingError::Line {
                line: 1,
                why: "the key is not valid base64",
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(KeyRing::parse(text).unwrap_err(), want, "{text:?}");
    }
    let twice = format!("{}\n{}", line("a", 1), line("a", 2));
    assert_eq!(
        KeyRing::parse(&twice).unwrap_err(),
        KeyRingError::DuplicateId {
            line: 2,
            id: "a".into()
        }
    );
    let secret = STANDARD.encode([7u8; 31]);
    let e = KeyRing::parse(&format!("a:{secret}"))
        .unwrap_err()
        .to_string();
    assert!(!e.contains(&secret), "{e}");
}

#[test]
fn a_new_key_line_loads_and_is_fresh() {
    let a = new_key_line();
    let b = new_key_line();
    assert_ne!(a, b);
    let ring = KeyRing::parse(&format!("{a}\n{b}")).unwrap();
    assert_eq!(ring.ids().len(), 2);
    assert!(ring.is_shared());
    assert!(!KeyRing::random().is_shared());
}

/// The subkey HKDF-SHA256 gives `secret` for `info`, derived here apart from the ring's own code.
fn subkey(secret: [u8; 32], info: &[u8]) -> Key {
    let mut okm = [0u8; 32];
    Hkdf::<Sha256>::new(None, &secret)
        .expand(info, &mut okm)
        .unwrap();
    *Key::from_slice(&okm)
}

/// What the gateway sealed before XChaCha20-Poly1305 (ChaCha20-Poly1305 under the `v1` subkey, a random
/// 96-bit nonce): `tag || nonce || ciphertext`, built here with that algorithm.
fn sealed_the_old_way(
    id: &str,
    secret: [u8; 32],
    info: &[u8],
    aad: &[u8],
    plain: &[u8],
) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    getrandom::fill(&mut nonce).unwrap();
    let cipher = ChaCha20Poly1305::new(&subkey(secret, info));
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad })
        .unwrap();
    let mut out = vec![Sha256::digest(id.as_bytes())[0]];
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

#[test]
fn sealing_uses_xchacha20_poly1305_with_192_bit_random_nonces_not_96() {
    let ring = KeyRing::parse(&line("a", 1)).unwrap();
    let plain = b"state of a session";
    let one = ring.seal(Purpose::SessionId, b"x", plain);
    let two = ring.seal(Purpose::SessionId, b"x", plain);
    assert_eq!(
        one.len(),
        1 + 1 + 24 + plain.len() + 16,
        "format, tag, nonce, ciphertext, AEAD tag"
    );
    assert_eq!(one[..2], [0x02, Sha256::digest(b"a")[0]]);
    assert_ne!(one[2..26], two[2..26], "each seal draws its own nonce");
    // Opened apart from the ring: XChaCha20-Poly1305 under the purpose's v2 subkey, the nonce as sealed.
    let cipher = XChaCha20Poly1305::new(&subkey([1; 32], b"mcpgw/session-id/v2"));
    let opened = cipher
        .decrypt(
            XNonce::from_slice(&one[2..26]),
            Payload {
                msg: &one[26..],
                aad: b"x",
            },
        )
        .expect("an XChaCha20-Poly1305 seal");
    assert_eq!(opened, plain);
}

#[test]
fn ids_sealed_before_xchacha_still_open() {
    // One key whose tag is the new format's first byte too: its old ids must still open.
    let tagged_like_the_format = (0..10_000)
        .map(|i| format!("k{i}"))
        .find(|id| Sha256::digest(id.as_bytes())[0] == 0x02)
        .unwrap();
    for id in ["a", tagged_like_the_format.as_str()] {
        let ring = KeyRing::parse(&line(id, 5)).unwrap();
        for (purpose, info) in [
            (Purpose::SessionId, &b"mcpgw/session-id/v1"[..]),
            (Purpose::RequestState, &b"mcpgw/request-state/v1"[..]),
        ] {
            let old = sealed_the_old_way(id, [5; 32], info, b"aad", b"hello");
            assert_eq!(
                ring.open(purpose, b"aad", &old).as_deref(),
                Some(&b"hello"[..]),
                "{id} {purpose:?}"
            );
            assert_eq!(ring.open(purpose, b"other", &old), None);
            for i in 0..old.len() {
                let mut altered = old.clone();
                altered[i] ^= 0x01;
                assert_eq!(ring.open(purpose, b"aad", &altered), None, "{id} byte {i}");
            }
        }
    }
}

#[test]
fn the_earlier_cipher_seals_only_when_asked_and_both_open() {
    let text = line("a", 9);
    let legacy = KeyRing::parse(&text)
        .unwrap()
        .sealing_with(SealCipher::ChaCha20Poly1305);
    let current = KeyRing::parse(&text).unwrap();
    let sealed = legacy.seal(Purpose::RequestState, b"", b"hi");
    assert_eq!(
        sealed.len(),
        1 + 12 + 2 + 16,
        "the earlier format, as replicas before it read it"
    );
    let cipher = ChaCha20Poly1305::new(&subkey([9; 32], b"mcpgw/request-state/v1"));
    assert!(
        cipher
            .decrypt(
                Nonce::from_slice(&sealed[1..13]),
                Payload {
                    msg: &sealed[13..],
                    aad: b""
                }
            )
            .is_ok()
    );
    assert!(current.open(Purpose::RequestState, b"", &sealed).is_some());
    let new = current.seal(Purpose::RequestState, b"", b"hi");
    assert!(legacy.open(Purpose::RequestState, b"", &new).is_some());
}
