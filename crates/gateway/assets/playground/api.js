// The gateway's API key and the page's GET requests. The key is asked for after a 401 and kept
// for this tab only (sessionStorage); every request of the page carries it (withKey).

import { errorMessage } from './lib.js';
import { $ } from './dom.js';

const KEY_STORAGE = 'responses-gateway-api-key';

function apiKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

/** `headers` with the Authorization header when a key is set. */
export function withKey(headers) {
  const key = apiKey();
  return key ? { ...headers, authorization: `Bearer ${key}` } : headers;
}

/** Shows the key form after a 401: the gateway wants a key (or another one). */
export function askForKey(body) {
  const form = $('key-form');
  const wrong = apiKey() !== '';
  $('key-note').textContent = wrong
    ? `The gateway refused this key (${errorMessage(body, 'invalid_api_key')}). Enter another one; it is kept in this tab only.`
    : 'This gateway needs an API key. It is kept in this tab only (sessionStorage).';
  form.hidden = false;
  $('api-key').focus();
}

/** Keeps `key` for this tab. */
export function saveKey(key) {
  try {
    sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    // storage refused (private mode): the key is not kept
  }
}

/** GET `path` (relative to the page) as JSON; throws an Error with `status` when not ok. */
export async function getJson(path) {
  const res = await fetch(path, { headers: withKey({ accept: 'application/json' }) });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (res.status === 401) askForKey(body);
  if (!res.ok) {
    const error = new Error(`HTTP ${res.status}: ${errorMessage(body, res.statusText || 'error')}`);
    error.status = res.status;
    throw error;
  }
  return body;
}
