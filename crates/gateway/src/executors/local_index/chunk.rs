//! Token chunking of extracted text, following a vector-store file's `chunking_strategy`
//! (contract §10): `auto` = 800-token chunks with 400 tokens of overlap (as OpenAI),
//! `static` = `max_chunk_size_tokens` 100..=4096 with `chunk_overlap_tokens` ≤ half of it.
//!
//! Tokens are OpenAI's `cl100k_base` BPE (tiktoken-rs, vocabulary embedded in the crate).
//! Chunks are exact substrings of the text cut at token boundaries, widened to the next
//! UTF-8 character boundary, so non-ASCII text never splits inside a character.

use serde_json::{json, Value};

/// Token sizes of a chunking strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunking {
    /// Tokens per chunk, 100..=4096.
    pub max_tokens: usize,
    /// Tokens shared by consecutive chunks, at most `max_tokens / 2`.
    pub overlap: usize,
}

impl Default for Chunking {
    /// The `auto` strategy: 800 tokens, 400 overlap.
    fn default() -> Self {
        Chunking { max_tokens: 800, overlap: 400 }
    }
}

impl Chunking {
    /// Parses a request's `chunking_strategy` (`None` or `{type:"auto"}` → default;
    /// `{type:"static", static:{max_chunk_size_tokens, chunk_overlap_tokens}}`). `Err` is a
    /// message for a 400 on `chunking_strategy`.
    pub fn from_request(v: Option<&Value>) -> Result<Chunking, String> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(Chunking::default()) };
        match v.get("type").and_then(Value::as_str) {
            Some("auto") => Ok(Chunking::default()),
            Some("static") => {
                let s = v.get("static").ok_or("chunking_strategy.static is required for type 'static'")?;
                let max = s.get("max_chunk_size_tokens").and_then(Value::as_u64).ok_or(
                    "chunking_strategy.static.max_chunk_size_tokens must be an integer from 100 to 4096",
                )?;
                let overlap = s
                    .get("chunk_overlap_tokens")
                    .and_then(Value::as_u64)
                    .ok_or("chunking_strategy.static.chunk_overlap_tokens must be a non-negative integer")?;
                if !(100..=4096).contains(&max) {
                    return Err(format!(
                        "chunking_strategy.static.max_chunk_size_tokens must be from 100 to 4096, got {max}"
                    ));
                }
                if overlap > max / 2 {
                    return Err(format!(
                        "chunking_strategy.static.chunk_overlap_tokens must not exceed half of max_chunk_size_tokens ({}), got {overlap}",
                        max / 2
                    ));
                }
                // Both bounded by 4096 above.
                Ok(Chunking { max_tokens: max as usize, overlap: overlap as usize })
            }
            _ => Err("chunking_strategy.type must be 'auto' or 'static'".to_string()),
        }
    }

    /// The strategy as a vector-store file reports it: `{type:"static", static:{…}}`.
    pub fn to_json(self) -> Value {
        json!({"type": "static", "static": {"max_chunk_size_tokens": self.max_tokens, "chunk_overlap_tokens": self.overlap}})
    }
}

/// Splits `text` into chunks of at most `c.max_tokens` cl100k tokens, consecutive chunks
/// sharing `c.overlap` tokens. Whitespace-only chunks are dropped; empty text → no chunk.
pub fn split(text: &str, c: Chunking) -> Vec<String> {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let tokens = bpe.encode_ordinary(text);
    // Byte offset where each token starts; the tokens of encode_ordinary concatenate to
    // exactly the text's bytes.
    let mut starts = Vec::with_capacity(tokens.len() + 1);
    let mut at = 0usize;
    for t in &tokens {
        starts.push(at);
        at += bpe.decode_bytes(std::slice::from_ref(t)).map(|b| b.len()).unwrap_or(0);
    }
    starts.push(text.len().min(at));
    let step = c.max_tokens.saturating_sub(c.overlap).max(1);
    let mut out = Vec::new();
    let mut first = 0usize;
    while first < tokens.len() {
        let last = (first + c.max_tokens).min(tokens.len());
        let from = floor_char(text, starts[first]);
        let to = ceil_char(text, starts[last]);
        let piece = &text[from..to.max(from)];
        if !piece.trim().is_empty() {
            out.push(piece.to_string());
        }
        if last == tokens.len() {
            break;
        }
        first += step;
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(s).len()
    }

    #[test]
    fn chunks_follow_the_strategy() {
        let text: String = (0..3000).map(|i| format!("word{i} ")).collect();
        let c = Chunking { max_tokens: 100, overlap: 20 };
        let chunks = split(&text, c);
        assert!(chunks.len() > 5);
        for ch in &chunks {
            assert!(tokens(ch) <= 101, "{} tokens", tokens(ch));
        }
        // Overlap: the end of one chunk is the start of the next.
        let tail: String = chunks[0].chars().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
        assert!(chunks[1].contains(&tail), "overlap missing");
        assert!(chunks.last().is_some_and(|l| l.contains("word2999")));
    }

    #[test]
    fn non_ascii_is_never_cut_inside_a_character() {
        let text = "Ünïcödé 日本語のテキスト 🚗🔧 ".repeat(400);
        let chunks = split(&text, Chunking { max_tokens: 100, overlap: 50 });
        assert!(chunks.len() > 3);
        assert!(chunks.iter().all(|c| text.contains(c.as_str())));
    }

    #[test]
    fn empty_and_small() {
        assert!(split("", Chunking::default()).is_empty());
        assert!(split("   \n ", Chunking::default()).is_empty());
        assert_eq!(split("hello world", Chunking::default()), vec!["hello world".to_string()]);
    }

    #[test]
    fn strategy_parsing() {
        assert_eq!(Chunking::from_request(None), Ok(Chunking::default()));
        assert_eq!(Chunking::from_request(Some(&json!({"type":"auto"}))), Ok(Chunking::default()));
        let s = json!({"type":"static","static":{"max_chunk_size_tokens":200,"chunk_overlap_tokens":100}});
        assert_eq!(Chunking::from_request(Some(&s)), Ok(Chunking { max_tokens: 200, overlap: 100 }));
        for bad in [
            json!({"type":"static","static":{"max_chunk_size_tokens":99,"chunk_overlap_tokens":0}}),
            json!({"type":"static","static":{"max_chunk_size_tokens":5000,"chunk_overlap_tokens":0}}),
            json!({"type":"static","static":{"max_chunk_size_tokens":200,"chunk_overlap_tokens":101}}),
            json!({"type":"static"}),
            json!({"type":"fancy"}),
        ] {
            assert!(Chunking::from_request(Some(&bad)).is_err(), "{bad}");
        }
    }
}
