// Checks that every log send.mjs sent comes back from the query API (GET /v1/query/events) exactly
// once and intact, read with a query key of the sending organisation, and that another organisation's
// query key sees none of them. Ingest is asynchronous: polls up to 60 s for the events to be stored.
// Usage: node verify_query.mjs BASE_URL SENT_JSON QUERY_KEY OTHER_ORG_QUERY_KEY
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';

const [base, sentFile, key, otherKey] = process.argv.slice(2);
const sent = JSON.parse(readFileSync(sentFile, 'utf8'));

async function all(k) {
  const events = [];
  let cursor = null;
  for (;;) {
    const url = new URL('/v1/query/events', base);
    url.searchParams.set('from', '0');
    url.searchParams.set('order', 'oldest');
    url.searchParams.set('limit', '2');  // small pages: the cursor is exercised too
    if (cursor) url.searchParams.set('cursor', cursor);
    const r = await fetch(url, { headers: { Authorization: `Bearer ${k}` } });
    const body = await r.text();
    assert.equal(r.status, 200, `query: ${r.status} ${body}`);
    const page = JSON.parse(body);
    events.push(...page.events);
    if (!page.next_cursor) return events;
    cursor = page.next_cursor;
  }
}

let events = [];
const deadline = Date.now() + 60_000;
while (Date.now() < deadline) {
  events = await all(key);
  if (events.length >= sent.length) break;
  await new Promise((r) => setTimeout(r, 250));
}
assert.equal(events.length, sent.length, `the query API returns ${events.length} events, ${sent.length} were sent`);

const ids = new Set();
for (const s of sent) {
  const where = s.attributes.marker;
  const matches = events.filter((e) => e.attributes.marker === where);
  assert.equal(matches.length, 1, `${where}: found ${matches.length} times`);
  const e = matches[0];
  assert.equal(e.service_name, s.service, `${where}: service.name`);
  assert.deepEqual(e.resource_attributes['service.name'], s.service, `${where}: resource attributes`);
  assert.equal(e.resource_attributes['deployment.environment'], 'test', `${where}: resource attributes`);
  assert.equal(e.scope_name, 'e2e-scope', `${where}: scope name`);
  assert.equal(e.scope_version, '1.2.3', `${where}: scope version`);
  assert.equal(e.severity_number, s.severityNumber, `${where}: severity number`);
  assert.equal(e.severity_text, s.severityText, `${where}: severity text`);
  assert.deepEqual(e.body, s.body, `${where}: body`);
  assert.deepEqual(e.attributes, s.attributes, `${where}: attributes`);
  assert.equal(e.type, 'log', `${where}: type`);
  assert.equal(e.redacted, false, `${where}: nothing to redact`);
  assert.match(e.id, /^[0-9a-f]{64}$/, `${where}: id`);
  assert.ok(BigInt(e.time_unix_nano) > 1700000000000000000n, `${where}: time ${e.time_unix_nano}`);
  ids.add(e.id);
}
assert.equal(ids.size, sent.length, 'every event has its own id');
const others = await all(otherKey);
assert.equal(others.length, 0, `another organisation's key sees ${others.length} events`);
console.log(`ok: ${sent.length} logs from both OTLP exporters come back from the query API intact, once`);
