//! Text extraction of an uploaded file, chosen by its filename extension (and the `%PDF`
//! magic bytes): plain text and Markdown (`txt`, `md`, `markdown`, `text`, `csv`, `rst`,
//! `log`, none) as UTF-8; HTML (`html`, `htm`) as its rendered text (html2text); JSON
//! (`json`) checked to parse, kept as written; PDF (`pdf`) through pdf-extract.
//!
//! Failures are [`ExtractError`]s that become a vector-store file's
//! `last_error {code, message}`; nothing here panics on file bytes (the PDF parser runs under
//! `catch_unwind`).

/// Why a file gave no text: `code` is `unsupported_file` or `invalid_file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractError {
    pub code: &'static str,
    pub message: String,
}

fn invalid(message: impl Into<String>) -> ExtractError {
    ExtractError { code: "invalid_file", message: message.into() }
}

/// Extensions read as plain UTF-8 text.
const TEXT: [&str; 8] = ["txt", "text", "md", "markdown", "csv", "rst", "log", ""];

/// The extracted text of `bytes` named `filename`. Whitespace-only text (e.g. an image-only
/// PDF) is an `invalid_file` error; an unknown extension is `unsupported_file`.
pub fn extract(filename: &str, bytes: &[u8]) -> Result<String, ExtractError> {
    let ext = extension(filename);
    let text = if bytes.starts_with(b"%PDF") || ext == "pdf" {
        pdf(bytes)?
    } else if ext == "html" || ext == "htm" {
        let s = utf8(filename, bytes)?;
        html2text::config::plain_no_decorate()
            .string_from_read(s.as_bytes(), 100)
            .map_err(|e| invalid(format!("{filename} is not readable HTML: {e}")))?
    } else if ext == "json" {
        let s = utf8(filename, bytes)?;
        serde_json::from_str::<serde_json::Value>(s).map_err(|e| invalid(format!("{filename} is not valid JSON: {e}")))?;
        s.to_string()
    } else if TEXT.contains(&ext.as_str()) {
        utf8(filename, bytes)?.to_string()
    } else {
        return Err(ExtractError {
            code: "unsupported_file",
            message: format!(
                "Files of type '.{ext}' are not supported for retrieval; supported: .txt, .md, .html, .json, .pdf (and other UTF-8 text: .csv, .rst, .log)."
            ),
        });
    };
    if text.trim().is_empty() {
        return Err(invalid(format!("No text could be extracted from {filename} (e.g. a scanned or image-only PDF).")));
    }
    Ok(text)
}

fn extension(filename: &str) -> String {
    match filename.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_ascii_lowercase(),
        _ => String::new(),
    }
}

fn utf8<'a>(filename: &str, bytes: &'a [u8]) -> Result<&'a str, ExtractError> {
    let s = std::str::from_utf8(bytes).map_err(|e| invalid(format!("{filename} is not UTF-8 text: {e}")))?;
    Ok(s.strip_prefix('\u{feff}').unwrap_or(s))
}

fn pdf(bytes: &[u8]) -> Result<String, ExtractError> {
    // pdf-extract may panic on malformed documents: contain it.
    let run = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes));
    match run {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(invalid(format!("The PDF could not be read: {e}"))),
        Err(_) => Err(invalid("The PDF could not be read (malformed document).")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(extract("a.md", "# Título\n\nñandú".as_bytes()).as_deref(), Ok("# Título\n\nñandú"));
        let html = extract("p.html", b"<html><head><style>p{}</style><script>var x=1;</script></head><body><h1>Hi</h1><p>car <b>repair</b></p></body></html>")
            .unwrap_or_default();
        assert!(html.contains("Hi") && html.contains("car repair"), "{html}");
        assert!(!html.contains("var x"), "{html}");
        assert!(extract("d.json", br#"{"k": "v"}"#).is_ok());
        assert_eq!(extract("d.json", b"{nope").map_err(|e| e.code), Err("invalid_file"));
        assert_eq!(extract("x.png", b"\x89PNG").map_err(|e| e.code), Err("unsupported_file"));
        assert_eq!(extract("x.txt", b"\xff\xfe\x00").map_err(|e| e.code), Err("invalid_file"));
        assert_eq!(extract("e.txt", b"  \n").map_err(|e| e.code), Err("invalid_file"));
        assert_eq!(extract("bad.pdf", b"%PDF-1.4 garbage").map_err(|e| e.code), Err("invalid_file"));
    }
}
