// DLP through the gateway with the official SDKs: the stub streams an AWS key id in 8-byte pieces
// (x-stub-text); for a "mask" org the SDK reads it masked, for a "block" org the SDK raises the error the
// gateway ends the stream with; a prompt with a secret is refused with the 400 each SDK raises as
// BadRequestError. Usage: node dlp.mjs GATEWAY_PORT (run_proxy.sh: keys gvg_e2e_dlp_mask, gvg_e2e_dlp_block)
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const port = process.argv[2];
const base = `http://127.0.0.1:${port}`;
const secret = 'AKIAIOSFODNN7EXAMPLE';
const answer = 'Here is the plan for the deploy. '.repeat(8) + `Use the key ${secret} and rotate it.`;
const masked = answer.replace(secret, '[REDACTED:aws_access_key_id]');
const headers = { 'x-stub-text': answer };
const client = (key) => new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
const clientA = (key) => new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
const messages = [{ role: 'user', content: 'deploy plan' }];

const tests = [];
const test = (name, fn) => tests.push([name, fn]);

async function chatText(openai, model) {
  const stream = await openai.chat.completions.create({ model, messages, stream: true }, { headers });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish };
}

test('mask: openai stream, same format and translated', async () => {
  for (const model of ['gpt-stub', 'claude-stub']) {
    const { text, finish } = await chatText(client('gvg_e2e_dlp_mask'), model);
    assert.equal(text, masked);
    assert.equal(finish, 'stop');
  }
});

test('mask: anthropic stream', async () => {
  const stream = clientA('gvg_e2e_dlp_mask').messages.stream(
    { model: 'claude-stub', max_tokens: 1000, messages }, { headers });
  let text = '';
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, masked);
  assert.equal(final.content[0].text, masked);
});

test('block: the stream ends with an error the SDK raises, before the secret', async () => {
  let seen = '';
  await assert.rejects(async () => {
    const stream = await client('gvg_e2e_dlp_block').chat.completions.create(
      { model: 'gpt-stub', messages, stream: true }, { headers });
    for await (const chunk of stream) for (const c of chunk.choices) seen += c.delta.content ?? '';
  }, (e) => e instanceof OpenAI.APIError && /aws_access_key_id/.test(e.message) && !e.message.includes(secret));
  assert.ok(!seen.includes('AKIA'));
  assert.equal(seen, answer.slice(0, seen.length));
  const streamA = clientA('gvg_e2e_dlp_block').messages.stream(
    { model: 'claude-stub', max_tokens: 1000, messages }, { headers });
  streamA.on('error', () => {});
  await assert.rejects(streamA.finalMessage(), (e) => /data loss prevention/.test(String(e.message ?? e)));
});

test('block: a prompt with a secret is a 400 in each SDK', async () => {
  const bad = [{ role: 'user', content: `deploy with ${secret}` }];
  await assert.rejects(client('gvg_e2e_dlp_block').chat.completions.create({ model: 'gpt-stub', messages: bad }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'dlp_blocked' && !e.message.includes(secret));
  await assert.rejects(clientA('gvg_e2e_dlp_block').messages.create({ model: 'claude-stub', max_tokens: 5, messages: bad }),
    (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.type === 'invalid_request_error');
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
