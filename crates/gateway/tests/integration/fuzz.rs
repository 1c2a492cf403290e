//! Robustness: nothing from outside may panic the process. At least 10,000 cases each of
//! arbitrary bytes and arbitrary JSON into the request parser (and `turn::prepare`), and of
//! random chunk splits (and corruptions) of recorded llama.cpp streams into the upstream
//! SSE parser.

use std::time::Duration;

use proptest::prelude::*;
use responses_gateway::executors::Registry;
use responses_gateway::turn::continuation::Continuation;
use responses_gateway::turn::{parse_request, validate};
use responses_gateway::upstream::chat::RoundStream;
use responses_gateway::upstream::UpstreamEvent;
use serde_json::{json, Value};

const CASES: u32 = 10_000;

static REGISTRY: std::sync::LazyLock<std::sync::Arc<Registry>> =
    std::sync::LazyLock::new(|| std::sync::Arc::new(Registry::from_config(&responses_gateway::Config::default(), None)));

fn parse_and_prepare(bytes: &[u8]) {
    if let Ok(req) = parse_request(bytes) {
        let _ = validate(req, None, false, &REGISTRY, &Default::default(), Continuation::default(), None);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        "[a-z_]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("message"), Just("function_call"), Just("function_call_output"), Just("custom_tool_call"),
            Just("custom_tool_call_output"), Just("input_text"), Just("input_image"), Just("input_file"),
            Just("output_text"), Just("function"), Just("custom"), Just("namespace"), Just("grammar"),
            Just("lark"), Just("regex"), Just("user"), Just("assistant"), Just("system"), Just("none"),
            Just("required"), Just("allowed_tools"), Just("json_schema"), Just("reasoning"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop_oneof![
            Just("type"), Just("role"), Just("content"), Just("text"), Just("name"), Just("call_id"),
            Just("arguments"), Just("output"), Just("input"), Just("tools"), Just("format"), Just("syntax"),
            Just("definition"), Just("parameters"), Just("file_data"), Just("filename"), Just("image_url"),
            Just("mode"), Just("namespace"), Just("schema"), Just("id"), Just("phase"),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(keys.prop_map(str::to_string), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_request() -> impl Strategy<Value = Value> {
    (arb_json(), arb_json(), arb_json(), arb_json()).prop_map(|(input, tools, choice, text)| {
        json!({"model":"m","input":input,"tools":tools,"tool_choice":choice,"text":text})
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_request_parser(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        parse_and_prepare(&bytes);
    }

    #[test]
    fn arbitrary_json_never_panics_the_request_parser(v in arb_json(), req in arb_request()) {
        parse_and_prepare(v.to_string().as_bytes());
        parse_and_prepare(req.to_string().as_bytes());
    }
}

fn recorded() -> Vec<&'static str> {
    vec![
        include_str!("data/llamacpp_text.sse"),
        include_str!("data/llamacpp_tool_call.sse"),
    ]
}

fn collect(chunks: Vec<Vec<u8>>) -> Vec<Result<UpstreamEvent, String>> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("rt");
    rt.block_on(async move {
        let stream = futures_util::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))));
        let mut rs = RoundStream::new(stream, Duration::from_secs(5));
        let mut out = Vec::new();
        while let Some(ev) = rs.next().await {
            out.push(ev.map_err(|e| e.to_string()));
        }
        out
    })
}

fn split_at(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for p in points {
        out.push(data[prev..p].to_vec());
        prev = p;
    }
    out.push(data[prev..].to_vec());
    out
}

#[test]
fn recorded_streams_parse_to_the_expected_events() {
    let text = collect(vec![recorded()[0].as_bytes().to_vec()]);
    assert!(text.iter().all(Result::is_ok), "{text:?}");
    assert!(text.iter().any(|e| matches!(e, Ok(UpstreamEvent::Text(_)))));
    assert!(text.iter().any(|e| matches!(e, Ok(UpstreamEvent::Usage(_)))));
    let tool = collect(vec![recorded()[1].as_bytes().to_vec()]);
    let args: String = tool
        .iter()
        .filter_map(|e| match e {
            Ok(UpstreamEvent::ToolCall { arguments: Some(a), .. }) => Some(a.as_str()),
            _ => None,
        })
        .collect();
    let parsed: Value = serde_json::from_str(&args).expect("tool arguments are JSON");
    assert!(parsed.get("city").is_some(), "{parsed}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn random_splits_of_recorded_streams_give_the_same_events(
        which in 0usize..2,
        cuts in prop::collection::vec(any::<usize>(), 0..24),
    ) {
        let data = recorded()[which].as_bytes();
        let whole = collect(vec![data.to_vec()]);
        let split = collect(split_at(data, &cuts));
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn corrupted_streams_never_panic(
        which in 0usize..2,
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        truncate in any::<usize>(),
    ) {
        let mut data = recorded()[which].as_bytes().to_vec();
        for (at, byte) in flips {
            let i = at % data.len();
            data[i] = byte;
        }
        data.truncate(truncate % (data.len() + 1));
        let _ = collect(split_at(&data, &cuts));
    }
}
