// Single sign-on against npm `oidc-provider` (a certified OpenID Provider) as the organisation's outside
// provider: node sso.mjs BASE ADMIN_TOKEN, BASE being a running `govern serve auth`.
// The provider runs in this process with its own RS256 key; its login and consent steps are answered
// by this test (the user it names signs in). The browser is played with fetch, following redirects by
// hand with a cookie jar per host. Checked:
//   - code + PKCE through the provider; Govern creates the user from userinfo's email, links the
//     outside identity, finds the same user on the next sign-on, and matches an existing user by email;
//     the tokens Govern issues at the end name that user;
//   - the provider saw PKCE S256 and a nonce, and Govern's request carried state;
//   - refused (401 page, no code): an ID token from another issuer (re-signed with the provider's own
//     key), a bad signature, a key the provider never published, another audience, a wrong nonce, a
//     replayed state, a made-up state, a mix-up (`iss` in the answer not the provider's), and the
//     provider's own error answer.
import Provider from 'oidc-provider';
import * as jose from 'jose';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

const [base, adminToken] = process.argv.slice(2);
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
const b64u = (b) => Buffer.from(b).toString('base64url');

async function admin(method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

// --- the outside provider ---
const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingJwk = { ...(await jose.exportJWK(privateKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' };
const accounts = {
  'sub-new': { email: 'nia@example.com', email_verified: true },
  'sub-existing': { email: 'ed@example.com', email_verified: true },
  // Someone who registered Ed's address at the provider without proving it, and a new unverified one.
  'sub-takeover': { email: 'ed@example.com', email_verified: false },
  'sub-unverified': { email: 'una@example.com' },
};
let nextAccount = 'sub-new';
let tamper = null; // how to change the ID token in the next token response
const seen = []; // the authorization requests the provider got
const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const idp = `http://127.0.0.1:${server.address().port}`;
const clientSecret = b64u(randomBytes(24));
const provider = new Provider(idp, {
  clients: [
    {
      client_id: 'govern',
      client_secret: clientSecret,
      redirect_uris: [`${base}/oauth/sso/callback`],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingJwk] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  cookies: { keys: [b64u(randomBytes(32))] },
  features: { devInteractions: { enabled: false } },
  pkce: { required: () => true },
  ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, id) {
    if (!accounts[id]) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...accounts[id] }; } };
  },
});
provider.on('authorization.accepted', (ctx) => seen.push({ ...ctx.oidc.params }));

// Re-signs the ID token's claims with `key` (the provider's own by default).
async function resign(idToken, change, key = privateKey, kid = 'idp-1') {
  const claims = { ...jose.decodeJwt(idToken), ...change };
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
}
const otherKey = (await jose.generateKeyPair('RS256')).privateKey;
const tampers = {
  'another issuer': (t) => resign(t, { iss: 'http://127.0.0.1:1' }),
  'a bad signature': async (t) => {
    const [h, p, s] = t.split('.');
    const sig = Buffer.from(s, 'base64url');
    sig[10] ^= 1;
    return `${h}.${p}.${b64u(sig)}`;
  },
  'a key the provider never published (same kid)': (t) => resign(t, {}, otherKey),
  'another audience': (t) => resign(t, { aud: 'someone-else' }),
  'a wrong nonce': (t) => resign(t, { nonce: 'not-the-nonce' }),
  'an expired token': (t) => resign(t, { exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 }),
};

const callback = provider.callback();
server.on('request', async (req, res) => {
  try {
    if (req.url.startsWith('/interaction/')) {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        return await provider.interactionFinished(req, res, { login: { accountId: nextAccount } }, { mergeWithLastSubmission: false });
      }
      const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      grant.addOIDCScope(details.params.scope);
      return await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    }
    if (req.url.startsWith('/token') && tamper) {
      // Rewrites the ID token in the provider's answer (a forged or broken answer on the wire).
      const change = tamper;
      tamper = null;
      const end = res.end.bind(res);
      res.end = (body, ...rest) => {
        const t = JSON.parse(body.toString());
        Promise.resolve(change(t.id_token)).then((idToken) => {
          t.id_token = idToken;
          const out = JSON.stringify(t);
          res.setHeader('content-length', Buffer.byteLength(out));
          end(out, ...rest);
        });
        return res;
      };
    }
    callback(req, res);
  } catch (e) {
    res.statusCode = 500;
    res.end(String(e));
  }
});

// --- the user's browser: fetch with a cookie jar per host, redirects followed by hand ---
function newBrowser() {
  const jar = new Map(); // host -> Map(name -> value)
  return async function go(url, { stopAt } = {}) {
    for (let hop = 0; hop < 20; hop++) {
      const u = new URL(url);
      if (stopAt && stopAt(u)) return { url: u };
      const cookies = jar.get(u.host) || new Map();
      const r = await fetch(u, { redirect: 'manual', headers: cookies.size ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {} });
      for (const c of r.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const eq = pair.indexOf('=');
        cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      jar.set(u.host, cookies);
      const location = r.headers.get('location');
      if (r.status >= 300 && r.status < 400 && location) {
        url = new URL(location, u).toString();
        continue;
      }
      return { url: u, status: r.status, body: await r.text() };
    }
    throw new Error('too many redirects');
  };
}

// --- Govern: an organisation with the provider, an app, and one existing user ---
const appRedirect = 'http://127.0.0.1:9/cb';
let app;
await step('admin API: organisation, app, existing user, the provider as its single sign-on', async () => {
  assert.equal((await admin('POST', '/v1/auth/orgs', { org: 'corp', name: 'Corp' })).status, 201);
  app = (await admin('POST', '/v1/auth/orgs/corp/clients', { kind: 'app', confidential: false, name: 'web', scopes: ['openid', 'email'], redirect_uris: [appRedirect] })).json;
  assert.ok(app.client_id);
  assert.equal((await admin('POST', '/v1/auth/orgs/corp/users', { email: 'ed@example.com', display_name: 'Ed' })).status, 201);
  const set = await admin('PUT', '/v1/auth/orgs/corp/sso', { issuer: idp, client_id: 'govern', client_secret: clientSecret });
  assert.equal(set.status, 200, JSON.stringify(set.json));
});

// Starts at Govern's /oauth/sso for the app; returns where the browser stopped: the app's redirect
// (with Govern's code) or a page. `beforeCallback(url)` may change the provider's answer first.
async function signOn({ beforeCallback } = {}) {
  const verifier = b64u(randomBytes(32));
  const state = b64u(randomBytes(16));
  const start = new URL('/oauth/sso', base);
  start.search = new URLSearchParams({
    response_type: 'code', client_id: app.client_id, redirect_uri: appRedirect, scope: 'openid email', state,
    code_challenge: b64u(createHash('sha256').update(verifier).digest()), code_challenge_method: 'S256',
  }).toString();
  const go = newBrowser();
  const isCallback = (u) => u.origin + u.pathname === `${base}/oauth/sso/callback`;
  const atCallback = await go(start.toString(), { stopAt: isCallback });
  if (!atCallback.url || !isCallback(atCallback.url)) return { page: atCallback };
  const callbackUrl = beforeCallback ? beforeCallback(new URL(atCallback.url)) : atCallback.url;
  const end = await go(callbackUrl.toString(), { stopAt: (u) => u.origin + u.pathname === appRedirect });
  if (end.status !== undefined) return { page: end, callbackUrl, go };
  assert.equal(end.url.searchParams.get('state'), state);
  const r = await fetch(new URL('/oauth/token', base), {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: end.url.searchParams.get('code'), redirect_uri: appRedirect, client_id: app.client_id, code_verifier: verifier }),
  });
  const tokens = await r.json();
  assert.equal(r.status, 200, JSON.stringify(tokens));
  const info = await (await fetch(new URL('/oauth/userinfo', base), { headers: { authorization: `Bearer ${tokens.access_token}` } })).json();
  return { tokens, info, callbackUrl, go };
}
const users = async () => (await admin('GET', '/v1/auth/orgs/corp/users')).json.users;

let nia;
await step('a new user is created from the provider\'s answer (code + PKCE, state, nonce)', async () => {
  nextAccount = 'sub-new';
  nia = await signOn();
  assert.ok(nia.info, JSON.stringify(nia.page));
  assert.equal(nia.info.email, 'nia@example.com');
  const made = (await users()).find((u) => u.email === 'nia@example.com');
  assert.ok(made && made.subject === nia.info.sub && !made.has_password);
  const req = seen.at(-1);
  assert.equal(req.code_challenge_method, 'S256');
  assert.ok(req.code_challenge && req.code_challenge.length === 43);
  assert.ok(req.nonce && req.nonce.length >= 22, 'Govern sent a nonce');
  assert.ok(req.state && req.state.length >= 22, 'Govern sent a state');
  assert.equal(req.redirect_uri, `${base}/oauth/sso/callback`);
});
await step('the next sign-on finds the same (linked) user', async () => {
  const again = await signOn();
  assert.equal(again.info.sub, nia.info.sub);
  assert.equal((await users()).filter((u) => u.email === 'nia@example.com').length, 1);
});
await step('an existing user is matched by email', async () => {
  nextAccount = 'sub-existing';
  const ed = await signOn();
  const existing = (await users()).find((u) => u.email === 'ed@example.com');
  assert.equal(ed.info.sub, existing.subject);
});
await step('an email the provider does not say is verified neither takes over a user nor creates one', async () => {
  const before = (await users()).length;
  nextAccount = 'sub-takeover';
  const takeover = await signOn();
  assert.equal(takeover.page && takeover.page.status, 401, JSON.stringify(takeover.info));
  assert.match(takeover.page.body, /not say the email address is verified/);
  nextAccount = 'sub-unverified';
  const fresh = await signOn();
  assert.equal(fresh.page && fresh.page.status, 401, JSON.stringify(fresh.info));
  assert.equal((await users()).length, before, 'no user created');
  // The organisation may trust its provider with addresses (require_email_verified: false) ...
  const off = await admin('PUT', '/v1/auth/orgs/corp/sso', { issuer: idp, client_id: 'govern', client_secret: clientSecret, require_email_verified: false });
  assert.equal(off.status, 200, JSON.stringify(off.json));
  assert.equal(off.json.require_email_verified, false);
  const una = await signOn();
  assert.ok(una.info, JSON.stringify(una.page));
  assert.equal(una.info.email, 'una@example.com');
  // ... and the default is back on when the provider is set without it.
  const on = await admin('PUT', '/v1/auth/orgs/corp/sso', { issuer: idp, client_id: 'govern', client_secret: clientSecret });
  assert.equal(on.json.require_email_verified, true);
  nextAccount = 'sub-existing';
});
await step('a replayed state (the same provider answer twice) is refused', async () => {
  const first = await signOn();
  assert.ok(first.info);
  const replay = await first.go(first.callbackUrl.toString(), { stopAt: (u) => u.origin + u.pathname === appRedirect });
  assert.equal(replay.status, 401, JSON.stringify(replay));
  assert.match(replay.body, /expired or was already used/);
});
await step('a made-up state is refused', async () => {
  const r = await signOn({ beforeCallback: (u) => { u.searchParams.set('state', b64u(randomBytes(32))); return u; } });
  assert.equal(r.page.status, 401);
});
await step('a mix-up (the answer\'s iss is another provider) is refused', async () => {
  const r = await signOn({ beforeCallback: (u) => { u.searchParams.set('iss', 'http://127.0.0.1:1'); return u; } });
  assert.equal(r.page && r.page.status, 401, JSON.stringify(r.info));
});
await step('the provider\'s error answer is shown as a refusal', async () => {
  const r = await signOn({ beforeCallback: (u) => {
    const e = new URL(u.origin + u.pathname);
    e.search = new URLSearchParams({ error: 'access_denied', state: u.searchParams.get('state'), iss: idp }).toString();
    return e;
  } });
  assert.equal(r.page && r.page.status, 401, JSON.stringify(r.info));
});
for (const [what, change] of Object.entries(tampers)) {
  await step(`an ID token with ${what} is refused`, async () => {
    tamper = change;
    const r = await signOn();
    assert.equal(tamper, null, 'the token response was rewritten');
    assert.equal(r.page && r.page.status, 401, JSON.stringify(r.info || r.page));
    assert.match(r.page.body, /did not check out/);
  });
}
await step('after the refusals a sign-on still works', async () => {
  nextAccount = 'sub-new';
  const ok = await signOn();
  assert.equal(ok.info.sub, nia.info.sub);
});

server.close();
if (failures > 0) {
  console.error(`auth_sso: ${failures} step(s) failed`);
  process.exit(1);
}
console.log('auth_sso: all steps passed');
