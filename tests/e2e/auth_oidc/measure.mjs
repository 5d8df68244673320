// Timing of a full browser sign-in against a running `govern serve auth` (not run by ctest):
// node measure.mjs BASE ADMIN_TOKEN [N]. Prints the median and p90 of: the sign-in page (GET authorize),
// the form post (Argon2id check + PostgreSQL: rate-limit state, session, code), the code redemption
// (token endpoint: code, refresh family, access + refresh + ID token), and a client-credentials grant.
import * as client from 'openid-client';
const [base, admin, n = '20'] = process.argv.slice(2);
const redirect = 'http://127.0.0.1:9/cb';
const h = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
const post = async (p, b) => (await fetch(base + p, { method: 'POST', headers: h, body: JSON.stringify(b) })).json();
await post('/v1/auth/orgs', { org: 'bench' });
await post('/v1/auth/orgs/bench/users', { email: 'b@example.com', password: 'bench-password-1' });
const app = await post('/v1/auth/orgs/bench/clients', { kind: 'app', confidential: false, scopes: ['openid'], redirect_uris: [redirect] });
const agent = await post('/v1/auth/orgs/bench/clients', { kind: 'agent', scopes: ['x'] });
const cfg = await client.discovery(new URL(base), app.client_id, { redirect_uris: [redirect] }, client.None(), { execute: [client.allowInsecureRequests] });
const acfg = await client.discovery(new URL(base), agent.client_id, {}, client.ClientSecretBasic(agent.client_secret), { execute: [client.allowInsecureRequests] });
const t = { page: [], post: [], token: [], cc: [] };
for (let i = 0; i < Number(n); i++) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(cfg, { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 's' });
  let t0 = performance.now();
  const pageResponse = await fetch(url);
  const html = await pageResponse.text();
  const csrfCookie = pageResponse.headers.get('set-cookie').split(';')[0];
  t.page.push(performance.now() - t0);
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1], m[2].replace(/&amp;/g, '&'));
  form.set('email', 'b@example.com');
  form.set('password', 'bench-password-1');
  t0 = performance.now();
  const r = await fetch(new URL('/oauth/authorize', base), { method: 'POST', body: form, redirect: 'manual', headers: { cookie: csrfCookie } });
  t.post.push(performance.now() - t0);
  t0 = performance.now();
  await client.authorizationCodeGrant(cfg, new URL(r.headers.get('location')), { pkceCodeVerifier: verifier, expectedState: 's' });
  t.token.push(performance.now() - t0);
  t0 = performance.now();
  await client.clientCredentialsGrant(acfg);
  t.cc.push(performance.now() - t0);
}
const q = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))].toFixed(1);
for (const [k, v] of Object.entries(t)) console.log(`${k.padEnd(6)} median ${q(v, 0.5)} ms  p90 ${q(v, 0.9)} ms  (n=${v.length})`);
