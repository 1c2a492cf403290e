// The settings panel: the form's current values (for lib.js toolSettings), the tool_choice
// entries that follow the switched-on tools, and the models and vector stores listed from the
// gateway's API to fill its selectors.

import { toolSettings } from './lib.js';
import { $, el, plural } from './dom.js';
import { getJson } from './api.js';

export function currentSettings() {
  const store = $('vector-store');
  return {
    webSearch: $('tool-web_search').checked,
    packageVersion: $('tool-package_version').checked,
    fileSearch: $('tool-file_search').checked && !$('tool-file_search').disabled,
    vectorStoreIds: store.value ? [store.value] : [],
    mcp: $('tool-mcp').checked
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

/** Fills the model selector from `GET /v1/models`. */
export async function loadModels() {
  const select = $('model');
  const note = $('model-note');
  try {
    const body = await getJson('v1/models');
    const ids = (body && Array.isArray(body.data) ? body.data : []).map((m) => m && m.id).filter((id) => typeof id === 'string');
    select.replaceChildren(...ids.map((id) => el('option', { value: id, text: id })));
    note.textContent = ids.length ? '' : 'The gateway lists no models.';
  } catch (e) {
    note.textContent = `Could not load the models (${e.message}).`;
    note.classList.add('warn');
  }
}

/** Fills the vector store selector from `GET /v1/vector_stores`; file_search stays off
 * (with a note) when there is none or the list fails. */
export async function loadVectorStores() {
  const box = $('tool-file_search');
  const select = $('vector-store');
  const note = $('stores-note');
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
