// The Cedar reference (@cedar-policy/cedar-wasm, in node) on the benchmark organisation (org/), the
// reference column beside Govern's engine in `scripts/bench policy`.
//
//   npm ci --prefix tests/e2e/policy_cedar        (once: the pinned cedar-wasm lives there)
//   node bench/policy/cedar_reference.mjs [--calls N] [--full-calls N] [--warmup N] [--mode full|slice|both]
//                                         [--json FILE]
//
// The policy set is parsed once (preparsePolicySet); each call is statefulIsAuthorized, which takes the
// entities with every call (the reference has no preloaded entity store):
//   full:  all entities of org/entities.json with every call (the same input Govern's engine gets; some
//          15 ms a call, hence its own smaller --full-calls);
//   slice: only the request's principal, action and resource and their ancestors (what a cedar-wasm
//          user would pass; the slices are computed before timing).
// Before timing, every request's decision and determining policies are checked against the "expect" of
// org/requests.ndjson. Requests are taken round-robin; each call is timed on its own
// (process.hrtime.bigint), one thread.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tests/e2e/policy_cedar/package.json'));
let cedar;
try {
  cedar = require('@cedar-policy/cedar-wasm/nodejs');
} catch {
  console.error('cedar_reference: run `npm ci --prefix tests/e2e/policy_cedar` first');
  process.exit(2);
}

const o = { calls: 20000, fullCalls: 1000, warmup: 1000, mode: 'both', json: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--calls') o.calls = Number(argv[++i]);
  else if (argv[i] === '--full-calls') o.fullCalls = Number(argv[++i]);
  else if (argv[i] === '--warmup') o.warmup = Number(argv[++i]);
  else if (argv[i] === '--mode') o.mode = argv[++i];
  else if (argv[i] === '--json') o.json = argv[++i];
  else {
    console.error('usage: cedar_reference.mjs [--calls N] [--full-calls N] [--warmup N] [--mode full|slice|both] [--json FILE]');
    process.exit(2);
  }
}

const org = path.join(here, 'org');
const policies = fs.readFileSync(path.join(org, 'policies.cedar'), 'utf8');
const entities = JSON.parse(fs.readFileSync(path.join(org, 'entities.json'), 'utf8'));
const requests = fs.readFileSync(path.join(org, 'requests.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

const parsed = cedar.preparsePolicySet('org', { staticPolicies: policies });
if (parsed.type !== 'success') {
  console.error('cedar_reference: policies do not parse:', JSON.stringify(parsed));
  process.exit(1);
}

const key = (u) => `${u.type}::${JSON.stringify(u.id)}`;
const byKey = new Map(entities.map((e) => [key(e.uid), e]));
function slice(r) {
  const out = new Map();
  const visit = (u) => {
    const k = key(u);
    if (out.has(k) || !byKey.has(k)) return;
    const e = byKey.get(k);
    out.set(k, e);
    for (const p of e.parents) visit(p);
  };
  visit(r.principal);
  visit(r.action);
  visit(r.resource);
  // Entities named in the context (none in this organisation) would be added here too.
  return [...out.values()];
}

function call(r, ents) {
  return cedar.statefulIsAuthorized({
    principal: r.principal, action: r.action, resource: r.resource, context: r.context,
    entities: ents, preparsedPolicySetId: 'org',
  });
}

function check(mode, entsOf) {
  let bad = 0;
  requests.forEach((r, i) => {
    const a = call(r, entsOf(r, i));
    const got = a.type === 'success'
      ? { decision: a.response.decision, reason: [...a.response.diagnostics.reason].sort(), errors: a.response.diagnostics.errors.map((e) => e.policyId).sort() }
      : { failure: a.errors };
    if (JSON.stringify(got) !== JSON.stringify(r.expect)) {
      if (bad++ < 3) console.error(`cedar_reference (${mode}): request ${i}: got ${JSON.stringify(got)}, expected ${JSON.stringify(r.expect)}`);
    }
  });
  if (bad) {
    console.error(`cedar_reference (${mode}): ${bad} of ${requests.length} requests differ from org/requests.ndjson`);
    process.exit(1);
  }
}

function run(mode) {
  const calls = mode === 'full' ? o.fullCalls : o.calls;
  const slices = mode === 'slice' ? requests.map(slice) : null;
  const entsOf = mode === 'slice' ? (_, i) => slices[i] : () => entities;
  check(mode, entsOf);
  for (let i = 0; i < Math.min(o.warmup, calls); i++) call(requests[i % requests.length], entsOf(null, i % requests.length));
  const times = new Float64Array(calls);
  let allow = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const j = i % requests.length;
    const s = process.hrtime.bigint();
    const a = call(requests[j], entsOf(null, j));
    times[i] = Number(process.hrtime.bigint() - s) / 1000;
    if (a.type === 'success' && a.response.decision === 'allow') allow++;
  }
  const total = Number(process.hrtime.bigint() - t0) / 1e9;
  times.sort();
  const q = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  const avgEntities = mode === 'slice' ? slices.reduce((n, s) => n + s.length, 0) / slices.length : entities.length;
  return {
    mode, calls, entities_per_call: Math.round(avgEntities * 10) / 10,
    decisions_per_s: Math.round(calls / total), median_us: Math.round(q(0.5) * 10) / 10, p99_us: Math.round(q(0.99) * 10) / 10,
    allow_share: Math.round((allow / calls) * 1000) / 1000,
  };
}

const modes = o.mode === 'both' ? ['slice', 'full'] : [o.mode];
if (!modes.every((m) => m === 'full' || m === 'slice')) {
  console.error('cedar_reference: --mode is full, slice or both');
  process.exit(2);
}
console.log(`cedar-wasm ${cedar.getCedarVersion()} (Cedar ${cedar.getCedarLangVersion()}), node ${process.version}: ` +
  `${policies.match(/^\s*(permit|forbid)\s*\(/gm).length} policies, ${entities.length} entities, ${requests.length} distinct requests`);
const results = [];
for (const m of modes) {
  const r = run(m);
  results.push(r);
  console.log(`reference (${m.padEnd(5)}, ${String(r.entities_per_call).padStart(5)} entities/call): ${r.decisions_per_s} decisions/s, median ${r.median_us} µs, p99 ${r.p99_us} µs (${r.calls} calls)`);
}
if (o.json) fs.writeFileSync(o.json, JSON.stringify({ engine: `cedar-wasm ${cedar.getCedarVersion()}`, node: process.version, results }, null, 2) + '\n');
