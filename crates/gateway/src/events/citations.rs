//! `url_citation` annotations: every occurrence of a source URL of this turn in the answer
//! text (contract §6). Offsets are Unicode code points, `end_index` exclusive. A markdown
//! link `[label](url)` is cited as a whole, widened to one enclosing pair of parentheses
//! when present (as OpenAI's spans are); a bare URL is cited as itself. URLs that did not
//! come from this turn's sources get no annotation.

use protocol::Annotation;

/// A search source: the URL and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    pub title: String,
}

/// Characters that end a URL in running text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, ')' | ']' | '>' | '<' | '"' | '\'' | '`' | '}' | '|')
}

/// Comparable form of a URL: percent-decoded (so `z%C3%BCrich` and `zürich` compare equal,
/// whichever of the source and the answer is encoded), lower-case scheme and host, no
/// fragment, no trailing slash.
pub fn normalize(url: &str) -> String {
    let no_frag = url.split('#').next().unwrap_or(url);
    let decoded = percent_encoding::percent_decode_str(no_frag).decode_utf8_lossy();
    let trimmed = decoded.trim_end_matches('/');
    match trimmed.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            format!("{}://{}{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), path)
        }
        None => trimmed.to_string(),
    }
}

/// The annotations for `text`, in text order.
pub fn annotate(text: &str, sources: &[Source]) -> Vec<Annotation> {
    if sources.is_empty() || !text.contains("http") {
        return Vec::new();
    }
    let known: Vec<(String, &Source)> = sources.iter().map(|s| (normalize(&s.url), s)).collect();
    // byte offset → code-point offset
    let cp = |byte: usize| text[..byte].chars().count();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find("http") {
        let start = from + rel;
        let rest = &text[start..];
        if !(rest.starts_with("http://") || rest.starts_with("https://")) {
            from = start + 4;
            continue;
        }
        let len = rest.find(ends_url).unwrap_or(rest.len());
        let mut url = &rest[..len];
        url = url.trim_end_matches(['.', ',', ';', ':', '!', '?']);
        let end = start + url.len();
        from = end.max(start + 4);
        let norm = normalize(url);
        let Some((_, source)) = known.iter().find(|(n, _)| *n == norm) else { continue };
        let (mut s, mut e) = (start, end);
        // markdown link target: `[label](url)`
        if start >= 2 && bytes[start - 2] == b']' && bytes[start - 1] == b'(' && bytes.get(end) == Some(&b')') {
            if let Some(open) = text[..start - 2].rfind('[').filter(|&o| !text[o..start - 2].contains('\n')) {
                s = open;
                e = end + 1;
                if s >= 1 && bytes[s - 1] == b'(' && bytes.get(e) == Some(&b')') {
                    s -= 1;
                    e += 1;
                }
            }
        }
        out.push(Annotation::UrlCitation {
            start_index: cp(s),
            end_index: cp(e),
            title: if source.title.is_empty() { source.url.clone() } else { source.title.clone() },
            url: source.url.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(url: &str) -> Source {
        Source { url: url.into(), title: format!("T {url}") }
    }

    fn spans(text: &str, anns: &[Annotation]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        anns.iter()
            .map(|a| match a {
                Annotation::UrlCitation { start_index, end_index, .. } => chars[*start_index..*end_index].iter().collect(),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn code_point_offsets_after_non_ascii_text() {
        let text = "naïve – café ([ex.com](https://ex.com/a)). Done.";
        let anns = annotate(text, &[src("https://ex.com/a")]);
        assert_eq!(spans(text, &anns), vec!["([ex.com](https://ex.com/a))"]);
        let Annotation::UrlCitation { start_index, .. } = &anns[0] else { panic!() };
        assert_eq!(*start_index, 13, "code points, not bytes (bytes would be 17)");
    }

    #[test]
    fn several_links_repeats_bare_urls_and_unknown_urls() {
        let text = "See [a](https://a.org/x) and https://b.org/y. Again https://a.org/x, and https://evil.test/z.";
        let anns = annotate(text, &[src("https://a.org/x"), src("https://b.org/y/")]);
        assert_eq!(spans(text, &anns), vec!["[a](https://a.org/x)", "https://b.org/y", "https://a.org/x"]);
    }

    /// A link matches its source when either of the two is percent-encoded (the model
    /// writes `ü` for a source's `%C3%BC`, or the other way round); the annotation names the
    /// source's URL.
    #[test]
    fn percent_encoded_and_decoded_forms_match() {
        let encoded = "https://ex.com/z%C3%BCrich-weather";
        let decoded = "https://ex.com/zürich-weather";
        for (written, source) in [(decoded, encoded), (encoded, decoded), ("https://EX.com/z%c3%bcrich-weather/", encoded)] {
            let text = format!("Rain ([ex]({written})).");
            let anns = annotate(&text, &[src(source)]);
            assert_eq!(spans(&text, &anns), vec![format!("([ex]({written}))")], "{written} vs {source}");
            let Annotation::UrlCitation { url, .. } = &anns[0] else { panic!() };
            assert_eq!(url, source);
        }
        assert_eq!(normalize(encoded), normalize(decoded));
        assert!(annotate("https://ex.com/z%C3%BCrich-news", &[src(decoded)]).is_empty(), "another page");
    }

    #[test]
    fn nothing_without_sources() {
        assert!(annotate("https://a.org", &[]).is_empty());
    }
}
