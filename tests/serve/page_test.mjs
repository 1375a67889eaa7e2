// The chat page (GET /) in headless Chromium, driven over the DevTools
// protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, each
// message JSON and a NUL), with node's built-ins only.
// tests/e2e/test_serve_page_chromium.sh runs it against ft serve --script
// with an API key; the replies: a reasoning block and a short answer, then
// a long answer (stopped from the page).
// argv: CHROMIUM URL KEY PROFILE_DIR SCREENSHOT_PNG
// Every check throws on failure; the exit code says whether all passed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const [chromium, url, key, profile, shot] = process.argv.slice(2);
const browser = spawn(chromium, [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
  '--disable-dev-shm-usage', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
  '--window-size=1000,760', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
browser.stderr.on('data', (d) => { stderr += d; });
const toBrowser = browser.stdio[3], fromBrowser = browser.stdio[4];
toBrowser.on('error', () => {}); // a browser that died: its stderr says why

let nextId = 1;
const pending = new Map();
const waiters = []; // {method, resolve}: the next event of that method
const problems = []; // CSP violations, script errors, console errors
function onEvent(msg) {
  const p = msg.params || {};
  if (msg.method === 'Runtime.exceptionThrown') problems.push(JSON.stringify(p.exceptionDetails).slice(0, 300));
  if (msg.method === 'Log.entryAdded' && p.entry.level === 'error' && !/401/.test(p.entry.text))
    problems.push(`${p.entry.source}: ${p.entry.text}`);
}
let inbuf = '';
fromBrowser.on('data', (chunk) => {
  inbuf += chunk.toString('utf8');
  let end;
  while ((end = inbuf.indexOf('\0')) >= 0) {
    const msg = JSON.parse(inbuf.slice(0, end));
    inbuf = inbuf.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject, method } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
      else resolve(msg.result);
    } else if (msg.method) {
      onEvent(msg);
      const i = waiters.findIndex((w) => w.method === msg.method);
      if (i >= 0) waiters.splice(i, 1)[0].resolve(msg.params);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  toBrowser.write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}
const nextEvent = (method) => new Promise((resolve) => waiters.push({ method, resolve }));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let session;
const page = (method, params) => send(method, params, session);
async function evaluate(expr) {
  const r = await page('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true });
  if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text}`);
  return r.result.value;
}
async function until(what, expr, ms = 30000) {
  const t0 = Date.now();
  for (;;) {
    const v = await evaluate(expr);
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
// Types text into the element with that id, as keystrokes would.
async function type(id, text) {
  await evaluate(`document.getElementById(${JSON.stringify(id)}).focus()`);
  await page('Input.insertText', { text });
}
async function pressEnter() {
  const k = { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13 };
  await page('Input.dispatchKeyEvent', { type: 'keyDown', text: '\r', ...k });
  await page('Input.dispatchKeyEvent', { type: 'keyUp', ...k });
}
// The n-th assistant message (0-based) once it has finished.
async function reply(n) {
  await until(`reply ${n}`, `(() => { const m = document.querySelectorAll('.msg.assistant')[${n}];
    return m && m.dataset.state !== 'running'; })()`);
  return evaluate(`(() => { const m = document.querySelectorAll('.msg.assistant')[${n}];
    const d = m.querySelector('details.reasoning');
    return { state: m.dataset.state, text: m.querySelector('.text').textContent,
             reasoning: d.querySelector('.reasoning-text').textContent, reasoningShown: !d.hidden,
             open: d.open, stats: m.querySelector('.stats').textContent }; })()`);
}
async function stats() {
  const r = await fetch(`${url}/v1/stats`, { headers: { Authorization: `Bearer ${key}` } });
  return (await r.json()).requests;
}

let n = 0;
async function check(name, fn) {
  await fn();
  n++;
  console.log(`ok ${n} - ${name}`);
}

try {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  ({ sessionId: session } = await send('Target.attachToTarget', { targetId, flatten: true }));
  await page('Page.enable');
  await page('Runtime.enable');
  await page('Log.enable');

  await check('the page loads, its script runs', async () => {
    const loaded = nextEvent('Page.loadEventFired');
    await page('Page.navigate', { url: `${url}/` });
    await loaded;
    await until('the script', `document.body.dataset.state === 'idle' && !document.getElementById('send').disabled`);
    assert.equal(await evaluate('document.title'), 'freetoken chat');
    assert.equal(await evaluate(`getComputedStyle(document.querySelector('header')).display`), 'flex',
      'chat.css is applied');
  });

  await check('without the key: the 401 shows as an error naming the key', async () => {
    await type('input', 'Hi there');
    await pressEnter();
    const r = await reply(0);
    assert.equal(r.state, 'error');
    assert.match(r.text, /invalid API key.*enter the server's API key/s);
  });

  await check('with the key typed in: the reply streams, reasoning apart, stats under it', async () => {
    await type('key', key);
    await type('input', 'Hi there');
    await pressEnter();
    const r = await reply(1);
    assert.equal(r.state, 'done', JSON.stringify(r));
    assert.equal(r.text, 'Hello from the chat page! Streaming works.');
    assert.equal(r.reasoning.trim(), 'The user says hello; a friendly answer will do.');
    assert.ok(r.reasoningShown && !r.open, 'the reasoning block is shown, collapsed');
    assert.match(r.stats, /^\d+ tokens · TTFT [0-9.]+ s · [0-9.]+ tok\/s · prompt \d+, cached \d+ · finish: stop$/, r.stats);
    console.log(`  stats: ${r.stats}`);
  });

  await check('the stop button aborts the stream; the server cancels the request', async () => {
    const before = await stats();
    // About 30000 scripted tokens: --script evaluates them with the prompt
    // in one prefill (seconds), during which the page stops the request.
    await evaluate(`document.getElementById('max-tokens').value = '30000'`);
    await type('input', 'Tell me a long story');
    await pressEnter();
    const t0 = Date.now();
    while ((await stats()).active === 0) {
      if (Date.now() - t0 > 10000) throw new Error('the request did not reach the server');
      await sleep(20);
    }
    await evaluate(`document.getElementById('stop').click()`);
    const r = await reply(2);
    assert.equal(r.state, 'stopped', JSON.stringify(r).slice(0, 300));
    assert.match(r.stats, /stopped$/);
    let after;
    while ((after = await stats()).cancelled === before.cancelled && Date.now() - t0 < 15000) await sleep(50);
    assert.equal(after.cancelled, before.cancelled + 1, JSON.stringify(after));
    assert.equal(after.active, 0, JSON.stringify(after));
    console.log(`  cancelled on the server ${Date.now() - t0} ms after the send`);
  });

  await check('multi-turn: the next request sends the history and reuses its prefix', async () => {
    await type('input', 'And again');
    await pressEnter();
    const r = await reply(3);
    assert.equal(r.state, 'done', JSON.stringify(r));
    assert.equal(r.text, 'Hello from the chat page! Streaming works.');
    const m = r.stats.match(/prompt (\d+), cached (\d+)/);
    assert.ok(m, r.stats);
    assert.ok(+m[1] > 30 && +m[2] > 0, `a later turn is longer and reuses the earlier ones: ${r.stats}`);
    console.log(`  stats: ${r.stats}`);
    assert.equal(await evaluate(`document.querySelectorAll('.msg.user').length`), 4);
  });

  await check('no CSP violation, script error or failed load', async () => {
    assert.deepEqual(problems, []);
  });

  await check('screenshot', async () => {
    await evaluate(`document.querySelector('details.reasoning:not([hidden])').open = true`);
    const { data } = await page('Page.captureScreenshot', { format: 'png' });
    writeFileSync(shot, Buffer.from(data, 'base64'));
    console.log(`  screenshot: ${shot}`);
  });
} catch (e) {
  console.error(`FAIL after ${n} checks: ${e.stack || e}`);
  if (stderr) console.error(`chromium stderr (tail): ${stderr.slice(-2000)}`);
  process.exitCode = 1;
}
// Chromium gone before we exit (its profile folder is the test's to delete).
const exited = new Promise((r) => browser.once('exit', r));
send('Browser.close').catch(() => {});
if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]) === false) {
  browser.kill('SIGKILL');
  await exited;
}
process.exit(process.exitCode || 0);
