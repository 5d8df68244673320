// The official OpenAI and Anthropic SDKs against the gateway with a budget of three answers: the
// answers, then OpenAI's insufficient_quota and Anthropic's rate_limit_error, each raised at once (the
// gateway says x-should-retry: false, so the SDKs' default retries do not resend). Usage: node
// governance.mjs GATEWAY_PORT
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = `http://127.0.0.1:${process.argv[2]}`;
// Default retries (2): a retried refusal would leave more records than run_governance.sh expects.
const openai = new OpenAI({ apiKey: 'gvg_e2e_budget', baseURL: `${base}/v1` });
const anthropic = new Anthropic({ apiKey: 'gvg_e2e_budget', baseURL: base });
const messages = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'say hello to me' },
]; // 6 input tokens

for (let i = 0; i < 3; i++) {
  const r = await openai.chat.completions.create({ model: 'gpt-stub', messages });
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens], [6, 16]);
}
await assert.rejects(openai.chat.completions.create({ model: 'gpt-stub', messages }),
  (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.code === 'insufficient_quota' &&
    e.type === 'insufficient_quota' && /budget acme-day is exhausted/.test(e.message));
await assert.rejects(
  anthropic.messages.create({ model: 'claude-stub', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  (e) => e instanceof Anthropic.RateLimitError && e.status === 429 && e.error?.error?.type === 'rate_limit_error');
console.log('ok - budget: 3 answers, then insufficient_quota (openai) and rate_limit_error (anthropic)');
