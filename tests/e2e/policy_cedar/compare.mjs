// Differential test: an engine speaking the `govern policy eval-cases` contract against the Cedar
// reference (oracle.mjs), on the hand-written corpus and on generated cases.
//
//   node compare.mjs [--cases N] [--seed S] [--engine "<shell command>"] [--no-corpus] [--corpus-only]
//                    [--record] [--label TEXT] [--out DIR] [--timeout S] [--max-reports N]
//                    [--json-cases N]
//   node compare.mjs --regen-corpus      (rewrites corpus/*.ndjson expectations from the reference)
//
// The JSON policy format is checked on the corpus and the first --json-cases (3000) generated cases
// whose policies the reference parses: the engine's text -> JSON (policy set JSON) must equal the
// reference's policyToJson/templateToJson of each policy, and with the reference's JSON as the policies
// the engine's answer must agree with the reference's.
//
// The engine is `--engine`, else $GOVERN_POLICY_EVAL (a shell command), else `$GOVERN policy eval-cases`.
// It is run once over a file of all cases (stdin), answers are matched by id.
//
// Agreement: both answers are failures (messages are not compared), or the decision, the set of
// determining policies and the set of erroring policies are equal.
//
// Corpus files (corpus/*.ndjson) hold cases with an "expect" answer produced by the reference; both the
// reference and the engine must give it, so a new cedar-wasm that changes behaviour shows up as a diff.
//
// On a difference: each differing case is minimised (dropping policies, entities, parents, attributes,
// tags and context keys while the engine and the reference still disagree), printed with both
// answers, written to <out>/regressions-found.ndjson (with --record also appended to
// corpus/regressions.ndjson with the reference's answer as "expect"), and the exit status is 1.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { answer as reference, referenceVersion, cedarModule, referenceJson } from './oracle.mjs';
import { generate } from './generate.mjs';
const here = path.dirname(fileURLToPath(import.meta.url));
const corpusDir = path.join(here, 'corpus');

function parseArgs(argv) {
  const o = { cases: 20000, seed: 1, engine: null, corpus: true, generated: true, record: false, out: null,
    timeout: 600, regen: false, maxReports: 10, jsonCases: 3000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--cases') o.cases = Number(argv[++i]);
    else if (a === '--seed') o.seed = Number(argv[++i]);
    else if (a === '--engine') o.engine = argv[++i];
    else if (a === '--no-corpus') o.corpus = false;
    else if (a === '--corpus-only') o.generated = false;
    else if (a === '--record') o.record = true;
    else if (a === '--out') o.out = argv[++i];
    else if (a === '--timeout') o.timeout = Number(argv[++i]);
    else if (a === '--regen-corpus') o.regen = true;
    else if (a === '--max-reports') o.maxReports = Number(argv[++i]);
    else if (a === '--label') o.label = argv[++i];
    else if (a === '--json-cases') o.jsonCases = Number(argv[++i]);
    else {
      console.error(`compare.mjs: unknown argument ${a}`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(o.cases) || o.cases < 0 || !Number.isInteger(o.seed)) {
    console.error('compare.mjs: --cases and --seed take integers');
    process.exit(2);
  }
  return o;
}

function engineCommand(o) {
  if (o.engine) return o.engine;
  if (process.env.GOVERN_POLICY_EVAL) return process.env.GOVERN_POLICY_EVAL;
  if (process.env.GOVERN) return `'${process.env.GOVERN.replace(/'/g, `'\\''`)}' policy eval-cases`;
  console.error('compare.mjs: set GOVERN (the govern binary) or GOVERN_POLICY_EVAL (a command), or pass --engine');
  process.exit(2);
}

function writeCases(cases, tmpDir) {
  const input = path.join(tmpDir, `in-${process.pid}-${Math.random().toString(36).slice(2)}.ndjson`);
  const fd = fs.openSync(input, 'w');
  for (let i = 0; i < cases.length; i += 1000) {
    fs.writeSync(fd, cases.slice(i, i + 1000).map((c) => JSON.stringify(c)).join('\n') + '\n');
  }
  fs.closeSync(fd);
  return input;
}

// Runs the engine over `cases`; returns {answers: Map id -> answer, status, stderr}.
function runEngine(cmd, cases, timeoutS, tmpDir) {
  return runCommand(cmd, writeCases(cases, tmpDir), timeoutS, true);
}

// Runs `cmd` with `input` (a file of cases) on stdin; removes the file afterwards if `owned`.
function runCommand(cmd, input, timeoutS, owned) {
  return new Promise((resolve) => {
    const fd = fs.openSync(input, 'r');
    const child = spawn('sh', ['-c', cmd], { stdio: [fd, 'pipe', 'pipe'] });
    fs.closeSync(fd);
    const out = [];
    const err = [];
    let errLen = 0;
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => {
      if (errLen < 65536) {
        err.push(b);
        errLen += b.length;
      }
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (owned) fs.rmSync(input, { force: true });
      const answers = new Map();
      let badLines = 0;
      for (const line of Buffer.concat(out).toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        try {
          const a = JSON.parse(line);
          if (a && typeof a === 'object' && typeof a.id === 'string') answers.set(a.id, a);
          else badLines++;
        } catch {
          badLines++;
        }
      }
      resolve({ answers, code, signal, timedOut, badLines, stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

const sortedUnique = (xs) => [...new Set(xs)].sort();

// A canonical form of an answer for comparison (and for storing as "expect").
function canon(a) {
  if (!a) return { missing: true };
  if (typeof a.failure === 'string') return { failure: true };
  if ((a.decision !== 'allow' && a.decision !== 'deny') || !Array.isArray(a.reason) || !Array.isArray(a.errors)) {
    return { malformed: JSON.stringify(a) };
  }
  return { decision: a.decision, reason: sortedUnique(a.reason), errors: sortedUnique(a.errors) };
}

const agree = (x, y) => JSON.stringify(canon(x)) === JSON.stringify(canon(y));

function expectOf(a) {
  if (typeof a.failure === 'string') return { failure: a.failure };
  return { decision: a.decision, reason: a.reason, errors: a.errors };
}

// A failure message with its specifics (quoted names, numbers, positions) removed: the class of it.
function messageClass(m) {
  return String(m)
    .replace(/`[^`]*`/g, '`_`')
    .replace(/"(?:[^"\\]|\\.)*"/g, '"_"')
    .replace(/#?\d+(:\d+)?/g, 'N')
    .slice(0, 90);
}

function difference(x, y) {
  const a = canon(x);
  const b = canon(y);
  if (a.missing) return 'engine gave no answer';
  if (a.malformed) return 'engine answer malformed';
  if (a.failure !== b.failure) {
    return a.failure ? `engine failure, reference answer [engine: ${messageClass(x.failure)}]`
      : `engine answer, reference failure [reference: ${messageClass(y.failure)}]`;
  }
  if (a.decision !== b.decision) return 'decision';
  if (JSON.stringify(a.reason) !== JSON.stringify(b.reason)) return 'reason';
  return 'errors';
}

// ---------------------------------------------------------------------------------------------
// Minimisation: one-step reductions of a case, tried as one engine batch per round.

function splitPolicies(text) {
  const parts = cedarModule().policySetTextToParts(text);
  if (parts.type !== 'success' || (parts.policy_templates && parts.policy_templates.length)) return null;
  return parts.policies;
}

// Direct sub-expressions of a policy JSON (EST) expression node.
function childExprs(node) {
  if (!node || typeof node !== 'object') return [];
  const keys = Object.keys(node);
  if (keys.length !== 1) return [];
  const [op] = keys;
  const v = node[op];
  if (op === 'Value' || op === 'Var' || op === 'Slot' || op === 'unknown') return [];
  if (Array.isArray(v)) return v.filter((x) => x && typeof x === 'object');
  if (v && typeof v === 'object') {
    if (op === 'Record') return Object.values(v);
    return ['left', 'right', 'arg', 'if', 'then', 'else'].filter((k) => v[k] && typeof v[k] === 'object').map((k) => v[k]);
  }
  return [];
}

// Every way to replace one expression node of `expr` by a smaller one (a child, true, false).
function exprShrinks(expr) {
  const out = [];
  const walk = (node, rebuild) => {
    const kids = childExprs(node);
    if (!('Value' in node && typeof node.Value === 'boolean')) {
      out.push(rebuild({ Value: true }), rebuild({ Value: false }));
    }
    for (const k of kids) out.push(rebuild(k));
    const [op] = Object.keys(node);
    const v = node[op];
    kids.forEach((k) => {
      walk(k, (repl) => {
        const copy = JSON.parse(JSON.stringify(v));
        if (Array.isArray(v)) copy[v.indexOf(k)] = repl;
        else if (op === 'Record') copy[Object.keys(v).find((key) => v[key] === k)] = repl;
        else copy[['left', 'right', 'arg', 'if', 'then', 'else'].find((key) => v[key] === k)] = repl;
        return rebuild({ [op]: copy });
      });
    });
  };
  walk(expr, (x) => x);
  return out;
}

// Smaller variants of one policy's text: without annotations, with a scope unconstrained, without a
// condition, with a condition's expression shrunk.
function policyShrinks(text) {
  const j = cedarModule().policyToJson(text);
  if (j.type !== 'success') return [];
  const est = j.json;
  const variants = [];
  if (est.annotations && Object.keys(est.annotations).length) variants.push({ ...est, annotations: {} });
  for (const v of ['principal', 'action', 'resource']) if (est[v].op !== 'All') variants.push({ ...est, [v]: { op: 'All' } });
  est.conditions.forEach((cond, k) => {
    variants.push({ ...est, conditions: est.conditions.filter((_, m) => m !== k) });
    for (const body of exprShrinks(cond.body)) {
      const conditions = est.conditions.slice();
      conditions[k] = { ...cond, body };
      variants.push({ ...est, conditions });
    }
  });
  const texts = [];
  for (const v of variants) {
    const t = cedarModule().policyToText(v);
    if (t.type === 'success') texts.push(t.text.replace(/\s*\n\s*/g, ' '));
  }
  return texts;
}

function reductions(c) {
  const out = [];
  const clone = () => JSON.parse(JSON.stringify(c));
  const pols = typeof c.policies === 'string' ? splitPolicies(c.policies) : null;
  if (pols && pols.length >= 1) {
    for (let i = 0; i < pols.length; i++) {
      const d = clone();
      d.policies = pols.filter((_, j) => j !== i).join('\n');
      out.push(d);
    }
  }
  if (Array.isArray(c.entities)) {
    for (let i = 0; i < c.entities.length; i++) {
      const d = clone();
      d.entities.splice(i, 1);
      out.push(d);
    }
    c.entities.forEach((e, i) => {
      if (!e || typeof e !== 'object') return;
      for (const field of ['parents']) {
        if (Array.isArray(e[field])) {
          for (let j = 0; j < e[field].length; j++) {
            const d = clone();
            d.entities[i][field].splice(j, 1);
            out.push(d);
          }
        }
      }
      for (const field of ['attrs', 'tags']) {
        if (e[field] && typeof e[field] === 'object' && !Array.isArray(e[field])) {
          for (const k of Object.keys(e[field])) {
            const d = clone();
            delete d.entities[i][field][k];
            out.push(d);
          }
        }
      }
      if (e.tags !== undefined) {
        const d = clone();
        delete d.entities[i].tags;
        out.push(d);
      }
    });
  }
  const ctx = c.request && c.request.context;
  if (ctx && typeof ctx === 'object' && !Array.isArray(ctx)) {
    for (const k of Object.keys(ctx)) {
      const d = clone();
      delete d.request.context[k];
      out.push(d);
    }
  }
  // Expression-level shrinking last (structural drops are cheaper and usually remove more).
  if (pols) {
    pols.forEach((p, i) => {
      for (const t of policyShrinks(p)) {
        const d = clone();
        d.policies = pols.map((q, j) => (j === i ? t : q)).join('\n');
        out.push(d);
      }
    });
  }
  return out;
}

// Greedy: each round evaluates every one-step reduction (one engine run) and keeps the smallest that
// still shows the same class of difference.
async function minimise(cmd, c, cls, o, tmpDir) {
  let cur = c;
  const size = (d) => JSON.stringify(d).length;
  for (let round = 0; round < 100; round++) {
    const seen = new Set();
    const cands = reductions(cur)
      .filter((d) => {
        const k = JSON.stringify(d);
        if (seen.has(k) || size(d) >= size(cur)) return false;
        seen.add(k);
        return true;
      })
      .slice(0, 400)
      .map((d, i) => ({ ...d, id: `${c.id}~${round}.${i}` }));
    if (!cands.length) break;
    const run = await runEngine(cmd, cands, o.timeout, tmpDir);
    let best = null;
    for (const d of cands) {
      const got = run.answers.get(d.id);
      const ref = reference(d);
      if (!ref.crashed && !agree(got, ref) && difference(got, ref) === cls && (!best || size(d) < size(best))) best = d;
    }
    if (!best) break;
    cur = best;
  }
  return { ...cur, id: c.id };
}

// ---------------------------------------------------------------------------------------------
// The JSON policy format.

// JSON with object keys sorted, for comparing documents.
function canonJson(v) {
  if (Array.isArray(v)) return `[${v.map(canonJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

// Checks text -> JSON and JSON -> decision on `cases` (ones the reference answers); pushes differences
// to `problems`.
async function checkJson(cmd, cases, o, tmpDir, problems, label) {
  const printCases = [];
  const evalCases = [];
  const refJson = new Map();
  for (const c of cases) {
    let j = null;
    try {
      j = referenceJson(c);
    } catch {
      j = null;
    }
    if (!j) continue;
    refJson.set(c.id, j);
    printCases.push({ ...c, id: `${c.id}#print`, to_json: true });
    const d = { ...c, id: `${c.id}#eval`, policies: j.staticPolicies };
    if (j.templates) d.templates = j.templates;
    evalCases.push(d);
  }
  const run = await runEngine(cmd, [...printCases, ...evalCases], o.timeout, tmpDir);
  let printed = 0;
  let evaluated = 0;
  let crashed = 0;
  for (const p of printCases) {
    const id = p.id.slice(0, -'#print'.length);
    const want = refJson.get(id);
    const got = run.answers.get(p.id);
    // The reference standing in as the engine (the self-test's oracle.mjs) can overflow its wasm stack
    // on a deep case it printed here a moment before: it has no answer, as in the evaluations below.
    if (got && (got.crashed || got.json_crashed)) {
      crashed++;
      continue;
    }
    const gotJson = got && got.json ? { staticPolicies: got.json.staticPolicies, ...(want.templates ? { templates: got.json.templates || {} } : {}) } : null;
    if (gotJson && canonJson(gotJson) === canonJson(want)) {
      printed++;
    } else {
      problems.push({ where: `${label} ${id} (JSON printing)`, c: p, json: true, want, got: got && (got.json || got) });
    }
  }
  for (const d of evalCases) {
    const ref = reference(d);
    const got = run.answers.get(d.id);
    if (ref.crashed) continue;
    if (agree(got, ref)) evaluated++;
    else problems.push({ where: `${label} ${d.id} (JSON policies)`, c: d, ref, got, minimise: false });
  }
  console.log(`${label} JSON format: ${printCases.length} cases the reference parses; text->JSON equal on ${printed}, ` +
    `JSON->decision agrees on ${evaluated}` + (crashed ? `; the engine (a reference) crashed printing ${crashed}` : ''));
}

function readCorpus() {
  const files = fs.readdirSync(corpusDir).filter((f) => f.endsWith('.ndjson')).sort();
  const cases = [];
  for (const f of files) {
    const lines = fs.readFileSync(path.join(corpusDir, f), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      let c;
      try {
        c = JSON.parse(line);
      } catch (e) {
        throw new Error(`${f}:${i + 1}: not JSON: ${e.message}`);
      }
      const { expect, ...rest } = c;
      cases.push({ file: f, line: i + 1, c: { ...rest, id: `${f}:${c.id ?? i + 1}` }, expect });
    });
  }
  return { files, cases };
}

// Rewrites every corpus file with "expect" taken from the reference (field order: id, note, case
// fields, expect).
function regenCorpus() {
  const files = fs.readdirSync(corpusDir).filter((f) => f.endsWith('.ndjson')).sort();
  let n = 0;
  let changed = 0;
  for (const f of files) {
    const file = path.join(corpusDir, f);
    const out = [];
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const c = JSON.parse(line);
      const { expect: old, ...rest } = c;
      const ans = reference(rest);
      if (ans.crashed) throw new Error(`${f}: case ${rest.id}: the reference crashed (${ans.failure})`);
      let exp = expectOf(ans);
      // Failure messages are not compared (and some, like the reference's cycle report, vary from run to
      // run): an expectation that still agrees is kept as it is.
      if (old && agree(old, exp)) exp = old;
      else changed++;
      out.push(JSON.stringify({ ...rest, expect: exp }));
      n++;
    }
    fs.writeFileSync(file, out.length ? out.join('\n') + '\n' : '');
  }
  console.log(`corpus: ${n} cases in ${files.length} files, ${changed} expectations changed (reference cedar-wasm ${referenceVersion})`);
}

function stripId(c) {
  const { id, expect, file, line, ...rest } = c;
  return rest;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.regen) {
    regenCorpus();
    return;
  }
  const cmd = engineCommand(o);
  const outDir = o.out || fs.mkdtempSync(path.join(os.tmpdir(), 'govern-policy-drt-'));
  fs.mkdirSync(outDir, { recursive: true });
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'govern-policy-drt-run-'));
  console.log(`reference: cedar-wasm ${referenceVersion}; engine: ${cmd}`);

  const problems = []; // {kind, c, ref, got, where}
  let failedExpectations = 0;

  // 1. The hand-written corpus.
  if (o.corpus) {
    const { files, cases } = readCorpus();
    const run = await runEngine(cmd, cases.map((x) => stripId(x.c)).map((c, i) => ({ ...c, id: cases[i].c.id })), o.timeout, tmpDir);
    if (run.timedOut || run.signal) console.log(`engine on corpus: ${run.timedOut ? 'timed out' : `killed by ${run.signal}`}`);
    let ok = 0;
    for (const x of cases) {
      const ref = reference(x.c);
      if (ref.crashed) {
        console.log(`corpus ${x.file}:${x.line}: the reference crashed (${ref.failure}); corpus cases must be within its limits`);
        failedExpectations++;
        continue;
      }
      if (!x.expect) {
        console.log(`corpus ${x.file}:${x.line}: no "expect" (run: node compare.mjs --regen-corpus)`);
        failedExpectations++;
        continue;
      }
      if (!agree(ref, x.expect)) {
        failedExpectations++;
        console.log(`corpus ${x.file}:${x.line}: the reference (cedar-wasm ${referenceVersion}) now answers ${JSON.stringify(ref)}, the corpus expects ${JSON.stringify(x.expect)}`);
      }
      const got = run.answers.get(x.c.id);
      if (!agree(got, x.expect)) {
        problems.push({ where: `corpus ${x.file}:${x.line}`, c: x.c, ref: x.expect, got, minimise: true });
      } else {
        ok++;
      }
    }
    console.log(`corpus: ${cases.length} cases in ${files.length} files, ${ok} agree with the expectation`);
    await checkJson(cmd, cases.filter((x) => x.expect && x.expect.failure === undefined).map((x) => x.c), o, tmpDir, problems, 'corpus');
  }

  // 2. Generated cases.
  if (o.generated && o.cases > 0) {
    const t0 = Date.now();
    const cases = [...generate(o.seed, o.cases)];
    const t1 = Date.now();
    // The reference runs as its own process (oracle.mjs) beside the engine: both cores work, and this
    // process stays small. (Calling cedar-wasm 20,000 times in here, next to the cases and their JSON,
    // made node 20's V8 abort: "unreachable code" in Deoptimizer::DoComputeBuiltinContinuation.)
    const input = writeCases(cases, tmpDir);
    const oracleCmd = `'${process.execPath}' '${path.join(here, 'oracle.mjs')}'`;
    let t2 = 0;
    let t3 = 0;
    const [refRun, run] = await Promise.all([
      runCommand(oracleCmd, input, o.timeout, false).then((r) => ((t2 = Date.now()), r)),
      runCommand(cmd, input, o.timeout, false).then((r) => ((t3 = Date.now()), r)),
    ]);
    fs.rmSync(input, { force: true });
    if (refRun.code !== 0 || refRun.answers.size !== cases.length) {
      console.log(`the reference process failed (status ${refRun.code}, ${refRun.answers.size} answers):\n${refRun.stderr.slice(0, 2000)}`);
      process.exit(2);
    }
    const refs = cases.map((c) => refRun.answers.get(c.id));
    const stats = {};
    for (const a of refs) {
      const k = a.failure ? 'failure' : `${a.decision}${a.errors.length ? '+errors' : ''}`;
      stats[k] = (stats[k] || 0) + 1;
    }
    console.log(`generated: ${cases.length} cases, seed ${o.seed} (generate ${t1 - t0} ms; reference ${t2 - t1} ms, engine ${t3 - t1} ms, in parallel)`);
    console.log(`reference answers: ${Object.entries(stats).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    if (run.timedOut) console.log(`engine timed out after ${o.timeout} s`);
    else if (run.code !== 0) console.log(`engine exited with ${run.signal ? `signal ${run.signal}` : `status ${run.code}`}`);
    if (run.badLines) console.log(`engine wrote ${run.badLines} lines that are not answers`);
    if (run.stderr.trim()) console.log(`engine stderr (start):\n${run.stderr.slice(0, 2000)}`);
    let agreeing = 0;
    let crashed = 0;
    for (let i = 0; i < cases.length; i++) {
      const got = run.answers.get(cases[i].id);
      if (refs[i].crashed) crashed++;
      else if (agree(got, refs[i])) agreeing++;
      else problems.push({ where: `generated ${cases[i].id}`, c: cases[i], ref: refs[i], got, minimise: true });
    }
    console.log(`generated: ${agreeing} of ${cases.length - crashed} agree` +
      (crashed ? ` (${crashed} not compared: the reference crashed on them)` : ''));
    const jsonCases = [];
    for (let i = 0; i < cases.length && jsonCases.length < o.jsonCases; i++) {
      if (!refs[i].failure) jsonCases.push(cases[i]);
    }
    await checkJson(cmd, jsonCases, o, tmpDir, problems, 'generated');
  }

  // 3. Report differences, minimised, grouped by kind.
  const jsonProblems = problems.filter((p) => p.json);
  if (jsonProblems.length) {
    console.log(`\nJSON PRINTING DIFFERENCES: ${jsonProblems.length}`);
    for (const p of jsonProblems.slice(0, o.maxReports)) {
      console.log(`\n--- ${p.where}`);
      console.log(`policies:  ${JSON.stringify({ policies: p.c.policies, templates: p.c.templates })}`);
      console.log(`reference: ${canonJson(p.want)}`);
      console.log(`engine:    ${p.got ? canonJson(p.got) : '(no answer)'}`);
    }
    problems.splice(0, problems.length, ...problems.filter((p) => !p.json));
  }
  if (problems.length) {
    const byKind = new Map();
    for (const p of problems) {
      const k = difference(p.got, p.ref);
      if (!byKind.has(k)) byKind.set(k, []);
      byKind.get(k).push(p);
    }
    console.log(`\nDIFFERENCES: ${problems.length} in ${byKind.size} classes:`);
    for (const [k, v] of byKind) console.log(`  ${String(v.length).padStart(6)}  ${k}`);
    // One example of each kind first, then the rest in order.
    const order = [];
    for (let i = 0; order.length < problems.length; i++) {
      for (const list of byKind.values()) if (i < list.length) order.push(list[i]);
    }
    const found = [];
    let reported = 0;
    for (const p of order) {
      if (reported >= o.maxReports) break;
      reported++;
      let c = p.c;
      if (p.minimise) c = await minimise(cmd, p.c, difference(p.got, p.ref), o, tmpDir);
      const ref = p.minimise ? reference(c) : p.ref;
      const got = (await runEngine(cmd, [c], o.timeout, tmpDir)).answers.get(c.id);
      console.log(`\n--- ${p.where} (${difference(got, ref)})${p.minimise ? ', minimised' : ''}`);
      console.log(`case:      ${JSON.stringify(stripId(c))}`);
      console.log(`reference: ${JSON.stringify(ref)}`);
      console.log(`engine:    ${got ? JSON.stringify(got) : '(no answer)'}`);
      const { note, ...body } = stripId(c);
      found.push({
        cls: difference(p.got, p.ref),
        id: `${String(p.where).replace(/^generated /, '').replace(/\s+/g, '-')}`,
        note: `${o.label ? `${o.label}: ` : ''}${difference(got, ref)}; engine answered ${got ? JSON.stringify(got.failure !== undefined ? { failure: got.failure } : { decision: got.decision, reason: got.reason, errors: got.errors }) : 'nothing'}`,
        ...body,
        expect: expectOf(ref),
      });
    }
    if (problems.length > reported) console.log(`\n(${problems.length - reported} more not shown; --max-reports N)`);
    const foundFile = path.join(outDir, 'regressions-found.ndjson');
    fs.writeFileSync(foundFile, found.map(({ cls, ...x }) => JSON.stringify(x)).join('\n') + '\n');
    console.log(`\nwrote ${found.length} cases to ${foundFile}`);
    if (o.record) {
      const reg = path.join(corpusDir, 'regressions.ndjson');
      const have = new Set(fs.existsSync(reg) ? fs.readFileSync(reg, 'utf8').split('\n').filter(Boolean).map((l) => {
        const { id, note, ...rest } = JSON.parse(l);
        return JSON.stringify(rest);
      }) : []);
      // One minimised case per class of difference; cases already in the corpus are not copied.
      const classes = new Set();
      const add = [];
      for (const { cls, ...x } of found) {
        const { id, note, ...rest } = x;
        if (classes.has(cls) || have.has(JSON.stringify(rest)) || p_is_corpus(x)) continue;
        classes.add(cls);
        add.push(x);
      }
      fs.appendFileSync(reg, add.map((x) => JSON.stringify(x)).join('\n') + (add.length ? '\n' : ''));
      console.log(`appended ${add.length} to ${reg}`);
    }
  }
  fs.rmSync(tmpDir, { recursive: true, force: true });
  if (problems.length || failedExpectations || jsonProblems.length) {
    console.log(`\nFAIL: ${problems.length} engine differences, ${jsonProblems.length} JSON printing differences, ` +
      `${failedExpectations} corpus expectations the reference no longer gives`);
    process.exit(1);
  }
  console.log('OK: the engine agrees with the reference on every case');
}

function p_is_corpus(x) {
  return String(x.id).startsWith('corpus');
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
