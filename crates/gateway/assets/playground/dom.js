// Small DOM helpers shared by the playground's modules: element building, the render order
// of transcript steps (data-seq), announcements for screen readers, scrolling that follows a
// reader at the end of the page, and formatting of JSON, counts and links.

import { safeUrl } from './lib.js';

export const $ = (id) => document.getElementById(id);

let seq = 0; // render order of transcript steps (data-seq), for readers and tests

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

export function stamp(node) {
  node.dataset.seq = String(++seq);
  return node;
}

export function announce(text) {
  $('announce').textContent = text;
}

function nearEnd() {
  return window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
}

export function scrollToEnd() {
  const log = $('log');
  if (nearEnd()) window.scrollTo({ top: document.body.scrollHeight });
  return log;
}

/** Runs `change` (which may grow the page); a reader who was at the end stays there. */
export function keepingEnd(change) {
  const follow = nearEnd();
  change();
  if (follow) window.scrollTo({ top: document.body.scrollHeight });
}

export function pretty(text) {
  if (typeof text !== 'string') return JSON.stringify(text, null, 2);
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function link(url, label) {
  const href = safeUrl(url);
  if (!href) return el('span', { text: label || url });
  return el('a', { href, target: '_blank', rel: 'noopener noreferrer', text: label || url });
}
