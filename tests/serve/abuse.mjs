// Hostile requests against ft serve (tests/e2e/test_serve_abuse.sh runs it):
// N bodies, each a seed below with up to three random bytes changed,
// POSTed to a random endpoint over keep-alive connections. Every answer
// must be a 2xx or 4xx with a JSON body (an error object for a 4xx), never
// a 5xx or a dropped connection. argv: URL N SEED
import http from 'node:http';

const [url, nArg, seedArg] = process.argv.slice(2);
const n = Number(nArg);
let state = Number(seedArg) >>> 0 || 1;
const rnd = () => { // xorshift32: the same run for the same seed
  state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0;
  return state / 4294967296;
};
const pick = (a) => a[Math.floor(rnd() * a.length)];
const seeds = [
  '{', '[]', 'null', '{"messages":5}', '{"messages":[{"role":1}]}', '{"messages":[{}]}',
  '{"messages":[{"role":"user","content":"x"}],"temperature":-1}', '{"x":"\\ud800"}',
  '{"messages":[{"role":"user","content":"x"}],"n":3}', '\xff\xfe\x00', '{"a":'.repeat(70),
  '{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}',
  '{"input":[{"type":"function_call"}]}', '{"prompt":[1e99]}', '{"tokens":[1,2,"x"]}',
  '{"messages":[{"role":"user","content":"x"}],"max_tokens":2}',
  '{"max_tokens":2,"messages":[{"role":"user","content":"x"}]}',
  '{"input":"x","max_output_tokens":2}', '{"prompt":"x","max_tokens":2}',
].map((s) => Buffer.from(s, 'latin1'));
const paths = ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/completions',
               '/v1/messages/count_tokens', '/v1/responses/input_tokens', '/tokenize', '/detokenize',
               '/apply-template', '/nope%ff'];
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const { hostname, port } = new URL(url);

function post(path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname, port, path, method: 'POST', agent,
                               headers: { 'Content-Length': body.length } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const counts = {};
for (let i = 0; i < n; i++) {
  const body = Buffer.from(pick(seeds));
  if (rnd() < 0.6) for (let k = Math.floor(rnd() * 3) + 1; k > 0; k--) body[Math.floor(rnd() * body.length)] = Math.floor(rnd() * 256);
  const path = pick(paths);
  const r = await post(path, body);
  counts[r.status] = (counts[r.status] || 0) + 1;
  let j;
  try { j = JSON.parse(r.body); } catch { throw new Error(`${path}: not JSON (${r.status}): ${r.body.slice(0, 200)}`); }
  if (r.status >= 500 || (r.status >= 400 && !(j.error || j.type === 'error')))
    throw new Error(`${path} ${JSON.stringify(body.toString('latin1'))}: ${r.status} ${r.body.slice(0, 200)}`);
}
agent.destroy();
console.log(`${n} hostile requests: ${JSON.stringify(counts)}`);
