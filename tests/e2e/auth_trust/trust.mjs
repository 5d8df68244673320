// node trust.mjs setup|internal BASE ADMIN_TOKEN TRUST_CHECK STATE_FILE: tokens from `govern serve auth`
// checked by auth_trust_check (a Checker fed only by TrustRefresher from BASE).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const [mode, base, adminToken, tool, stateFile] = process.argv.slice(2);
let failures = 0;
function check(ok, what, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok ? '' : ': ' + JSON.stringify(detail)}`);
  if (!ok) failures++;
}
async function admin(method, path, body) {
  const r = await fetch(base + path, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, json: await r.json() };
}
// The tool's verdicts, one per token (exit status 1 only says one was refused).
function verdicts(audience, ...tokens) {
  let out;
  try {
    out = execFileSync(tool, [base, audience, ...tokens]).toString();
  } catch (e) {
    if (e.status !== 1) throw e;
    out = e.stdout.toString();
  }
  return out.trim().split('\n').map((l) => JSON.parse(l));
}
async function grant(agent, extra = {}) {
  const r = await fetch(new URL('/oauth/token', base), {
    method: 'POST',
    headers: { authorization: 'Basic ' + Buffer.from(`${agent.client_id}:${agent.client_secret}`).toString('base64') },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'events:write', ...extra }),
  });
  return (await r.json()).access_token;
}
const alg = (t) => JSON.parse(Buffer.from(t.split('.')[0], 'base64url').toString()).alg;

if (mode === 'setup') {
  await admin('POST', '/v1/auth/orgs', { org: 'acme', name: 'Acme' });
  const agent = (await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'agent', name: 'bot', scopes: ['events:write'] })).json;
  const token = await grant(agent);
  check(alg(token) === 'RS256', 'by default Govern access tokens are signed with the published ring', alg(token));
  const [v] = verdicts('govern', token);
  check(v.ok && v.sub === agent.client_id && v.org === 'acme' && v.scope.join() === 'events:write' && v.client_id === agent.client_id,
        'a service with only the JWKS accepts it and reads org, subject and scope', v);
  check(!verdicts('govern:other', token)[0].ok && verdicts('govern:other', token)[0].reason === 'wrong_audience', 'another audience is refused');
  const [h, p, s] = token.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[5] ^= 1;
  check(verdicts('govern', `${h}.${p}.${sig.toString('base64url')}`)[0].reason === 'bad_signature', 'a tampered signature is refused');
  const revokedToken = await grant(agent);
  const r = await fetch(new URL('/oauth/revoke', base), {
    method: 'POST',
    headers: { authorization: 'Basic ' + Buffer.from(`${agent.client_id}:${agent.client_secret}`).toString('base64') },
    body: new URLSearchParams({ token: revokedToken }),
  });
  check(r.status === 200, 'revoked at /oauth/revoke');
  const both = verdicts('govern', token, revokedToken);
  check(both[0].ok && !both[1].ok && both[1].reason === 'revoked', 'the revocation list the service pulled refuses it (the other token still passes)', both);
  writeFileSync(stateFile, JSON.stringify({ agent, token }));
} else {
  const { agent, token } = JSON.parse(readFileSync(stateFile));
  const hs = await grant(agent);
  check(alg(hs) === 'HS256', 'auth.access_token_signing=internal issues HS256', alg(hs));
  const both = verdicts('govern', token, hs);
  check(both[0].ok, 'a token issued before the switch still passes', both[0]);
  check(!both[1].ok && both[1].reason === 'unknown_key', 'a JWKS-only service cannot check an HS256 token (unknown_key)', both[1]);
  const outside = await grant(agent, { audience: 'https://api.example' });
  check(alg(outside) === 'RS256' && verdicts('https://api.example', outside)[0].ok, 'an outside audience still gets a published-ring token');
}
if (failures > 0) process.exit(1);
console.log(`trust ${mode}: all checks passed`);
