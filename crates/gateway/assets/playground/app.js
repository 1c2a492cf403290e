// The playground page's entry point (index.html loads it as a module): wires the form, the
// settings and the buttons to the conversation (conversation.js), and loads the models, the
// gateway's configured tools and the vector stores. Talks only to this gateway's public API
// with relative URLs (works behind a path prefix).

import { $, announce } from './dom.js';
import { saveKey } from './api.js';
import { refreshToolChoice, loadModels, loadTools, loadVectorStores } from './settings.js';
import { mcpProblemCleared } from './mcp.js';
import { send, stop, newConversation } from './conversation.js';

function init() {
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    delete document.body.dataset.idle;
    send();
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  // Enter toggles a tool switch too (Space does natively).
  for (const box of document.querySelectorAll('input[type=checkbox]')) {
    box.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        box.click();
      }
    });
    box.addEventListener('change', refreshToolChoice);
  }
  $('vector-store').addEventListener('change', refreshToolChoice);
  for (const id of ['mcp-url', 'mcp-label']) $(id).addEventListener('input', mcpProblemCleared);
  $('tool-mcp').addEventListener('change', mcpProblemCleared);
  $('stop').addEventListener('click', stop);
  $('new-chat').addEventListener('click', newConversation);
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('api-key').value.trim();
    if (!key) return;
    saveKey(key);
    $('api-key').value = '';
    $('key-form').hidden = true;
    announce('API key set for this tab.');
    Promise.all([loadModels(), loadTools().then(loadVectorStores)]).finally(refreshToolChoice);
    $('prompt').focus();
  });
  if (window.matchMedia('(max-width: 640px)').matches) $('settings').open = false;
  refreshToolChoice();
  Promise.all([loadModels(), loadTools().then(loadVectorStores)]).finally(() => {
    refreshToolChoice();
    document.body.dataset.ready = 'true';
  });
}

init();
