// Headless Chromium with a CDP virtual authenticator (a CTAP2 platform authenticator with resident keys
// and user verification) against passkey_test_server: register a passkey, sign in twice (the counter
// must move each time), then check the refusals a browser can provoke: a replayed assertion, and a
// sign-in without user verification when the server requires it.
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const [serverPath] = process.argv.slice(2);
let checks = 0;
const failures = [];
function check(ok, what, detail) {
  checks++;
  if (!ok) failures.push(`${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
}

const server = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  const lines = createInterface({ input: server.stdout });
  lines.on('line', (l) => {
    const m = /^PORT (\d+)$/.exec(l);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
});

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox'],
});
try {
  const page = await browser.newPage();
  // http://localhost is a secure context, so WebAuthn works without TLS; the RP ID is "localhost".
  await page.goto(`http://localhost:${port}/`);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });

  const register = () =>
    page.evaluate(async () => {
      const options = await (await fetch('/register/options', { method: 'POST' })).json();
      const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options);
      const cred = await navigator.credentials.create({ publicKey });
      const r = await fetch('/register/verify', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(cred.toJSON()),
      });
      return { status: r.status, body: await r.json() };
    });
  // Signs in; returns the server's answer and the assertion JSON (for the replay check).
  // `uv` overrides the userVerification the server asked for, as a tampered page could.
  const signIn = (query = '', uv = null) =>
    page.evaluate(async ([query, uv]) => {
      const options = await (await fetch('/login/options' + query, { method: 'POST' })).json();
      if (uv) options.userVerification = uv;
      const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options);
      const cred = await navigator.credentials.get({ publicKey });
      const assertion = JSON.stringify(cred.toJSON());
      const r = await fetch('/login/verify', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: assertion,
      });
      return { status: r.status, body: await r.json(), assertion };
    }, [query, uv]);
  const post = (path, body) =>
    page.evaluate(
      async ([path, body]) => {
        const r = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        return { status: r.status, body: await r.json() };
      },
      [path, body],
    );

  // Registration.
  const reg = await register();
  check(reg.status === 200 && reg.body.ok, 'registration verified', reg);
  check(reg.body.fmt === 'none', 'attestation format none', reg.body.fmt);
  check(reg.body.alg === -7, 'ES256 credential', reg.body.alg);
  check(reg.body.user_verified === true, 'UV at registration', reg.body);

  // Two sign-ins: the counter moves each time.
  const first = await signIn();
  check(first.status === 200 && first.body.ok, 'first sign-in verified', first.body);
  check(first.body.sign_count > first.body.previous_sign_count, 'first sign-in moves the counter', first.body);
  check(first.body.user_verified === true, 'first sign-in user verified', first.body);
  const second = await signIn();
  check(second.status === 200 && second.body.ok, 'second sign-in verified', second.body);
  check(second.body.sign_count > first.body.sign_count, 'second sign-in moves the counter again', [
    first.body.sign_count,
    second.body.sign_count,
  ]);
  const stored = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  check(
    stored.credentials.length === 1 && stored.credentials[0].signCount === second.body.sign_count,
    'the authenticator and the server agree on the counter',
    stored.credentials.map((c) => c.signCount),
  );

  // Replays of the second assertion: its challenge was used up; a fresh challenge does not help.
  const replay = await post('/login/verify', second.assertion);
  check(replay.status === 400 && replay.body.error === 'challenge_mismatch', 'replayed assertion refused', replay.body);
  await post('/login/options', '');
  const replay2 = await post('/login/verify', second.assertion);
  check(replay2.status === 400 && replay2.body.error === 'challenge_mismatch', 'replay under a new challenge refused', replay2.body);

  // The server requires UV; the page asks the authenticator not to verify the user, which cannot
  // (Chromium itself refuses a sign-in whose requested UV fails, so the refusal here is the server's).
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
  const noUv = await signIn('?require_uv=1', 'discouraged');
  check(noUv.status === 400 && noUv.body.error === 'user_not_verified', 'sign-in without UV refused', noUv.body);
  await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });
  const third = await signIn('?require_uv=1');
  check(third.status === 200 && third.body.sign_count > second.body.sign_count, 'sign-in with UV after that', third.body);
} finally {
  await browser.close();
  server.stdin.end();
}

if (failures.length > 0) {
  console.error(`passkeys: ${failures.length} of ${checks} checks failed`);
  for (const f of failures) console.error('  ' + f);
  process.exit(1);
}
console.log(`passkeys: ${checks} checks passed`);
