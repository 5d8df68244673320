// node trust.mjs setup|stalled|rotated|published BASE ADMIN_TOKEN TRUST_CHECK STATE_FILE RING_FILE: tokens from
// `govern serve auth` checked by auth_trust_check (a Checker fed only by TrustRefresher from BASE, and
// with --ring by the internal ring file the service writes).
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';

const [mode, base, adminToken, tool, stateFile, ringFile] = process.argv.slice(2);
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
function verdicts(audience, ...tokens) { return run([], audience, tokens); }
function ringVerdicts(audience, ...tokens) { return run(['--ring', ringFile], audience, tokens); }
function run(pre, audience, tokens) {
  let out;
  try {
    out = execFileSync(tool, [...pre, base, audience, ...tokens]).toString();
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

// Each key of the ring by its schedule (activation time is unique within a ring).
const ringKids = () => JSON.parse(readFileSync(ringFile)).keys.map((k) => k.activate_at);

if (mode === 'setup') {
  await admin('POST', '/v1/auth/orgs', { org: 'acme', name: 'Acme' });
  const agent = (await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'agent', name: 'bot', scopes: ['events:write'] })).json;
  check((statSync(ringFile).mode & 0o777) === 0o600, 'the internal ring file is written, owner-only', (statSync(ringFile).mode & 0o777).toString(8));
  const token = await grant(agent);
  check(alg(token) === 'HS256', 'by default Govern access tokens are HS256 under the internal ring', alg(token));
  const [v] = ringVerdicts('govern', token);
  check(v.ok && v.sub === agent.client_id && v.org === 'acme' && v.scope.join() === 'events:write' && v.client_id === agent.client_id,
        'a service with the ring file accepts it and reads org, subject and scope', v);
  const [jwksOnly] = verdicts('govern', token);
  check(!jwksOnly.ok && jwksOnly.reason === 'unknown_key', 'a service with the JWKS alone cannot check it (unknown_key)', jwksOnly);
  check(ringVerdicts('govern:other', token)[0].reason === 'wrong_audience', 'another audience is refused');
  const [h, p, s] = token.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[5] ^= 1;
  check(ringVerdicts('govern', `${h}.${p}.${sig.toString('base64url')}`)[0].reason === 'bad_signature', 'a tampered MAC is refused');
  const revokedToken = await grant(agent);
  const r = await fetch(new URL('/oauth/revoke', base), {
    method: 'POST',
    headers: { authorization: 'Basic ' + Buffer.from(`${agent.client_id}:${agent.client_secret}`).toString('base64') },
    body: new URLSearchParams({ token: revokedToken }),
  });
  check(r.status === 200, 'revoked at /oauth/revoke');
  const both = ringVerdicts('govern', token, revokedToken);
  check(both[0].ok && !both[1].ok && both[1].reason === 'revoked', 'the revocation list the service pulled refuses it (the other token still passes)', both);
  const outside = await grant(agent, { audience: 'https://api.example' });
  check(alg(outside) === 'RS256' && verdicts('https://api.example', outside)[0].ok, 'an outside audience gets a published-ring token the JWKS alone checks');
  // The ring file reaches other services: its holder can mint an HS256 token with any scope. The admin
  // API takes only published-ring tokens, so a forged auth:admin token is refused there.
  const [fh, fp] = token.split('.');
  const claims = JSON.parse(Buffer.from(fp, 'base64url').toString());
  claims.scope = 'auth:admin events:write';
  claims.jti = claims.jti + 'x';
  const kid = JSON.parse(Buffer.from(fh, 'base64url').toString()).kid;
  const key = JSON.parse(readFileSync(ringFile)).keys.map((k) => k.key).find((k) => k.kid === kid);
  const body = `${fh}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  const forged = `${body}.${createHmac('sha256', Buffer.from(key.key, 'base64url')).update(body).digest('base64url')}`;
  const [fv] = ringVerdicts('govern', forged);
  check(fv.ok && fv.scope.includes('auth:admin'), 'a ring holder can mint an HS256 auth:admin token other services accept', fv);
  const refused = await fetch(base + '/v1/auth/orgs/acme/clients', { headers: { authorization: `Bearer ${forged}` } });
  check(refused.status === 401, 'the admin API refuses the HS256 auth:admin token', refused.status);
  const ops = (await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'agent', name: 'ops', scopes: ['auth:admin'] })).json;
  const opsToken = await grant(ops, { scope: 'auth:admin' });
  check(alg(opsToken) === 'RS256', 'a token with scope auth:admin is issued on the published ring', alg(opsToken));
  const allowed = await fetch(base + '/v1/auth/orgs/acme/clients', { headers: { authorization: `Bearer ${opsToken}` } });
  check(allowed.status === 200, 'the admin API accepts it (its own organisation)', allowed.status);
  writeFileSync(stateFile, JSON.stringify({ agent, token, kids: ringKids() }));
} else if (mode === 'stalled') {
  // The ring file cannot be written (run.sh made its path a directory) and a rotation tick failed to
  // write it: revocations made elsewhere (a row another replica added, here by psql) still reach
  // this replica on the following ticks.
  const state = JSON.parse(readFileSync(stateFile));
  const t = await grant(state.agent);
  const { jti, exp } = JSON.parse(Buffer.from(t.split('.')[1], 'base64url').toString());
  const introspect = async () => {
    const r = await fetch(new URL('/oauth/introspect', base), {
      method: 'POST',
      headers: { authorization: 'Basic ' + Buffer.from(`${state.agent.client_id}:${state.agent.client_secret}`).toString('base64') },
      body: new URLSearchParams({ token: t }),
    });
    return (await r.json()).active;
  };
  check(await introspect() === true, 'a fresh token is active');
  execFileSync('bash', [process.env.REVOKE_SCRIPT, jti, String(exp)]);
  let active = true;
  for (let i = 0; i < 100 && active; i++) {
    await new Promise((res) => setTimeout(res, 100));
    active = await introspect();
  }
  check(active === false, 'a revocation added in PostgreSQL is picked up although the ring file write fails');
} else if (mode === 'rotated') {
  // The short schedule publishes the successor ahead of its use, and the file follows.
  const state = JSON.parse(readFileSync(stateFile));
  let kids = ringKids();
  for (let i = 0; i < 300 && kids.length < 2; i++) {
    await new Promise((res) => setTimeout(res, 100));
    kids = ringKids();
  }
  check(kids.length === 2 && kids.includes(state.kids[0]), 'the rotation rewrote the ring file: the successor beside the current key', { before: state.kids, after: kids });
  check((statSync(ringFile).mode & 0o777) === 0o600, 'still owner-only after the rewrite');
  const both = ringVerdicts('govern', state.token, await grant(state.agent));
  check(both[0].ok && both[1].ok, 'the earlier token and a new one pass with the rewritten file', both);
} else {
  const { agent, token } = JSON.parse(readFileSync(stateFile));
  const rs = await grant(agent);
  check(alg(rs) === 'RS256', 'auth.access_token_signing=published issues RS256', alg(rs));
  check(verdicts('govern', rs)[0].ok, 'a JWKS-only service checks it');
  const both = ringVerdicts('govern', token, rs);
  check(both[0].ok && both[1].ok, 'a token issued before the switch still passes where the ring is loaded', both);
}
if (failures > 0) process.exit(1);
console.log(`trust ${mode}: all checks passed`);
