"""A model's refusal through the official openai SDK: `delta.refusal` from the chat upstream
is a typed `refusal` content part with `response.refusal.delta` / `.done` events (contract
§8.2), never `output_text`; every event and the Response validate as in
test_responses_sdk.py (SDK models and the Open Responses schema)."""
from __future__ import annotations

import pytest
from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal, ResponseOutputText

from test_responses_sdk import MODEL, WEATHER_TOOL, create, sdk_dict, validate_sdk_events
import validate as V

pytestmark = pytest.mark.usefixtures("upstream")


def test_refusal_is_a_typed_refusal_part(client, upstream, gateway):
    # 20 ms apart: each chunk is its own delta (chunks that arrive together leave as one).
    script = {"text": ["I see."], "refusal": ["I can't", " help with that."], "token_delay_ms": 20}
    upstream.push(script)
    with client.responses.stream(model=MODEL, input="something bad", store=False) as stream:
        events = list(stream)
        final = stream.get_final_response()
    validate_sdk_events(events)
    V.validate_response(sdk_dict(final), strict=False)
    assert [e.delta for e in events if e.type == "response.refusal.delta"] == ["I can't", " help with that."]
    assert [e.refusal for e in events if e.type == "response.refusal.done"] == ["I can't help with that."]
    # The text's message is done (commentary) before the refusal's is added.
    text_msg, refusal_msg = final.output
    assert isinstance(text_msg, ResponseOutputMessage) and isinstance(refusal_msg, ResponseOutputMessage)
    assert len(text_msg.content) == 1 and isinstance(text_msg.content[0], ResponseOutputText)
    assert text_msg.content[0].text == "I see."
    assert len(refusal_msg.content) == 1 and isinstance(refusal_msg.content[0], ResponseOutputRefusal)
    assert refusal_msg.content[0].refusal == "I can't help with that."
    assert (text_msg.phase, refusal_msg.phase) == ("commentary", "final_answer")
    assert final.output_text == "I see.", "output_text is the text parts only"

    # The raw twin validates strictly; the non-streamed Response has the same parts.
    upstream.push(script)
    gateway.stream_validated({"model": MODEL, "input": "something bad", "store": False})
    upstream.push(script)
    resp, body = create(client, model=MODEL, input="something bad", store=False)
    assert [i["content"] for i in body["output"]] == [
        [{"type": "output_text", "text": "I see.", "annotations": [], "logprobs": []}],
        [{"type": "refusal", "refusal": "I can't help with that."}],
    ]


def test_the_message_is_done_before_a_call_and_parallel_false_means_one_call(client, upstream):
    """Items follow one another: the message is done (`commentary`) before the call's item is
    added; with `parallel_tool_calls=False` an upstream's second call is dropped."""
    script = {
        "text": ["Checking."],
        "tool_calls": [
            {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            {"name": "get_weather", "arguments": '{"city":"Rome"}'},
        ],
    }
    upstream.push(script)
    with client.responses.stream(
        model=MODEL, input="weather?", tools=[WEATHER_TOOL], store=False, parallel_tool_calls=False
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    validate_sdk_events(events)
    items = [(e.type, e.output_index) for e in events if e.type in ("response.output_item.added", "response.output_item.done")]
    assert items == [
        ("response.output_item.added", 0),
        ("response.output_item.done", 0),
        ("response.output_item.added", 1),
        ("response.output_item.done", 1),
    ]
    assert [i.type for i in final.output] == ["message", "function_call"]
    assert final.output[0].phase == "commentary"
    assert final.output[1].arguments == '{"city":"Oslo"}'
    assert final.parallel_tool_calls is False
