// The official OpenAI and Anthropic SDKs (pinned in package.json) against the gateway (gateway_proxy)
// in front of the model stub: same-format and translated calls, streams with usage, and the error
// shapes each SDK raises. Usage: node proxy.mjs GATEWAY_PORT
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const port = process.argv[2];
const base = `http://127.0.0.1:${port}`;
const openai = new OpenAI({ apiKey: 'gvg_e2e_key', baseURL: `${base}/v1`, maxRetries: 0 });
const anthropic = new Anthropic({ apiKey: 'gvg_e2e_key', baseURL: base, maxRetries: 0 });

const WORDS = ['Govern', 'stub', 'reply', 'with', 'deterministic', 'words', 'and', 'exact', 'usage', 'for', 'every', 'test'];
const stubText = (n) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(' ');
const messages = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'say hello to me' },
]; // 6 input tokens

const tests = [];
const test = (name, fn) => tests.push([name, fn]);

async function chatStream(model, extra = {}, options = {}) {
  const stream = await openai.chat.completions.create(
    { model, messages, stream: true, stream_options: { include_usage: true }, ...extra }, options);
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage, finish };
}

test('openai chat through the gateway', async () => {
  const r = await openai.chat.completions.create({ model: 'gpt-stub', messages });
  assert.equal(r.choices[0].message.content, stubText(16));
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens], [6, 16]);
});

test('openai chat stream with usage', async () => {
  const { text, usage, finish } = await chatStream('gpt-stub');
  assert.equal(text, stubText(16));
  assert.equal(finish, 'stop');
  assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [6, 16]);
});

test('openai SDK on an anthropic-format route', async () => {
  const r = await openai.chat.completions.create({ model: 'claude-stub', messages, max_tokens: 10 });
  assert.equal(r.choices[0].message.content, stubText(10));
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens], [6, 10]);
  const s = await chatStream('claude-stub');
  assert.equal(s.text, stubText(16));
  assert.equal(s.finish, 'stop');
  assert.deepEqual([s.usage.prompt_tokens, s.usage.completion_tokens], [6, 16]);
});

test('anthropic messages and stream through the gateway', async () => {
  const r = await anthropic.messages.create({
    model: 'claude-stub', max_tokens: 100, system: 'be brief', messages: [{ role: 'user', content: 'say hello to me' }],
  });
  assert.equal(r.content[0].text, stubText(16));
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [6, 16]);
  const stream = anthropic.messages.stream({
    model: 'claude-stub', max_tokens: 10, messages: [{ role: 'user', content: 'say hello to me' }],
  });
  let text = '';
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, stubText(10));
  assert.equal(final.stop_reason, 'max_tokens');
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [4, 10]);
});

test('anthropic SDK on an openai-format route', async () => {
  const r = await anthropic.messages.create({
    model: 'gpt-stub', max_tokens: 100, system: 'be brief', messages: [{ role: 'user', content: 'say hello to me' }],
  });
  assert.equal(r.content[0].text, stubText(16));
  assert.equal(r.stop_reason, 'end_turn');
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [6, 16]);
  const stream = anthropic.messages.stream({
    model: 'gpt-stub', max_tokens: 10, messages: [{ role: 'user', content: 'say hello to me' }],
  });
  let text = '';
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, stubText(10));
  assert.equal(final.stop_reason, 'max_tokens');
  assert.equal(final.usage.output_tokens, 10);
});

// The Responses API and embeddings: OpenAI-format routes, relayed as they come and metered.
const weatherFn = {
  type: 'function', name: 'get_weather', strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
};

test('openai responses through the gateway, streamed and not, with a function tool', async () => {
  const r = await openai.responses.create({ model: 'gpt-stub', instructions: 'be brief', input: 'one two three' });
  assert.equal(r.output_text, stubText(16));
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [5, 16]);

  const raw = await openai.responses.create({ model: 'gpt-stub', input: 'one two three', stream: true });
  let text = '';
  let completed = null;
  for await (const e of raw) {
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed') completed = e.response;
  }
  assert.equal(text, stubText(16));
  assert.deepEqual([completed.usage.input_tokens, completed.usage.output_tokens], [3, 16]);

  const call = await openai.responses.create({ model: 'gpt-stub', input: 'weather?', tools: [weatherFn] });
  assert.equal(call.output[0].type, 'function_call');
  assert.deepEqual(JSON.parse(call.output[0].arguments), { city: 'stub', days: 1 });
  const streamed = await openai.responses.stream({ model: 'gpt-stub', input: 'weather?', tools: [weatherFn] }).finalResponse();
  assert.equal(streamed.output[0].name, 'get_weather');
  assert.deepEqual(JSON.parse(streamed.output[0].arguments), { city: 'stub', days: 1 });
  const answer = await openai.responses.create({
    model: 'gpt-stub', tools: [weatherFn],
    input: ['weather?', call.output[0], { type: 'function_call_output', call_id: call.output[0].call_id, output: 'sunny' }]
      .map((x) => (typeof x === 'string' ? { role: 'user', content: x } : x)),
  });
  assert.equal(answer.output_text, stubText(16));

  await assert.rejects(async () => {
    const s = await openai.responses.create({ model: 'gpt-stub', input: 'x', stream: true },
      { headers: { 'x-stub-cut-after': '6' } });
    for await (const _ of s) { /* drain */ }
  }, (e) => e instanceof OpenAI.APIError && /cut/.test(e.message));
});

test('openai responses on an anthropic-format route (translated), streamed and not', async () => {
  const r = await openai.responses.create({ model: 'claude-stub', instructions: 'be brief', input: 'one two three' });
  assert.equal(r.output_text, stubText(16));
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [5, 16]);
  const final = await openai.responses.stream({ model: 'claude-stub', input: 'weather?', tools: [weatherFn] }).finalResponse();
  assert.equal(final.output[0].type, 'function_call');
  assert.deepEqual(JSON.parse(final.output[0].arguments), { city: 'stub', days: 1 });
  const answer = await openai.responses.create({
    model: 'claude-stub', tools: [weatherFn],
    input: [{ role: 'user', content: 'weather?' }, final.output[0],
      { type: 'function_call_output', call_id: final.output[0].call_id, output: 'sunny' }],
  });
  assert.equal(answer.output_text, stubText(16));
});

test('openai embeddings through the gateway', async () => {
  const e = await openai.embeddings.create({ model: 'gpt-stub', input: ['a b', 'c'], dimensions: 8 });
  assert.equal(e.data.length, 2);
  assert.equal(e.data[0].embedding.length, 8);
  assert.equal(e.usage.prompt_tokens, 3);
  const one = await openai.embeddings.create({ model: 'gpt-stub', input: 'a b c', encoding_format: 'float' });
  assert.equal(one.usage.prompt_tokens, 3);
  await assert.rejects(openai.embeddings.create({ model: 'claude-stub', input: 'x' }),
    (e) => e instanceof OpenAI.BadRequestError && /embeddings/.test(e.message));
});

// gw-xlate: the Responses API and embeddings on Gemini and Bedrock deployments (the stub speaks both).
test('openai responses and embeddings on gemini and bedrock routes', async () => {
  for (const model of ['gemini-stub', 'bedrock-stub']) {
    const r = await openai.responses.create({ model, instructions: 'be brief', input: 'one two three' });
    assert.equal(r.output_text, stubText(16), model);
    assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [5, 16], model);
    const stream = await openai.responses.create({ model, input: 'one two three', stream: true });
    let text = '';
    let done = null;
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') done = ev.response;
    }
    assert.equal(text, stubText(16), model);
    assert.deepEqual([done.usage.input_tokens, done.usage.output_tokens], [3, 16], model);
    const call = await openai.responses.create({ model, input: 'weather?', tools: [weatherFn] });
    assert.equal(call.output[0].type, 'function_call', model);
    assert.deepEqual(JSON.parse(call.output[0].arguments), { city: 'stub', days: 1 }, model);
  }
  // The SDK asks for base64 by default and decodes it: the gateway encodes float32 little-endian.
  const g = await openai.embeddings.create({ model: 'gemini-embed-stub', input: ['a b', 'c'], dimensions: 8 });
  assert.equal(g.data.length, 2);
  assert.equal(g.data[1].embedding.length, 8);
  assert.ok(Math.abs(Math.hypot(...g.data[0].embedding) - 1) < 1e-5);  // the stub's unit vectors
  assert.equal(g.usage.prompt_tokens, 3);
  const t = await openai.embeddings.create({ model: 'titan-stub', input: ['a b', 'c'], dimensions: 256, encoding_format: 'float' });
  assert.equal(t.data.length, 2);
  assert.equal(t.data[0].embedding.length, 256);
  assert.equal(t.usage.prompt_tokens, 3);
});

test('models list', async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['gpt-stub', 'claude-stub', 'gemini-stub', 'gemini-embed-stub', 'bedrock-stub', 'titan-stub']);
});

test('bad key 401 and unknown model 404', async () => {
  const bad = new OpenAI({ apiKey: 'gvg_wrong', baseURL: `${base}/v1`, maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: 'gpt-stub', messages }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const badA = new Anthropic({ apiKey: 'gvg_wrong', baseURL: base, maxRetries: 0 });
  await assert.rejects(badA.messages.create({ model: 'claude-stub', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error');
  await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages }),
    (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(anthropic.messages.create({ model: 'no-such-model', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.error?.error?.type === 'not_found_error');
});

test('upstream 5xx and a cut stream', async () => {
  await assert.rejects(
    openai.chat.completions.create({ model: 'gpt-stub', messages }, { headers: { 'x-stub-status': '500' } }),
    (e) => e instanceof OpenAI.InternalServerError && e.status === 502);
  await assert.rejects(
    anthropic.messages.create({ model: 'claude-stub', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'x-stub-status': '529' } }),
    (e) => e instanceof Anthropic.InternalServerError && e.status === 502 && e.error?.error?.type === 'api_error');
  await assert.rejects(chatStream('gpt-stub', {}, { headers: { 'x-stub-cut-after': '3' } }),
    (e) => e instanceof OpenAI.APIError && /cut/.test(e.message));
  await assert.rejects(async () => {
    const s = anthropic.messages.stream({ model: 'claude-stub', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'x-stub-cut-after': '3' } });
    await s.finalMessage();
  }, (e) => /cut/.test(String(e.message)));
  await assert.rejects(chatStream('claude-stub', {}, { headers: { 'x-stub-error-after': '3' } }),
    (e) => e instanceof OpenAI.APIError);
});

test('rate limit 429', async () => {
  const limited = new OpenAI({ apiKey: 'gvg_e2e_limited', baseURL: `${base}/v1`, maxRetries: 0 });
  await limited.chat.completions.create({ model: 'gpt-stub', messages });
  await limited.chat.completions.create({ model: 'gpt-stub', messages });
  await assert.rejects(limited.chat.completions.create({ model: 'gpt-stub', messages }),
    (e) => e instanceof OpenAI.RateLimitError && e.status === 429);
  const limitedA = new Anthropic({ apiKey: 'gvg_e2e_limited', baseURL: base, maxRetries: 0 });
  await assert.rejects(limitedA.messages.create({ model: 'claude-stub', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.RateLimitError && e.error?.error?.type === 'rate_limit_error');
});

let passed = 0;
let failed = 0;
for (const [name, fn] of tests) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}\n  ${e?.stack ?? e}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
