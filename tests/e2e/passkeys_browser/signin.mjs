// Passkeys through the auth service's own pages: node signin.mjs BASE ADMIN_TOKEN, BASE being
// `govern serve auth` at http://localhost:PORT (a secure context whose host is a valid RP ID).
// Headless Chromium with a CDP virtual authenticator (CTAP2, resident keys, user verification):
//   - signs in with the password on the sign-in page (a real browser follows the redirect to the app,
//     which the page's Content-Security-Policy form-action must allow), the app redeems the code;
//   - on the auth service's account page (/oauth/account, the browser session of that sign-in) adds a
//     passkey with the page's button, sees it listed, and signs out;
//   - signs in twice with the page's "Sign in with a passkey" button: each time a code for the same
//     user, and the counter moves;
//   - refusals: the user not verified (the browser refuses since the server asks for UV; and when the
//     page is tampered to ask without UV, the server refuses), a passkey the server does not know, and
//     a cancelled ceremony (no passkey left): the page says so and no code is issued;
//   - an administrator removes the passkey (admin API): the session cookie, refresh and access tokens
//     of the user end, the passkey is refused; the last factor only goes with force; the record (also
//     through `govern auth factor list` when SIGNIN_DATA_DIR and GOVERN are set).
import { chromium } from 'playwright-core';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';

const [base, adminToken] = process.argv.slice(2);
let checks = 0;
const failures = [];
function check(ok, what, detail) {
  checks++;
  if (!ok) failures.push(`${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
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

// The application: a loopback redirect URI that shows what it was given.
const app = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><title>app</title><p>back at the app</p>');
});
await new Promise((resolve) => app.listen(0, '127.0.0.1', resolve));
const redirect = `http://127.0.0.1:${app.address().port}/cb`;

const password = 'correct horse battery staple';
const org = await admin('POST', '/v1/auth/orgs', { org: 'pk', name: 'Passkeys' });
const user = await admin('POST', '/v1/auth/orgs/pk/users', { email: 'pat@example.com', password, display_name: 'Pat' });
const web = await admin('POST', '/v1/auth/orgs/pk/clients', {
  kind: 'app', confidential: false, name: 'web', scopes: ['openid', 'email'], redirect_uris: [redirect],
});
check(org.status === 201 && user.status === 201 && web.status === 201, 'admin API set-up', [org, user, web]);
const clientId = web.json.client_id;

// An authorization request with fresh PKCE and state; prompt=login so the page shows even with a session.
function authorizeUrl(prompt = 'login') {
  const verifier = b64u(randomBytes(32));
  const state = b64u(randomBytes(16));
  const u = new URL('/oauth/authorize', base);
  u.search = new URLSearchParams({
    response_type: 'code', client_id: clientId, redirect_uri: redirect, scope: 'openid email', state,
    code_challenge: b64u(createHash('sha256').update(verifier).digest()), code_challenge_method: 'S256',
    ...(prompt ? { prompt } : {}),
  }).toString();
  return { url: u.toString(), verifier, state };
}
async function redeem(landed, req) {
  const u = new URL(landed);
  if (u.origin + u.pathname !== redirect) return { error: `not at the app: ${landed}` };
  if (u.searchParams.get('state') !== req.state) return { error: 'state differs' };
  const r = await fetch(new URL('/oauth/token', base), {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: u.searchParams.get('code'), redirect_uri: redirect, client_id: clientId, code_verifier: req.verifier }),
  });
  const t = await r.json();
  if (r.status !== 200) return { error: t };
  const info = await (await fetch(new URL('/oauth/userinfo', base), { headers: { authorization: `Bearer ${t.access_token}` } })).json();
  return { tokens: t, info };
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });

  // 1. Password on the sign-in page, in the browser; the app redeems the code.
  let req = authorizeUrl();
  await page.goto(req.url);
  check(await page.isVisible('#passkey'), 'the sign-in page offers a passkey button (signin.js ran under the page CSP)');
  await page.fill('input[name=email]', 'pat@example.com');
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(redirect)), page.click('form[action="/oauth/authorize"] button[type=submit]')]);
  const pw = await redeem(page.url(), req);
  check(pw.tokens && pw.info.email === 'pat@example.com', 'password sign-in in the browser reaches the app with a code', pw.error);
  const sub = pw.info && pw.info.sub;

  // 2. Self-service on the auth service's own account page, with the browser session the password
  // sign-in left: the page lists the password, "Add a passkey" registers one (account.js under the
  // page's CSP), the list shows it; then the user signs out and the page no longer opens.
  await page.goto(new URL('/oauth/account', base).toString());
  check((await page.textContent('#email')) === 'pat@example.com', 'the account page opens with the session of the password sign-in');
  const kinds = async () => page.$$eval('li.factor', (ls) => ls.map((l) => l.dataset.kind));
  check((await kinds()).join() === 'password', 'it lists the password as the only way to sign in', await kinds());
  check(await page.isVisible('#add-passkey'), 'it offers "Add a passkey" (account.js ran under the page CSP)');
  await Promise.all([page.waitForNavigation(), page.click('#add-passkey')]);
  check((await kinds()).join() === 'password,passkey', 'after "Add a passkey" the page lists the passkey', await kinds());
  let creds = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
  check(creds.length === 1 && creds[0].isResidentCredential, 'the authenticator holds one discoverable credential', creds.length);
  // The JSON calls need the page's token beside the session cookie (a cross-site page has only the cookie).
  const forged = await page.evaluate(async () => (await fetch('/oauth/account/passkeys/options', { method: 'POST', body: '{}' })).status);
  check(forged === 403, 'the registration call without the page token is refused', forged);
  await Promise.all([page.waitForNavigation(), page.click('#signout')]);
  check((await page.textContent('#notice')).includes('signed out'), 'signing out on the account page');
  const gone = await page.goto(new URL('/oauth/account', base).toString());
  check(gone.status() === 401, 'after signing out the account page says not signed in', gone.status());
  req = authorizeUrl(null);
  await page.goto(req.url);
  check(!page.url().startsWith(redirect), 'and the authorization request shows the sign-in page again', page.url());

  // 3. Two passkey sign-ins through the page's button.
  // `older`: as a browser without the JSON helpers (parseRequestOptionsFromJSON, toJSON), which
  // signin.js then replaces with its own base64url code.
  const passkeySignIn = async (older = false) => {
    const r = authorizeUrl();
    await page.goto(r.url);
    if (older) {
      await page.evaluate(() => {
        Object.defineProperty(PublicKeyCredential, 'parseRequestOptionsFromJSON', { value: undefined });
        Object.defineProperty(PublicKeyCredential.prototype, 'toJSON', { value: undefined });
      });
    }
    await Promise.all([page.waitForURL((u) => u.toString().startsWith(redirect)), page.click('#passkey')]);
    return redeem(page.url(), r);
  };
  const counts = [];
  for (const n of [1, 2]) {
    const got = await passkeySignIn(n === 2);
    check(got.tokens && got.info.sub === sub && got.info.email === 'pat@example.com', `passkey sign-in ${n}${n === 2 ? ' (without the JSON helpers)' : ''} gives a code for the same user`, got.error || got.info);
    check(got.tokens && got.tokens.id_token, `passkey sign-in ${n} gives an ID token`);
    counts.push((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials[0].signCount);
  }
  check(counts[1] > counts[0] && counts[0] > 0, 'the counter moves with each sign-in', counts);

  // The page after a refused passkey: still the auth service, no code, the message shown.
  const stayed = async (what, selector, status) => {
    const u = new URL(page.url());
    check(u.origin === new URL(base).origin && !u.searchParams.has('code'), `${what}: no code issued`, page.url());
    const text = await page.textContent(selector).catch(() => null);
    check(text && text.length > 0 && (await page.isVisible(selector)), `${what}: the page says why`, text);
    if (status !== undefined) check(status.value === status.want, `${what}: answered ${status.want}`, status.value);
  };

  // 4. User verification. The authenticator cannot verify the user: the browser refuses the ceremony
  // the server asked for (userVerification required), the page shows it.
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
  req = authorizeUrl();
  await page.goto(req.url);
  await page.click('#passkey');
  await page.waitForSelector('#passkey-error:not([hidden])');
  await stayed('UV not possible, browser refuses', '#passkey-error');
  // A tampered page asks without UV; the assertion arrives with UV clear and the server refuses it.
  await page.route('**/oauth/passkey/options', async (route) => {
    const resp = await route.fetch();
    const body = await resp.json();
    body.publicKey.userVerification = 'discouraged';
    await route.fulfill({ response: resp, json: body });
  });
  req = authorizeUrl();
  await page.goto(req.url);
  let [nav] = await Promise.all([page.waitForNavigation(), page.click('#passkey')]);
  await stayed('assertion without UV', '#error', { value: nav && nav.status(), want: 401 });
  await page.unroute('**/oauth/passkey/options');
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });

  // 5. A passkey the server never registered (same RP ID, its own key): only it is left on the
  // authenticator, so the browser uses it; the server refuses.
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  await cdp.send('WebAuthn.removeCredential', { authenticatorId, credentialId: creds[0].credentialId });
  await cdp.send('WebAuthn.addCredential', {
    authenticatorId,
    credential: {
      credentialId: randomBytes(32).toString('base64'), isResidentCredential: true, rpId: 'localhost',
      privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
      userHandle: randomBytes(16).toString('base64'), signCount: 7,
    },
  });
  req = authorizeUrl();
  await page.goto(req.url);
  [nav] = await Promise.all([page.waitForNavigation(), page.click('#passkey')]);
  await stayed('unknown passkey', '#error', { value: nav && nav.status(), want: 401 });

  // 6. Nothing to offer (the user cancels): the ceremony fails in the browser, the page says so.
  await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
  req = authorizeUrl();
  await page.goto(req.url);
  await page.click('#passkey');
  await page.waitForSelector('#passkey-error:not([hidden])');
  await stayed('cancelled ceremony', '#passkey-error');

  // 7. The real passkey again (re-added with its key and counter): signing in works after the refusals.
  await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
  await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...creds[0], signCount: counts[1] } });
  const again = await passkeySignIn();
  check(again.tokens && again.info.sub === sub, 'the registered passkey still signs in after the refusals', again.error);

  // 8. An administrator removes the passkey (the password stays): the user's browser session, refresh
  // tokens and access tokens end, and the passkey no longer signs in.
  req = authorizeUrl(null);
  await page.goto(req.url);
  check(page.url().startsWith(redirect), 'before: the session cookie skips the sign-in page', page.url());
  const userId = user.json.user_id;
  const listed = await admin('GET', `/v1/auth/orgs/pk/users/${userId}/factors`);
  const passkeyId = Buffer.from(creds[0].credentialId, 'base64').toString('base64url');
  check(listed.status === 200 && listed.json.factors.map((f) => f.kind).join() === 'password,passkey' &&
        listed.json.factors[1].id === passkeyId && listed.json.factors[1].last_used_at > 0,
        'the admin API lists the password and the passkey (last used set)', listed.json);
  const removed = await admin('DELETE', `/v1/auth/orgs/pk/users/${userId}/factors/passkey/${passkeyId}?reason=lost%20laptop`);
  check(removed.status === 200 && removed.json.sessions_ended >= 1 && removed.json.refresh_families_revoked >= 1 && !removed.json.forced,
        'the passkey is removed; sessions ended and refresh families revoked', removed);
  const refresh = await fetch(new URL('/oauth/token', base), {
    method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: again.tokens.refresh_token, client_id: clientId }),
  });
  check(refresh.status === 400 && (await refresh.json()).error === 'invalid_grant', 'the refresh token of that sign-in is refused');
  const info = await fetch(new URL('/oauth/userinfo', base), { headers: { authorization: `Bearer ${again.tokens.access_token}` } });
  check(info.status === 401, 'its access token is refused (sid in the revocation list)', info.status);
  const revocations = await (await fetch(new URL('/oauth/revocations', base))).json();
  check(Object.keys(revocations.sid || {}).length >= 1, 'the revocation list services pull names the families', revocations);
  req = authorizeUrl(null);
  await page.goto(req.url);
  check(!page.url().startsWith(redirect) && (await page.isVisible('#passkey')), 'after: the old session cookie no longer signs in', page.url());
  await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
  await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...creds[0], signCount: counts[1] + 10 } });
  [nav] = await Promise.all([page.waitForNavigation(), page.click('#passkey')]);
  await stayed('the removed passkey', '#error', { value: nav && nav.status(), want: 401 });

  // 9. The password is now the last way in: refused without force, removed with it; the record.
  const last = await admin('DELETE', `/v1/auth/orgs/pk/users/${userId}/factors/password`);
  check(last.status === 409 && /last way to sign in/.test(last.json.detail), 'removing the last way to sign in needs force', last);
  const forced = await admin('DELETE', `/v1/auth/orgs/pk/users/${userId}/factors/password?force=true&reason=offboarding`);
  check(forced.status === 200 && forced.json.forced === true, 'with force the last factor goes', forced);
  const after = await admin('GET', `/v1/auth/orgs/pk/users/${userId}/factors`);
  check(after.json.factors.length === 0 && after.json.events.length === 2 &&
        after.json.events[0].factor === 'password' && after.json.events[0].forced && after.json.events[0].reason === 'offboarding' &&
        after.json.events[1].factor === 'passkey' && after.json.events[1].id === passkeyId && after.json.events[1].actor === 'admin-token:e2e' &&
        after.json.events[1].reason === 'lost laptop',
        'every removal is in the record with actor and reason', after.json);
  const missing = await admin('DELETE', `/v1/auth/orgs/pk/users/${userId}/factors/totp`);
  check(missing.status === 404, 'removing a factor the user lacks is 404', missing);
  const other = await admin('DELETE', `/v1/auth/orgs/other/users/${userId}/factors/totp`);
  check(other.status === 404, 'the user is looked up within the organisation', other.status);
  if (process.env.GOVERN && process.env.SIGNIN_DATA_DIR) {
    const out = execFileSync(process.env.GOVERN, ['--data-dir', process.env.SIGNIN_DATA_DIR, 'auth', 'factor', 'list', '--org', 'pk', userId]);
    const cli = JSON.parse(out.toString());
    check(cli.factors.length === 0 && cli.events.length === 2 && cli.events[0].seq === after.json.events[0].seq,
          '`govern auth factor list` shows the same record', cli);
    let code = 0;
    try {
      execFileSync(process.env.GOVERN, ['--data-dir', process.env.SIGNIN_DATA_DIR, 'auth', 'factor', 'remove', '--org', 'pk', '--kind', 'totp', userId], { stdio: 'pipe' });
    } catch (e) {
      code = e.status;
    }
    check(code === 1, '`govern auth factor remove` of a missing factor exits 1', code);
  }

  // 10. Users remove their own factors on the account page: a second user signs in with the password,
  // adds a passkey, removes the password (allowed beside the passkey; it ends the user's sessions),
  // signs in with the passkey, and cannot remove it (the last way in); the record names the user.
  await cdp.send('WebAuthn.clearCredentials', { authenticatorId });
  const quinn = await admin('POST', '/v1/auth/orgs/pk/users', { email: 'quinn@example.com', password, display_name: 'Quinn' });
  req = authorizeUrl();
  await page.goto(req.url);
  await page.fill('input[name=email]', 'quinn@example.com');
  await page.fill('input[name=password]', password);
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(redirect)), page.click('form[action="/oauth/authorize"] button[type=submit]')]);
  const account = new URL('/oauth/account', base).toString();
  await page.goto(account);
  await Promise.all([page.waitForNavigation(), page.click('#add-passkey')]);
  check((await kinds()).join() === 'password,passkey', 'a second user adds a passkey on the account page', await kinds());
  await Promise.all([page.waitForNavigation(), page.click('li.factor[data-kind=password] button')]);
  check((await page.textContent('#notice')).includes('Removed'), 'the user removes their password on the page');
  check((await page.goto(account)).status() === 401, 'removing it ended the user\'s session');
  const q = await passkeySignIn();
  check(q.tokens && q.info.email === 'quinn@example.com', 'the user signs in with the passkey', q.error || q.info);
  await page.goto(account);
  check((await kinds()).join() === 'passkey', 'the page lists the passkey alone', await kinds());
  [nav] = await Promise.all([page.waitForNavigation(), page.click('li.factor[data-kind=passkey] button')]);
  check(nav && nav.status() === 409 && /last way to sign in/.test(await page.textContent('#error')), 'the last way in cannot be removed by the user', nav && nav.status());
  const record = await admin('GET', `/v1/auth/orgs/pk/users/${quinn.json.user_id}/factors`);
  check(record.json.factors.map((f) => f.kind).join() === 'passkey' && record.json.events.length === 1 &&
        record.json.events[0].factor === 'password' && record.json.events[0].actor.startsWith('user:'),
        'the record shows the user removed their password', record.json);
} finally {
  await browser.close();
  app.close();
}

if (failures.length > 0) {
  console.error(`passkeys sign-in: ${failures.length} of ${checks} checks failed`);
  for (const f of failures) console.error('  ' + f);
  process.exit(1);
}
console.log(`passkeys sign-in: ${checks} checks passed`);
