// Starts s3rver (@20minutes/s3rver 4, which checks SigV4 signatures) on 127.0.0.1 with a free port, a
// temporary directory, one bucket and one access key, then runs the archive e2e tool's S3 tests with
// the endpoint in environment variables. Usage: node server.mjs <tool> [gtest args...]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from '@20minutes/s3rver';
import AWSAccount from '@20minutes/s3rver/lib/models/account.js';

const [binary, ...args] = process.argv.slice(2);
if (!binary) {
  console.error('usage: node server.mjs <tool> [args...]');
  process.exit(2);
}
const accessKey = 'GOVERNARCHIVEKEY';
const secretKey = 'archive/secret+' + Math.random().toString(36).slice(2);
const bucket = 'telemetry-archive';
new AWSAccount(123456789012, 'govern-archive-e2e').createKeyPair(accessKey, secretKey);

const dir = mkdtempSync(join(tmpdir(), 'govern-archive-s3rver-'));
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: dir,
  vhostBuckets: false,
  configureBuckets: [{ name: bucket }],
});
const { port } = await server.run();
console.log(`s3rver at http://127.0.0.1:${port}, bucket ${bucket}`);
const child = spawn(binary, args, {
  stdio: 'inherit',
  env: {
    ...process.env,
    GOVERN_S3_ENDPOINT: `http://127.0.0.1:${port}`,
    GOVERN_S3_BUCKET: bucket,
    GOVERN_S3_REGION: 'us-east-1',
    GOVERN_S3_ACCESS_KEY_ID: accessKey,
    GOVERN_S3_SECRET_ACCESS_KEY: secretKey,
  },
});
const code = await new Promise((resolve) => {
  child.on('exit', (c, signal) => resolve(signal ? 128 : c));
  child.on('error', (e) => {
    console.error(`cannot run ${binary}: ${e.message}`);
    resolve(127);
  });
});
await server.close();
rmSync(dir, { recursive: true, force: true });
process.exit(code);
