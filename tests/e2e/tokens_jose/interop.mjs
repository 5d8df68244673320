// Interop with `jose` (npm), both ways:
//  1. jose verifies Govern's access and ID tokens (EdDSA, ES256, RS256) with nothing but the published
//     JWKS, and checks issuer, audience, typ, at_hash inputs; and refuses one with a flipped signature bit.
//  2. Govern's Checker (tokens_tool check) verifies tokens jose signed with its own keys, given only
//     jose's JWKS; and refuses jose-made attacks: alg none, HS256 with the public key as secret,
//     expired, not yet valid, another audience, another issuer, a tampered payload.
// Usage: node interop.mjs TOKENS_TOOL WORKDIR
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import * as jose from 'jose';

const [tool, work] = process.argv.slice(2);
const ISS = 'https://auth.govern.test';
let failures = 0;
function check(cond, what) {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    console.log(`FAIL ${what}`);
    failures++;
  }
}

// ---- 1. jose verifies what Govern issued ----
execFileSync(tool, ['issue', work]);
const jwks = JSON.parse(readFileSync(`${work}/jwks.json`, 'utf8'));
const tokens = JSON.parse(readFileSync(`${work}/tokens.json`, 'utf8'));
check(jwks.keys.every((k) => !('d' in k) && !('k' in k)), 'the JWKS holds public keys only');
check(jwks.keys.length === 6, 'the JWKS holds current and next key of each algorithm');
const keySet = jose.createLocalJWKSet(jwks);

for (const alg of ['EdDSA', 'ES256', 'RS256']) {
  const t = tokens[alg];
  try {
    const { payload, protectedHeader } = await jose.jwtVerify(t.access, keySet, {
      issuer: ISS,
      audience: 'govern:telemetry',
      typ: 'at+jwt',
      algorithms: [alg],
    });
    check(protectedHeader.alg === alg, `${alg} access token: alg ${protectedHeader.alg}`);
    check(payload.sub === 'user-1' && payload.org === 'org-1', `${alg} access token: sub and org`);
    check(payload.scope === 'events:write events:read', `${alg} access token: scope`);
    check(payload.act && payload.act.sub === 'agent-7', `${alg} access token: act (RFC 8693)`);
    check(payload.sid === t.sid, `${alg} access token: sid is the refresh family`);
    check(typeof payload.jti === 'string' && payload.exp - payload.iat === 300, `${alg} access token: jti, exp`);
  } catch (e) {
    check(false, `${alg} access token verifies with jose: ${e.code} ${e.message}`);
  }
  try {
    const { payload, protectedHeader } = await jose.jwtVerify(t.id, keySet, {
      issuer: ISS,
      audience: 'client-a',
      typ: 'JWT',
      algorithms: [alg],
    });
    check(payload.nonce === 'n-0S6_WzA2Mj' && typeof payload.auth_time === 'number', `${alg} ID token: nonce, auth_time`);
    // at_hash: left half of the hash of the access token's ASCII (SHA-512 for EdDSA, SHA-256 otherwise).
    const h = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256').update(t.access).digest();
    const expected = Buffer.from(h.subarray(0, h.length / 2)).toString('base64url');
    check(payload.at_hash === expected, `${alg} ID token: at_hash`);
    check(protectedHeader.kid && jwks.keys.some((k) => k.kid === protectedHeader.kid), `${alg} ID token: kid in JWKS`);
  } catch (e) {
    check(false, `${alg} ID token verifies with jose: ${e.code} ${e.message}`);
  }
  // The harness can fail: a flipped signature character is refused by jose.
  const parts = t.access.split('.');
  const sig = parts[2];
  const i = 10;
  parts[2] = sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
  let refused = false;
  try {
    await jose.jwtVerify(parts.join('.'), keySet, { issuer: ISS, audience: 'govern:telemetry' });
  } catch (e) {
    refused = e.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED';
  }
  check(refused, `${alg} tampered access token refused by jose`);
}

// ---- 2. Govern verifies what jose signed ----
const now = Math.floor(Date.now() / 1000);
const published = { keys: [] };
const signers = {};
for (const [alg, opts] of [
  ['EdDSA', { crv: 'Ed25519' }],
  ['ES256', {}],
  ['RS256', { modulusLength: 2048 }],
]) {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, { ...opts, extractable: true });
  const jwk = await jose.exportJWK(publicKey);
  jwk.kid = await jose.calculateJwkThumbprint(jwk);
  jwk.alg = alg;
  jwk.use = 'sig';
  published.keys.push(jwk);
  signers[alg] = { privateKey, kid: jwk.kid, publicJwk: jwk };
}
writeFileSync(`${work}/jose-jwks.json`, JSON.stringify(published));

function govern(token, audience = 'govern:api', issuer = 'https://jose.test') {
  try {
    return JSON.parse(execFileSync(tool, ['check', `${work}/jose-jwks.json`, token, audience, issuer]).toString());
  } catch (e) {
    if (e.status === 1) return JSON.parse(e.stdout.toString());
    throw e;
  }
}

async function sign(alg, claims, header = {}, signOptions = undefined) {
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg, kid: signers[alg].kid, typ: 'at+jwt', ...header })
    .sign(signers[alg].privateKey, signOptions);
}

const base = {
  iss: 'https://jose.test',
  sub: 'svc-1',
  aud: 'govern:api',
  org: 'org-9',
  scope: 'a b',
  iat: now,
  exp: now + 120,
  jti: 'jose-1',
  act: { sub: 'agent-2', act: { sub: 'agent-1' } },
};
for (const alg of ['EdDSA', 'ES256', 'RS256']) {
  const r = govern(await sign(alg, base));
  check(r.ok && r.claims.sub === 'svc-1' && r.claims.org === 'org-9', `Govern verifies a jose ${alg} token`);
  check(r.ok && r.claims.actors.length === 2 && r.claims.actors[1].sub === 'agent-1', `${alg}: nested act chain read`);
  check(r.ok && r.claims.scope.join(' ') === 'a b', `${alg}: scope read`);
}
const expect = async (what, token, reason, audience) => {
  const r = govern(token, audience);
  check(!r.ok && r.reason === reason, `refused (${reason}): ${what}${r.ok ? ' -- was accepted!' : ` [${r.reason}]`}`);
};
await expect('expired', await sign('ES256', { ...base, exp: now - 3600 }), 'expired');
await expect('not yet valid', await sign('ES256', { ...base, nbf: now + 3600 }), 'not_yet_valid');
await expect('another audience', await sign('EdDSA', base), 'wrong_audience', 'govern:audit');
await expect('another issuer', await sign('EdDSA', { ...base, iss: 'https://evil.test' }), 'wrong_issuer');
{
  // alg none, built by hand as jose refuses to make it.
  const enc = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  await expect('alg none', `${enc({ alg: 'none', kid: signers.EdDSA.kid })}.${enc(base)}.`, 'malformed');
  // Algorithm confusion: HS256 keyed with the published Ed25519 public key (its JWK text and raw x).
  const pub = signers.EdDSA.publicJwk;
  for (const secret of [Buffer.from(JSON.stringify(pub)), Buffer.from(pub.x, 'base64url')]) {
    const forged = await new jose.SignJWT(base)
      .setProtectedHeader({ alg: 'HS256', kid: signers.EdDSA.kid })
      .sign(new Uint8Array(Buffer.concat([secret, Buffer.alloc(32)])));
    await expect('HS256 keyed with the public key', forged, 'unknown_key');
  }
  // A payload swapped under a valid signature.
  const good = (await sign('RS256', base)).split('.');
  good[1] = enc({ ...base, sub: 'admin' });
  await expect('tampered payload', good.join('.'), 'bad_signature');
  // crit with an extension nobody here understands.
  await expect('crit', await sign('ES256', base, { crit: ['x-govern'], 'x-govern': 1 }, { crit: { 'x-govern': true } }), 'malformed');
}

if (failures) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all interop checks passed');
