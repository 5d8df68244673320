// A deliberately wrong engine for the harness's self-test (run.sh selftest): the reference, except that
// it ignores `forbid` policies whose text uses `like`, and fails on requests whose context has "addr".
// compare.mjs must report both classes, minimised, and exit 1.
import { createInterface } from 'node:readline';
import { answer } from './oracle.mjs';

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  let a = answer(c);
  if (c.request && c.request.context && typeof c.request.context === 'object' && 'addr' in c.request.context) {
    a = { id: c.id, failure: 'buggy engine: context key addr' };
  } else if (!a.failure && typeof c.policies === 'string' && /forbid[^;]*like/.test(c.policies)) {
    a = answer({ ...c, policies: c.policies.replace(/forbid/g, '@was_forbid permit') });
  }
  process.stdout.write(JSON.stringify(a) + '\n');
}
