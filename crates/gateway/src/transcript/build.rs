//! Building the transcript from a request's `instructions` and `input` items (contract §4),
//! on top of what a continuation starts from: the checks on calls and their outputs, and
//! the replay of tool call items through [`ToolReplay`].

use std::collections::{HashMap, HashSet};

use protocol::input::{InputItem, Role, ToolOutput};
use protocol::output::Phase;
use protocol::ApiError;

use super::content::{message, tool_output_content};
use super::call_log::{empty_call_id, new_call, CallLog};
use super::recorded::{record, Recorded};
use super::{compaction, Entry, Replayed, Thought, Transcript, UserPart};
use crate::seal::{Purpose, Sealer};
use crate::events::file_citations::FileSource;

/// How tool call items replay (implemented by `tools::replay`, one duty of each tool
/// type), so that the transcript knows no tool type.
pub trait ToolReplay {
    /// The call (and result) that `item` stands for; `None` when no tool type replays it.
    /// A file search's replayed chunks are appended to `file_sources` (numbered after them).
    fn replay(&self, item: &InputItem, file_sources: &mut Vec<FileSource>) -> Option<Replayed>;
    /// True when the model-visible `name` is a gateway-owned (server) tool.
    fn is_server_tool(&self, name: &str) -> bool;
    /// The id under which `item`'s private result is stored, for a tool whose results are
    /// not on the wire (web search); `None` for other items.
    fn private_result_id<'i>(&self, item: &'i InputItem) -> Option<&'i str>;
    /// The state `item` records ([`Recorded`]); `None` for other items.
    fn record(&self, _item: &InputItem) -> Option<Recorded> {
        None
    }
}

/// The reasoning item a client replayed, as it goes back to a Responses upstream: `type`,
/// `id`, `summary`, `content` and `encrypted_content` (nothing else of the client's); `None`
/// when it holds neither `encrypted_content` nor reasoning text.
fn replayed_reasoning(r: &serde_json::Value) -> Option<serde_json::Value> {
    let encrypted = r.get("encrypted_content").filter(|e| e.as_str().is_some_and(|s| !s.is_empty()));
    let content = r.get("content").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
    if encrypted.is_none() && content.is_none() {
        return None;
    }
    let mut item = serde_json::json!({"type": "reasoning", "summary": r.get("summary").filter(|s| s.is_array()).cloned().unwrap_or(serde_json::json!([]))});
    for (key, value) in [("id", r.get("id").filter(|i| i.is_string())), ("content", content), ("encrypted_content", encrypted)] {
        if let Some(v) = value {
            item[key] = v.clone();
        }
    }
    Some(item)
}

/// The reasoning a client handed back in a reasoning item's `encrypted_content`, when this
/// gateway sealed it (a chat upstream's reasoning, issue 30); `None` for another server's
/// blob, a changed one, or none: those never reach the model as reasoning.
fn opened_thought(r: &serde_json::Value, sealer: Option<&Sealer>) -> Option<Thought> {
    let blob = r.get("encrypted_content")?.as_str()?;
    let plain = sealer?.open(Purpose::Reasoning, blob).ok()?;
    serde_json::from_slice(&plain).ok()
}

/// Builds the transcript. Errors (400): nothing for the model (no entry, no instructions),
/// a tool output whose `call_id` matches no earlier
/// call or repeats one, a call with no output (`No tool output found for function call …`),
/// an unsupported `input_file`, an `item_reference` left unresolved (`turn::prepare` replaces
/// the ones it finds stored). A replayed
/// call of a server tool ([`ToolReplay::is_server_tool`]) without its output — an older SDK drops
/// `custom_tool_call_output` — is dropped instead, and one replayed as `incomplete` is left
/// out. Consecutive assistant messages join into one (chat templates want turns to
/// alternate): as written after a `commentary` one, else with a blank line. `base` is the
/// stored transcript a continuation starts from; its unanswered calls may be answered here.
/// `restored`: stored private `(key, result)` of replayed gateway tool items, by item id.
/// `sealer` opens the reasoning items this gateway sealed: their reasoning joins the next
/// assistant turn (a call right after one starts a new turn: it is another round).
pub fn build(
    base: Option<Transcript>,
    instructions: Option<&str>,
    items: &[InputItem],
    tools: &dyn ToolReplay,
    restored: &HashMap<String, (String, String)>,
    sealer: Option<&Sealer>,
) -> Result<Transcript, ApiError> {
    let is_server_tool = |name: &str| tools.is_server_tool(name);
    let mut t = base.unwrap_or_default();
    t.instructions = instructions.filter(|s| !s.is_empty()).map(str::to_string);
    let mut system = std::mem::take(&mut t.system_messages);
    let mut calls = CallLog::new(t.calls());
    let mut stored_calls = calls.ids.len();
    // Images returned by tool outputs: chat tool messages hold text only, so they follow the
    // run of tool messages as one user message.
    let mut tool_images: Vec<UserPart> = Vec::new();
    // Whether the last item that counts was the output of a client's call (reasoning items,
    // dropped, do not count): the next call is then a new round. A gateway tool's output is
    // not: the gateway lists it right after its call, before the round's other calls.
    let mut after_output = matches!(t.entries.last(), Some(Entry::ToolResult { .. }));
    let mut server_calls: HashSet<&str> = HashSet::new();
    // Whether the last message was the assistant's `commentary`: a message that follows at
    // once continues the same model output (the gateway split it), and joins it as written.
    let mut after_commentary = false;
    // Reasoning handed back (sealed by this gateway), for the next assistant turn.
    let mut thought: Option<Thought> = None;
    for (i, item) in items.iter().enumerate() {
        let param = format!("input[{i}]");
        if !matches!(item, InputItem::FunctionCallOutput(_) | InputItem::CustomToolCallOutput(_)) && !tool_images.is_empty() {
            t.entries.push(Entry::User(std::mem::take(&mut tool_images)));
        }
        match item {
            InputItem::Message(m) => {
                message(m, &param, &mut system, &mut t, std::mem::take(&mut after_commentary))?;
                after_commentary = m.role == Role::Assistant && m.phase == Some(Phase::Commentary);
                after_output = false;
                if let Some(th) = thought.take_if(|_| m.role == Role::Assistant) {
                    t.attach_thought(th);
                }
            }
            // A call replayed as `incomplete` (cut short by max_output_tokens or a failure)
            // has partial arguments and was never run: it is left out, as the stored turn
            // leaves it out (an output for it then matches no call: 400).
            InputItem::FunctionCall(c) if c.status.as_deref() == Some("incomplete") => {}
            InputItem::CustomToolCall(c) if c.status.as_deref() == Some("incomplete") => {}
            InputItem::FunctionCall(_) | InputItem::CustomToolCall(_) => {
                after_commentary = false;
                let Some(Replayed { call, .. }) = tools.replay(item, &mut t.file_sources) else { continue };
                let call_id = match item {
                    InputItem::FunctionCall(c) => c.call_id.as_str(),
                    InputItem::CustomToolCall(c) => c.call_id.as_str(),
                    _ => continue,
                };
                if !new_call(&mut calls, stored_calls, call_id, &param)? {
                    continue;
                }
                if is_server_tool(&call.name) {
                    server_calls.insert(call_id);
                }
                let new_round = std::mem::take(&mut after_output) || thought.is_some();
                t.push_call(call, new_round);
                if let Some(th) = thought.take() {
                    t.attach_thought(th);
                }
            }
            InputItem::FunctionCallOutput(o) | InputItem::CustomToolCallOutput(o) => {
                let call_id = answer(o, &param, &mut calls)?;
                let (content, images) = tool_output_content(&o.output, &param)?;
                if !images.is_empty() {
                    tool_images.push(UserPart::Text(format!("The image(s) returned by tool call {call_id}:")));
                    tool_images.extend(images);
                }
                after_output = !server_calls.contains(call_id.as_str());
                t.push_tool_result(call_id, content);
            }
            // A reasoning item that carries the upstream's reasoning (`encrypted_content`,
            // or its text) goes back to a Responses upstream as the client gave it; a chat
            // upstream never sees it. Others are dropped.
            InputItem::Reasoning(r) => {
                if let Some(th) = opened_thought(r, sealer) {
                    match thought.as_mut() {
                        Some(earlier) => earlier.join(th),
                        None => thought = Some(th),
                    }
                } else if let Some(item) = replayed_reasoning(r) {
                    t.entries.push(Entry::Upstream(item));
                }
            }
            // A compaction item stands for everything before it (the stored transcript
            // included): that is replaced by its summary, which only a blob this gateway
            // sealed can give (else 400: no unauthenticated text reaches the model).
            InputItem::Other { kind, raw } if kind == "compaction" => {
                let blob = raw.get("encrypted_content").and_then(serde_json::Value::as_str);
                let Some(summary) = blob.zip(sealer).and_then(|(b, s)| compaction::open_summary(s, b).ok()) else {
                    return Err(ApiError::invalid(
                        param.clone(),
                        format!("Invalid '{param}': its encrypted_content is not a compaction item of this gateway, or it was changed."),
                    )
                    .with_code("invalid_encrypted_content"));
                };
                t.entries.clear();
                t.entries.push(compaction::summary_entry(&summary));
                calls = CallLog::new(Vec::new());
                stored_calls = 0;
                server_calls.clear();
                tool_images.clear();
                thought = None;
                after_output = false;
                after_commentary = false;
            }
            InputItem::ItemReference { id } => {
                return Err(ApiError::invalid(
                    param,
                    format!("Item with id '{id}' not found."),
                ))
            }
            // A gateway tool's item (`web_search_call`, `file_search_call`, an `mcp_call`,
            // which the input keeps as an item of another type): its call and the result the
            // model read; items no tool type replays are left out. A private result stored with the item (a stored turn's
            // search results) comes back as the model saw it, if the replayed item still asks
            // what the stored one asked; else the result is rebuilt from the item (lossy).
            hosted => {
                if let Some(recorded) = tools.record(hosted) {
                    if record(recorded, &param, &mut t, &mut calls, stored_calls, &mut after_output)? {
                        after_output = true;
                    }
                    if let Some(th) = thought.take() {
                        t.attach_thought(th);
                    }
                    continue;
                }
                let Some(Replayed { call, result, private_key }) = tools.replay(hosted, &mut t.file_sources) else { continue };
                let result = match (restored.get(&call.call_id), &private_key) {
                    (Some((stored_key, output)), Some(key)) if stored_key == key => output.clone(),
                    _ => result.unwrap_or_default(),
                };
                let call_id = call.call_id.clone();
                let new_round = std::mem::take(&mut after_output) || thought.is_some();
                t.push_call(call, new_round);
                if let Some(th) = thought.take() {
                    t.attach_thought(th);
                }
                t.push_tool_result(call_id, result);
            }
        }
    }
    if !tool_images.is_empty() {
        t.entries.push(Entry::User(tool_images));
    }
    let mut unanswered: Vec<&str> = calls.ids.iter().filter(|(_, answered)| !answered).map(|(id, _)| id.as_str()).collect();
    // An approval request left unanswered (the user moved on) is dropped with its call.
    let pending: HashSet<&str> = unanswered.iter().copied().filter(|id| t.approvals.iter().any(|a| a == id)).collect();
    if !pending.is_empty() {
        t.remove_calls(&pending);
        t.approvals.retain(|a| !pending.contains(a.as_str()));
        unanswered.retain(|id| !pending.contains(id));
    }
    if !unanswered.is_empty() {
        if let Some(call_id) = t.drop_server_calls(&unanswered, &is_server_tool) {
            return Err(ApiError::invalid(
                Some("input".to_string()),
                format!("No tool output found for function call {call_id}."),
            ));
        }
    }
    t.system_messages = system;
    // Chat servers refuse an empty conversation: say so here, naming the request's part.
    if t.entries.iter().all(|e| matches!(e, Entry::Upstream(_))) && t.instructions.is_none() && t.system_messages.is_empty() {
        return Err(ApiError::invalid(
            Some("input".to_string()),
            "Invalid 'input': there is nothing to send to the model (no message, no instructions).",
        )
        .with_code("invalid_value"));
    }
    t.pair_tool_results();
    t.order_tool_results();
    Ok(t)
}

fn answer(o: &ToolOutput, param: &str, calls: &mut CallLog) -> Result<String, ApiError> {
    let Some(call_id) = o.call_id.as_deref() else {
        return Err(ApiError::invalid(
            format!("{param}.call_id"),
            format!("Missing required parameter: '{param}.call_id'."),
        )
        .with_code("missing_required_parameter"));
    };
    if call_id.trim().is_empty() {
        return Err(empty_call_id(param));
    }
    match calls.index.get(call_id).and_then(|&i| calls.ids.get_mut(i)) {
        None => Err(ApiError::invalid(
            format!("{param}.call_id"),
            format!("No tool call found for output with call_id {call_id}."),
        )),
        Some((_, true)) => Err(ApiError::invalid(
            format!("{param}.call_id"),
            format!("Duplicate tool output for call_id {call_id}."),
        )),
        Some((_, answered)) => {
            *answered = true;
            Ok(call_id.to_string())
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::transcript::Call;
    use serde_json::json;

    /// The replay of client calls as the tool types do it (`tools::replay`), with
    /// `package_version` as the one server tool: the transcript's rules alone are under test.
    pub(crate) struct TestReplay;

    impl ToolReplay for TestReplay {
        fn replay(&self, item: &InputItem, _: &mut Vec<FileSource>) -> Option<Replayed> {
            let call = match item {
                InputItem::FunctionCall(c) => {
                    let arguments = if c.arguments.trim().is_empty() { "{}".to_string() } else { c.arguments.clone() };
                    Call { call_id: c.call_id.clone(), name: c.name.clone(), arguments }
                }
                InputItem::CustomToolCall(c) => {
                    Call { call_id: c.call_id.clone(), name: c.name.clone(), arguments: json!({"input": c.input}).to_string() }
                }
                _ => return None,
            };
            Some(Replayed { call, result: None, private_key: None })
        }

        fn is_server_tool(&self, name: &str) -> bool {
            name == "package_version"
        }

        fn private_result_id<'i>(&self, _: &'i InputItem) -> Option<&'i str> {
            None
        }
    }

    fn b(i: Option<&str>, items: &[InputItem]) -> Result<Transcript, ApiError> {
        build(None, i, items, &TestReplay, &Default::default(), None)
    }

    #[test]
    fn server_call_without_output_is_dropped() {
        let t = b(None, &items(json!([
            {"role":"user","content":"v?"},
            {"type":"custom_tool_call","call_id":"c1","name":"package_version","input":"axum"},
            {"type":"message","role":"assistant","content":"axum 0.8"}
        ]))).unwrap();
        assert_eq!(t.entries.len(), 2, "{:?}", t.entries);
    }

    fn items(v: serde_json::Value) -> Vec<InputItem> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn system_and_developer_merge_into_one_leading_system() {
        let t = b(
            Some("Be brief."), &items(json!([
                {"role":"developer","content":"Use metric."},
                {"role":"user","content":"hi"},
                {"type":"message","role":"system","content":[{"type":"input_text","text":"Late rule."}]}
            ])),
        )
        .unwrap();
        assert_eq!(t.system().as_deref(), Some("Be brief.\n\nUse metric.\n\nLate rule."));
        assert_eq!(t.entries, vec![Entry::User(vec![UserPart::Text("hi".into())])]);
    }

    #[test]
    fn call_without_output_names_the_call_id() {
        let err = b(
            None, &items(json!([
            {"role":"user","content":"x"},
            {"type":"function_call","call_id":"call_9","name":"f","arguments":"{}"}
        ]))).unwrap_err();
        assert!(err.message.contains("call_9"), "{}", err.message);
    }

    #[test]
    fn output_must_match_exactly_one_call() {
        let orphan = b(
            None, &items(json!([
            {"type":"function_call_output","call_id":"nope","output":"x"}
        ]))).unwrap_err();
        assert_eq!(orphan.param.as_deref(), Some("input[0].call_id"));
        let twice = b(
            None, &items(json!([
            {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"1"},
            {"type":"function_call_output","call_id":"c","output":"2"}
        ]))).unwrap_err();
        assert_eq!(twice.param.as_deref(), Some("input[2].call_id"));
    }

    fn call(id: &str) -> Call {
        Call { call_id: id.into(), name: "f".into(), arguments: "{}".into() }
    }

    fn result(id: &str) -> Entry {
        Entry::ToolResult { call_id: id.into(), content: format!("r{id}"), continuation: None }
    }

    fn user(text: &str) -> Entry {
        Entry::User(vec![UserPart::Text(text.into())])
    }

    /// Whatever sits between a call and its output, each assistant turn with calls is
    /// followed at once by their results (chat servers reject anything else).
    #[test]
    fn results_follow_their_calls_whatever_the_replayed_order() {
        let fc = |id: &str| json!({"type":"function_call","call_id":id,"name":"f","arguments":"{}"});
        let fco = |id: &str| json!({"type":"function_call_output","call_id":id,"output":format!("r{id}")});
        let said = |text: &str| json!({"type":"message","role":"assistant","content":text});
        let asked = |text: &str| json!({"role":"user","content":text});
        let assistant = |text: &str, calls: &[&str]| Entry::Assistant { text: text.into(), calls: calls.iter().map(|c| call(c)).collect(), reasoning: None };
        let cases = [
            // A round that went on talking after its call (the gateway's own output order).
            (json!([asked("q"), fc("c1"), said("hmm"), fco("c1")]), vec![user("q"), assistant("hmm", &["c1"]), result("c1")]),
            (json!([fc("c1"), asked("u"), fco("c1")]), vec![assistant("", &["c1"]), result("c1"), user("u")]),
            (json!([fc("c1"), fc("c2"), fco("c1"), said("x"), fco("c2")]), vec![assistant("x", &["c1", "c2"]), result("c1"), result("c2")]),
            (json!([fc("c1"), asked("u"), fc("c2"), fco("c2"), fco("c1")]),
                vec![assistant("", &["c1"]), result("c1"), user("u"), assistant("", &["c2"]), result("c2")]),
            // Sequential rounds stay rounds (reasoning items between them are dropped), parallel
            // calls one turn.
            (json!([fc("c1"), fco("c1"), fc("c2"), fco("c2")]), vec![assistant("", &["c1"]), result("c1"), assistant("", &["c2"]), result("c2")]),
            (json!([{"type":"reasoning","id":"rs_1","summary":[]}, fc("c1"), fco("c1"), {"type":"reasoning","id":"rs_2","summary":[]}, fc("c2"), fco("c2")]),
                vec![assistant("", &["c1"]), result("c1"), assistant("", &["c2"]), result("c2")]),
            (json!([fc("c1"), fc("c2"), fco("c2"), fco("c1"), fc("c3"), fco("c3")]),
                vec![assistant("", &["c1", "c2"]), result("c1"), result("c2"), assistant("", &["c3"]), result("c3")]),
            // A gateway tool's output comes right after its call, before the round's other
            // calls (the gateway's own output order): still one round.
            (json!([{"type":"custom_tool_call","call_id":"c1","name":"package_version","input":"axum"},
                    {"type":"custom_tool_call_output","call_id":"c1","output":"rc1"}, fc("c2"), fco("c2")]),
                vec![Entry::Assistant { reasoning: None, text: String::new(), calls: vec![
                    Call { call_id: "c1".into(), name: "package_version".into(), arguments: r#"{"input":"axum"}"#.into() }, call("c2")] },
                    result("c1"), result("c2")]),
            // Valid orders stay as they are.
            (json!([said("a"), fc("c1"), fco("c1"), said("b"), asked("u"), fc("c2"), fco("c2")]),
                vec![assistant("a", &["c1"]), result("c1"), assistant("b", &[]), user("u"), assistant("", &["c2"]), result("c2")]),
        ];
        for (input, want) in cases {
            let t = b(None, &items(input.clone())).unwrap();
            assert_eq!(t.entries, want, "{input}");
        }
    }

    /// Calls each followed by a user message, all their outputs at the end (N = 3000): each
    /// call is followed at once by its output, the user messages after it, in order. The
    /// bookkeeping is by id, so a long history costs no scan per item (it was quadratic:
    /// 20000 such calls took 29 s of CPU).
    #[test]
    fn long_interleaved_history_pairs_every_call() {
        let n = 3000;
        let mut input = Vec::new();
        for i in 0..n {
            input.push(json!({"type":"function_call","call_id":format!("c{i}"),"name":"f","arguments":"{}"}));
            input.push(json!({"role":"user","content":format!("u{i}")}));
        }
        for i in 0..n {
            input.push(json!({"type":"function_call_output","call_id":format!("c{i}"),"output":format!("rc{i}")}));
        }
        let t = b(None, &items(json!(input))).unwrap();
        let mut want = Vec::new();
        for i in 0..n {
            want.push(Entry::Assistant { text: String::new(), calls: vec![call(&format!("c{i}"))], reasoning: None });
            want.push(result(&format!("c{i}")));
            want.push(user(&format!("u{i}")));
        }
        assert_eq!(t.entries, want);
        // Unanswered server calls go in one pass; a client call among them is named.
        let mut input = vec![json!({"role":"user","content":"u"})];
        for i in 0..n {
            input.push(json!({"type":"custom_tool_call","call_id":format!("s{i}"),"name":"package_version","input":"x"}));
        }
        assert_eq!(b(None, &items(json!(input.clone()))).unwrap().entries, vec![user("u")]);
        input.push(json!({"type":"function_call","call_id":"client","name":"f","arguments":"{}"}));
        let err = b(None, &items(json!(input))).unwrap_err();
        assert!(err.message.contains("function call client."), "{}", err.message);
    }

    /// A call_id used twice in one input is a 400 naming the second; a call the stored
    /// transcript holds may be sent again with its output.
    #[test]
    fn duplicate_and_empty_call_ids() {
        let err = b(None, &items(json!([
            {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
            {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c1","output":"x"}
        ]))).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("input[1].call_id"));
        assert!(err.message.contains("Duplicate call_id c1"), "{}", err.message);
        for input in [
            json!([{"type":"function_call","call_id":"","name":"f","arguments":"{}"}]),
            json!([{"type":"function_call","call_id":" ","name":"f","arguments":"{}"}]),
            json!([{"type":"function_call_output","call_id":"","output":"x"}]),
        ] {
            let err = b(None, &items(input)).unwrap_err();
            assert_eq!((err.param.as_deref(), err.code.as_deref()), (Some("input[0].call_id"), Some("empty_string")));
        }
        let mut stored = Transcript::default();
        stored.push_assistant(String::new(), vec![call("c1")]);
        let t = build(Some(stored), None, &items(json!([
            {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c1","output":"rc1"}
        ])), &TestReplay, &Default::default(), None).unwrap();
        assert_eq!(t.entries, vec![Entry::Assistant { text: String::new(), calls: vec![call("c1")], reasoning: None }, result("c1")]);
    }

    #[test]
    fn images_in_tool_outputs_follow_the_tool_messages_as_a_user_message() {
        let img = "data:image/png;base64,iVBORw0KGgo=";
        let t = b(
            None, &items(json!([
            {"type":"function_call","call_id":"c1","name":"view_image","arguments":"{}"},
            {"type":"function_call","call_id":"c2","name":"ls","arguments":"{}"},
            {"type":"function_call_output","call_id":"c1","output":[
                {"type":"input_text","text":"the screenshot"},
                {"type":"input_image","image_url":img,"detail":"low"},
                {"type":"input_image","file_id":"file_1"}]},
            {"type":"function_call_output","call_id":"c2","output":"a.txt"},
            {"role":"user","content":"and now?"}
        ]))).unwrap();
        assert_eq!(t.entries, vec![
            Entry::Assistant { reasoning: None, text: String::new(), calls: vec![
                Call { call_id: "c1".into(), name: "view_image".into(), arguments: "{}".into() },
                Call { call_id: "c2".into(), name: "ls".into(), arguments: "{}".into() }] },
            Entry::ToolResult { call_id: "c1".into(), content: "the screenshot\n[image: in the next user message]\n[image omitted]".into(), continuation: None },
            Entry::ToolResult { call_id: "c2".into(), content: "a.txt".into(), continuation: None },
            Entry::User(vec![
                UserPart::Text("The image(s) returned by tool call c1:".into()),
                UserPart::Image { url: img.into(), detail: Some("low".into()) }]),
            Entry::User(vec![UserPart::Text("and now?".into())]),
        ]);
        // At the end of the input too (the model answers after seeing the image).
        let t = b(None, &items(json!([
            {"type":"function_call","call_id":"c1","name":"view_image","arguments":"{}"},
            {"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":img}]}
        ]))).unwrap();
        assert!(matches!(t.entries.last(), Some(Entry::User(parts)) if parts.len() == 2), "{:?}", t.entries);
    }

    #[test]
    fn reasoning_and_progress_messages_are_dropped() {
        let t = b(
            None, &items(json!([
            {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"secret"}]},
            {"type":"message","id":"msg_progress_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Looking up","annotations":[]}]},
            {"type":"message","id":"msg_2","role":"assistant","status":"completed","phase":"final_answer","content":[{"type":"output_text","text":"Hi","annotations":[]}]},
            {"type":"some_future_item","x":1}
        ]))).unwrap();
        assert_eq!(t.entries, vec![Entry::Assistant { text: "Hi".into(), calls: vec![], reasoning: None }]);
        // Nothing left for the model at all is a 400 (chat servers refuse no messages).
        for input in [json!([]), json!([{"type":"reasoning","id":"rs_1","summary":[]}])] {
            let err = b(None, &items(input)).unwrap_err();
            assert_eq!((err.param.as_deref(), err.code.as_deref()), (Some("input"), Some("invalid_value")));
        }
        assert!(b(Some("be brief"), &[]).is_ok(), "instructions alone are a conversation");
    }
}
