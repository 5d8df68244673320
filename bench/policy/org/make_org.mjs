// Writes the benchmark organisation (policies.cedar, entities.json, requests.ndjson) beside this file.
// Deterministic (own PRNG); the files are committed, so this only runs when the organisation changes:
//   npm ci --prefix tests/e2e/policy_cedar && node bench/policy/org/make_org.mjs
// Each request line carries "expect": the Cedar reference's decision and determining policies, so both
// engines can be checked against it before they are timed.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../../tests/e2e/policy_cedar/package.json'));
const cedar = require('@cedar-policy/cedar-wasm/nodejs');

let seed = 20260601;
const rnd = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const uid = (type, id) => ({ type, id });

// ------------------------------------------------------------------------------------------- policies
const policies = `// Benchmark organisation: 3 organisation-wide guardrails, then 12 agent policies.

// Guardrail 1: dangerous tools only for administrators.
@id("guardrail-dangerous-tools")
forbid (principal, action == Action::"call_tool", resource in ToolSet::"dangerous")
unless { principal in Group::"admins" };

// Guardrail 2: no single action may cost more than 5 dollars.
@id("guardrail-cost-cap")
forbid (principal, action, resource)
when { context has cost_cents && context.cost_cents > 500 };

// Guardrail 3: no fetching internal URLs.
@id("guardrail-internal-urls")
forbid (principal, action == Action::"call_tool", resource)
when { context has args.url && context.args.url like "*internal.corp*" };

@id("research-web")
permit (principal in Team::"research", action == Action::"call_tool", resource in ToolSet::"web")
when { context.args has max_results && context.args.max_results <= 20 };

@id("support-tickets")
permit (principal in Team::"support", action == Action::"call_tool", resource in ToolSet::"support")
when { context.args has priority && context.args.priority >= 2 };

@id("support-email")
permit (principal in Team::"support", action == Action::"send_message", resource == Tool::"send_email")
when { context.args.recipient like "*@acme.example" };

@id("finance-spend")
permit (principal in Team::"finance", action == Action::"spend", resource in ToolSet::"finance")
when { principal has max_spend_cents && context.amount_cents <= principal.max_spend_cents };

@id("eng-files")
permit (principal in Team::"eng", action == Action::"call_tool", resource in ToolSet::"files")
when { context.args.path like "/workspace/*" && !(context.args.path like "*/.git/*") };

@id("eng-shell")
permit (principal in Team::"eng", action == Action::"call_tool", resource == Tool::"shell")
when { principal.tier == "trusted" && context.args.command like "git *" };

@id("sales-crm")
permit (principal in Team::"sales", action == Action::"call_tool", resource in ToolSet::"data")
when { context.args.query like "SELECT *" && context.args.rows <= 1000 };

@id("org-read")
permit (principal in Organisation::"acme", action == Action::"read_resource", resource in ToolSet::"files")
when { principal.clearance >= resource.min_clearance };

@id("ops-network")
permit (principal is Agent in Team::"ops", action in [Action::"call_tool", Action::"read_resource"], resource in ToolSet::"ops")
when { context.source_ip.isInRange(ip("10.0.0.0/8")) };

@id("marketing-web")
permit (principal in Team::"marketing", action == Action::"call_tool", resource in ToolSet::"web")
when { context.args has max_results && context.args.max_results <= 10 && ["en", "de", "fr"].contains(context.args.lang) };

@id("legal-docs")
permit (principal in Team::"legal", action == Action::"call_tool", resource == Tool::"doc_search")
when { ["EU", "US", "UK"].contains(context.args.jurisdiction) };

@id("treasury-agent")
permit (principal == Agent::"agent-007", action == Action::"spend", resource in ToolSet::"finance")
when { context.budget.lessThan(decimal("10000.00")) && context.amount_cents <= 500 };
`;

// ------------------------------------------------------------------------------------------- entities
const teams = ['research', 'support', 'finance', 'eng', 'sales', 'ops', 'marketing', 'legal'];
const toolsets = {
  web: ['web_search', 'fetch_url', 'news_search', 'image_search', 'translate'],
  support: ['create_ticket', 'update_ticket', 'close_ticket', 'lookup_customer', 'knowledge_base'],
  comms: ['send_email', 'send_slack', 'schedule_meeting'],
  finance: ['refund', 'pay_invoice', 'transfer_funds', 'buy_credits'],
  files: ['read_file', 'write_file', 'list_dir', 'search_code', 'doc_search'],
  data: ['sql_query', 'crm_lookup', 'export_csv'],
  ops: ['restart_service', 'read_metrics', 'tail_logs', 'scale_deployment'],
  dangerous: ['shell', 'delete_bucket', 'rotate_keys'],
};
const entities = [];
entities.push({ uid: uid('Organisation', 'acme'), attrs: { name: 'Acme' }, parents: [] });
entities.push({ uid: uid('Group', 'admins'), attrs: {}, parents: [uid('Organisation', 'acme')] });
for (const t of teams) entities.push({ uid: uid('Team', t), attrs: { name: t }, parents: [uid('Organisation', 'acme')] });
const agents = [];
for (let i = 1; i <= 320; i++) {
  const id = `agent-${String(i).padStart(3, '0')}`;
  const team = teams[i % teams.length];
  const parents = [uid('Team', team)];
  if (rnd() < 0.1) parents.push(uid('Team', pick(teams.filter((t) => t !== team))));
  if (i % 40 === 0) parents.push(uid('Group', 'admins'));
  const attrs = {
    tier: pick(['standard', 'standard', 'trusted', 'restricted']),
    clearance: int(0, 5),
    owner: `owner-${int(1, 60)}@acme.example`,
  };
  if (team === 'finance' || id === 'agent-007') attrs.max_spend_cents = pick([1000, 5000, 20000]);
  entities.push({ uid: uid('Agent', id), attrs, parents });
  agents.push({ id, teams: parents.filter((p) => p.type === 'Team').map((p) => p.id) });
}
entities.push({ uid: uid('ToolSet', 'all_tools'), attrs: {}, parents: [uid('Organisation', 'acme')] });
const tools = [];
for (const [set, names] of Object.entries(toolsets)) {
  entities.push({ uid: uid('ToolSet', set), attrs: {}, parents: [uid('ToolSet', 'all_tools')] });
  for (const n of names) {
    if (!tools.some((t) => t.id === n)) {
      tools.push({ id: n, set });
      entities.push({ uid: uid('Tool', n), attrs: { risk: int(1, 10), min_clearance: int(0, 4) }, parents: [uid('ToolSet', set)] });
    }
  }
}
for (const a of ['call_tool', 'read_resource', 'spend', 'send_message']) {
  entities.push({ uid: uid('Action', a), attrs: {}, parents: [] });
}

// ------------------------------------------------------------------------------------------- requests
const toolsIn = (set) => tools.filter((t) => t.set === set).map((t) => t.id);
const agentIn = (team) => pick(agents.filter((a) => a.teams.includes(team))).id;
const req = (p, a, r, context) => ({ principal: uid('Agent', p), action: uid('Action', a), resource: uid('Tool', r), context });
const makers = [
  // mostly allowed
  () => req(agentIn('research'), 'call_tool', pick(toolsIn('web')), { args: { query: 'cedar policy', max_results: int(1, 25), url: 'https://example.com/a' }, cost_cents: int(0, 50) }),
  () => req(agentIn('support'), 'call_tool', pick(toolsIn('support')), { args: { priority: int(1, 5), customer: 'c-1' }, cost_cents: int(0, 20) }),
  () => req(agentIn('support'), 'send_message', 'send_email', { args: { recipient: pick(['x@acme.example', 'y@other.example']), subject: 'hi' }, cost_cents: 1 }),
  () => req(agentIn('finance'), 'spend', pick(toolsIn('finance')), { amount_cents: pick([100, 900, 4000, 30000]), cost_cents: pick([10, 600]) }),
  () => req(agentIn('eng'), 'call_tool', pick(toolsIn('files')), { args: { path: pick(['/workspace/src/a.cc', '/workspace/.git/config', '/etc/passwd']) }, cost_cents: 0 }),
  () => req(agentIn('eng'), 'call_tool', 'shell', { args: { command: pick(['git status', 'rm -rf /', 'git log']) }, cost_cents: 0 }),
  () => req(agentIn('sales'), 'call_tool', pick(toolsIn('data')), { args: { query: pick(['SELECT * FROM leads', 'DROP TABLE leads']), rows: pick([10, 500, 5000]) }, cost_cents: 5 }),
  () => req(pick(agents).id, 'read_resource', pick(toolsIn('files')), { cost_cents: 0 }),
  () => req(agentIn('ops'), pick(['call_tool', 'read_resource']), pick(toolsIn('ops')), { source_ip: { __extn: { fn: 'ip', arg: pick(['10.2.3.4', '192.168.1.9']) } }, cost_cents: 0 }),
  () => req(agentIn('marketing'), 'call_tool', pick(toolsIn('web')), { args: { max_results: int(1, 15), lang: pick(['en', 'de', 'ja']), url: 'https://example.com/m' } }),
  () => req(agentIn('legal'), 'call_tool', 'doc_search', { args: { jurisdiction: pick(['EU', 'US', 'CN']) } }),
  () => req('agent-007', 'spend', pick(toolsIn('finance')), { budget: { __extn: { fn: 'decimal', arg: pick(['500.00', '20000.00']) } }, amount_cents: pick([200, 800]) }),
  // guardrails
  () => req(agentIn('research'), 'call_tool', 'fetch_url', { args: { url: 'https://wiki.internal.corp/secrets', max_results: 5 }, cost_cents: 1 }),
  () => req(agentIn('research'), 'call_tool', 'web_search', { args: { max_results: 5 }, cost_cents: int(501, 2000) }),
  () => req(pick(agents).id, 'call_tool', pick(toolsIn('dangerous')), { args: { command: 'git status' }, cost_cents: 0 }),
  // default deny: no permit covers these
  () => req(agentIn('legal'), 'call_tool', pick(toolsIn('finance')), { args: {}, cost_cents: 0 }),
  () => req(agentIn('marketing'), 'spend', 'buy_credits', { amount_cents: 100, cost_cents: 100 }),
];
const N = 2000;
const requests = [];
const stats = {};
const pset = { staticPolicies: policies };
const ids = cedar.policySetTextToParts(policies);
for (let i = 0; i < N; i++) {
  const r = makers[i % makers.length]();
  const a = cedar.isAuthorized({ ...r, policies: pset, entities });
  if (a.type !== 'success') throw new Error(`reference failure on request ${i}: ${JSON.stringify(a.errors)}`);
  const d = a.response;
  const key = `${d.decision}${d.diagnostics.reason.length ? '' : ' (default)'}${d.diagnostics.errors.length ? ' +errors' : ''}`;
  stats[key] = (stats[key] || 0) + 1;
  requests.push({ ...r, expect: { decision: d.decision, reason: [...d.diagnostics.reason].sort(), errors: d.diagnostics.errors.map((e) => e.policyId).sort() } });
}
if (ids.type !== 'success' || ids.policies.length !== 15) throw new Error('expected 15 policies');
fs.writeFileSync(path.join(here, 'policies.cedar'), policies);
fs.writeFileSync(path.join(here, 'entities.json'), JSON.stringify(entities, null, 1) + '\n');
fs.writeFileSync(path.join(here, 'requests.ndjson'), requests.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(`${entities.length} entities (${agents.length} agents, ${teams.length} teams, ${tools.length} tools), ${N} requests:`, stats);
