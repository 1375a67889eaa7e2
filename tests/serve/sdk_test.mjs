// ft serve against the real SDKs (tests/e2e/test_serve_sdk.sh runs it).
// argv: PLAIN_URL SCRIPTED_URL KEY
//   PLAIN_URL    a server sampling for real, requiring KEY
//   SCRIPTED_URL a server started with --script (replies: a reasoning block
//                and a tool call to "ls", then a text answer), no key
// Every check throws on failure; the exit code says whether all passed.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [plainUrl, scriptedUrl, key] = process.argv.slice(2);
const oai = new OpenAI({ baseURL: `${plainUrl}/v1`, apiKey: key, maxRetries: 0 });
const ant = new Anthropic({ baseURL: plainUrl, apiKey: key, maxRetries: 0 });
const oaiScripted = new OpenAI({ baseURL: `${scriptedUrl}/v1`, apiKey: 'dummy', maxRetries: 0 });
const antScripted = new Anthropic({ baseURL: scriptedUrl, apiKey: 'dummy', maxRetries: 0 });

let n = 0;
async function check(name, fn) {
  await fn();
  n++;
  console.log(`ok ${n} - ${name}`);
}

const hello = [{ role: 'user', content: 'Hello there' }];
const tools = [{
  type: 'function',
  function: {
    name: 'ls', description: 'List a directory',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
}];

await check('models.list', async () => {
  const page = await oai.models.list();
  assert.equal(page.data.length, 1);
  assert.equal(page.data[0].object, 'model');
});

let greedy;
await check('chat.completions.create, greedy, reproducible', async () => {
  const a = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 12, temperature: 0 });
  const b = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 12, temperature: 0 });
  assert.equal(a.object, 'chat.completion');
  assert.equal(a.model, 'ft');
  assert.equal(a.choices[0].message.role, 'assistant');
  assert.ok(['length', 'stop'].includes(a.choices[0].finish_reason));
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.ok(a.usage.prompt_tokens > 0);
  // the second one restores the first one's prefix from the cache (up to the anchor at the
  // end of the user message: the engine computes at least the last two tokens again)
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens < b.usage.prompt_tokens);
  assert.ok(a.usage.completion_tokens >= 1 && a.usage.completion_tokens <= 12);
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
  greedy = a;
});

await check('chat.completions stream: same text as the whole reply, usage chunk, [DONE]', async () => {
  const stream = await oai.chat.completions.create({
    model: 'ft', messages: hello, max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', usage = null, finish = null, role = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, greedy.choices[0].message.content ?? '');
  assert.equal(finish, greedy.choices[0].finish_reason);
  assert.deepEqual(usage.completion_tokens, greedy.usage.completion_tokens);
});

await check('chat.completions.stream helper: finalChatCompletion', async () => {
  const runner = oai.chat.completions.stream({ model: 'ft', messages: hello, max_tokens: 12, temperature: 0 });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content ?? '', greedy.choices[0].message.content ?? '');
});

await check('completions.create and its stream agree', async () => {
  const whole = await oai.completions.create({ model: 'ft', prompt: 'The quick brown fox', max_tokens: 10,
                                               temperature: 0, logprobs: 2 });
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.choices[0].logprobs.tokens.length, whole.usage.completion_tokens);
  const stream = await oai.completions.create({ model: 'ft', prompt: 'The quick brown fox', max_tokens: 10,
                                                temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) for (const c of chunk.choices) text += c.text;
  assert.equal(text, whole.choices[0].text);
});

await check('seeded sampling is reproducible', async () => {
  const req = { model: 'ft', messages: hello, max_tokens: 16, temperature: 1, top_p: 0.9, seed: 42,
                presence_penalty: 0.5, frequency_penalty: 0.5 };
  const a = await oai.chat.completions.create(req);
  const b = await oai.chat.completions.create(req);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

await check('logprobs and top_logprobs', async () => {
  const r = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 6, temperature: 0,
                                                logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens);
  for (const t of lp) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].logprob, t.logprob); // greedy takes the most likely
    assert.ok(Array.isArray(t.bytes));
  }
});

await check('logit_bias -100 bans the greedy first token', async () => {
  const r = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 1, temperature: 0,
                                                logprobs: true });
  const first = r.choices[0].logprobs.content[0];
  // the API gives no ids: ban the vocabulary 100 ids at a time until the greedy token changes
  let changed = false;
  for (let id = 0; id < 600 && !changed; id += 100) {
    const bias = {};
    for (let k = id; k < id + 100; k++) bias[k] = -100;
    const b = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 1, temperature: 0,
                                                  logprobs: true, logit_bias: bias });
    if (b.choices[0].logprobs.content[0].token !== first.token) changed = true;
  }
  assert.ok(changed, 'banning the vocabulary in blocks never changed the greedy token');
});

await check('stop strings end the content before them', async () => {
  const text = greedy.choices[0].message.content ?? '';
  if ([...text].length < 4) return; // nothing to cut
  const stop = [...text].slice(2, 4).join('');
  const r = await oai.chat.completions.create({ model: 'ft', messages: hello, max_tokens: 12, temperature: 0, stop: [stop] });
  assert.equal(r.choices[0].message.content, text.slice(0, text.indexOf(stop)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

await check('OpenAI errors: bad field type, out of range, context length, auth', async () => {
  await assert.rejects(oai.chat.completions.create({ model: 'ft', messages: hello, temperature: 7 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature');
  await assert.rejects(oai.chat.completions.create({ model: 'ft', messages: 'hi' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
  await assert.rejects(oai.chat.completions.create({ model: 'ft', messages: [{ role: 'user', content: 'word '.repeat(5000) }] }),
    (e) => e.status === 400 && e.code === 'context_length_exceeded' && /maximum context length is \d+ tokens/.test(e.message));
  const bad = new OpenAI({ baseURL: `${plainUrl}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: 'ft', messages: hello }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

await check('response_format json_schema: replies match the schema, streamed too; unsupported keywords a 400 naming the path', async () => {
  const schema = {
    type: 'object', additionalProperties: false, required: ['ok', 'n', 'color'],
    properties: { ok: { type: 'boolean' }, n: { type: 'integer' }, color: { enum: ['red', 'green'] } },
  };
  const response_format = { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema } };
  const messages = [{ role: 'user', content: 'Reply with a JSON object.' }];
  const matches = (text) => {
    const v = JSON.parse(text);
    assert.equal(typeof v.ok, 'boolean');
    assert.ok(Number.isInteger(v.n));
    assert.ok(['red', 'green'].includes(v.color));
    assert.deepEqual(Object.keys(v).sort(), ['color', 'n', 'ok']);
  };
  let stops = 0;
  for (let seed = 1; seed <= 6; seed++) {
    const r = await oai.chat.completions.create({ model: 'ft', messages, max_tokens: 96, temperature: 1, seed, response_format });
    if (r.choices[0].finish_reason !== 'stop') continue;
    matches(r.choices[0].message.content);
    stops++;
    // the same seed streamed: the same text
    const stream = await oai.chat.completions.create({ model: 'ft', messages, max_tokens: 96, temperature: 1, seed, response_format, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, r.choices[0].message.content);
  }
  assert.ok(stops > 0, 'no reply closed its object within 96 tokens');
  await assert.rejects(oai.chat.completions.create({
    model: 'ft', messages, response_format: { type: 'json_schema', json_schema: { name: 'a', schema: {
      type: 'object', properties: { a: { type: 'array', items: { anyOf: [{ type: 'string' }] } } } } } },
  }), (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
    e.param === 'response_format.json_schema.schema.properties.a.items.anyOf');
});

await check('OpenAI tools: streamed tool call with reasoning, then the tool result round trip', async () => {
  const runner = oaiScripted.chat.completions.stream({ model: 'ft', messages: [{ role: 'user', content: 'List the files' }], tools });
  const final = await runner.finalChatCompletion();
  const msg = final.choices[0].message;
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'ls');
  assert.deepEqual(JSON.parse(call.function.arguments), { path: '.' });
  assert.ok(call.id.startsWith('call_'));
  const r2 = await oaiScripted.chat.completions.create({
    model: 'ft', tools,
    messages: [
      { role: 'user', content: 'List the files' },
      { role: 'assistant', content: null, tool_calls: msg.tool_calls },
      { role: 'tool', tool_call_id: call.id, content: 'a.txt\nb.txt' },
    ],
  });
  assert.equal(r2.choices[0].finish_reason, 'stop');
  assert.equal(r2.choices[0].message.content, 'The directory has two files.');
});

await check('Anthropic messages.create', async () => {
  const m = await ant.messages.create({ model: 'ft', max_tokens: 8, temperature: 0,
                                        system: 'Be terse.', messages: [{ role: 'user', content: 'Hello there' }] });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens >= 1);
});

await check('Anthropic messages.stream: events in order, count_tokens agrees', async () => {
  const params = { model: 'ft', max_tokens: 8, temperature: 0,
                   system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=1; cch=abc;' },
                            { type: 'text', text: 'Be terse.', cache_control: { type: 'ephemeral' } }],
                   messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there' }] }] };
  const stream = ant.messages.stream(params);
  const seen = [];
  stream.on('streamEvent', (e) => seen.push(e.type));
  const m = await stream.finalMessage();
  assert.equal(seen[0], 'message_start');
  assert.equal(seen[seen.length - 1], 'message_stop');
  assert.equal(seen[seen.length - 2], 'message_delta');
  const count = await ant.messages.countTokens({ model: 'ft', system: params.system, messages: params.messages });
  // input_tokens are the ones evaluated; those reused from an earlier request are apart
  assert.equal(count.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
  // the billing header is dropped: the same count as without it
  const plain = await ant.messages.countTokens({ model: 'ft', system: 'Be terse.', messages: params.messages });
  assert.equal(plain.input_tokens, count.input_tokens);
});

await check('Anthropic errors: missing max_tokens, wrong key', async () => {
  await assert.rejects(ant.messages.create({ model: 'ft', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.status === 400 && e.error?.error?.type === 'invalid_request_error');
  const bad = new Anthropic({ baseURL: plainUrl, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.messages.create({ model: 'ft', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error');
});

const antTools = [{ name: 'ls', description: 'List a directory',
                    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }];

await check('Anthropic tools: thinking + tool_use streamed, then the tool_result round trip', async () => {
  const first = { role: 'user', content: 'List the files' };
  const stream = antScripted.messages.stream({ model: 'ft', max_tokens: 200, tools: antTools, messages: [first],
                                               thinking: { type: 'enabled', budget_tokens: 100 } });
  const m = await stream.finalMessage();
  assert.equal(m.stop_reason, 'tool_use');
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'tool_use']);
  assert.equal(m.content[0].thinking, 'I should list the files.');
  assert.ok(m.content[0].signature.length > 0);
  const use = m.content[1];
  assert.equal(use.name, 'ls');
  assert.deepEqual(use.input, { path: '.' });
  const m2 = await antScripted.messages.create({
    model: 'ft', max_tokens: 200, tools: antTools,
    messages: [first, { role: 'assistant', content: m.content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'a.txt\nb.txt' }] }],
  });
  assert.equal(m2.stop_reason, 'end_turn');
  assert.deepEqual(m2.content, [{ type: 'text', text: 'The directory has two files.' }]);
});

await check('Responses API: streamed reasoning + function call, then the function_call_output round trip', async () => {
  const rtools = [{ type: 'function', name: 'ls', description: 'List a directory',
                    parameters: { type: 'object', properties: { path: { type: 'string' } } } },
                  { type: 'web_search' }];
  const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files' }] }];
  const stream = oaiScripted.responses.stream({ model: 'ft', instructions: 'You are an agent.', input, tools: rtools });
  const types = [];
  stream.on('event', (e) => types.push(e.type));
  const r = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[types.length - 1], 'response.completed');
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'function_call']);
  assert.equal(r.output[0].content[0].text, 'I should list the files.');
  const call = r.output[1];
  assert.equal(call.name, 'ls');
  assert.deepEqual(JSON.parse(call.arguments), { path: '.' });
  for (const k of ['input_tokens', 'output_tokens', 'total_tokens']) assert.ok(Number.isInteger(r.usage[k]));
  assert.ok(Number.isInteger(r.usage.input_tokens_details.cached_tokens));
  assert.ok(Number.isInteger(r.usage.output_tokens_details.reasoning_tokens));
  const r2 = await oaiScripted.responses.create({
    model: 'ft', instructions: 'You are an agent.', tools: rtools,
    input: [...input, r.output[0], call, { type: 'function_call_output', call_id: call.call_id, output: 'a.txt\nb.txt' }],
  });
  assert.equal(r2.output_text, 'The directory has two files.');
  const count = await fetch(`${scriptedUrl}/v1/responses/input_tokens`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'ft', input: 'hi' }),
  }).then((x) => x.json());
  assert.equal(count.object, 'response.input_tokens');
  assert.ok(count.input_tokens > 0);
});

console.log(`all ${n} SDK checks passed`);
