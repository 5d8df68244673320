// Checks that every log send.mjs sent is in the WAL (as `govern telemetry wal inspect --events` prints
// it) exactly once, intact, under the key's organisation.
// Usage: node verify.mjs SENT_JSON WAL_TEXT ORG
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';

const [sentFile, walFile, org] = process.argv.slice(2);
const sent = JSON.parse(readFileSync(sentFile, 'utf8'));
const events = readFileSync(walFile, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
assert.equal(events.length, sent.length, `the WAL holds ${events.length} events, ${sent.length} were sent`);

const ids = new Set();
for (const s of sent) {
  const matches = events.filter((e) => e.attributes.marker === s.attributes.marker);
  assert.equal(matches.length, 1, `${s.attributes.marker}: found ${matches.length} times`);
  const e = matches[0];
  const where = s.attributes.marker;
  assert.equal(e.org, org, `${where}: org`);
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
  assert.match(e.id, /^[0-9a-f]{64}$/, `${where}: id`);
  assert.ok(e.time_unix_nanos > 1.7e18, `${where}: time ${e.time_unix_nanos}`);
  ids.add(e.id);
}
assert.equal(ids.size, sent.length, 'every event has its own id');
console.log(`ok: ${sent.length} logs from both OTLP exporters are in the WAL, intact, under ${org}`);
