//! `custom` tools (contract §2): free-text input, optionally constrained by a `lark` or
//! `regex` grammar. Upstream sees a function with the one string parameter
//! [`INPUT_PARAM`]; the grammar goes into its description.

use protocol::ApiError;
use serde_json::{json, Value};

use std::sync::Arc;

use protocol::input::InputItem;

use super::{check_name, opt_str, server_custom, visible_name, CallItem, DeclareCtx, Declared, Owner, Tool, ToolEntry, ToolType, UpstreamTool};
use crate::events::file_citations::FileSource;
use crate::transcript::{Call, Replayed};
use crate::upstream::NativeTool;

/// The `custom` tool type: a client tool, or a server tool when its name is registered
/// (`[server_tools]`, see `server_custom.rs`).
#[derive(Debug, Clone, Copy)]
pub struct CustomType;

impl ToolType for CustomType {
    fn types(&self) -> &'static [&'static str] {
        &["custom"]
    }

    fn declare(&self, decl: Value, _kind: &str, param: &str, ctx: &DeclareCtx<'_>) -> Result<Declared, ApiError> {
        match decl.get("name").and_then(Value::as_str).and_then(|n| ctx.registry.get(n)) {
            Some(tool) => server_custom::declare(decl, param, tool.clone()),
            None => declare(decl, param, None),
        }
    }

    fn replay(&self, item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
        match item {
            InputItem::CustomToolCall(c) => Some(replay(c)),
            _ => None,
        }
    }
}

/// A declared client custom tool: its calls are returned as `custom_tool_call` items.
#[derive(Debug, Clone, Copy)]
pub struct CustomTool;

impl Tool for CustomTool {
    fn tool_type(&self) -> &'static str {
        "custom"
    }

    fn call_item(&self) -> CallItem {
        CallItem::Custom
    }
}

/// The custom-call encoding is the transcript's (a call's raw input as the one argument).
pub use crate::transcript::custom::{arguments_from_input, input_from_arguments, INPUT_PARAM};

/// Validates a client `custom` declaration (also a namespace member). An invalid regex or
/// Lark grammar → 400 naming `tools[i].format.definition`.
pub fn declare(decl: Value, param: &str, namespace: Option<&str>) -> Result<Declared, ApiError> {
    let name = check_name(decl.get("name"), param)?;
    let description = opt_str(&decl, "description", param)?;
    let format = match decl.get("format") {
        None | Some(Value::Null) => json!({"type": "text"}),
        Some(f) => f.clone(),
    };
    let grammar_note = check_format(&format, &format!("{param}.format"))?;
    let mut text = description.clone().unwrap_or_default();
    if let Some(note) = grammar_note {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&note);
    }
    let parameters = json!({
        "type": "object",
        "properties": {INPUT_PARAM: {"type": "string", "description": "The raw input text for this tool."}},
        "required": [INPUT_PARAM],
    });
    let native = NativeTool::custom(&visible_name(&name, namespace), description.as_deref(), &format);
    let mut echo = decl;
    echo["format"] = format;
    let deferred = super::deferred::Deferred::of_member(&echo, param, &name, description.as_deref())?;
    let entry = ToolEntry {
        name: name.clone(),
        namespace: namespace.map(str::to_string),
        owner: Owner::Client,
        upstream: UpstreamTool {
            name: visible_name(&name, namespace),
            description: if text.is_empty() { None } else { Some(text) },
            parameters,
            strict: None,
            native: Some(native),
        },
        param: param.to_string(),
        deferred,
        tool: Arc::new(CustomTool),
    };
    Ok(Declared { entries: vec![entry], echo, discovery: None })
}

/// Checks `format`; returns the note for the upstream description when it is a grammar.
fn check_format(format: &Value, param: &str) -> Result<Option<String>, ApiError> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("grammar") => {
            let syntax = format.get("syntax").and_then(Value::as_str);
            let Some(def) = format.get("definition").and_then(Value::as_str) else {
                return Err(ApiError::invalid(
                    format!("{param}.definition"),
                    "A grammar format needs 'definition' (a string).",
                )
                .with_code("missing_required_parameter"));
            };
            let problem = match syntax {
                // Syntax only: the grammar is shown to the model, never run here, so a large
                // but valid pattern (`\w{1000}`) is fine and costs no compilation.
                Some("regex") => regex_syntax::Parser::new().parse(def).err().map(|e| e.to_string()),
                Some("lark") => check_lark(def).err(),
                _ => {
                    return Err(ApiError::invalid(
                        format!("{param}.syntax"),
                        "Invalid value for 'syntax': expected 'lark' or 'regex'.",
                    )
                    .with_code("invalid_value"))
                }
            };
            if let Some(problem) = problem {
                return Err(ApiError::invalid(
                    format!("{param}.definition"),
                    format!("Invalid {} grammar: {problem}", syntax.unwrap_or("")),
                )
                .with_code("invalid_grammar"));
            }
            Ok(Some(format!(
                "The input must match this {} grammar:\n{def}",
                syntax.unwrap_or("")
            )))
        }
        _ => Err(ApiError::invalid(
            format!("{param}.type"),
            "Invalid value for 'format.type': expected 'text' or 'grammar'.",
        )
        .with_code("invalid_value")),
    }
}

/// Compiles a Lark grammar with llguidance (no tokenizer needed) and reports the first error.
fn check_lark(def: &str) -> Result<(), String> {
    use llguidance::api::{GrammarInit, ParserLimits, TopLevelGrammar};
    let def = def.to_string();
    let outcome = std::panic::catch_unwind(move || {
        GrammarInit::Serialized(TopLevelGrammar::from_lark(def))
            .validate(None, ParserLimits::default())
            .into_error()
    });
    match outcome {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err("the grammar could not be compiled".to_string()),
    }
}

/// Replays a `custom_tool_call` item as the call the model made: the raw input as the
/// function's one argument ([`arguments_from_input`]), under its model-visible name.
pub fn replay(c: &protocol::input::CustomToolCall) -> Replayed {
    let call = Call { call_id: c.call_id.clone(), name: visible_name(&c.name, c.namespace.as_deref()), arguments: arguments_from_input(&c.input) };
    Replayed { call, result: None, private_key: None }
}

/// Decodes the `input` string value incrementally from streamed argument fragments, so
/// `response.custom_tool_call_input.delta` can stream the raw input as it arrives.
#[derive(Debug, Default)]
pub struct InputDecoder {
    buf: String,
    /// Byte offset in `buf` of the next undecoded character inside the string value.
    pos: Option<usize>,
    done: bool,
}

impl InputDecoder {
    /// True while inside the `input` string: its opening quote was seen, its closing one not.
    pub fn inside(&self) -> bool {
        self.pos.is_some() && !self.done
    }

    /// Feeds one arguments fragment; returns newly decoded input text (possibly empty).
    pub fn feed(&mut self, fragment: &str) -> String {
        self.buf.push_str(fragment);
        let mut out = String::new();
        if self.done {
            return out;
        }
        if self.pos.is_none() {
            self.pos = find_value_start(&self.buf);
        }
        let Some(mut i) = self.pos else { return out };
        let bytes = self.buf.as_bytes();
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    self.done = true;
                    i += 1;
                    break;
                }
                b'\\' => match decode_escape(&self.buf[i..]) {
                    Some((s, len)) => {
                        out.push_str(&s);
                        i += len;
                    }
                    None => break,
                },
                _ => {
                    let Some(c) = self.buf[i..].chars().next() else { break };
                    out.push(c);
                    i += c.len_utf8();
                }
            }
        }
        self.pos = Some(i);
        out
    }
}

/// Finds the byte offset just after the opening quote of the `"input"` value.
fn find_value_start(buf: &str) -> Option<usize> {
    let key = format!("\"{INPUT_PARAM}\"");
    let k = buf.find(&key)? + key.len();
    let rest = &buf[k..];
    let colon = rest.find(|c: char| !c.is_whitespace())?;
    if !rest[colon..].starts_with(':') {
        return None;
    }
    let after = &rest[colon + 1..];
    let q = after.find(|c: char| !c.is_whitespace())?;
    if !after[q..].starts_with('"') {
        return None;
    }
    Some(k + colon + 1 + q + 1)
}

/// Decodes one JSON escape at the start of `s`; `None` when incomplete.
fn decode_escape(s: &str) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let c = *b.get(1)?;
    let simple = match c {
        b'"' => Some('"'),
        b'\\' => Some('\\'),
        b'/' => Some('/'),
        b'b' => Some('\u{8}'),
        b'f' => Some('\u{c}'),
        b'n' => Some('\n'),
        b'r' => Some('\r'),
        b't' => Some('\t'),
        b'u' => None,
        _ => return Some((String::new(), 2)),
    };
    if let Some(ch) = simple {
        return Some((ch.to_string(), 2));
    }
    let hi = u32::from_str_radix(s.get(2..6)?, 16).ok()?;
    if (0xD800..0xDC00).contains(&hi) {
        if s.len() < 12 {
            return None;
        }
        let lo = s.get(6..12).filter(|t| t.starts_with("\\u")).and_then(|t| u32::from_str_radix(&t[2..], 16).ok());
        if let Some(lo) = lo.filter(|lo| (0xDC00..0xE000).contains(lo)) {
            let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return Some((char::from_u32(cp).unwrap_or('\u{FFFD}').to_string(), 12));
        }
        return Some(('\u{FFFD}'.to_string(), 6));
    }
    Some((char::from_u32(hi).unwrap_or('\u{FFFD}').to_string(), 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_streams_input_across_any_split() {
        let args = "{\n  \"input\": \"SELECT \\\"a\\\" \\u00e9\\ud83d\\ude00 \\n1\"\n}";
        let want = input_from_arguments(args);
        assert_eq!(want, "SELECT \"a\" é😀 \n1");
        for size in 1..6 {
            let mut d = InputDecoder::default();
            let mut got = String::new();
            let chars: Vec<char> = args.chars().collect();
            for piece in chars.chunks(size) {
                got.push_str(&d.feed(&piece.iter().collect::<String>()));
            }
            assert_eq!(got, want, "split {size}");
        }
    }

    #[test]
    fn grammars_are_checked() {
        let big = json!({"type":"custom","name":"x","format":{"type":"grammar","syntax":"regex","definition":"(\\w+\\s*){500}\\w{1000}"}});
        assert!(declare(big, "tools[0]", None).is_ok(), "a large but valid regex");
        let bad_regex = json!({"type":"custom","name":"x","format":{"type":"grammar","syntax":"regex","definition":"(a"}});
        let err = declare(bad_regex, "tools[0]", None).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("tools[0].format.definition"));
        let bad_lark = json!({"type":"custom","name":"x","format":{"type":"grammar","syntax":"lark","definition":"start: undefined_rule"}});
        assert!(declare(bad_lark, "tools[0]", None).is_err());
        let good = json!({"type":"custom","name":"x","format":{"type":"grammar","syntax":"lark","definition":"start: \"a\" /[0-9]+/"}});
        let e = declare(good, "tools[0]", None).unwrap().entries;
        assert!(e[0].upstream.description.as_deref().unwrap_or("").contains("lark grammar"));
    }
}

#[cfg(test)]
mod duties {
    use super::*;
    use crate::executors::Registry;
    use crate::tools::{CallItem, ToolSet};
    use crate::upstream::UpstreamCaps;

    /// The four duties of a client `custom` tool: its grammar is checked, it goes upstream
    /// as a function of one string (natively only where the upstream takes `custom`), its
    /// calls are `custom_tool_call` items of the client, and a replayed call's input is the
    /// function's one argument again.
    #[test]
    fn custom_duties() {
        let registry = Registry::default();
        let ctx = DeclareCtx { registry: &registry };
        let bad = json!({"type":"custom","name":"sql","format":{"type":"grammar","syntax":"regex","definition":"("}});
        assert!(CustomType.declare(bad, "custom", "tools[0]", &ctx).is_err());
        let decl = json!({"type":"custom","name":"sql","description":"Run SQL","format":{"type":"grammar","syntax":"regex","definition":"SELECT .*"}});
        let plain = ToolSet::build(vec![decl.clone()], None, &registry, &UpstreamCaps::default()).unwrap();
        let e = plain.lookup("sql").unwrap();
        assert_eq!((e.owner, e.call_item()), (Owner::Client, CallItem::Custom));
        assert!(!e.upstream.is_native());
        assert_eq!(e.upstream.parameters["required"], json!([INPUT_PARAM]));
        assert!(e.upstream.description.as_deref().unwrap_or("").contains("SELECT .*"), "the grammar is shown to the model");
        let native = ToolSet::build(vec![decl], None, &registry, &UpstreamCaps { native_tools: vec!["custom".into()], ..UpstreamCaps::default() }).unwrap();
        let n = native.lookup("sql").unwrap().upstream.native.clone().unwrap();
        assert_eq!(n.tool_type, "custom");
        assert_eq!(n.declaration["format"]["definition"], json!("SELECT .*"));
        let item: InputItem = serde_json::from_value(json!({"type":"custom_tool_call","call_id":"c1","name":"sql","input":"SELECT \"1\""})).unwrap();
        let r = CustomType.replay(&item, &mut Vec::new()).unwrap();
        assert_eq!(input_from_arguments(&r.call.arguments), "SELECT \"1\"");
        assert_eq!(r.call.name, "sql");
    }
}
