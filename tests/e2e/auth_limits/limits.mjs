// Per-address limits over real sockets: the service runs with bursts of 3 failures and 1 a minute, and
// 127.0.0.3 as the only trusted proxy. Source addresses are chosen with localAddress (all of 127/8 is
// loopback on Linux), so one machine plays several clients. Node's http only: no npm packages.
import assert from 'node:assert/strict';
import http from 'node:http';

const [base, adminToken] = process.argv.slice(2);
const url = new URL(base);

function req(method, path, { body, headers = {}, local = '127.0.0.1' } = {}) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, method, path, localAddress: local, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}
const json = (o) => ({ body: JSON.stringify(o), headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` } });
async function step(name, fn) {
  await fn();
  console.log(`ok - ${name}`);
}

const redirect = 'http://127.0.0.1:9/cb';
const password = 'correct horse battery staple';
let app;
await step('admin API creates the organisation, user and app', async () => {
  assert.equal((await req('POST', '/v1/auth/orgs', json({ org: 'acme', name: 'Acme' }))).status, 201);
  assert.equal((await req('POST', '/v1/auth/orgs/acme/users', json({ email: 'ann@example.com', password }))).status, 201);
  const r = await req('POST', '/v1/auth/orgs/acme/clients', json({ kind: 'app', confidential: false, name: 'web', scopes: ['openid'], redirect_uris: [redirect] }));
  assert.equal(r.status, 201, r.body);
  app = JSON.parse(r.body);
});

// One password sign-in through the HTML form from `local` (and through a proxy when `xff` is given).
async function signIn(pass, { local = '127.0.0.1', xff } = {}) {
  const q = new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: redirect, scope: 'openid', state: 's',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
  const extra = xff ? { 'x-forwarded-for': xff } : {};
  const page = await req('GET', `/oauth/authorize?${q}`, { local, headers: extra });
  if (page.status === 429) return page;  // the GET is not limited; kept for a clear failure if it were
  assert.equal(page.status, 200, page.body);
  const form = new URLSearchParams();
  for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(m[1], m[2].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
  }
  form.set('email', 'ann@example.com');
  form.set('password', pass);
  const cookie = (page.headers['set-cookie'] || []).map((c) => c.split(';')[0]).join('; ');
  return req('POST', '/oauth/authorize', { local, body: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...extra } });
}

function assertLimitedPage(r) {
  assert.equal(r.status, 429, r.body);
  assert.match(r.headers['content-type'], /text\/html/);
  assert.ok(Number(r.headers['retry-after']) >= 1, `Retry-After: ${r.headers['retry-after']}`);
  assert.match(r.body, /Too many failed sign-in attempts/);
}

await step('three wrong passwords from 127.0.0.2, then 429 with Retry-After even for the right one', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await signIn('wrong', { local: '127.0.0.2' })).status, 401);
  assertLimitedPage(await signIn('wrong', { local: '127.0.0.2' }));
  assertLimitedPage(await signIn(password, { local: '127.0.0.2' }));
});

await step('another address still gets through, and its success does not reset 127.0.0.2', async () => {
  assert.equal((await signIn('wrong', { local: '127.0.0.1' })).status, 401);
  const ok = await signIn(password, { local: '127.0.0.1' });
  assert.equal(ok.status, 302, ok.body);
  assert.ok(ok.headers.location.startsWith(redirect));
  assertLimitedPage(await signIn(password, { local: '127.0.0.2' }));
});

await step('X-Forwarded-For from an untrusted peer is ignored (no escape by spoofing)', async () => {
  assertLimitedPage(await signIn(password, { local: '127.0.0.2', xff: '198.51.100.7' }));
});

await step('through the trusted proxy 127.0.0.3: the rightmost untrusted hop is the client', async () => {
  assertLimitedPage(await signIn(password, { local: '127.0.0.3', xff: '127.0.0.2' }));
  // A client-written hop left of the real one changes nothing; a different real client gets through.
  assertLimitedPage(await signIn(password, { local: '127.0.0.3', xff: '198.51.100.7, 127.0.0.2' }));
  const other = await signIn(password, { local: '127.0.0.3', xff: '127.0.0.2, 198.51.100.7' });
  assert.equal(other.status, 302, other.body);
  // The proxy's own address was never counted: it signs in too.
  assert.equal((await signIn(password, { local: '127.0.0.3' })).status, 302);
});

const token = (local) => req('POST', '/oauth/token', { local, body: 'grant_type=client_credentials',
  headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic ' + Buffer.from('gvc_nobody:wrong').toString('base64') } });

await step('token endpoint: three failed client authentications, then 429 with the RFC 6749 error JSON', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await token('127.0.0.4');
    assert.equal(r.status, 401, r.body);
    assert.equal(JSON.parse(r.body).error, 'invalid_client');
  }
  const r = await token('127.0.0.4');
  assert.equal(r.status, 429, r.body);
  assert.match(r.headers['content-type'], /application\/json/);
  assert.ok(Number(r.headers['retry-after']) >= 1);
  assert.equal(JSON.parse(r.body).error, 'temporarily_unavailable');
  assert.equal(r.headers['cache-control'], 'no-store');
  // Another address is not limited; nor is sign-in from 127.0.0.4 (a separate limiter).
  assert.equal((await token('127.0.0.5')).status, 401);
  assert.equal((await signIn(password, { local: '127.0.0.4' })).status, 302);
});
console.log('all steps passed');
