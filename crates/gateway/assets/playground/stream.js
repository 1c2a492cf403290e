// One request of the page: `POST /v1/responses` with `stream: true`, its server-sent events
// read as they arrive and applied to the response's ResponseView (transcript.js), until the
// terminal event. HTTP errors are shown in the view (a 401 also asks for the API key, a 400
// about the mcp tool also shows under the MCP fields).

import { SseParser, errorMessage } from './lib.js';
import { scrollToEnd } from './dom.js';
import { withKey, askForKey } from './api.js';
import { mcpRefusal } from './mcp.js';

/** Sends one request and renders its stream into `view`; `controller` aborts it (Stop).
 * Resolves to the terminal Response (or null). */
export async function streamResponse(body, view, controller) {
  let res;
  try {
    res = await fetch('v1/responses', {
      method: 'POST',
      headers: withKey({ 'content-type': 'application/json', accept: 'text/event-stream' }),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch (e) {
    view.error(controller.signal.aborted ? 'Stopped.' : `The gateway could not be reached: ${e.message}`);
    return null;
  }
  if (!res.ok) {
    let detail = null;
    try {
      detail = await res.json();
    } catch {
      detail = null;
    }
    if (res.status === 401) askForKey(detail);
    if (res.status === 400) mcpRefusal(detail, body);
    view.error(`HTTP ${res.status}: ${errorMessage(detail, res.statusText || 'request failed')}`);
    return null;
  }
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = res.body.getReader();
  let terminal = null;
  const handle = (ev) => {
    let data;
    try {
      data = JSON.parse(ev.data);
    } catch {
      return;
    }
    const t = handleEvent(data, view);
    if (t) terminal = t;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const ev of parser.push(decoder.decode(value, { stream: true }))) handle(ev);
    }
    for (const ev of parser.push(decoder.decode())) handle(ev);
    for (const ev of parser.end()) handle(ev);
  } catch (e) {
    view.error(controller.signal.aborted ? 'Stopped.' : `The stream broke off: ${e.message}`);
    return null;
  }
  if (!terminal) view.error('The stream ended without a terminal event.');
  return terminal;
}

/** Applies one event to the view; returns the Response on a terminal event. */
function handleEvent(ev, view) {
  const type = ev.type || '';
  switch (type) {
    case 'response.created':
      view.responseId = ev.response && ev.response.id;
      view.meta.textContent = `${view.meta.textContent} · ${view.responseId || ''}`;
      return null;
    case 'response.output_item.added':
      view.added(ev.output_index, ev.item || {});
      return null;
    case 'response.output_item.done':
      view.done(ev.output_index, ev.item || {});
      return null;
    case 'response.refusal.delta': {
      const v = view.get(ev.output_index);
      if (v && 'refusal' in v) v.refusal = true; // shown as it is, not as Markdown
      if (v && v.append) v.append(ev.delta || '');
      scrollToEnd();
      return null;
    }
    case 'response.output_text.delta':
    case 'response.reasoning_summary_text.delta':
    case 'response.reasoning_text.delta':
    case 'response.function_call_arguments.delta':
    case 'response.custom_tool_call_input.delta':
    case 'response.mcp_call_arguments.delta': {
      const v = view.get(ev.output_index);
      if (v && v.append) v.append(ev.delta || '');
      scrollToEnd();
      return null;
    }
    case 'response.output_text.annotation.added': {
      const v = view.get(ev.output_index);
      if (v && v.annotations && ev.annotation) {
        v.annotations = v.annotations.concat([ev.annotation]);
        v.render();
      }
      return null;
    }
    case 'response.content_part.done': {
      const v = view.get(ev.output_index);
      if (v && v.render && ev.part && ev.part.type === 'output_text') {
        v.raw = ev.part.text || v.raw;
        v.annotations = Array.isArray(ev.part.annotations) ? ev.part.annotations : v.annotations;
        v.render();
      }
      return null;
    }
    case 'response.web_search_call.in_progress':
    case 'response.web_search_call.searching':
    case 'response.web_search_call.completed':
    case 'response.file_search_call.in_progress':
    case 'response.file_search_call.searching':
    case 'response.file_search_call.completed':
    case 'response.mcp_list_tools.in_progress':
    case 'response.mcp_list_tools.completed':
    case 'response.mcp_list_tools.failed':
    case 'response.mcp_call.in_progress':
    case 'response.mcp_call.completed':
    case 'response.mcp_call.failed': {
      const v = view.get(ev.output_index);
      if (v && v.status) v.status(type.split('.').pop());
      return null;
    }
    case 'response.mcp_call_arguments.done': {
      const v = view.get(ev.output_index);
      if (v && v.setArguments) v.setArguments(ev.arguments);
      return null;
    }
    case 'error':
      view.error(errorMessage(ev, 'stream error'));
      return null;
    case 'response.failed':
      view.error(`The response failed: ${errorMessage(ev.response && ev.response.error, 'no reason given')}`);
      return ev.response || {};
    case 'response.incomplete': {
      const reason = ev.response && ev.response.incomplete_details && ev.response.incomplete_details.reason;
      view.notice(`The response is incomplete${reason ? ` (${reason})` : ''}.`);
      return ev.response || {};
    }
    case 'response.completed':
      return ev.response || {};
    default:
      return null;
  }
}
