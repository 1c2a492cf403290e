// An answer's text as Markdown: links, lists, code blocks, tables. `marked` turns the text into
// HTML, `DOMPurify` sanitizes that HTML, and the citation markers that lib.js markCitations put
// into the text at the annotations' offsets become the cited spans and footnote references.
// Both libraries are vendored (vendor/README.md) and served by the gateway itself.
//
// The text is the model's, so it is untrusted. Three layers keep it from running anything:
//  1. marked shows raw HTML in the text (`<img onerror=…>`, `<script>`) as text, and an image
//     as a link to it;
//  2. DOMPurify keeps only the elements Markdown produces, with no attributes but href, title,
//     align and start, and a link only to an absolute http(s) or mailto URL (any other loses
//     its href); links open in a new tab with rel="noopener noreferrer";
//  3. the page's Content-Security-Policy (script-src 'self', no inline code) would block an
//     inline handler or a javascript: URL that got through anyway.

import { Marked, Tokenizer } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.mjs';
import { markCitations, safeUrl, safeLinkUrl, MARK_START, MARK_END, MARK_POINT } from './lib.js';

/** One citation marker character (see lib.js). */
const MARKER = /[\uE100-\uE3FF]/;
/** A marker character percent-encoded in a URL (UTF-8 EE 84 80 … EE 8F BF). */
const ENCODED_MARKER = /%EE%8[4-9A-F]%[89AB][0-9A-F]/gi;

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

const marked = new Marked({
  gfm: true,
  breaks: true, // a single newline is a line break, as the text read while it streamed
  async: false,
  tokenizer: {
    // A bare URL (GFM autolink) ends at a citation marker; otherwise the end marker right
    // after a cited URL would become part of the link's address and text.
    url(src) {
      const cut = src.search(MARKER);
      return cut > 0 ? Tokenizer.prototype.url.call(this, src.slice(0, cut)) || false : false;
    },
  },
  renderer: {
    // Raw HTML in the model's text is shown, never interpreted.
    html({ text, block }) {
      if (!block) return escapeHtml(text);
      return `<p>${escapeHtml(text.replace(/\n+$/, '')).replace(/\n/g, '<br>')}</p>\n`;
    },
    // No images from the model (the CSP would block most anyway): a link to the image.
    image({ href, text }) {
      const label = escapeHtml(text || href || 'image');
      const url = safeLinkUrl(href);
      return url ? `<a href="${escapeHtml(url)}">${label}</a>` : label;
    },
    // Task lists without form controls.
    checkbox({ checked }) {
      return checked ? '☑ ' : '☐ ';
    },
  },
});

/** The HTML that marked makes of `source` (not yet sanitized). */
export function markdownHtml(source) {
  return marked.parse(source);
}

/** What Markdown produces, and nothing else. */
const PURIFY_CONFIG = {
  ALLOWED_TAGS: [
    'a', 'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote',
    'pre', 'code', 'em', 'strong', 'del', 's', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
  ],
  ALLOWED_ATTR: ['href', 'title', 'align', 'start'],
  // Every allowed attribute but these (and title) must match ALLOWED_URI_REGEXP.
  ADD_URI_SAFE_ATTR: ['align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?|mailto):/i,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

let purifier = null;

/** The page's own DOMPurify instance, with its link rules. */
function purify() {
  if (purifier) return purifier;
  purifier = DOMPurify(window);
  purifier.addHook('uponSanitizeAttribute', (node, data) => {
    // A marker that ended up inside an attribute (a link's address) is dropped, not kept.
    data.attrValue = data.attrValue.replace(new RegExp(MARKER.source, 'g'), '').replace(ENCODED_MARKER, '');
  });
  purifier.addHook('afterSanitizeAttributes', (node) => {
    if (node.nodeName !== 'A') return;
    if (!safeLinkUrl(node.getAttribute('href'))) {
      node.removeAttribute('href'); // the label stays, as text
      node.setAttribute('title', 'link removed: only http, https and mailto addresses are followed');
      return;
    }
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  });
  return purifier;
}

/** The reference to footnote `note` of the message `scope`: <sup class="ref"><a>[n]</a></sup>. */
export function citationRef(note, scope) {
  const sup = document.createElement('sup');
  sup.className = 'ref';
  const a = document.createElement('a');
  a.href = `#note-${scope}-${note.n}`;
  a.textContent = `[${note.n}]`;
  a.setAttribute('aria-label', `source ${note.n}`);
  sup.append(a);
  return sup;
}

/** The element that marks a cited span: a link to a url_citation's source (unless the span
 * sits inside a link already), else <mark>. */
function citeElement(note, inLink) {
  const href = note.type === 'url_citation' && !inLink ? safeUrl(note.url) : null;
  const node = document.createElement(href ? 'a' : 'mark');
  node.className = 'cite';
  if (href) {
    node.href = href;
    node.target = '_blank';
    node.rel = 'noopener noreferrer';
    node.title = note.title || href;
  } else {
    node.title = note.filename || note.title || '';
  }
  return node;
}

/** Puts the reference `ref` where `marker` is, or right after the link that holds the marker
 * (after the references already there): never a link inside a link. */
function placeRef(marker, ref) {
  const link = marker.parentElement && marker.parentElement.closest('a');
  if (!link) {
    marker.replaceWith(ref);
    return;
  }
  let at = link;
  while (at.nextSibling && at.nextSibling.nodeType === Node.ELEMENT_NODE && at.nextSibling.classList.contains('ref')) at = at.nextSibling;
  at.after(ref);
  marker.remove();
}

/**
 * Replaces the citation markers in `root` (sanitized, rendered Markdown) by the cited spans and
 * footnote references. A span whose start and end markers have one parent (the usual case: a
 * link, a URL or words in one paragraph, list item or cell) is wrapped whole; a url_citation
 * becomes one link to its source, and the links the model wrote inside it are unwrapped (no
 * nested links). A span across elements (start and end in different paragraphs) marks each
 * piece of text in between. The reference [n] goes where the span ends, or at a point (after
 * the link, when that place is inside one). A marker that Markdown swallowed (e.g. inside a
 * link's address) leaves its span unmarked; the footnotes still list every source.
 */
function placeCitations(root, cites, scope) {
  const found = new Map(); // marker code -> its own one-character text node
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n);
  for (let node of texts) {
    for (;;) {
      const i = node.data.search(MARKER);
      if (i < 0) break;
      if (i > 0) node = node.splitText(i);
      const rest = node.data.length > 1 ? node.splitText(1) : null;
      const code = node.data.charCodeAt(0);
      if (found.has(code)) node.remove();
      else found.set(code, node);
      if (!rest) break;
      node = rest;
    }
  }
  for (const c of cites) {
    const ref = citationRef(c.note, scope);
    if (!c.span) {
      const point = found.get(MARK_POINT + c.k);
      if (point) placeRef(point, ref);
      continue;
    }
    const start = found.get(MARK_START + c.k);
    const end = found.get(MARK_END + c.k);
    if (start && end && start.parentNode === end.parentNode) {
      const inLink = !!(start.parentElement && start.parentElement.closest('a'));
      const cite = citeElement(c.note, inLink);
      for (let n = start.nextSibling; n && n !== end;) {
        const next = n.nextSibling;
        cite.append(n);
        n = next;
      }
      if (cite.nodeName === 'A') for (const a of cite.querySelectorAll('a')) a.replaceWith(...a.childNodes);
      start.replaceWith(cite);
      placeRef(end, ref);
    } else if (start && end && start.compareDocumentPosition(end) & Node.DOCUMENT_POSITION_FOLLOWING) {
      const pieces = [];
      walker.currentNode = start;
      for (let n = walker.nextNode(); n && n !== end; n = walker.nextNode()) if (/\S/.test(n.data)) pieces.push(n);
      for (const piece of pieces) {
        const mark = citeElement(c.note, true);
        piece.replaceWith(mark);
        mark.append(piece);
      }
      start.remove();
      placeRef(end, ref);
    } else if (end || start) {
      placeRef(end || start, ref);
    }
  }
  for (const n of found.values()) n.remove(); // markers not placed (already replaced ones are detached)
}

/**
 * An answer rendered: `text` as sanitized Markdown with its annotations' spans marked, in a
 * fragment, and the footnotes. `scope` keeps the footnote ids of messages apart.
 */
export function renderMarkdown(text, annotations, scope) {
  const { source, cites, notes } = markCitations(text, annotations);
  const clean = purify().sanitize(markdownHtml(source), PURIFY_CONFIG);
  const holder = document.createElement('div'); // nodes of this document from here on
  holder.append(clean);
  placeCitations(holder, cites, scope);
  // The newlines that marked writes between blocks are no text of the answer.
  for (const n of [...holder.childNodes]) if (n.nodeType === Node.TEXT_NODE && !/\S/.test(n.data)) n.remove();
  const fragment = document.createDocumentFragment();
  fragment.append(...holder.childNodes);
  return { fragment, notes };
}
