// The official OpenAI and Anthropic SDKs (pinned in package.json) against the model stub: every call
// an agent makes through them must work unchanged, with exact text and usage. Usage: node sdk.mjs PORT
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const port = process.argv[2];
const openai = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });

// The stub's deterministic answer (src/services/model_stub/stub.h).
const WORDS = ['Govern', 'stub', 'reply', 'with', 'deterministic', 'words', 'and', 'exact', 'usage', 'for', 'every', 'test'];
const stubText = (n) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]).join(' ');
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather by city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
  },
};
const messages = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'say hello to me' },
]; // 6 input tokens

const tests = [];
const test = (name, fn) => tests.push([name, fn]);

test('openai chat', async () => {
  const r = await openai.chat.completions.create({ model: 'stub-gpt', messages });
  assert.equal(r.choices[0].message.content, stubText(16));
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens], [6, 16, 22]);
});

test('openai chat max_tokens and cached tokens', async () => {
  const r = await openai.chat.completions.create(
    { model: 'stub-gpt', messages, max_completion_tokens: 4 },
    { headers: { 'x-stub-cached-tokens': '5' } },
  );
  assert.equal(r.choices[0].message.content, stubText(4));
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, 5);
});

test('openai chat stream with include_usage', async () => {
  const stream = await openai.chat.completions.create({
    model: 'stub-gpt', messages, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, stubText(16));
  assert.equal(finish, 'stop');
  assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [6, 16]);
});

test('openai chat stream helper: final completion', async () => {
  const stream = openai.chat.completions.stream({
    model: 'stub-gpt', messages, stream_options: { include_usage: true },
  }, { headers: { 'x-stub-output-tokens': '30' } });
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].message.content, stubText(30));
  assert.equal(final.usage.completion_tokens, 30);
});

test('openai tools: call, streamed call, and the answer to its result', async () => {
  const r = await openai.chat.completions.create({ model: 'stub-gpt', messages, tools: [weatherTool] });
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'stub', days: 1 });

  const stream = openai.chat.completions.stream({
    model: 'stub-gpt', messages, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const final = await stream.finalChatCompletion();
  const streamed = final.choices[0].message.tool_calls[0];
  assert.match(streamed.id, /^call_stub[0-9a-f]{16}$/);
  assert.deepEqual(JSON.parse(streamed.function.arguments), { city: 'stub', days: 1 });

  const answer = await openai.chat.completions.create({
    model: 'stub-gpt',
    tools: [weatherTool],
    messages: [...messages, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
  });
  assert.equal(answer.choices[0].message.content, stubText(16));
  assert.equal(answer.usage.prompt_tokens, 6 + 1 + 1); // + the arguments (one word) + "sunny"
});

test('openai responses', async () => {
  const r = await openai.responses.create({ model: 'stub-gpt', instructions: 'be brief', input: 'one two three' });
  assert.equal(r.output_text, stubText(16));
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens], [5, 16, 21]);
});

test('openai responses stream', async () => {
  const raw = await openai.responses.create({ model: 'stub-gpt', input: 'one two three', stream: true });
  let text = '';
  let completed = null;
  for await (const e of raw) {
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed') completed = e.response;
  }
  assert.equal(text, stubText(16));
  assert.equal(completed.usage.output_tokens, 16);

  const helper = openai.responses.stream({ model: 'stub-gpt', input: [{ role: 'user', content: 'one two' }] });
  const final = await helper.finalResponse();
  assert.equal(final.output_text, stubText(16));
  assert.equal(final.usage.input_tokens, 2);
});

test('openai responses function call', async () => {
  const r = await openai.responses.create({
    model: 'stub-gpt', input: 'weather?',
    tools: [{ type: 'function', name: 'get_weather', parameters: weatherTool.function.parameters, strict: false }],
  });
  const call = r.output[0];
  assert.equal(call.type, 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'stub', days: 1 });
  const next = await openai.responses.create({
    model: 'stub-gpt',
    tools: [{ type: 'function', name: 'get_weather', parameters: weatherTool.function.parameters, strict: false }],
    input: [{ role: 'user', content: 'weather?' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
  });
  assert.equal(next.output_text, stubText(16));
});

test('openai embeddings (base64 by default, and float)', async () => {
  const b = await openai.embeddings.create({ model: 'stub-embed', input: ['a b', 'c'], dimensions: 8 });
  assert.equal(b.data.length, 2);
  assert.equal(b.data[0].embedding.length, 8);
  assert.equal(b.usage.prompt_tokens, 3);
  const f = await openai.embeddings.create({ model: 'stub-embed', input: ['a b', 'c'], dimensions: 8, encoding_format: 'float' });
  assert.deepEqual(f.data[1].embedding.map((x) => Math.fround(x)), Array.from(b.data[1].embedding));
  const norm = Math.hypot(...f.data[0].embedding);
  assert.ok(Math.abs(norm - 1) < 1e-4, `unit length, got ${norm}`);
});

test('openai models list', async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['stub-gpt', 'stub-claude']);
});

test('openai errors: status, in-stream error, cut stream', async () => {
  await assert.rejects(
    openai.chat.completions.create({ model: 'stub-gpt', messages }, { headers: { 'x-stub-status': '503' } }),
    (e) => e instanceof OpenAI.InternalServerError && e.status === 503 && /injected status 503/.test(e.message),
  );
  await assert.rejects(
    openai.chat.completions.create({ model: 'stub-gpt', messages }, { headers: { 'x-stub-status': '429' } }),
    (e) => e instanceof OpenAI.RateLimitError,
  );
  await assert.rejects(async () => {
    const s = await openai.chat.completions.create({ model: 'stub-gpt', messages, stream: true },
      { headers: { 'x-stub-error-after': '3' } });
    for await (const _ of s) { /* drain */ }
  }, (e) => e instanceof OpenAI.APIError && /injected stream error/.test(e.message));
  await assert.rejects(async () => {
    const s = await openai.chat.completions.create({ model: 'stub-gpt', messages, stream: true },
      { headers: { 'x-stub-cut-after': '3' } });
    for await (const _ of s) { /* drain */ }
  });
});

test('anthropic messages', async () => {
  const r = await anthropic.messages.create({
    model: 'stub-claude', max_tokens: 100, system: 'be brief', messages: [{ role: 'user', content: 'say hello to me' }],
  }, { headers: { 'x-stub-cached-tokens': '2' } });
  assert.equal(r.content[0].type, 'text');
  assert.equal(r.content[0].text, stubText(16));
  assert.equal(r.stop_reason, 'end_turn');
  assert.deepEqual([r.usage.input_tokens, r.usage.cache_read_input_tokens, r.usage.output_tokens], [4, 2, 16]);
});

test('anthropic stream with final usage', async () => {
  const stream = anthropic.messages.stream({
    model: 'stub-claude', max_tokens: 10, messages: [{ role: 'user', content: 'say hello to me' }],
  });
  let text = '';
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, stubText(10));
  assert.equal(final.stop_reason, 'max_tokens');
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [4, 10]);

  const raw = await anthropic.messages.create({
    model: 'stub-claude', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }],
  });
  const types = [];
  for await (const e of raw) types.push(e.type);
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(types.filter((t) => t === 'content_block_delta').length, 16);
});

test('anthropic tool use, streamed and not', async () => {
  const tools = [{ name: 'get_weather', description: 'Weather by city', input_schema: weatherTool.function.parameters }];
  const r = await anthropic.messages.create({
    model: 'stub-claude', max_tokens: 100, tools, messages: [{ role: 'user', content: 'weather?' }],
  });
  assert.equal(r.stop_reason, 'tool_use');
  assert.equal(r.content[0].type, 'tool_use');
  assert.deepEqual(r.content[0].input, { city: 'stub', days: 1 });

  const stream = anthropic.messages.stream({
    model: 'stub-claude', max_tokens: 100, tools, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'weather?' }],
  });
  const json = [];
  stream.on('inputJson', (partial) => json.push(partial));
  const final = await stream.finalMessage();
  assert.deepEqual(final.content[0].input, { city: 'stub', days: 1 });
  assert.equal(final.usage.output_tokens, 3);
  assert.ok(json.length >= 2, 'arguments arrive in pieces');

  const answer = await anthropic.messages.create({
    model: 'stub-claude', max_tokens: 100, tools,
    messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: r.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: r.content[0].id, content: 'sunny' }] },
    ],
  });
  assert.equal(answer.content[0].text, stubText(16));
});

test('anthropic errors: status and in-stream error', async () => {
  await assert.rejects(
    anthropic.messages.create({ model: 'stub-claude', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'x-stub-status': '529' } }),
    (e) => e instanceof Anthropic.APIError && e.status === 529 && e.error?.error?.type === 'overloaded_error',
  );
  await assert.rejects(
    anthropic.messages.create({ model: 'stub-claude', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.BadRequestError && /max_tokens is required/.test(e.message),
  );
  await assert.rejects(async () => {
    const s = anthropic.messages.stream({ model: 'stub-claude', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'x-stub-error-after': '4' } });
    await s.finalMessage();
  }, (e) => /overloaded_error|injected stream error/.test(String(e.message)));
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
