// The Cedar reference (@cedar-policy/cedar-wasm) behind the `govern policy eval-cases` contract.
//
// As a program: one long-lived process that reads cases, one JSON object per line on stdin
//   {"id","policies":"<cedar text>","entities":[...],"request":{"principal","action","resource","context"}}
//   with optionally "templates" and "templateLinks", and "policies" as JSON policies (cedar-wasm's
//   PolicySet fields staticPolicies, templates, templateLinks)
// and writes one answer per line on stdout, in input order:
//   {"id","decision":"allow"|"deny","reason":[policy ids],"errors":[policy ids]}   (ids sorted)
//   {"id","failure":"<message>"}   when the policies, entities or request cannot be parsed.
// A line that is not JSON, or a case without an id, gets {"id":null,"failure":...}.
// With "to_json": true an answer also carries "json": the reference's JSON of the policies and templates
// (referenceJson), as `govern policy eval-cases` prints its own.
// As a module: `answer(c)` gives the same answer object for one parsed case (compare.mjs uses it).
//
// Policy ids are the reference's own for `staticPolicies` given as one string: "policy0", "policy1", ...
// in text order (an `@id` annotation does not change them; corpus/scope.ndjson pins that).
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

// The reference overflows its wasm stack on deeply nested input (about 150 nested parentheses, or a
// 1,000-term `+` chain) and throws "memory access out of bounds"; after that the instance is poisoned
// and every later call throws too. So a throw reloads the module (a fresh instance), and the case is
// answered {"failure": "reference crashed: ...", "crashed": true}: compare.mjs counts such cases but
// does not compare them (the reference has no answer).
function load() {
  const p = require.resolve('@cedar-policy/cedar-wasm/nodejs');
  delete require.cache[p];
  return require(p);
}
let cedar = load();
export const cedarModule = () => cedar;

export const referenceVersion = cedar.getCedarVersion();

function failureMessage(errors) {
  return (errors || []).map((e) => e.message).join('; ') || 'failure';
}

// The reference's JSON of a case's policies and templates ({staticPolicies: {id: EST}, templates: {id:
// EST}}), with the ids it gives them; null when the reference cannot parse them.
export function referenceJson(c) {
  const out = { staticPolicies: {} };
  if (typeof c.policies === 'string') {
    const parts = cedar.policySetTextToParts(c.policies);
    if (parts.type !== 'success' || parts.policy_templates.length) return null;
    // The parts come sorted by id as strings: policy0, policy1, policy10, policy11, policy2, ...
    const ids = parts.policies.map((_, i) => `policy${i}`).sort();
    for (let k = 0; k < ids.length; k++) {
      const j = cedar.policyToJson(parts.policies[k]);
      if (j.type !== 'success') return null;
      out.staticPolicies[ids[k]] = j.json;
    }
  } else if (c.policies !== undefined) {
    return null;
  }
  if (c.templates && typeof c.templates === 'object') {
    out.templates = {};
    for (const [id, text] of Object.entries(c.templates)) {
      if (typeof text !== 'string') return null;
      const j = cedar.templateToJson(text);
      if (j.type !== 'success') return null;
      out.templates[id] = j.json;
    }
  }
  return out;
}

export function answer(c) {
  const id = c && typeof c === 'object' && 'id' in c ? c.id : null;
  if (!c || typeof c !== 'object' || !c.request || typeof c.request !== 'object') {
    return { id, failure: 'case lacks a request' };
  }
  // cedar-wasm's PolicySet: staticPolicies (text, or JSON policies), templates, templateLinks.
  const policies = {};
  if (c.policies !== undefined) policies.staticPolicies = c.policies;
  if (c.templates !== undefined) policies.templates = c.templates;
  if (c.templateLinks !== undefined) policies.templateLinks = c.templateLinks;
  const req = c.request;
  const call = {
    principal: req.principal,
    action: req.action,
    resource: req.resource,
    context: req.context === undefined ? {} : req.context,
    policies,
    entities: c.entities === undefined ? [] : c.entities,
  };
  let a;
  try {
    a = cedar.isAuthorized(call);
  } catch (e) {
    cedar = load();
    return { id, failure: `reference crashed: ${e && e.message ? e.message : String(e)}`, crashed: true };
  }
  if (a.type !== 'success') return { id, failure: failureMessage(a.errors) };
  const d = a.response.diagnostics;
  const out = {
    id,
    decision: a.response.decision,
    reason: [...d.reason].sort(),
    errors: [...new Set(d.errors.map((e) => e.policyId))].sort(),
  };
  if (c.to_json) {
    try {
      const j = referenceJson(c);
      if (j) out.json = j;
    } catch (e) {
      // The reference overflowed its stack printing the policies (deep nesting; how deep it gets depends
      // on how far V8 has tiered its code up, so it varies with the machine's load): no JSON to compare.
      cedar = load();
      out.json_crashed = `reference crashed: ${e && e.message ? e.message : String(e)}`;
    }
  }
  return out;
}

async function main() {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  // Answers are batched per input chunk (setImmediate runs once the chunk's lines are handled), so a
  // caller that writes one case and waits still gets its answer.
  const out = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (out.length) {
      process.stdout.write(out.join(''));
      out.length = 0;
    }
  };
  const later = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  for await (const line of rl) {
    if (line.trim() === '') continue;
    let c;
    try {
      c = JSON.parse(line);
    } catch (e) {
      out.push(JSON.stringify({ id: null, failure: `bad case line: ${e.message}` }) + '\n');
      later();
      continue;
    }
    out.push(JSON.stringify(answer(c)) + '\n');
    if (out.length >= 256) flush();
    else later();
  }
  flush();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    console.error(e);
    process.exit(2);
  });
}
