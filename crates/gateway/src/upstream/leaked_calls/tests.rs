//! The leak filter over streamed text.

use super::*;

fn declared(name: &str) -> bool {
    matches!(name, "get_weather" | "web_search")
}

/// Feeds `deltas`, then finishes; returns what each delta gave (the finish last).
fn run(bare: bool, deltas: &[&str]) -> Vec<Vec<Piece>> {
    let mut f = LeakFilter::new(bare);
    let mut all: Vec<Vec<Piece>> = deltas
        .iter()
        .map(|d| {
            let mut out = Vec::new();
            f.feed(d.to_string(), &declared, &mut out);
            out
        })
        .collect();
    let mut out = Vec::new();
    f.finish(&declared, &mut out);
    all.push(out);
    all
}

fn text(s: &str) -> Piece {
    Piece::Text(s.to_string())
}

fn call(name: &str, arguments: &str) -> Piece {
    Piece::Call(LeakedCall { name: name.into(), arguments: arguments.into() })
}

/// Everything given back, text joined.
fn joined(pieces: Vec<Vec<Piece>>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces.into_iter().flatten() {
        match (out.last_mut(), p) {
            (Some(Piece::Text(t)), Piece::Text(more)) => t.push_str(&more),
            (_, p) => out.push(p),
        }
    }
    out
}

/// Ordinary text passes in the delta it came in; only an end that may begin a marker waits,
/// and goes on with the next delta when it does not become one.
#[test]
fn ordinary_text_is_not_held() {
    let got = run(true, &["Hello", " a < b and [x] ok", " see <tool", "s> and [TOOL", "S] done"]);
    assert_eq!(
        got,
        vec![vec![text("Hello")], vec![text(" a < b and [x] ok")], vec![text(" see ")], vec![text("<tools> and ")], vec![text("[TOOLS] done")], vec![]]
    );
    // A held beginning at the end of the text is text.
    assert_eq!(joined(run(false, &["a <|pyth"])), vec![text("a <|pyth")]);
    // A whole marker not followed by JSON is text at once: prose about the syntax.
    let got = run(true, &["Wrap calls in <tool_call> tags", " or [TOOL_CALLS] lists."]);
    assert_eq!(got, vec![vec![text("Wrap calls in <tool_call> tags")], vec![text(" or [TOOL_CALLS] lists.")], vec![]]);
    // JSON after the marker that is not followed by the closing tag is text too.
    let got = joined(run(true, &["<tool_call>{\"name\": \"get_weather\"} and more"]));
    assert_eq!(got, vec![text("<tool_call>{\"name\": \"get_weather\"} and more")]);
}

/// Hermes/Qwen markup across deltas becomes a call as soon as it closes; the text around it
/// stays.
#[test]
fn hermes_calls_are_recovered() {
    let got = run(true, &["Let me check. <tool_", "call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool", "_call>", " Done."]);
    assert_eq!(
        got,
        vec![
            vec![text("Let me check. ")],
            vec![],
            vec![call("get_weather", r#"{"city":"Oslo"}"#)],
            vec![text(" Done.")],
            vec![]
        ]
    );
    // Two calls; the second's closing tag never came.
    let got = joined(run(true, &["<tool_call>{\"name\":\"web_search\",\"arguments\":{\"query\":\"a\"}}</tool_call><tool_call>{\"name\":\"get_weather\"}"]));
    assert_eq!(got, vec![call("web_search", r#"{"query":"a"}"#), call("get_weather", "{}")]);
}

/// Mistral's array, Llama 3's python tag (with its end token) and a fenced or bare answer.
#[test]
fn other_syntaxes_are_recovered() {
    let got = joined(run(true, &["[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, ", "{\"name\": \"web_search\", \"arguments\": {\"query\": \"x]\"}}]"]));
    assert_eq!(got, vec![call("get_weather", r#"{"city":"Rome"}"#), call("web_search", r#"{"query":"x]"}"#)]);
    let got = joined(run(true, &["<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Bern\"}}<|eom_id|>"]));
    assert_eq!(got, vec![call("get_weather", r#"{"city":"Bern"}"#)]);
    let got = run(true, &["\n```json\n{\"name\": \"get_weather\",", " \"arguments\": {\"city\": \"Kyiv\"}}\n``", "`"]);
    assert_eq!(got, vec![vec![], vec![], vec![], vec![call("get_weather", r#"{"city":"Kyiv"}"#)]]);
    let got = joined(run(true, &["{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Kyiv\"}}"]));
    assert_eq!(got, vec![call("get_weather", r#"{"city":"Kyiv"}"#)]);
}

/// Markup naming no declared tool, or that is not a call, stays text; so does JSON that is
/// not the whole answer, or any JSON when bare answers are not recognized.
#[test]
fn what_is_not_a_declared_call_stays_text() {
    for deltas in [
        &["<tool_call>{\"name\": \"launch\", \"arguments\": {}}</tool_call>"][..],
        &["[TOOL_CALLS] not json at all"],
        &["<|python_tag|>brave_search.call(query=\"x\")"],
        &["<tool_call>{\"name\": \"get_weather\", \"arguments\": {}, \"extra\": 1}</tool_call> ok"],
        &["{\"name\": \"get_weather\", \"arguments\": {}}", " is how a call looks."],
        &["Call it as {\"name\": \"get_weather\", \"arguments\": {}}"],
        &["{\"city\": \"Oslo\"}"],
    ] {
        let all: String = deltas.concat();
        assert_eq!(joined(run(true, deltas)), vec![text(&all)], "{deltas:?}");
    }
    let json = "{\"name\": \"get_weather\", \"arguments\": {}}";
    assert_eq!(joined(run(false, &[json])), vec![text(json)]);
    // JSON after the answer began is text, even when alone in its delta.
    assert_eq!(joined(run(true, &["Sure: ", json])), vec![text(&format!("Sure: {json}"))]);
}

/// An unclosed call is held at most MAX_HELD_CALL bytes, then passed on as text.
#[test]
fn held_calls_are_bounded() {
    let mut f = LeakFilter::new(true);
    let mut out = Vec::new();
    f.feed("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"q\": \"".to_string(), &declared, &mut out);
    assert!(out.is_empty());
    f.feed("x".repeat(MAX_HELD_CALL), &declared, &mut out);
    let Some(Piece::Text(t)) = out.first() else { panic!("{out:?}") };
    assert!(t.starts_with("[TOOL_CALLS][{") && t.len() > MAX_HELD_CALL, "{}", t.len());
    assert_eq!(f.release(), "");
}

mod split {
    use super::*;
    use proptest::prelude::*;

    /// Text made of pieces of markup, JSON and prose, so that splits fall inside markers.
    fn texty() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<|eom_id|>", "```json\n", "```", "{", "}", "[", "]",
            "\"name\": \"get_weather\"", "\"arguments\": {\"city\": \"Oslo\"}", ", ", "\"", "\\", " ", "\n", "<", "|", "é", "prose",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}", "{\"name\": \"web_search\"}",
        ]);
        prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    /// Feeds `text` cut at `cuts` (char positions), then finishes; everything given back.
    fn feed_split(text: &str, cuts: &[usize], bare: bool, declared: &dyn Fn(&str) -> bool) -> Vec<Piece> {
        let chars: Vec<char> = text.chars().collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
        at.sort_unstable();
        let mut f = LeakFilter::new(bare);
        let mut out = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([chars.len()]) {
            let delta: String = chars[from..to.max(from)].iter().collect();
            f.feed(delta, declared, &mut out);
            from = to.max(from);
        }
        f.finish(declared, &mut out);
        joined(vec![out])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, .. ProptestConfig::default() })]

        /// With no declared tool nothing is a call, and the text comes back exactly, however
        /// it is cut into deltas.
        #[test]
        fn text_without_declared_calls_comes_back_whole(text in texty(), cuts in prop::collection::vec(0usize..400, 0..8), bare in any::<bool>()) {
            let got = feed_split(&text, &cuts, bare, &|_| false);
            let want = if text.is_empty() { vec![] } else { vec![text.clone()] };
            let texts: Vec<String> = got.into_iter().map(|p| match p { Piece::Text(t) => t, Piece::Call(c) => panic!("a call {c:?}") }).collect();
            prop_assert_eq!(texts, want);
        }

        /// However it is cut, the same text gives the same calls and text as in one delta.
        #[test]
        fn the_cut_does_not_change_the_result(text in texty(), cuts in prop::collection::vec(0usize..400, 0..8)) {
            prop_assert_eq!(feed_split(&text, &cuts, true, &declared), feed_split(&text, &[], true, &declared));
        }
    }
}
