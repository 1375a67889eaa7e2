// The chat page of ft serve (served at /; runtime/serve/srv_page.c).
// Streams POST /v1/chat/completions (SSE read with fetch and a
// ReadableStream), shows reasoning_content apart in a collapsible block,
// and under each reply its tokens, tok/s, time to first token and the
// prompt tokens the server reused (usage.prompt_tokens_details.cached_tokens).
// No external resources: the server's Content-Security-Policy allows only
// this origin. ?q=TEXT sends TEXT once the page has loaded (the headless
// Chromium test uses it).
'use strict';

const $ = (id) => document.getElementById(id);
const convo = []; // the conversation sent with each request: {role, content}
let running = null; // the AbortController of the request in flight
let epoch = 0; // counts "New chat": a reply that ends after one is not kept

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function addMessage(role, text) {
  const m = el('div', 'msg ' + role);
  m.append(el('div', 'role', role === 'user' ? 'You' : role === 'assistant' ? 'Model' : 'Error'));
  const body = el('div', 'text', text || '');
  m.append(body);
  $('log').append(m);
  m.scrollIntoView({block: 'end'});
  return {m, body};
}

function setRunning(on) {
  document.body.dataset.state = on ? 'running' : 'idle';
  $('send').disabled = on;
  $('stop').disabled = !on;
}

function fmt(x, digits) {
  return Number.isFinite(x) ? x.toFixed(digits) : '?';
}

// Reads the SSE stream of a chat completion, calling onData with each
// parsed "data:" payload (comments such as keepalives are skipped).
async function readEvents(res, onData) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let lastYield = performance.now();
  for (;;) {
    // While frames are queued, read() resolves at once, again and again:
    // give the browser a turn every frame's time so that it paints and
    // the Stop button works however fast the server is.
    if (performance.now() - lastYield > 16) {
      await (globalThis.scheduler && scheduler.yield ? scheduler.yield()
        : new Promise((r) => setTimeout(r, 0)));
      lastYield = performance.now();
    }
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + (buf[cut] === '\r' ? 4 : 2));
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(l[5] === ' ' ? 6 : 5)).join('\n');
      if (!data) continue;
      if (data === '[DONE]') return;
      onData(JSON.parse(data));
    }
  }
}

async function send(text) {
  if (running || !text.trim()) return;
  convo.push({role: 'user', content: text});
  addMessage('user', text);
  const reply = addMessage('assistant', '');
  reply.m.dataset.state = 'running';
  const details = el('details', 'reasoning');
  details.append(el('summary', null, 'Reasoning'));
  const reasoning = el('div', 'reasoning-text');
  details.append(reasoning);
  details.hidden = true;
  reply.m.insertBefore(details, reply.body);
  const stats = el('div', 'stats');
  reply.m.append(stats);

  const ac = new AbortController();
  running = ac;
  const myEpoch = epoch;
  setRunning(true);
  const headers = {'Content-Type': 'application/json'};
  const key = $('key').value.trim();
  if (key) headers.Authorization = 'Bearer ' + key;
  const req = {
    model: $('model').textContent || 'freetoken',
    messages: convo.slice(),
    stream: true,
    stream_options: {include_usage: true},
  };
  const maxTokens = parseInt($('max-tokens').value, 10);
  if (maxTokens > 0) req.max_tokens = maxTokens;
  const temperature = parseFloat($('temperature').value);
  if (Number.isFinite(temperature)) req.temperature = temperature;

  const t0 = performance.now();
  let tFirst = 0, tLast = 0, usage = null, content = '', finish = '', deltas = 0, scrolling = false;
  let outcome = 'done';
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers, body: JSON.stringify(req), signal: ac.signal,
    });
    if (!res.ok) {
      let msg = res.status + ' ' + res.statusText;
      try { msg = (await res.json()).error.message || msg; } catch (e) { /* not JSON */ }
      if (res.status === 401) msg += ' (enter the server\'s API key above)';
      throw new Error(msg);
    }
    await readEvents(res, (ev) => {
      if (ev.error) throw new Error(ev.error.message || 'server error');
      if (ev.usage) usage = ev.usage;
      const choice = ev.choices && ev.choices[0];
      if (!choice) return;
      if (choice.finish_reason) finish = choice.finish_reason;
      const d = choice.delta || {};
      // appended as text nodes: a long reply costs no more per delta
      if (d.reasoning_content) {
        details.hidden = false;
        reasoning.append(d.reasoning_content);
      }
      if (d.content) {
        content += d.content;
        reply.body.append(d.content);
      }
      if (d.reasoning_content || d.content) {
        tLast = performance.now();
        if (!tFirst) tFirst = tLast;
        deltas++;
        if (!scrolling) {
          scrolling = true;
          requestAnimationFrame(() => { scrolling = false; reply.m.scrollIntoView({block: 'end'}); });
        }
      }
    });
  } catch (e) {
    if (e.name === 'AbortError') {
      outcome = 'stopped';
    } else {
      ac.abort(); // the connection closes: the server stops generating
      outcome = 'error';
      reply.m.classList.add('error');
      reply.body.textContent = content + (content ? '\n' : '') + 'Error: ' + e.message;
    }
  }
  running = null;
  setRunning(false);
  // The reply stays in the conversation (a stopped one as far as it got);
  // reasoning is not sent back, as the chat templates drop it from earlier turns.
  if (myEpoch === epoch) {
    if (outcome !== 'error') convo.push({role: 'assistant', content});
    else convo.pop();
  }
  const parts = [];
  const n = usage ? usage.completion_tokens : deltas;
  parts.push(n + ' tokens');
  if (tFirst) {
    parts.push('TTFT ' + fmt((tFirst - t0) / 1000, 2) + ' s');
    // Decode speed from the first delta to the last; a reply that came too
    // fast to time token by token (the browser hands over many SSE frames
    // at once) counts from the request instead.
    const span = tLast - tFirst;
    const rate = n > 1 && span >= 50 ? (n - 1) / (span / 1000) : n / ((tLast - t0) / 1000);
    parts.push(fmt(rate, 1) + ' tok/s');
  }
  if (usage) {
    const cached = (usage.prompt_tokens_details || {}).cached_tokens || 0;
    parts.push('prompt ' + usage.prompt_tokens + ', cached ' + cached);
  }
  if (outcome === 'stopped') parts.push('stopped');
  else if (finish) parts.push('finish: ' + finish);
  stats.textContent = parts.join(' · ');
  reply.m.dataset.state = outcome;
  document.body.dataset.replies = String(document.querySelectorAll('.msg.assistant').length);
}

function init() {
  const stored = sessionStorage.getItem('ft-key');
  if (stored) $('key').value = stored;
  $('key').addEventListener('change', () => sessionStorage.setItem('ft-key', $('key').value));
  $('form').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('input').value;
    $('input').value = '';
    send(text);
  });
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('form').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => { if (running) running.abort(); });
  $('clear').addEventListener('click', () => {
    if (running) running.abort();
    epoch++;
    convo.length = 0;
    $('log').replaceChildren();
  });
  // The model's id (GET /v1/models; needs the key when the server has one).
  const loadModel = () => {
    const headers = {};
    if ($('key').value) headers.Authorization = 'Bearer ' + $('key').value.trim();
    fetch('/v1/models', {headers}).then((r) => r.ok ? r.json() : null).then((j) => {
      if (j && j.data && j.data[0]) $('model').textContent = j.data[0].id;
    }).catch(() => {});
  };
  $('key').addEventListener('change', loadModel);
  loadModel();
  const q = new URLSearchParams(location.search).get('q');
  if (q) send(q);
}

init();
