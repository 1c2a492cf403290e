"""Validators for what the gateway emits, reusable across test modules.

Three independent checks, each applied to every Response object, output item and
stream event a test sees:

1. The official ``openai`` SDK's pydantic models. The SDK itself parses server
   data with the lenient ``construct`` (no validation at all), so a wrong payload
   would slip through ``client.responses.create``; here every object is validated
   explicitly: ``TypeAdapter(ResponseStreamEvent).validate_python(obj)`` for
   events, ``Response.model_validate(obj)`` for responses, the
   ``ResponseOutputItem`` union for items, plus the same in pydantic's strict JSON
   mode (so a ``"3"`` where an int belongs is not silently coerced).
2. The Open Responses schema (``openresponses-types``). It only defines a subset
   (see ``to_open_responses_*``), and what it defines is checked.
3. Stream invariants (``check_stream_invariants``): a Python twin of the
   gateway's Rust stream checker.

The module only imports names that exist in every supported SDK version so the
suite can run under another pinned ``openai`` (see requirements.txt).
"""

from __future__ import annotations

import copy
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import pydantic
from pydantic import TypeAdapter

from openai.types.responses import Response, ResponseOutputItem, ResponseStreamEvent

import openresponses_types as ort

__all__ = [
    "ValidationFailure",
    "SDK_EVENT_TYPES",
    "SDK_ITEM_TYPES",
    "validate_sdk_event",
    "validate_sdk_response",
    "validate_sdk_item",
    "validate_or_event",
    "validate_or_response",
    "validate_or_item",
    "validate_response",
    "validate_item",
    "validate_event",
    "parse_sse",
    "SSEEvent",
    "check_stream_invariants",
    "assert_stream_invariants",
    "validate_stream",
    "or_required_non_null_fields",
]


class ValidationFailure(AssertionError):
    """A payload failed a schema or an invariant. The message says which and why."""


def _fail(what: str, obj: Any, err: Exception | str) -> typing.NoReturn:
    dumped = json.dumps(obj, indent=None, default=str)
    if len(dumped) > 4000:
        dumped = dumped[:4000] + "…"
    raise ValidationFailure(f"{what}: {err}\n  payload: {dumped}") from None


# ---------------------------------------------------------------------------
# SDK models
# ---------------------------------------------------------------------------


def _union_members(tp: Any) -> tuple[Any, ...]:
    """Members of a (possibly Annotated) Union type alias."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return typing.get_args(tp)


def _literal_values(model_cls: type[pydantic.BaseModel], field_name: str = "type") -> tuple[str, ...]:
    ann = model_cls.model_fields[field_name].annotation
    values: list[str] = []

    def walk(a: Any) -> None:
        origin = typing.get_origin(a)
        if origin is typing.Literal:
            values.extend(v for v in typing.get_args(a) if isinstance(v, str))
        elif origin is typing.Union or origin is getattr(__import__("types"), "UnionType", None):
            for x in typing.get_args(a):
                walk(x)
        elif isinstance(a, type) and issubclass(a, str) and hasattr(a, "__members__"):
            values.extend(m.value for m in a)  # StrEnum

    walk(ann)
    return tuple(values)


def _by_type(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    out: dict[str, type[pydantic.BaseModel]] = {}
    for member in _union_members(union):
        for v in _literal_values(member):
            out[v] = member
    return out


SDK_EVENT_CLASSES: dict[str, type[pydantic.BaseModel]] = _by_type(ResponseStreamEvent)
SDK_ITEM_CLASSES: dict[str, type[pydantic.BaseModel]] = _by_type(ResponseOutputItem)
SDK_EVENT_TYPES = frozenset(SDK_EVENT_CLASSES)
SDK_ITEM_TYPES = frozenset(SDK_ITEM_CLASSES)

_SDK_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
_SDK_ITEM_ADAPTER: TypeAdapter[Any] = TypeAdapter(ResponseOutputItem)


def _validate_model(what: str, cls: type[pydantic.BaseModel], obj: Any, strict: bool = True) -> pydantic.BaseModel:
    try:
        parsed = cls.model_validate(obj)
    except pydantic.ValidationError as e:
        _fail(f"{what} does not validate as {cls.__module__}.{cls.__qualname__}", obj, e)
    if not strict:
        return parsed
    try:
        # Strict JSON mode: no "3" for 3, no 1.0 for an int, no str for a bool.
        cls.model_validate_json(json.dumps(obj), strict=True)
    except pydantic.ValidationError as e:
        _fail(f"{what} does not validate (strict JSON mode) as {cls.__qualname__}", obj, e)
    return parsed


def validate_sdk_item(obj: Any, strict: bool = True) -> pydantic.BaseModel:
    """Validate one output item against the SDK's ``ResponseOutputItem`` union."""
    if not isinstance(obj, dict):
        _fail("output item is not an object", obj, type(obj).__name__)
    t = obj.get("type")
    if t not in SDK_ITEM_CLASSES:
        _fail("output item type unknown to the SDK", obj, f"type={t!r}; known: {sorted(SDK_ITEM_CLASSES)}")
    parsed = _validate_model("output item", SDK_ITEM_CLASSES[t], obj, strict)
    try:
        via_union = _SDK_ITEM_ADAPTER.validate_python(obj)
    except pydantic.ValidationError as e:
        _fail("output item does not validate as the SDK ResponseOutputItem union", obj, e)
    if type(via_union) is not SDK_ITEM_CLASSES[t]:
        _fail("SDK item union resolved to the wrong member", obj, type(via_union).__name__)
    return parsed


def validate_sdk_response(obj: Any, strict: bool = True) -> Response:
    """Validate a Response object (body or ``event.response``) with the SDK model."""
    if not isinstance(obj, dict):
        _fail("response is not an object", obj, type(obj).__name__)
    parsed = _validate_model("response", Response, obj, strict)
    for i, item in enumerate(obj.get("output") or []):
        try:
            validate_sdk_item(item, strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"response.output[{i}]: {e}") from None
    return typing.cast(Response, parsed)


# The one deliberate departure from the SDK models. The SDK's ResponseFunctionWebSearch
# requires `action`, but OpenAI itself (the contract's §8.5 capture) and issue 4 add a
# `web_search_call` WITHOUT `action`: `response.output_item.added` carries
# `{id, type: "web_search_call", status: "in_progress"}`, and the action (query, queries and,
# when included, the sources) arrives with `output_item.done`. So exactly that case is accepted: the item of an
# `output_item.added` event, of type web_search_call, status in_progress, with no `action`
# key at all. It is validated with a neutral placeholder action (`{"type":"search","query":""}`:
# openai 3.x makes every field but `type` optional, 2.8.0 also requires `query`), so every
# other field is still checked strictly. A
# web_search_call anywhere else (output_item.done, response.output, a standalone item) and an
# added item with a present-but-wrong `action` still need a valid `action`.
_WEB_SEARCH_PLACEHOLDER_ACTION = {"type": "search", "query": ""}


def _is_web_search_added_without_action(obj: dict[str, Any]) -> bool:
    item = obj.get("item")
    return (
        obj.get("type") == "response.output_item.added"
        and isinstance(item, dict)
        and item.get("type") == "web_search_call"
        and item.get("status") == "in_progress"
        and "action" not in item
    )


def _with_placeholder_action(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "item": {**obj["item"], "action": dict(_WEB_SEARCH_PLACEHOLDER_ACTION)}}


def validate_sdk_event(obj: Any, strict: bool = True) -> pydantic.BaseModel:
    """Validate one stream event against the SDK ``ResponseStreamEvent`` union.

    Its ``type`` must be one of the union's literal types (no unknown events).
    """
    if not isinstance(obj, dict):
        _fail("event is not an object", obj, type(obj).__name__)
    t = obj.get("type")
    if t not in SDK_EVENT_CLASSES:
        _fail("event type unknown to the SDK ResponseStreamEvent union", obj, f"type={t!r}")
    if _is_web_search_added_without_action(obj):
        obj = _with_placeholder_action(obj)
    # Nested objects first: their errors are precise (the event models embed big unions).
    if isinstance(obj.get("response"), dict):
        try:
            validate_sdk_response(obj["response"], strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"event {t} (seq {obj.get('sequence_number')}) .response: {e}") from None
    if isinstance(obj.get("item"), dict):
        try:
            validate_sdk_item(obj["item"], strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"event {t} (seq {obj.get('sequence_number')}) .item: {e}") from None
    parsed = _validate_model(f"event {t}", SDK_EVENT_CLASSES[t], obj, strict)
    try:
        via_union = _SDK_EVENT_ADAPTER.validate_python(obj)
    except pydantic.ValidationError as e:
        _fail(f"event {t} does not validate as the SDK ResponseStreamEvent union", obj, e)
    if type(via_union) is not SDK_EVENT_CLASSES[t]:
        _fail(f"SDK event union resolved {t} to the wrong member", obj, type(via_union).__name__)
    return parsed


# ---------------------------------------------------------------------------
# Open Responses schema (openresponses-types)
# ---------------------------------------------------------------------------
#
# The Open Responses schema is a subset of the OpenAI API. It has:
#   * output items: message, function_call, function_call_output, reasoning,
#     compaction — no custom_tool_call(_output), web_search_call, file_search_call,
#     mcp_*, or any other hosted-tool item;
#   * tools: only {"type":"function"} — no custom, namespace or hosted tools;
#   * tool_choice: "none"/"auto"/"required", {"type":"function"} and allowed_tools
#     over function tools only;
#   * annotations: only url_citation;
#   * events: the lifecycle events, output_item/content_part/output_text/refusal/
#     reasoning(_summary) events, annotation.added, function_call_arguments.* and
#     error — no custom_tool_call_input.*, web_search_call.*, file_search_call.*,
#     mcp_*, ... events;
#   * a mistyped json_schema text format: JsonSchemaResponseFormat.schema is typed
#     `None` (so any real schema fails) and description/strict are required.
# So before validating against it we FILTER OUT what it does not define: such
# items, tools, annotations and events are dropped (and the remaining ones still
# checked), a json_schema format is replaced by {"type":"text"}, a tool_choice
# naming a non-function tool is replaced by "auto". Everything it does define is
# validated as is, including its required non-null fields.

OR_ITEM_CLASSES: dict[str, type[pydantic.BaseModel]] = {
    "message": ort.Message,
    "function_call": ort.FunctionCall,
    "function_call_output": ort.FunctionCallOutput,
    "reasoning": ort.ReasoningBody,
    "compaction": ort.CompactionBody,
}


def _or_event_classes() -> dict[str, type[pydantic.BaseModel]]:
    out: dict[str, type[pydantic.BaseModel]] = {}
    for name in dir(ort):
        cls = getattr(ort, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, pydantic.BaseModel)
            and name.endswith("StreamingEvent")
            and "type" in cls.model_fields
        ):
            for v in _literal_values(cls):
                out[v] = cls
    return out


OR_EVENT_CLASSES = _or_event_classes()
OR_EVENT_TYPES = frozenset(OR_EVENT_CLASSES)


def _or_filter_item(item: Any) -> Any | None:
    """Return an item filtered down to what Open Responses defines, or None to drop it."""
    if not isinstance(item, dict) or item.get("type") not in OR_ITEM_CLASSES:
        return None
    item = copy.deepcopy(item)
    if item.get("type") == "message" and isinstance(item.get("content"), list):
        for part in item["content"]:
            if isinstance(part, dict) and isinstance(part.get("annotations"), list):
                part["annotations"] = [
                    a for a in part["annotations"] if isinstance(a, dict) and a.get("type") == "url_citation"
                ]
    return item


def to_open_responses_response(resp: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Response restricted to what the Open Responses schema defines."""
    resp = copy.deepcopy(resp)
    if isinstance(resp.get("output"), list):
        resp["output"] = [f for f in (_or_filter_item(i) for i in resp["output"]) if f is not None]
    if isinstance(resp.get("tools"), list):
        resp["tools"] = [t for t in resp["tools"] if isinstance(t, dict) and t.get("type") == "function"]
    text = resp.get("text")
    if isinstance(text, dict) and isinstance(text.get("format"), dict):
        if text["format"].get("type") == "json_schema":
            text["format"] = {"type": "text"}
    tc = resp.get("tool_choice")
    if isinstance(tc, dict):
        if tc.get("type") == "allowed_tools" and isinstance(tc.get("tools"), list):
            tc["tools"] = [t for t in tc["tools"] if isinstance(t, dict) and t.get("type") == "function"]
        elif tc.get("type") not in ("function", "allowed_tools"):
            resp["tool_choice"] = "auto"
    return resp


def validate_or_item(obj: Any, strict: bool = True) -> pydantic.BaseModel | None:
    """Validate an output item against Open Responses; None if the schema lacks its type."""
    filtered = _or_filter_item(obj)
    if filtered is None:
        return None
    return _validate_model(f"Open Responses {filtered['type']} item", OR_ITEM_CLASSES[filtered["type"]], filtered, strict)


def validate_or_response(obj: Any, strict: bool = True) -> pydantic.BaseModel:
    if not isinstance(obj, dict):
        _fail("response is not an object", obj, type(obj).__name__)
    filtered = to_open_responses_response(obj)
    for i, item in enumerate(filtered.get("output") or []):
        try:
            validate_or_item(item, strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"(Open Responses) response.output item {i}: {e}") from None
    return _validate_model("Open Responses ResponseResource", ort.ResponseResource, filtered, strict)


def validate_or_event(obj: Any, strict: bool = True) -> pydantic.BaseModel | None:
    """Validate one event against Open Responses; None if the schema lacks that event/item."""
    if not isinstance(obj, dict):
        _fail("event is not an object", obj, type(obj).__name__)
    t = obj.get("type")
    if t not in OR_EVENT_CLASSES:
        return None
    obj = copy.deepcopy(obj)
    if isinstance(obj.get("response"), dict):
        try:
            validate_or_response(obj["response"], strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"event {t} (seq {obj.get('sequence_number')}) .response: {e}") from None
        obj["response"] = to_open_responses_response(obj["response"])
    if "item" in obj:
        filtered = _or_filter_item(obj["item"])
        if filtered is None:
            return None
        try:
            validate_or_item(filtered, strict)
        except ValidationFailure as e:
            raise ValidationFailure(f"event {t} (seq {obj.get('sequence_number')}) .item: {e}") from None
        obj["item"] = filtered
    if t == "response.output_text.annotation.added":
        ann = obj.get("annotation")
        if isinstance(ann, dict) and ann.get("type") != "url_citation":
            return None
    part = obj.get("part")
    if isinstance(part, dict) and isinstance(part.get("annotations"), list):
        # content_part.added/done: only url_citation annotations exist in the schema.
        part["annotations"] = [a for a in part["annotations"] if isinstance(a, dict) and a.get("type") == "url_citation"]
    return _validate_model(f"Open Responses event {t}", OR_EVENT_CLASSES[t], obj, strict)


def or_required_non_null_fields() -> dict[str, list[str]]:
    """For the Open Responses models the gateway emits: fields that must be present and non-null.

    (``python validate.py`` prints it.)
    """

    def allows_none(ann: Any) -> bool:
        if ann is None or ann is type(None) or ann is Any:
            return True
        return any(allows_none(a) for a in typing.get_args(ann)) if typing.get_origin(ann) in (
            typing.Union,
            getattr(__import__("types"), "UnionType", None),
            typing.Annotated,
        ) else False

    models = {
        "ResponseResource": ort.ResponseResource,
        "Usage": ort.Usage,
        "InputTokensDetails": ort.InputTokensDetails,
        "OutputTokensDetails": ort.OutputTokensDetails,
        "Error1 (response.error)": ort.Error1,
        "IncompleteDetails": ort.IncompleteDetails,
        "Reasoning (response.reasoning)": ort.Reasoning,
        "TextField (response.text)": ort.TextField,
        "FunctionTool (response.tools[])": ort.FunctionTool,
        "FunctionToolChoice": ort.FunctionToolChoice,
        "Message": ort.Message,
        "OutputTextContent": ort.OutputTextContent,
        "RefusalContent": ort.RefusalContent,
        "UrlCitationBody": ort.UrlCitationBody,
        "FunctionCall": ort.FunctionCall,
        "FunctionCallOutput": ort.FunctionCallOutput,
        "ReasoningBody": ort.ReasoningBody,
        "ErrorStreamingEvent": ort.ErrorStreamingEvent,
        "ErrorPayload (error event .error)": ort.ErrorPayload,
    }
    models.update({f"event {t}": c for t, c in sorted(OR_EVENT_CLASSES.items())})
    out: dict[str, list[str]] = {}
    for label, cls in models.items():
        req_non_null, req_nullable = [], []
        for name, f in cls.model_fields.items():
            if not f.is_required():
                continue
            key = f.alias or name
            (req_nullable if allows_none(f.annotation) else req_non_null).append(key)
        out[label] = [*req_non_null, *(f"{k} (nullable, must be present)" for k in req_nullable)]
    return out


# ---------------------------------------------------------------------------
# Both schemas at once
# ---------------------------------------------------------------------------


def validate_response(obj: Any, strict: bool = True) -> Response:
    """SDK + Open Responses validation of a Response object; returns the SDK model.

    strict=False skips pydantic's strict JSON mode: for dicts dumped from SDK models,
    which the SDK has already coerced (e.g. created_at int -> float)."""
    parsed = validate_sdk_response(obj, strict)
    validate_or_response(obj, strict)
    return parsed


def validate_item(obj: Any, strict: bool = True) -> pydantic.BaseModel:
    parsed = validate_sdk_item(obj, strict)
    validate_or_item(obj, strict)
    return parsed


def validate_event(obj: Any, strict: bool = True) -> pydantic.BaseModel:
    parsed = validate_sdk_event(obj, strict)
    validate_or_event(obj, strict)
    return parsed


# ---------------------------------------------------------------------------
# SSE parsing (a small, spec-following parser: event:/data:/id:/retry:, ":" comments)
# ---------------------------------------------------------------------------


@dataclass
class SSEEvent:
    event: str | None
    data: str


@dataclass
class ParsedSSE:
    events: list[SSEEvent] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    trailing_garbage: str = ""  # bytes after the last blank line (an unterminated event)


_LINE_SPLIT = re.compile(r"\r\n|\r|\n")


def parse_sse(text: str) -> ParsedSSE:
    out = ParsedSSE()
    event: str | None = None
    data: list[str] = []
    pending: list[str] = []
    lines = _LINE_SPLIT.split(text)
    # A final element that is not followed by a newline is a partial line.
    for line in lines:
        pending.append(line)
        if line == "":
            if data or event is not None:
                out.events.append(SSEEvent(event=event, data="\n".join(data)))
            event, data, pending = None, [], []
            continue
        if line.startswith(":"):
            out.comments.append(line[1:])
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        # id:/retry:/unknown fields are ignored, as in the spec.
    if data or event is not None:
        out.trailing_garbage = "\n".join(p for p in pending if p)
    return out


def sse_json_events(parsed: ParsedSSE) -> tuple[list[dict[str, Any]], list[str]]:
    """JSON-decode every SSE event; also checks ``event:`` == ``data.type``.

    Returns (events, problems).
    """
    events: list[dict[str, Any]] = []
    problems: list[str] = []
    for i, ev in enumerate(parsed.events):
        if ev.data.strip() == "[DONE]":
            problems.append(f"SSE event #{i} is a `data: [DONE]` sentinel (the Responses API sends none)")
            continue
        try:
            obj = json.loads(ev.data)
        except json.JSONDecodeError as e:
            problems.append(f"SSE event #{i} data is not JSON ({e}): {ev.data[:200]!r}")
            continue
        if not isinstance(obj, dict):
            problems.append(f"SSE event #{i} data is not a JSON object: {ev.data[:200]!r}")
            continue
        if ev.event is None:
            problems.append(f"SSE event #{i} ({obj.get('type')}) has no `event:` line")
        elif ev.event != obj.get("type"):
            problems.append(f"SSE event #{i}: `event: {ev.event}` but data.type={obj.get('type')!r}")
        events.append(obj)
    if parsed.trailing_garbage:
        problems.append(f"stream ends inside an unterminated SSE event: {parsed.trailing_garbage[:200]!r}")
    return events, problems


# ---------------------------------------------------------------------------
# Stream invariants (Python twin of the gateway's Rust stream checker)
# ---------------------------------------------------------------------------

LIFECYCLE = {
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.completed",
    "response.failed",
    "response.incomplete",
}
TERMINAL = {"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}


def _identity(item: dict[str, Any]) -> tuple[Any, ...]:
    t = item.get("type")
    ident: tuple[Any, ...] = (t, item.get("id"))
    if t in ("function_call", "custom_tool_call"):
        ident += (item.get("call_id"), item.get("name"))
    return ident


def _message_texts(item: dict[str, Any]) -> dict[int, str]:
    out = {}
    for ci, part in enumerate(item.get("content") or []):
        if isinstance(part, dict) and part.get("type") == "output_text":
            out[ci] = part.get("text")
    return out


def check_stream_invariants(events: list[dict[str, Any]]) -> list[str]:
    """Return a list of violated invariants (empty when the stream is well-formed)."""
    v: list[str] = []
    if not events:
        return ["stream has no events"]

    def at(i: int, msg: str) -> None:
        e = events[i]
        v.append(f"event #{i} ({e.get('type')}, seq {e.get('sequence_number')}): {msg}")

    # Order of the first two events.
    if events[0].get("type") != "response.created":
        at(0, "first event must be response.created")
    if len(events) < 2 or events[1].get("type") != "response.in_progress":
        v.append(
            "second event must be response.in_progress, got "
            + (repr(events[1].get("type")) if len(events) > 1 else "nothing")
        )

    # sequence_number contiguous from 0.
    for i, e in enumerate(events):
        if e.get("sequence_number") != i:
            at(i, f"sequence_number must be {i}")

    # Lifecycle: one response id; exactly one terminal event, and it is last.
    resp_ids = {e["response"].get("id") for e in events if e.get("type") in LIFECYCLE and isinstance(e.get("response"), dict)}
    if len(resp_ids) != 1:
        v.append(f"lifecycle events carry different response ids: {sorted(map(str, resp_ids))}")
    for i, e in enumerate(events):
        if e.get("type") in LIFECYCLE and not isinstance(e.get("response"), dict):
            at(i, "lifecycle event without a response object")
    terminals = [i for i, e in enumerate(events) if e.get("type") in TERMINAL]
    if len(terminals) != 1:
        v.append(f"expected exactly one terminal event, got {len(terminals)} at {terminals}")
    if terminals and terminals[-1] != len(events) - 1:
        at(len(events) - 1, f"terminal event at #{terminals[-1]} is not the last event")
    for i, e in enumerate(events):
        if e.get("type") in TERMINAL and isinstance(e.get("response"), dict):
            want = TERMINAL[e["type"]]
            if e["response"].get("status") != want:
                at(i, f"response.status must be {want!r}, got {e['response'].get('status')!r}")
        if e.get("type") in ("response.created", "response.in_progress") and isinstance(e.get("response"), dict):
            if e["response"].get("status") not in ("in_progress", "queued"):
                at(i, f"response.status must be in_progress/queued, got {e['response'].get('status')!r}")
    if any(e.get("type") == "error" for e in events) and terminals and events[terminals[-1]].get("type") != "response.failed":
        v.append("an `error` event was emitted but the terminal event is not response.failed")

    # Items and parts.
    open_items: dict[int, dict[str, Any]] = {}  # output_index -> item at added
    done_items: dict[int, dict[str, Any]] = {}
    last_index = -1
    open_parts: dict[tuple[int, int], dict[str, Any]] = {}  # (output_index, content_index) -> part
    done_parts: set[tuple[int, int]] = set()
    text_acc: dict[tuple[int, int], str] = {}
    text_done: dict[tuple[int, int], str] = {}
    args_acc: dict[int, str] = {}
    args_done: dict[int, str] = {}
    input_acc: dict[int, str] = {}
    input_done: dict[int, str] = {}
    terminal_at = terminals[0] if terminals else len(events)

    def item_ref(i: int, e: dict[str, Any], want_type: str | None = None) -> dict[str, Any] | None:
        oi = e.get("output_index")
        item = open_items.get(oi)
        if item is None:
            at(i, f"refers to output_index {oi}, which is not an open item (added and not yet done)")
            return None
        if "item_id" in e and e.get("item_id") != item.get("id"):
            at(i, f"item_id {e.get('item_id')!r} != id {item.get('id')!r} of the item at output_index {oi}")
        if want_type and item.get("type") != want_type:
            at(i, f"item at output_index {oi} is a {item.get('type')!r}, not a {want_type!r}")
        return item

    for i, e in enumerate(events):
        t = e.get("type")
        if i > terminal_at:
            break
        if t == "response.output_item.added":
            oi = e.get("output_index")
            item = e.get("item") if isinstance(e.get("item"), dict) else {}
            if not isinstance(oi, int):
                at(i, "output_index missing")
                continue
            if oi in open_items or oi in done_items:
                at(i, f"output_index {oi} reused")
            if oi <= last_index:
                at(i, f"output_index {oi} not increasing (previous {last_index})")
            last_index = max(last_index, oi)
            if not item.get("id"):
                at(i, "added item has no id")
            open_items[oi] = item
        elif t == "response.output_item.done":
            oi = e.get("output_index")
            item = e.get("item") if isinstance(e.get("item"), dict) else {}
            added = open_items.pop(oi, None)
            if added is None:
                at(i, f"output_item.done for output_index {oi} without an open output_item.added")
                continue
            if _identity(added) != _identity(item):
                at(i, f"item identity changed between added {_identity(added)} and done {_identity(item)}")
            done_items[oi] = item
            for (poi, pci) in list(open_parts):
                if poi == oi:
                    at(i, f"output_item.done while content part {pci} is still open")
                    open_parts.pop((poi, pci))
            if item.get("type") == "message":
                for ci, txt in _message_texts(item).items():
                    if (oi, ci) in text_done and text_done[(oi, ci)] != txt:
                        at(i, f"message content[{ci}].text {txt!r} != output_text.done text {text_done[(oi, ci)]!r}")
            if item.get("type") == "function_call":
                if oi in args_done and item.get("arguments") != args_done[oi]:
                    at(i, f"item.arguments {item.get('arguments')!r} != function_call_arguments.done {args_done[oi]!r}")
                elif oi in args_acc and item.get("arguments") != args_acc[oi]:
                    at(i, f"item.arguments {item.get('arguments')!r} != concatenated deltas {args_acc[oi]!r}")
            if item.get("type") == "custom_tool_call":
                if oi in input_done and item.get("input") != input_done[oi]:
                    at(i, f"item.input {item.get('input')!r} != custom_tool_call_input.done {input_done[oi]!r}")
                elif oi in input_acc and item.get("input") != input_acc[oi]:
                    at(i, f"item.input {item.get('input')!r} != concatenated deltas {input_acc[oi]!r}")
        elif t == "response.content_part.added":
            item = item_ref(i, e)
            key = (e.get("output_index"), e.get("content_index"))
            if key in open_parts or key in done_parts:
                at(i, f"content part {key} added twice")
            open_parts[key] = e.get("part") if isinstance(e.get("part"), dict) else {}
            _check_part_kind(at, i, item, open_parts[key])
        elif t == "response.content_part.done":
            item = item_ref(i, e)
            key = (e.get("output_index"), e.get("content_index"))
            _check_part_kind(at, i, item, e.get("part") if isinstance(e.get("part"), dict) else {})
            if open_parts.pop(key, None) is None:
                at(i, f"content_part.done for {key} without content_part.added")
            done_parts.add(key)
            part = e.get("part") if isinstance(e.get("part"), dict) else {}
            if part.get("type") == "output_text" and key in text_done and part.get("text") != text_done[key]:
                at(i, f"part.text {part.get('text')!r} != output_text.done text {text_done[key]!r}")
        elif t in _TEXT_EVENTS:
            # output_text parts of messages; raw reasoning (contract §8.4 h): reasoning_text
            # parts of reasoning items. Deltas concatenate to the done text.
            item_type, part_type = _TEXT_EVENTS[t]
            item_ref(i, e, item_type)
            key = (e.get("output_index"), e.get("content_index"))
            part = open_parts.get(key)
            if part is None:
                at(i, f"{t} for content part {key} that is not open (content_part.added must precede it)")
            elif part.get("type") != part_type:
                at(i, f"content part {key} is a {part.get('type')!r}, not {part_type}")
            if t.endswith(".delta"):
                if key in text_done:
                    at(i, f"delta after {part_type}.done")
                text_acc[key] = text_acc.get(key, "") + str(e.get("delta", ""))
            elif t.endswith(".done"):
                if key in text_done:
                    at(i, f"second {part_type}.done for the same part")
                text_done[key] = e.get("text")
                if e.get("text") != text_acc.get(key, ""):
                    at(i, f"{part_type}.done text {e.get('text')!r} != concatenated deltas {text_acc.get(key, '')!r}")
        elif t in ("response.refusal.delta", "response.refusal.done"):
            item_ref(i, e, "message")
            key = (e.get("output_index"), e.get("content_index"))
            if key not in open_parts:
                at(i, f"{t} for content part {key} that is not open")
        elif t == "response.function_call_arguments.delta":
            item_ref(i, e, "function_call")
            oi = e.get("output_index")
            if oi in args_done:
                at(i, "arguments delta after function_call_arguments.done")
            args_acc[oi] = args_acc.get(oi, "") + str(e.get("delta", ""))
        elif t == "response.function_call_arguments.done":
            item_ref(i, e, "function_call")
            oi = e.get("output_index")
            args_done[oi] = e.get("arguments")
            if oi in args_acc and e.get("arguments") != args_acc[oi]:
                at(i, f"arguments {e.get('arguments')!r} != concatenated deltas {args_acc[oi]!r}")
        elif t == "response.custom_tool_call_input.delta":
            item_ref(i, e, "custom_tool_call")
            oi = e.get("output_index")
            if oi in input_done:
                at(i, "input delta after custom_tool_call_input.done")
            input_acc[oi] = input_acc.get(oi, "") + str(e.get("delta", ""))
        elif t == "response.custom_tool_call_input.done":
            item_ref(i, e, "custom_tool_call")
            oi = e.get("output_index")
            input_done[oi] = e.get("input")
            if oi in input_acc and e.get("input") != input_acc[oi]:
                at(i, f"input {e.get('input')!r} != concatenated deltas {input_acc[oi]!r}")
        elif t in LIFECYCLE or t == "error":
            pass
        elif isinstance(e.get("output_index"), int) and "item_id" in e:
            # Hosted-tool sub-events (web_search_call.*, mcp_call.*, reasoning...): item must be open.
            item_ref(i, e)

    for oi, item in open_items.items():
        v.append(f"output item {oi} ({item.get('type')} {item.get('id')}) added but never done before the terminal event")

    # The terminal response's output equals the items as done in the stream.
    if terminals and isinstance(events[terminals[0]].get("response"), dict):
        final = events[terminals[0]]["response"].get("output") or []
        done_by_id = {it.get("id"): it for it in done_items.values()}
        for k, it in enumerate(final):
            if not isinstance(it, dict):
                continue
            d = done_by_id.get(it.get("id"))
            if d is None:
                v.append(f"terminal response.output[{k}] ({it.get('type')} {it.get('id')}) was never streamed as output_item.done")
            elif d != it:
                v.append(
                    f"terminal response.output[{k}] differs from its output_item.done item:\n"
                    f"    done:  {json.dumps(d, sort_keys=True)}\n    final: {json.dumps(it, sort_keys=True)}"
                )
    return v


# Text events by type: (the item type they belong to, the content part type they fill).
_TEXT_EVENTS = {
    "response.output_text.delta": ("message", "output_text"),
    "response.output_text.done": ("message", "output_text"),
    "response.output_text.annotation.added": ("message", "output_text"),
    "response.reasoning_text.delta": ("reasoning", "reasoning_text"),
    "response.reasoning_text.done": ("reasoning", "reasoning_text"),
}


def _check_part_kind(at: Any, i: int, item: dict[str, Any] | None, part: dict[str, Any]) -> None:
    """Content parts belong to messages (output_text, refusal) or reasoning items (reasoning_text)."""
    if item is None:
        return
    allowed = {"message": ("output_text", "refusal"), "reasoning": ("reasoning_text",)}.get(item.get("type"))
    if allowed is None:
        at(i, f"content part on a {item.get('type')!r} item (only message and reasoning have parts)")
    elif part.get("type") not in allowed:
        at(i, f"a {part.get('type')!r} part on a {item.get('type')!r} item")


def _dump_events(events: list[dict[str, Any]], limit: int = 60) -> str:
    lines = []
    for i, e in enumerate(events[:limit]):
        s = json.dumps(e)
        lines.append(f"  #{i}: {s[:300]}{'…' if len(s) > 300 else ''}")
    if len(events) > limit:
        lines.append(f"  … {len(events) - limit} more")
    return "\n".join(lines)


def assert_stream_invariants(events: list[dict[str, Any]]) -> None:
    v = check_stream_invariants(events)
    if v:
        raise ValidationFailure("stream invariants violated:\n- " + "\n- ".join(v) + "\nevents:\n" + _dump_events(events))


def validate_stream(events: list[dict[str, Any]], *, invariants: bool = True, strict: bool = True) -> list[pydantic.BaseModel]:
    """Validate every event (SDK + Open Responses) and, by default, the stream invariants."""
    typed = []
    for i, e in enumerate(events):
        try:
            typed.append(validate_event(e, strict))
        except ValidationFailure as err:
            raise ValidationFailure(f"stream event #{i}: {err}") from None
    if invariants:
        assert_stream_invariants(events)
    return typed


def iter_text_deltas(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    for e in events:
        if e.get("type") == "response.output_text.delta":
            yield e["delta"]


if __name__ == "__main__":  # pragma: no cover - a report helper
    for label, fields in or_required_non_null_fields().items():
        print(f"{label}: {', '.join(fields) if fields else '-'}")
