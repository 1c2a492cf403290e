//! Keeping the upstream's credentials out of every message a client or a log can see
//! (brief, "Security"): the API key, the URL's password and `user:password`, its query values.

use base64::Engine as _;

/// The secrets to redact, matched in any percent-encoding: each byte literally or as `%XX`
/// (either case), so a full, partial or lower-case encoding of a secret is found as well as
/// the plain text; a space also matches `+`. Their Base64 forms (padded and not) are secrets
/// too, since a server may echo an `Authorization` header.
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
            let b64 = base64::engine::general_purpose::STANDARD.encode(&v);
            all.push(b64.trim_end_matches('=').to_string());
            all.push(b64);
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

/// The end of `secret` in `text` starting at `start`, each of its bytes given literally or
/// as `%XX`.
fn match_at(text: &[u8], start: usize, secret: &[u8]) -> Option<usize> {
    let mut j = start;
    for &b in secret {
        match text.get(j) {
            Some(&t) if t == b || (b == b' ' && t == b'+') => j += 1,
            Some(b'%') if text.get(j + 1..j + 3).and_then(hex_byte) == Some(b) => j += 3,
            _ => return None,
        }
    }
    Some(j)
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
        assert!(Secrets::new([String::new()]).is_empty());
    }
}
