// openid-client and jose against a running `govern serve auth`: node interop.mjs BASE ADMIN_TOKEN.
// Sets up an organisation, a user, a public app and two agents through the admin API, then runs
// authorization code + PKCE (the sign-in form driven with plain HTTP, cookies kept), client credentials,
// refresh, token exchange; verifies tokens with jose and only the published JWKS; and checks that the
// attacks are refused with the right error.
import * as client from 'openid-client';
import * as jose from 'jose';
import assert from 'node:assert/strict';
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

const [base, adminToken, upstream, upstreamAdmin] = process.argv.slice(2);
const issuer = new URL(base);
const redirect = 'http://127.0.0.1:9/cb';
let failures = 0;
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

async function admin(method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), json: text ? JSON.parse(text) : null };
}

// --- set up through the admin API ---
const password = 'correct horse battery staple';
let app, agent, other;
await step('admin API creates the organisation, user, group and clients', async () => {
  assert.equal((await admin('POST', '/v1/auth/orgs', { org: 'acme', name: 'Acme' })).status, 201);
  const user = await admin('POST', '/v1/auth/orgs/acme/users', { email: 'ann@example.com', password, display_name: 'Ann' });
  assert.equal(user.status, 201, JSON.stringify(user.json));
  assert.equal((await admin('POST', '/v1/auth/orgs/acme/groups', { name: 'ops' })).status, 201);
  assert.equal((await admin('PUT', `/v1/auth/orgs/acme/groups/ops/members/${user.json.user_id}`)).status, 204);
  app = (await admin('POST', '/v1/auth/orgs/acme/clients', {
    kind: 'app', confidential: false, name: 'web', scopes: ['openid', 'email', 'profile', 'events:read'], redirect_uris: [redirect],
  })).json;
  agent = (await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'agent', name: 'bot', scopes: ['events:read', 'events:write'] })).json;
  other = (await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'agent', name: 'other', scopes: ['events:read'] })).json;
  assert.ok(app.client_id && !app.client_secret);
  assert.ok(agent.client_secret.startsWith('gvs_'));
});
await step('admin API answers bad input with problem+json', async () => {
  const dup = await admin('POST', '/v1/auth/orgs', { org: 'acme' });
  assert.equal(dup.status, 409);
  assert.equal(dup.type, 'application/problem+json');
  const bad = await admin('POST', '/v1/auth/orgs/acme/clients', { kind: 'app', redirect_uris: ['http://evil.example/cb'] });
  assert.equal(bad.status, 400);
  const r = await fetch(base + '/v1/auth/orgs', { headers: { authorization: 'Bearer gva_nope' } });
  assert.equal(r.status, 401);
});

const insecure = { execute: [client.allowInsecureRequests] };
const appConfig = await client.discovery(issuer, app.client_id, { redirect_uris: [redirect] }, client.None(), insecure);
const agentConfig = await client.discovery(issuer, agent.client_id, {}, client.ClientSecretBasic(agent.client_secret), insecure);
const otherConfig = await client.discovery(issuer, other.client_id, {}, client.ClientSecretPost(other.client_secret), insecure);
const jwks = jose.createRemoteJWKSet(new URL('/oauth/jwks', base));

// The browser part with plain HTTP: GET the authorization URL, POST the sign-in form, follow to the code.
async function signIn(config, params, { email = 'ann@example.com', pass = password, cookie, noCsrf = false } = {}) {
  const url = client.buildAuthorizationUrl(config, params);
  let r = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  if (r.status === 302) return { location: r.headers.get('location'), cookie };
  const html = await r.text();
  assert.equal(r.status, 200, html);
  const csrfCookie = (r.headers.get('set-cookie') || '').split(';')[0];
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(m[1], m[2].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
  }
  form.set('email', email);
  form.set('password', pass);
  if (!noCsrf) r = await fetch(new URL('/oauth/authorize', base), { method: 'POST', body: form, redirect: 'manual', headers: { cookie: csrfCookie } });
  else r = await fetch(new URL('/oauth/authorize', base), { method: 'POST', body: form, redirect: 'manual' });
  const setCookie = r.headers.get('set-cookie');
  return { status: r.status, location: r.headers.get('location'), cookie: setCookie ? setCookie.split(';')[0] : cookie, retryAfter: r.headers.get('retry-after'), body: await r.text() };
}

let userTokens, cookie;
await step('authorization code + PKCE with openid-client; ID token verified by jose with the JWKS', async () => {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const params = { redirect_uri: redirect, scope: 'openid email events:read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce };
  const got = await signIn(appConfig, params);
  assert.equal(got.status, 302, got.body);
  cookie = got.cookie;
  userTokens = await client.authorizationCodeGrant(appConfig, new URL(got.location), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
  assert.ok(userTokens.refresh_token.startsWith('gvr_'));
  const claims = userTokens.claims();
  assert.equal(claims.nonce, nonce);
  const { payload } = await jose.jwtVerify(userTokens.id_token, jwks, { issuer: base, audience: app.client_id });
  assert.equal(payload.sub, claims.sub);
  const info = await client.fetchUserInfo(appConfig, userTokens.access_token, claims.sub);
  assert.equal(info.email, 'ann@example.com');
});

await step('the session cookie skips the password on the next authorization', async () => {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const got = await signIn(appConfig, { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state }, { cookie });
  assert.ok(got.location && got.location.includes('code='), JSON.stringify(got));
  await client.authorizationCodeGrant(appConfig, new URL(got.location), { pkceCodeVerifier: verifier, expectedState: state });
});

await step('refresh rotates; reusing the old refresh token revokes the family', async () => {
  const first = userTokens.refresh_token;
  const next = await client.refreshTokenGrant(appConfig, first);
  assert.notEqual(next.refresh_token, first);
  await assert.rejects(client.refreshTokenGrant(appConfig, first), (e) => e.error === 'invalid_grant');
  await assert.rejects(client.refreshTokenGrant(appConfig, next.refresh_token), (e) => e.error === 'invalid_grant');
  const list = await (await fetch(base + '/oauth/revocations')).json();
  const sid = jose.decodeJwt(next.access_token).sid;
  assert.ok(list.sid && sid in list.sid, JSON.stringify(list));
  const intro = await client.tokenIntrospection(agentConfig, next.access_token);
  assert.equal(intro.active, false);
});

let agentToken, outsideToken;
await step('client credentials for an agent; an outside audience gets a token jose verifies with the JWKS', async () => {
  agentToken = await client.clientCredentialsGrant(agentConfig, { scope: 'events:write' });
  assert.equal(agentToken.scope, 'events:write');
  const intro = await client.tokenIntrospection(agentConfig, agentToken.access_token);
  assert.equal(intro.active, true);
  assert.equal(intro.client_id, agent.client_id);
  outsideToken = await client.clientCredentialsGrant(agentConfig, { audience: 'https://api.example' });
  const { payload, protectedHeader } = await jose.jwtVerify(outsideToken.access_token, jwks, { issuer: base, audience: 'https://api.example', typ: 'at+jwt' });
  assert.equal(payload.sub, agent.client_id);
  assert.notEqual(protectedHeader.alg, 'HS256');
});

await step('token exchange: the agent acts for the user (act claim)', async () => {
  // A fresh user session (the earlier one was revoked by the reuse above).
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const got = await signIn(appConfig, { redirect_uri: redirect, scope: 'openid events:read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state }, { cookie });
  const fresh = await client.authorizationCodeGrant(appConfig, new URL(got.location), { pkceCodeVerifier: verifier, expectedState: state });
  const t = await client.genericGrantRequest(agentConfig, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: fresh.access_token,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    actor_token: agentToken.access_token,
    actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    scope: 'events:read',
    audience: 'https://api.example',
  });
  const { payload } = await jose.jwtVerify(t.access_token, jwks, { issuer: base, audience: 'https://api.example' });
  assert.equal(payload.sub, jose.decodeJwt(fresh.access_token).sub);
  assert.equal(payload.act.sub, agent.client_id);
  // A delegated token for Govern itself cannot enrol sign-in factors for the person.
  const internal = await client.genericGrantRequest(agentConfig, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: fresh.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    actor_token: agentToken.access_token, actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    scope: 'events:read',
  });
  const enrol = await fetch(base + '/v1/auth/me/totp', { method: 'POST', headers: { authorization: `Bearer ${internal.access_token}` } });
  assert.equal(enrol.status, 403);
  // Another agent may not present this agent's token as its actor.
  await assert.rejects(client.genericGrantRequest(otherConfig, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: fresh.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    actor_token: agentToken.access_token, actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  }), (e) => e.error === 'invalid_grant');
});

await step('jose refuses wrong audience, expired, tampered and alg none', async () => {
  const t = outsideToken.access_token;
  await assert.rejects(jose.jwtVerify(t, jwks, { issuer: base, audience: 'https://elsewhere.example' }), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  await assert.rejects(jose.jwtVerify(t, jwks, { issuer: base, audience: 'https://api.example', currentDate: new Date(Date.now() + 3600e3) }), { code: 'ERR_JWT_EXPIRED' });
  const [h, p, s] = t.split('.');
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  claims.sub = 'someone-else';
  const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
  await assert.rejects(jose.jwtVerify(forged, jwks, { issuer: base, audience: 'https://api.example' }), { code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
  await assert.rejects(jose.jwtVerify(none, jwks, { issuer: base }));
  // And the server: a forged or alg-none token is inactive at introspection and refused at exchange.
  assert.equal((await client.tokenIntrospection(agentConfig, forged)).active, false);
  assert.equal((await client.tokenIntrospection(agentConfig, none)).active, false);
  await assert.rejects(client.genericGrantRequest(agentConfig, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: none, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  }), (e) => e.error === 'invalid_grant');
});

async function rawToken(body, headers = {}) {
  const r = await fetch(base + '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
  return { status: r.status, json: await r.json(), www: r.headers.get('www-authenticate'), cache: r.headers.get('cache-control') };
}

await step('code attacks: wrong redirect URI, missing and wrong PKCE verifier, code reuse', async () => {
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 's' };
  // A redirect URI that is not registered is never redirected to.
  const bad = await fetch(client.buildAuthorizationUrl(appConfig, { ...params, redirect_uri: 'http://127.0.0.1:9/cb/evil' }), { redirect: 'manual' });
  assert.equal(bad.status, 400);
  // No PKCE: refused at the authorization endpoint with a redirect carrying the error.
  const noPkce = await fetch(new URL(`/oauth/authorize?response_type=code&client_id=${app.client_id}&redirect_uri=${encodeURIComponent(redirect)}&state=s`, base), { redirect: 'manual' });
  assert.equal(noPkce.status, 302);
  assert.match(noPkce.headers.get('location'), /error=invalid_request/);
  const codeOf = async () => new URL((await signIn(appConfig, params, { cookie })).location).searchParams.get('code');
  let code = await codeOf();
  let r = await rawToken({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: app.client_id });
  assert.equal(r.json.error, 'invalid_request');
  code = await codeOf();
  r = await rawToken({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: app.client_id, code_verifier: client.randomPKCECodeVerifier() });
  assert.equal(r.json.error, 'invalid_grant');
  code = await codeOf();
  r = await rawToken({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/other', client_id: app.client_id, code_verifier: verifier });
  assert.equal(r.json.error, 'invalid_grant');
  code = await codeOf();
  r = await rawToken({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: app.client_id, code_verifier: verifier });
  assert.equal(r.status, 200);
  assert.equal(r.cache, 'no-store');
  r = await rawToken({ grant_type: 'authorization_code', code, redirect_uri: redirect, client_id: app.client_id, code_verifier: verifier });
  assert.equal(r.json.error, 'invalid_grant');
});

await step('token endpoint errors per RFC 6749 section 5.2', async () => {
  let r = await rawToken({ grant_type: 'password', username: 'a', password: 'b' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error, 'unsupported_grant_type');
  r = await rawToken({ grant_type: 'client_credentials' }, { authorization: 'Basic ' + Buffer.from(`${agent.client_id}:wrong`).toString('base64') });
  assert.equal(r.status, 401);
  assert.equal(r.json.error, 'invalid_client');
  assert.match(r.www, /^Basic/);
  r = await rawToken({ grant_type: 'client_credentials', scope: 'admin' }, { authorization: 'Basic ' + Buffer.from(`${agent.client_id}:${agent.client_secret}`).toString('base64') });
  assert.equal(r.json.error, 'invalid_scope');
  const dup = await fetch(base + '/oauth/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=a&grant_type=b' });
  assert.equal((await dup.json()).error, 'invalid_request');
});

function totp(base32, atMs) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const ch of base32.replace(/=+$/, '')) bits += alphabet.indexOf(ch).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(atMs / 1000 / 30)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const off = mac[mac.length - 1] & 15;
  return String((mac.readUInt32BE(off) & 0x7fffffff) % 1e6).padStart(6, '0');
}

await step('TOTP second factor: enrol with the user token, then sign-in asks for a single-use code', async () => {
  const tomPassword = 'tom-password-123';
  assert.equal((await admin('POST', '/v1/auth/orgs/acme/users', { email: 'tom@example.com', password: tomPassword })).status, 201);
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 't' };
  const first = await signIn(appConfig, params, { email: 'tom@example.com', pass: tomPassword });
  assert.equal(first.status, 302, first.body);
  const tokens = await client.authorizationCodeGrant(appConfig, new URL(first.location), { pkceCodeVerifier: verifier, expectedState: 't' });
  const auth = { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' };
  const enrol = await (await fetch(base + '/v1/auth/me/totp', { method: 'POST', headers: auth })).json();
  assert.match(enrol.otpauth_uri, /^otpauth:\/\/totp\//);
  let r = await fetch(base + '/v1/auth/me/totp/confirm', { method: 'POST', headers: auth, body: JSON.stringify({ code: '000000' }) });
  assert.equal(r.status, 401);
  r = await fetch(base + '/v1/auth/me/totp/confirm', { method: 'POST', headers: auth, body: JSON.stringify({ code: totp(enrol.secret, Date.now()) }) });
  assert.equal(r.status, 204);
  // Password alone now leads to the code page.
  const page = await signIn(appConfig, params, { email: 'tom@example.com', pass: tomPassword });
  assert.equal(page.status, 200);
  const mfaOf = (html) => html.match(/name="mfa" value="([^"]+)"/)[1];
  const post = (mfa, code) => fetch(new URL('/oauth/authorize/totp', base), { method: 'POST', body: new URLSearchParams({ mfa, code }), redirect: 'manual' });
  r = await post(mfaOf(page.body), '000000');
  assert.equal(r.status, 401);
  const retry = await r.text();
  // The next step's code (the confirming step's code is spent).
  const code = totp(enrol.secret, Date.now() + 30000);
  r = await post(mfaOf(retry), code);
  assert.equal(r.status, 302);
  const got = await client.authorizationCodeGrant(appConfig, new URL(r.headers.get('location')), { pkceCodeVerifier: verifier, expectedState: 't' });
  assert.ok(got.id_token);
  // The same code again is refused; a used challenge is gone.
  const again = await signIn(appConfig, params, { email: 'tom@example.com', pass: tomPassword });
  assert.equal((await post(mfaOf(again.body), code)).status, 401);
  assert.equal((await post(mfaOf(retry), code)).status, 400);
});

// A software passkey authenticator (ES256, attestation "none"): enough CBOR to write the
// attestation object and the COSE key.
function cbor(v) {
  const head = (major, n) => (n < 24 ? Buffer.from([(major << 5) | n]) : n < 256 ? Buffer.from([(major << 5) | 24, n]) : Buffer.from([(major << 5) | 25, n >> 8, n & 255]));
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === 'string') return Buffer.concat([head(3, Buffer.byteLength(v)), Buffer.from(v)]);
  if (Buffer.isBuffer(v)) return Buffer.concat([head(2, v.length), v]);
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
  return Buffer.concat([head(5, entries.length), ...entries.flatMap(([k, x]) => [cbor(k), cbor(x)])]);
}
class Authenticator {
  constructor(rpId) {
    this.rpId = rpId;
    this.keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.id = randomBytes(16);
    this.count = 0;
  }
  authData(flags, attested) {
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.count);
    return Buffer.concat([createHash('sha256').update(this.rpId).digest(), Buffer.from([flags]), counter, attested || Buffer.alloc(0)]);
  }
  create(options, origin) {
    const jwk = this.keys.publicKey.export({ format: 'jwk' });
    const cose = cbor(new Map([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x, 'base64url')], [-3, Buffer.from(jwk.y, 'base64url')]]));
    const idLen = Buffer.from([0, this.id.length]);
    const authData = this.authData(0x45, Buffer.concat([Buffer.alloc(16), idLen, this.id, cose]));
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin, crossOrigin: false }));
    this.userHandle = options.user.id;
    return {
      id: this.id.toString('base64url'), rawId: this.id.toString('base64url'), type: 'public-key',
      response: { clientDataJSON: clientData.toString('base64url'), attestationObject: cbor({ fmt: 'none', attStmt: {}, authData }).toString('base64url'), transports: ['internal'] },
      clientExtensionResults: {},
    };
  }
  get(options, origin) {
    this.count++;
    const authData = this.authData(0x05);
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin, crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), this.keys.privateKey);
    return {
      id: this.id.toString('base64url'), rawId: this.id.toString('base64url'), type: 'public-key',
      response: { clientDataJSON: clientData.toString('base64url'), authenticatorData: authData.toString('base64url'), signature: signature.toString('base64url'), userHandle: this.userHandle },
      clientExtensionResults: {},
    };
  }
}

await step('passkeys: register with the user token, then sign in with the passkey inside an authorization request', async () => {
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'p' };
  const first = await signIn(appConfig, params, { cookie });
  const tokens = await client.authorizationCodeGrant(appConfig, new URL(first.location), { pkceCodeVerifier: verifier, expectedState: 'p' });
  const auth = { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' };
  const authenticator = new Authenticator(issuer.hostname);
  const creation = await (await fetch(base + '/v1/auth/me/passkeys/options', { method: 'POST', headers: auth })).json();
  assert.ok(creation.user, JSON.stringify(creation));
  let r = await fetch(base + '/v1/auth/me/passkeys', { method: 'POST', headers: auth, body: JSON.stringify(authenticator.create(creation, base)) });
  assert.equal(r.status, 201, await r.text());
  const passkeySignIn = async (tamper) => {
    const { handle, publicKey } = await (await fetch(base + '/oauth/passkey/options', { method: 'POST' })).json();
    const credential = authenticator.get(publicKey, tamper ? 'http://evil.example' : base);
    const url = client.buildAuthorizationUrl(appConfig, { ...params, prompt: 'login' });
    const page = await fetch(url, { redirect: 'manual' });
    const csrf = (await page.text()).match(/name="csrf" value="([^"]+)"/)[1];
    const form = new URLSearchParams(url.searchParams);
    form.delete('prompt');
    form.set('csrf', csrf);
    form.set('handle', handle);
    form.set('credential', JSON.stringify(credential));
    return fetch(new URL('/oauth/authorize/passkey', base), { method: 'POST', body: form, redirect: 'manual', headers: { cookie: page.headers.get('set-cookie').split(';')[0] } });
  };
  r = await passkeySignIn(false);
  assert.equal(r.status, 302);
  const got = await client.authorizationCodeGrant(appConfig, new URL(r.headers.get('location')), { pkceCodeVerifier: verifier, expectedState: 'p' });
  assert.equal(got.claims().sub, tokens.claims().sub);
  assert.equal((await passkeySignIn(true)).status, 401);  // wrong origin
});

await step('single sign-on through an outside OIDC provider (a second govern serve auth): new user created, existing user matched by email', async () => {
  const up = async (method, path, body) => {
    const r = await fetch(upstream + path, { method, headers: { authorization: `Bearer ${upstreamAdmin}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
    return { status: r.status, json: await r.json().catch(() => null) };
  };
  assert.equal((await up('POST', '/v1/auth/orgs', { org: 'idp' })).status, 201);
  await up('POST', '/v1/auth/orgs/idp/users', { email: 'sam@example.com', password: 'sam-password-1' });
  await up('POST', '/v1/auth/orgs/idp/users', { email: 'ann@example.com', password: 'ann-upstream-1' });
  const upstreamClient = (await up('POST', '/v1/auth/orgs/idp/clients', { kind: 'app', confidential: true, scopes: ['openid', 'email'], redirect_uris: [base + '/oauth/sso/callback'] })).json;
  // Govern's own userinfo says email_verified: false (it does not verify addresses), so by default
  // (require_email_verified) its answers cannot pick or create a user by email.
  let set = await admin('PUT', '/v1/auth/orgs/acme/sso', { issuer: upstream, client_id: upstreamClient.client_id, client_secret: upstreamClient.client_secret });
  assert.equal(set.status, 200, JSON.stringify(set.json));
  assert.equal(set.json.require_email_verified, true);
  const ssoSignIn = async (email, pass, refused = false) => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(appConfig, { redirect_uri: redirect, scope: 'openid email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce });
    url.pathname = '/oauth/sso';
    let r = await fetch(url, { redirect: 'manual' });
    assert.equal(r.status, 302);
    const toProvider = new URL(r.headers.get('location'));
    assert.equal(toProvider.origin, upstream);
    // The provider's own sign-in form.
    r = await fetch(toProvider, { redirect: 'manual' });
    const html = await r.text();
    const cookieHeader = r.headers.get('set-cookie').split(';')[0];
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1], m[2].replace(/&amp;/g, '&'));
    form.set('email', email);
    form.set('password', pass);
    r = await fetch(new URL('/oauth/authorize', upstream), { method: 'POST', body: form, redirect: 'manual', headers: { cookie: cookieHeader } });
    assert.equal(r.status, 302);
    const back = new URL(r.headers.get('location'));
    assert.equal(back.origin + back.pathname, base + '/oauth/sso/callback');
    r = await fetch(back, { redirect: 'manual' });
    if (refused) {
      assert.equal(r.status, 401);
      assert.match(await r.text(), /not say the email address is verified/);
      return null;
    }
    assert.equal(r.status, 302, await r.text());
    const done = await client.authorizationCodeGrant(appConfig, new URL(r.headers.get('location')), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    // Replaying the provider's answer is refused (the state is single use).
    assert.equal((await fetch(back, { redirect: 'manual' })).status, 401);
    return client.fetchUserInfo(appConfig, done.access_token, done.claims().sub);
  };
  assert.equal(await ssoSignIn('sam@example.com', 'sam-password-1', true), null);
  set = await admin('PUT', '/v1/auth/orgs/acme/sso', { issuer: upstream, client_id: upstreamClient.client_id, client_secret: upstreamClient.client_secret, require_email_verified: false });
  assert.equal(set.json.require_email_verified, false);
  const sam = await ssoSignIn('sam@example.com', 'sam-password-1');
  assert.equal(sam.email, 'sam@example.com');
  assert.equal(sam.org, 'acme');
  const again = await ssoSignIn('sam@example.com', 'sam-password-1');
  assert.equal(again.sub, sam.sub);  // linked, not created twice
  const ann = await ssoSignIn('ann@example.com', 'ann-upstream-1');
  assert.equal(ann.sub, userTokens.claims().sub);  // the existing acme user, matched by email
});

await step('account page: no-store; its POSTs need the token of this session, from the same origin', async () => {
  const pw = 'acct-password-123';
  assert.equal((await admin('POST', '/v1/auth/orgs/acme/users', { email: 'acct@example.com', password: pw })).status, 201);
  const session = async () => {
    const verifier = client.randomPKCECodeVerifier();
    const params = { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'acct' };
    const got = await signIn(appConfig, params, { email: 'acct@example.com', pass: pw });
    assert.equal(got.status, 302, got.body);
    return got.cookie;
  };
  const a = await session();
  const b = await session();
  const page = async (c) => {
    const r = await fetch(new URL('/oauth/account', base), { headers: { cookie: c } });
    return { status: r.status, cache: r.headers.get('cache-control'), setCookie: r.headers.get('set-cookie'), html: await r.text() };
  };
  const tokenOf = (html) => html.match(/name="csrf" value="([^"]+)"/)[1];
  const pa = await page(a);
  const pb = await page(b);
  assert.equal(pa.status, 200, pa.html);
  assert.equal(pa.cache, 'no-store');
  assert.equal(pa.setCookie, null);  // no double-submit cookie any more
  const ta = tokenOf(pa.html);
  const tb = tokenOf(pb.html);
  assert.notEqual(ta, tb);
  assert.equal(tokenOf((await page(a)).html), ta);  // the session's token, on every load
  const signout = (c, csrf, headers = {}) => fetch(new URL('/oauth/account/signout', base), { method: 'POST', body: new URLSearchParams({ csrf }), headers: { cookie: c, ...headers } });
  assert.equal((await signout(a, tb)).status, 403);  // another session's token
  assert.equal((await signout(a, '')).status, 403);
  assert.equal((await signout(a, ta, { origin: 'https://evil.example' })).status, 403);
  assert.equal((await signout(a, ta, { 'sec-fetch-site': 'cross-site' })).status, 403);
  const options = await fetch(new URL('/oauth/account/passkeys/options', base), { method: 'POST', body: '{}', headers: { cookie: a, 'x-csrf-token': tb } });
  assert.equal(options.status, 403);
  assert.equal((await page(a)).status, 200);  // none of those signed it out
  assert.equal((await signout(a, ta, { origin: issuer.origin, 'sec-fetch-site': 'same-origin' })).status, 200);
  assert.equal((await page(a)).status, 401);
  assert.equal((await page(b)).status, 200);
});

await step('password guessing beyond the limit is answered 429 with Retry-After; unknown user = wrong password', async () => {
  const verifier = client.randomPKCECodeVerifier();
  const params = { redirect_uri: redirect, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 's' };
  // Login CSRF: a form posted without the page's cookie is refused before any password check.
  assert.equal((await signIn(appConfig, params, { noCsrf: true })).status, 403);
  const wrong = await signIn(appConfig, params, { pass: 'guess-0' });
  const unknown = await signIn(appConfig, params, { email: 'nobody@example.com', pass: 'guess-0' });
  assert.equal(wrong.status, 401);
  assert.equal(unknown.status, 401);
  assert.equal(wrong.body.replace(/value="[^"]*"/g, ''), unknown.body.replace(/value="[^"]*"/g, ''));
  let last;
  for (let i = 1; i < 10; i++) {
    last = await signIn(appConfig, params, { pass: `guess-${i}` });
    if (last.status === 429) break;
  }
  assert.equal(last.status, 429);
  assert.ok(Number(last.retryAfter) > 0);
  // Locked even with the right password.
  assert.equal((await signIn(appConfig, params)).status, 429);
});

if (failures) {
  console.log(`${failures} step(s) failed`);
  process.exit(1);
}
console.log('all steps passed');
