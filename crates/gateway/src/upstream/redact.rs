//! Keeping the upstream's credentials out of every message a client or a log can see
//! (brief, "Security"): the API key, the URL's password and `user:password`, its query values.

use base64::Engine as _;

/// The secrets to redact, matched in any percent-encoding: each byte literally, as `%XX`
/// (either case) or `%25XX` (a URL inside a URL), or JSON-escaped (`\/`, `\u00XX`), so a
/// full, partial or lower-case encoding of a secret is found as well as the plain text; a
/// space also matches `+`. Their Base64 forms are secrets too, at any offset within a longer
/// Base64 text (an echoed `Authorization: Basic …`, or `Bearer <key>` encoded whole).
#[derive(Debug, Default)]
pub struct Secrets {
    /// Longest first, so that a secret containing another is replaced whole.
    values: Vec<Vec<u8>>,
}

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

impl Secrets {
    /// The secrets among `values` (empty ones are skipped), with their Base64 forms.
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut all: Vec<String> = Vec::new();
        for v in values.into_iter().filter(|v| !v.is_empty()) {
            all.extend(base64_cores(v.as_bytes()));
            all.push(v);
        }
        all.sort();
        all.dedup();
        all.sort_by_key(|k| std::cmp::Reverse(k.len()));
        Secrets { values: all.into_iter().map(String::into_bytes).collect() }
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `s` with every occurrence of a secret, in any encoding, replaced by `[redacted]`.
    pub fn redact(&self, s: &str) -> String {
        if self.values.is_empty() {
            return s.to_string();
        }
        let text = s.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            match self.values.iter().find_map(|v| match_at(text, i, v)) {
                Some(end) => {
                    out.extend_from_slice(REDACTED.as_bytes());
                    i = end;
                }
                None => {
                    out.push(text[i]);
                    i += 1;
                }
            }
        }
        // A match starts at a character or at `%` and ends after one, so the text stays UTF-8.
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The Base64 texts (standard and URL-safe alphabets) that contain `secret` however it is
/// aligned in a longer encoded text: for each of the three offsets, the characters that
/// depend on the secret's bytes alone. Shorter than 8 characters: too likely by chance.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    let mut out = vec![STANDARD.encode(secret), STANDARD_NO_PAD.encode(secret)];
    for offset in 0..3usize {
        let mut buf = vec![0u8; offset];
        buf.extend_from_slice(secret);
        let enc = STANDARD_NO_PAD.encode(&buf);
        // The first characters mix in the unknown bytes before, the last one (of a partial
        // group) those after.
        let start = [0, 2, 3][offset];
        let end = enc.len() - usize::from(buf.len() % 3 != 0);
        if let Some(core) = enc.get(start..end).filter(|c| c.len() >= 8) {
            out.push(core.to_string());
        }
    }
    let url_safe: Vec<String> = out.iter().map(|c| c.replace('+', "-").replace('/', "_")).collect();
    out.extend(url_safe);
    out
}

/// The end of `secret` in `text` starting at `start`, each of its bytes given in any of the
/// forms [`decode_at`] reads.
fn match_at(text: &[u8], start: usize, secret: &[u8]) -> Option<usize> {
    let mut j = start;
    for &b in secret {
        match text.get(j) {
            Some(&t) if t == b || (b == b' ' && t == b'+') => j += 1,
            _ => match decode_at(text, j) {
                Some((d, next)) if d == b => j = next,
                _ => return None,
            },
        }
    }
    Some(j)
}

/// The byte an escape at `j` stands for and where the escape ends: `%XX`, `%25XX`, `\/`,
/// `\u00XX`.
fn decode_at(text: &[u8], j: usize) -> Option<(u8, usize)> {
    match text.get(j)? {
        b'%' => match hex_byte(text.get(j + 1..j + 3)?)? {
            b'%' => Some((hex_byte(text.get(j + 3..j + 5)?)?, j + 5)),
            d => Some((d, j + 3)),
        },
        b'\\' => match text.get(j + 1)? {
            b'/' => Some((b'/', j + 2)),
            b'u' if text.get(j + 2..j + 4) == Some(b"00") => Some((hex_byte(text.get(j + 4..j + 6)?)?, j + 6)),
            _ => None,
        },
        _ => None,
    }
}

fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_and_base64_form_is_redacted() {
        let s = Secrets::new(["abc+def==".to_string(), "p@ss!word".to_string(), "sk-K+/=1".to_string(), String::new()]);
        for leak in [
            "abc+def==", "abc%2Bdef%3D%3D", "abc%2bdef%3d%3d", "abc+def%3D%3D", "abc%2Bdef==", "p%40ss!word", "p%40ss%21word",
            "sk-K%2B%2F%3D1", "c2stSysvPTE", "c2stSysvPTE=", "YWJjK2RlZj09", "cEBzcyF3b3Jk",
        ] {
            let msg = format!("denied: {leak}.");
            assert_eq!(s.redact(&msg), "denied: [redacted].", "{leak}");
        }
        assert_eq!(s.redact("nothing here: abc+def= é"), "nothing here: abc+def= é");
        assert_eq!(Secrets::new(["a b".to_string()]).redact("x a+b y"), "x [redacted] y");
        assert_eq!(s.redact("%"), "%", "a lone percent sign at the end");
        // A URL inside a URL, JSON escapes left in a message, Base64 at another offset.
        let key = Secrets::new(["sk-Zq9/Key+Secret=".to_string()]);
        for leak in [
            "sk-Zq9%252FKey%252BSecret%253D", r"sk-Zq9\/Key+Secret=", r"\u0073k-Zq9/Key+Secret\u003d",
            "QmVhcmVyIHNrLVpxOS9LZXkrU2VjcmV0PQ==", "eHNrLVpxOS9LZXkrU2VjcmV0PQ", "c2stWnE5L0tleStTZWNyZXQ9",
        ] {
            let out = key.redact(&format!("at {leak} end"));
            assert!(!out.contains("Zq9") && !out.contains("LVpxOS9LZXkrU2Vjcm") && !out.contains("stWnE5L0tleStTZWNyZXQ"), "{leak}: {out}");
        }
        assert!(Secrets::new([String::new()]).is_empty());
    }
}
