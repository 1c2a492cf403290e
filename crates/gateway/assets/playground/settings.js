// The settings panel: the form's current values (for lib.js toolSettings), the tool_choice
// entries that follow the switched-on tools, and the models and vector stores listed from the
// gateway's API to fill its selectors.

import { toolSettings, gatewayTools } from './lib.js';
import { $, el, plural } from './dom.js';
import { getJson } from './api.js';
import { mcpOffered } from './mcp.js';

/** A switch that is on and not disabled. */
const on = (id) => $(id).checked && !$(id).disabled;

export function currentSettings() {
  const store = $('vector-store');
  return {
    webSearch: on('tool-web_search'),
    packageVersion: on('tool-package_version'),
    fileSearch: on('tool-file_search'),
    vectorStoreIds: store.value ? [store.value] : [],
    mcp: on('tool-mcp')
      ? { url: $('mcp-url').value, label: $('mcp-label').value, approval: $('mcp-approval').checked }
      : null,
    browserTime: $('tool-get_browser_time').checked,
    toolChoice: $('tool-choice').value,
  };
}

/** Keeps the named entries of the tool_choice selector in step with the switched-on tools. */
export function refreshToolChoice() {
  const select = $('tool-choice');
  const chosen = select.value;
  for (const opt of [...select.options]) if (opt.value.startsWith('tool:')) opt.remove();
  for (const name of toolSettings({ ...currentSettings(), toolChoice: 'auto' }).named) {
    select.append(el('option', { value: `tool:${name}`, text: `only ${name}` }));
  }
  select.value = [...select.options].some((o) => o.value === chosen) ? chosen : 'auto';
}

/** Fills the model selector from `GET /v1/models` (it shows "Loading models…" until then). */
export async function loadModels() {
  const select = $('model');
  const note = $('model-note');
  if (!select.value) {
    select.replaceChildren(el('option', { value: '', text: 'Loading models…' }));
    select.disabled = true;
    note.textContent = 'Loading models…';
    note.classList.remove('warn');
  }
  try {
    const body = await getJson('v1/models');
    const ids = (body && Array.isArray(body.data) ? body.data : []).map((m) => m && m.id).filter((id) => typeof id === 'string');
    select.replaceChildren(...ids.map((id) => el('option', { value: id, text: id })));
    select.disabled = ids.length === 0;
    note.textContent = ids.length ? '' : 'The gateway lists no models.';
    note.classList.toggle('warn', !ids.length);
  } catch (e) {
    select.replaceChildren(el('option', { value: '', text: 'No models' }));
    note.textContent = `Could not load the models (${e.message}).`;
    note.classList.add('warn');
  }
}

/** Enables a gateway tool's switch, or disables it with the reason as its tooltip (on the
 * whole row) and "not configured" beside its name. */
function offer(id, tool) {
  const box = $(id);
  const row = box.closest('label');
  const small = row.querySelector('small');
  box.disabled = !tool.available;
  if (tool.available) {
    row.removeAttribute('title');
    small.textContent = 'gateway';
  } else {
    box.checked = false;
    row.title = tool.reason;
    small.textContent = 'gateway · not configured';
  }
}

/** Asks the gateway which of its tools have a backend (`GET /v1/gateway/tools`) and offers
 * only those: web_search, package_version and mcp (file_search also needs a vector store,
 * see loadVectorStores). A gateway without that route (or an error) leaves every switch on
 * offer, as before. */
export async function loadTools() {
  let body = null;
  try {
    body = await getJson('v1/gateway/tools');
  } catch {
    body = null;
  }
  const tools = gatewayTools(body);
  offer('tool-web_search', tools.webSearch);
  offer('tool-package_version', tools.packageVersion);
  offer('tool-mcp', tools.mcp);
  for (const id of ['mcp-url', 'mcp-label', 'mcp-approval']) $(id).disabled = !tools.mcp.available;
  $('mcp-labels').replaceChildren(...tools.mcp.labels.map((l) => el('option', { value: l })));
  if (tools.mcp.available) mcpOffered(tools.mcp);
  else $('mcp-note').textContent = `mcp is unavailable: ${tools.mcp.reason}`;
  if (!tools.fileSearch.available) {
    const note = $('stores-note');
    note.textContent = `file_search is unavailable: ${tools.fileSearch.reason}`;
    note.classList.add('warn');
    const row = $('tool-file_search').closest('label');
    row.title = tools.fileSearch.reason;
    row.querySelector('small').textContent = 'gateway · not configured';
  }
  return tools;
}

/** Fills the vector store selector from `GET /v1/vector_stores`; file_search stays off
 * (with a note) when there is none or the list fails. `tools` (loadTools' answer), when it
 * says file_search has no backend, leaves it off without asking. */
export async function loadVectorStores(tools) {
  const box = $('tool-file_search');
  const select = $('vector-store');
  const note = $('stores-note');
  if (tools && !tools.fileSearch.available) return;
  let stores = [];
  try {
    const body = await getJson('v1/vector_stores');
    stores = (body && Array.isArray(body.data) ? body.data : []).filter((s) => s && typeof s.id === 'string');
  } catch (e) {
    note.textContent = e.status === 404
      ? 'file_search is unavailable: this gateway has no vector store API (GET /v1/vector_stores: HTTP 404).'
      : `file_search is unavailable: the vector stores could not be listed (${e.message}).`;
    note.classList.add('warn');
    return;
  }
  if (!stores.length) {
    note.textContent = 'file_search is unavailable: there are no vector stores yet.';
    note.classList.add('warn');
    return;
  }
  select.replaceChildren(...stores.map((s) => el('option', { value: s.id, text: s.name ? `${s.name} (${s.id})` : s.id })));
  box.disabled = false;
  select.disabled = false;
  note.textContent = `${plural(stores.length, 'vector store')}.`;
  note.classList.remove('warn');
}
