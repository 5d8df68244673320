// Seeded random generator of Cedar authorisation cases for differential testing.
//
// A case is {"id","policies":"<cedar text>","entities":[Cedar JSON entities],"request":{...}} (the
// `govern policy eval-cases` input). The same seed always gives the same cases (its own PRNG, no
// Math.random), so a failing run is reproduced with `node generate.mjs --seed S --cases N`.
//
// What it covers: policy sets of permit/forbid with every scope form (==, in, is, is..in, action in
// [..]), annotations, when/unless conditions over every operator (arithmetic near i64 overflow,
// comparisons, like with * and escapes, has and attribute access on present and missing attributes,
// sets and their methods, records, if-then-else, && and || short-circuiting over erroring operands,
// in over hierarchies and sets, is, hasTag/getTag, the ip, decimal, datetime and duration extensions
// with valid and invalid literals); entity graphs with parents, attributes (nested records, sets,
// entity references, extension values in both the __entity/__extn escapes and the implicit forms),
// tags and the occasional cycle or duplicate; requests that name known and unknown entities. A small
// share is made ill-typed on purpose (wrong operand types, non-record context, malformed entity JSON)
// or syntactically broken (a mutated policy text).
//
// Limitation: JSON integers stay within +-(2^53 - 1) because the reference is driven from JavaScript
// numbers; i64 extremes appear as Cedar literals and through arithmetic instead.
import { fileURLToPath } from 'node:url';

// mulberry32: small, fast, and identical on every platform.
export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng = {
    next,
    int: (n) => Math.floor(next() * n),
    range: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    // pick from [[weight, value], ...]
    weighted: (pairs) => {
      let total = 0;
      for (const [w] of pairs) total += w;
      let r = next() * total;
      for (const [w, v] of pairs) {
        if ((r -= w) < 0) return v;
      }
      return pairs[pairs.length - 1][1];
    },
  };
  return rng;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

const ENTITY_TYPES = ['User', 'Group', 'Tool', 'ToolSet', 'Ns::Doc'];
const COMMON_IDS = ['a', 'b', 'c'];
const ODD_IDS = ['', 'x y', 'q"t', 'ü', 'back\\slash', 'Action', 'tab\there', '*'];
const ACTION_IDS = ['read', 'write', 'call', 'admin', 'grp'];
const TAGS = ['t', 'u', 'v'];

// Attribute names with the type they usually hold, so conditions are mostly well-typed and the
// ill-typed share is deliberate.
const ATTR_TYPES = {
  name: 'str',
  level: 'long',
  n: 'long',
  flag: 'bool',
  tags: 'set',
  owner: 'ent',
  meta: 'rec',
  addr: 'ip',
  score: 'decimal',
  when: 'datetime',
  dur: 'duration',
};
const ATTR_NAMES = Object.keys(ATTR_TYPES);
const ODD_ATTR_NAMES = ['has', 'if', 'in', 'key with space', 'ü', '', 'like'];
const ATTRS_BY_TYPE = {};
for (const [k, t] of Object.entries(ATTR_TYPES)) (ATTRS_BY_TYPE[t] ||= []).push(k);

const STRINGS = ['', 'a', 'abc', 'a*c', 'hello world', 'ü', 'tab\there', 'quote"d', 'back\\slash', '*', 'admin',
  'https://internal.corp/x', 'https://example.com/q?a=1', 'ab', 'line\nbreak', 'nul\0'];
const PATTERNS = ['*', '', 'a*', '*c', 'a*c', '*b*', 'abc', '\\*', 'a\\*c', '**', '*internal.corp*', 'h*o w*d',
  'ü*', '\\\\*', 'a*b*c', '*\\**'];

const LONGS_EDGE = [
  '9223372036854775807', '-9223372036854775808', '9223372036854775806', '4611686018427387904',
  '3037000499', '3037000500', '-3037000500', '9007199254740991', '-1', '0', '1', '2',
];
const JSON_SAFE_EDGE = [9007199254740991, -9007199254740991, 4611686018427, 3037000499, 3037000500];

const IP_VALID = ['10.0.0.1', '192.168.0.0/16', '::1', '127.0.0.1', 'ff02::1', '224.0.0.1', '10.0.0.0/8',
  '1.2.3.4/32', '2001:db8::/32', '0.0.0.0/0', '127.0.0.0/8',
  // other spellings of the same addresses, and edge prefixes
  '0:0:0:0:0:0:0:1', '10.0.0.1/32', '10.0.0.1/8', 'FF02::1', '2001:DB8::/32', '::/0', '255.255.255.255/32',
  '127.0.0.1/0', '::ffff:0:0/96', '::1/128', '127.0.0.0/7', '224.0.0.0/4', '224.0.0.0/3', 'ff00::/8',
  '::1/127'];
const IP_INVALID = ['::ffff:10.0.0.1', '10.0.0.256', 'abc', '1.2.3.4/33', '', '01.2.3.4', '::1/129', '1.2.3',
  '10.0.0.0/08', 'fe80::1%eth0', '1.2.3.4/-1', ' 1.2.3.4', '1.2.3.4.5', ':::1'];
const DECIMAL_VALID = ['1.0', '-2.5', '0.0001', '922337203685477.5807', '-922337203685477.5808', '12.34', '0.0',
  '-0.0', '1.5', '1.0000', '1.5000', '-0.0001', '0.1', '00001.0', '-1.0'];
const DECIMAL_INVALID = ['1', '1.00001', 'abc', '1.', '922337203685477.5808', '.5', '+1.0', '-922337203685477.5809',
  '1.0.0', '1e3', ' 1.0'];
const DATETIME_VALID = ['2024-01-01', '2024-01-01T00:00:00Z', '2024-06-30T12:34:56.789Z',
  '2024-01-01T10:00:00+0200', '1970-01-01', '2024-02-29', '2023-12-31T23:59:59-0130', '0001-01-01',
  '2024-01-01T01:00:00+0100', '2024-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2024-01-01T00:00:00-0000',
  '1969-12-31T23:59:59.999Z', '2024-01-01T00:00:00+2359'];
const DATETIME_INVALID = ['2024-13-01', '2024-1-1', 'abc', '2024-01-01T25:00:00Z', '2023-02-29',
  '2024-01-01T00:00:00', '2024-01-01 00:00:00Z',
  '2024-01-01T00:00:00.1Z', '2024-01-01T00:00:60Z', '2024-01-01T00:00:00+2400', '-0001-01-01', '2024-01-01Z'];
const DURATION_VALID = ['1h', '1d2h3m4s5ms', '-1h', '0ms', '90m', '1d', '-2d12h', '1ms', '59s',
  '106751991167300s', '60m', '3600s', '3600000ms', '1h0m', '0d', '24h', '9223372036854775807ms',
  '-9223372036854775808ms', '106751991167d', '2562047788015h'];
const DURATION_INVALID = ['1x', 'h', '', '1h1d', '1.5h', '--1h', '1 h', '9223372036854775808ms', '1d-1h', '+1h',
  '106751991167301d', '1H'];

const EXT_LITS = {
  ip: [IP_VALID, IP_INVALID],
  decimal: [DECIMAL_VALID, DECIMAL_INVALID],
  datetime: [DATETIME_VALID, DATETIME_INVALID],
  duration: [DURATION_VALID, DURATION_INVALID],
};

// ---------------------------------------------------------------------------------------------
// Cedar text helpers

// Escapes are chosen at random among the equivalent spellings (\u{..} for any character, \' for ')
// while a case is generated, so the engine's unescaping is exercised too; `null` rng: canonical.
let escapeRng = null; // the case's rng while a case is generated

export function cedarString(s, rngArg) {
  const rng = rngArg === undefined ? escapeRng : rngArg;
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (rng && rng.chance(0.04)) out += `\\u{${cp.toString(16)}}`;
    else if (rng && ch === "'" && rng.chance(0.5)) out += "\\'";
    else if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (cp === 0) out += '\\0';
    else if (cp < 0x20 || cp === 0x7f) out += `\\u{${cp.toString(16)}}`;
    else out += ch;
  }
  return out + '"';
}

// `like` patterns: `*` is the wildcard, `\*` a literal star; other escapes as in strings.
function cedarPattern(p, rng) {
  let out = '"';
  for (const ch of p) {
    if (rng && rng.chance(0.05) && ch !== '\\') out += `\\u{${ch.codePointAt(0).toString(16)}}`; // \u{2a} is a wildcard too
    else if (ch === '"') out += '\\"';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else out += ch; // backslashes stay as written: `\*` is the escape under test
  }
  return out + '"';
}

const uidText = (u) => `${u.type}::${cedarString(u.id)}`;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED = new Set(['true', 'false', 'if', 'then', 'else', 'in', 'is', 'like', 'has', 'principal', 'action',
  'resource', 'context', '__cedar']);

function access(base, name, rng) {
  if (IDENT.test(name) && !RESERVED.has(name) && rng.chance(0.8)) return `${base}.${name}`;
  return `${base}[${cedarString(name)}]`;
}

function hasText(base, name, rng) {
  if (IDENT.test(name) && !RESERVED.has(name) && rng.chance(0.8)) return `${base} has ${name}`;
  return `${base} has ${cedarString(name)}`;
}

// ---------------------------------------------------------------------------------------------
// Values: generated as a model, written as JSON (entities, context) or Cedar text.

function genValue(rng, type, depth, json) {
  switch (type) {
    case 'bool':
      return { t: 'bool', v: rng.chance(0.5) };
    case 'long':
      if (rng.chance(0.12)) {
        return { t: 'long', v: BigInt(json ? rng.pick(JSON_SAFE_EDGE) : rng.pick(LONGS_EDGE)) };
      }
      return { t: 'long', v: BigInt(rng.range(-3, 20)) };
    case 'str':
      return { t: 'str', v: rng.pick(STRINGS) };
    case 'set': {
      const et = rng.chance(0.7) ? 'str' : rng.pick(['long', 'ent', 'bool', 'ip', 'set', 'rec']);
      const n = rng.range(0, depth > 0 ? 3 : 1);
      const v = [];
      for (let i = 0; i < n; i++) v.push(genValue(rng, rng.chance(0.9) ? et : randomType(rng), depth - 1, json));
      return { t: 'set', v };
    }
    case 'rec': {
      const v = {};
      const n = rng.range(0, depth > 0 ? 3 : 1);
      for (let i = 0; i < n; i++) {
        const k = rng.chance(0.9) ? rng.pick(['flag', 'level', 'name', 'tags', 'owner', 'n']) : rng.pick(ODD_ATTR_NAMES);
        v[k] = genValue(rng, ATTR_TYPES[k] && rng.chance(0.9) ? ATTR_TYPES[k] : randomType(rng, depth - 1), depth - 1,
          json);
      }
      return { t: 'rec', v };
    }
    case 'ent':
      return { t: 'ent', v: randomUid(rng) };
    case 'ip':
    case 'decimal':
    case 'datetime':
    case 'duration': {
      const [good, bad] = EXT_LITS[type];
      return { t: 'ext', fn: type === 'ip' && !json && rng.chance(0.01) ? 'ipaddr' : type, v: rng.chance(json ? 0.97 : 0.85) ? rng.pick(good) : rng.pick(bad) };
    }
    default:
      throw new Error(`no value of type ${type}`);
  }
}

function randomType(rng, depth = 1) {
  const scalar = ['bool', 'long', 'str', 'ent', 'ip', 'decimal', 'datetime', 'duration'];
  return depth > 0 && rng.chance(0.25) ? rng.pick(['set', 'rec']) : rng.pick(scalar);
}

function valueJson(rng, val) {
  switch (val.t) {
    case 'bool':
      return val.v;
    case 'long':
      return Number(val.v);
    case 'str':
      return val.v;
    case 'set':
      return val.v.map((x) => valueJson(rng, x));
    case 'rec': {
      const o = {};
      for (const [k, x] of Object.entries(val.v)) o[k] = valueJson(rng, x);
      return o;
    }
    case 'ent':
      // The explicit escape mostly; the implicit {type,id} form (a record to the reference) sometimes.
      return rng.chance(0.9) ? { __entity: { type: val.v.type, id: val.v.id } } : { type: val.v.type, id: val.v.id };
    case 'ext': {
      const fn = val.fn === 'ipaddr' ? 'ip' : val.fn;
      return rng.chance(0.93) ? { __extn: { fn, arg: val.v } } : { fn, arg: val.v };
    }
  }
  throw new Error('bad value');
}

function valueCedar(val) {
  switch (val.t) {
    case 'bool':
      return String(val.v);
    case 'long':
      return val.v < 0n ? `(${val.v})` : String(val.v);
    case 'str':
      return cedarString(val.v);
    case 'set':
      return `[${val.v.map(valueCedar).join(', ')}]`;
    case 'rec':
      return `{${Object.entries(val.v).map(([k, x]) => `${cedarString(k)}: ${valueCedar(x)}`).join(', ')}}`;
    case 'ent':
      return uidText(val.v);
    case 'ext':
      return `${val.fn}(${cedarString(val.v)})`;
  }
  throw new Error('bad value');
}

function randomUid(rng) {
  return { type: rng.pick(ENTITY_TYPES), id: rng.chance(0.95) ? rng.pick(COMMON_IDS) : rng.pick(ODD_IDS) };
}

const actionUid = (rng) => ({ type: rng.chance(0.97) ? 'Action' : 'Ns::Action', id: rng.pick(ACTION_IDS) });
const sameUid = (x, y) => x.type === y.type && x.id === y.id;

// ---------------------------------------------------------------------------------------------
// Entities and requests

function genEntities(rng) {
  const uids = [];
  const n = rng.range(0, 8);
  for (let i = 0; i < n * 2 && uids.length < n; i++) {
    const u = randomUid(rng);
    if (!uids.some((x) => sameUid(x, u))) uids.push(u);
  }
  const entities = [];
  const cyclic = rng.chance(0.02);
  for (let i = 0; i < uids.length; i++) {
    const parents = [];
    const np = rng.weighted([[4, 0], [4, 1], [2, 2], [1, 3]]);
    for (let j = 0; j < np; j++) {
      let p;
      if (i > 0 && rng.chance(0.8)) {
        p = uids[rng.int(i)]; // earlier: keeps the graph acyclic
      } else if (cyclic && i + 1 < uids.length) {
        p = uids[i + 1 + rng.int(uids.length - i - 1)]; // may close a cycle
      } else {
        p = randomUid(rng); // a parent that is not an entity of the list
        if (uids.some((x) => sameUid(x, p))) continue;
      }
      if (!sameUid(p, uids[i]) && !parents.some((x) => sameUid(x, p))) parents.push(p);
    }
    const attrs = {};
    const na = rng.range(0, 4);
    for (let j = 0; j < na; j++) {
      const k = rng.chance(0.93) ? rng.pick(ATTR_NAMES) : rng.pick(ODD_ATTR_NAMES);
      const t = ATTR_TYPES[k] && rng.chance(0.9) ? ATTR_TYPES[k] : randomType(rng);
      attrs[k] = valueJson(rng, genValue(rng, t, 2, true));
    }
    const e = { uid: { type: uids[i].type, id: uids[i].id }, attrs, parents: parents.map((p) => ({ ...p })) };
    if (rng.chance(0.3)) {
      e.tags = {};
      for (let j = rng.range(0, 2); j >= 0; j--) {
        e.tags[rng.pick(TAGS)] = valueJson(rng, genValue(rng, rng.chance(0.7) ? 'long' : randomType(rng), 1, true));
      }
    }
    if (rng.chance(0.05)) e.uid = { __entity: e.uid };
    entities.push(e);
  }
  // Action entities: a small action group hierarchy, sometimes.
  if (rng.chance(0.6)) {
    for (const id of ACTION_IDS) {
      if (rng.chance(0.6)) {
        const parents = id !== 'grp' && rng.chance(0.6) ? [{ type: 'Action', id: 'grp' }] : [];
        if (rng.chance(0.008)) parents.push(randomUid(rng)); // a non-action parent: the reference refuses it
        const a = { uid: { type: 'Action', id }, attrs: {}, parents };
        if (rng.chance(0.1)) a.attrs = { flag: rng.chance(0.5), level: rng.range(0, 5) };
        if (rng.chance(0.05)) a.tags = { t: rng.range(0, 3) };
        entities.push(a);
      }
    }
  }
  return entities;
}

function entityUid(e) {
  return e.uid.__entity ? e.uid.__entity : e.uid;
}

function genContext(rng) {
  const ctx = {};
  const n = rng.range(0, 5);
  for (let i = 0; i < n; i++) {
    const k = rng.chance(0.93) ? rng.pick(ATTR_NAMES) : rng.pick(ODD_ATTR_NAMES);
    const t = ATTR_TYPES[k] && rng.chance(0.9) ? ATTR_TYPES[k] : randomType(rng);
    ctx[k] = valueJson(rng, genValue(rng, t, 2, true));
  }
  return ctx;
}

// Damage the entity list or request in one of the ways the JSON formats forbid.
function breakData(rng, c) {
  const kind = rng.int(11);
  const ents = c.entities;
  switch (kind) {
    case 0:
      c.request.context = rng.pick([[1, 2], 'ctx', 5, true]);
      break;
    case 1:
      c.request.principal = rng.pick([{ type: 'User' }, { id: 'a' }, 'User::"a"', { type: 5, id: 'a' }]);
      break;
    case 2:
      if (ents.length) ents[0].attrs = rng.pick([[], 'x', 1]);
      else c.request.context = { f: 1.5 };
      break;
    case 3:
      if (ents.length) ents[0].parents = [rng.pick(['User::"a"', 1, { type: 'User' }])];
      else c.request.context = { f: 1.5 };
      break;
    case 4:
      c.request.context = { ...c.request.context, f: rng.pick([1.5, 1e300, -0.25]) };
      break;
    case 5:
      if (ents.length) ents.push(JSON.parse(JSON.stringify({ ...ents[0], attrs: { other: 1 } })));
      else c.entities = [{ uid: { type: 'User', id: 'a' }, attrs: {}, parents: [] }, { uid: { type: 'User', id: 'a' }, attrs: { x: 1 }, parents: [] }];
      break;
    case 6:
      c.request.context = { ...c.request.context, e: { __extn: { fn: rng.pick(['nope', 'ip', 'decimal']), arg: rng.pick(['x', '1.0.0', '']) } } };
      break;
    case 7:
      c.request.context = { ...c.request.context, e: { __entity: rng.pick([{ type: 'User' }, { type: 'User', id: 1 }, 'User::"a"']) } };
      break;
    case 8:
      if (ents.length) ents[0].uid = rng.pick([{ type: 'User' }, { type: '', id: 'a' }, { type: 'Us er', id: 'a' }]);
      else c.request.resource = { type: 'Bad Type', id: 'a' };
      break;
    case 9:
      if (ents.length) ents[0].extra = rng.pick([1, 'x']);
      else c.request.action = { type: 'Action' };
      break;
    case 10:
      c.entities = rng.pick([{}, 'x', [1], [{}]]);
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Expressions

class ExprGen {
  constructor(rng, env) {
    this.rng = rng;
    this.env = env; // {uids: [...known entity uids], req: {principal, action, resource}}
  }

  bad() {
    return this.rng.chance(0.04);
  }

  any(d) {
    const t = randomType(this.rng, d);
    return this.of(t === 'rec' || t === 'set' ? t : t, d);
  }

  of(t, d) {
    switch (t) {
      case 'bool': return this.bool(d);
      case 'long': return this.long(d);
      case 'str': return this.str(d);
      case 'ent': return this.ent(d);
      case 'set': return this.set(d);
      case 'rec': return this.rec(d);
      default: return this.ext(t, d);
    }
  }

  uid() {
    const r = this.rng;
    const { uids, req } = this.env;
    return r.weighted([
      [3, () => req.principal],
      [2, () => req.resource],
      [3, () => (uids.length ? r.pick(uids) : randomUid(r))],
      [2, () => randomUid(r)],
    ])();
  }

  entityBase(d) {
    const r = this.rng;
    return r.weighted([
      [4, () => 'principal'],
      [3, () => 'resource'],
      [1, () => 'action'],
      [1, () => uidText(this.uid())],
      [d > 0 ? 1 : 0, () => access(r.pick(['principal', 'resource', 'context']), 'owner', r)],
    ])();
  }

  // An attribute read whose name usually holds `t`, on an entity, the context or a record.
  attr(t, d) {
    const r = this.rng;
    const names = ATTRS_BY_TYPE[t] || ATTR_NAMES;
    const name = r.chance(0.9) ? r.pick(names) : r.pick(r.chance(0.5) ? ATTR_NAMES : ODD_ATTR_NAMES);
    let base = r.weighted([[3, () => this.entityBase(d)], [3, 'context'], [d > 0 ? 1 : 0, 'meta']]);
    if (typeof base === 'function') base = base();
    if (base === 'meta') base = access(r.pick(['context', 'principal', 'resource']), 'meta', r);
    return access(base, name, r);
  }

  lit(t) {
    return valueCedar(genValue(this.rng, t, 1, false));
  }

  bool(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.15)) {
      return r.weighted([[3, () => this.lit('bool')], [2, () => this.attr('bool', 0)], [1, () => this.hasExpr(0)]])();
    }
    if (this.bad()) return this.any(d - 1);
    const e = d - 1;
    return r.weighted([
      [3, () => `${this.opnd(this.long(e))} ${r.pick(['<', '<=', '>', '>='])} ${this.opnd(this.long(e))}`],
      [4, () => { const t = randomType(r, e); return `${this.opnd(this.of(t, e))} ${r.pick(['==', '!='])} ${this.opnd(this.of(r.chance(0.85) ? t : randomType(r, e), e))}`; }],
      [2, () => `!${this.paren(this.bool(e))}`],
      [3, () => `${this.paren(this.bool(e))} && ${this.paren(this.bool(e))}`],
      [3, () => `${this.paren(this.bool(e))} || ${this.paren(this.bool(e))}`],
      [2, () => this.shortCircuit(e)],
      [3, () => `${this.paren(this.str(e))} like ${cedarPattern(r.pick(PATTERNS), r)}`],
      [4, () => this.hasExpr(e)],
      [3, () => this.guarded(e)],
      [4, () => this.inExpr(e)],
      [2, () => this.isExpr(e)],
      [3, () => this.setMethod(e)],
      [2, () => this.ipMethod(e)],
      [2, () => this.decimalMethod(e)],
      [2, () => `${this.paren(this.ext('datetime', e))} ${r.pick(['<', '<=', '>', '>=', '==', '!='])} ${this.paren(this.ext(r.chance(0.9) ? 'datetime' : 'duration', e))}`],
      [2, () => `${this.paren(this.ext('duration', e))} ${r.pick(['<', '<=', '>', '>='])} ${this.paren(this.ext('duration', e))}`],
      [2, () => this.tagExpr(e, 'bool')],
      [2, () => `(if ${this.bool(e)} then ${this.bool(e)} else ${this.bool(e)})`],
      [2, () => this.attr('bool', e)],
    ])();
  }

  paren(s) {
    return `(${s})`;
  }

  // Operands of relational operators are parenthesised mostly: `a like "p" == b` is a parse error.
  opnd(s) {
    return this.rng.chance(0.97) ? `(${s})` : s;
  }

  // An operand that errors when evaluated, guarded (or not) by a short-circuiting operator.
  erroring() {
    const r = this.rng;
    return r.pick([
      '(1 + "a")', 'principal.no_such_attr', 'context.no_such_key', '(9223372036854775807 + 1 > 0)',
      'ip("bad") == ip("bad")', 'decimal("1") < decimal("2")', '(-9223372036854775807 - 2 == 0)',
      '([1,2].contains(1) && "x")', 'User::"nobody".flag', 'principal.getTag("zz")',
      '(9223372036854775807 * 2 == 0)', 'datetime("2024-13-01") < datetime("2024-01-01")',
    ]);
  }

  shortCircuit(e) {
    const r = this.rng;
    const x = this.erroring();
    return r.pick([
      `false && ${x}`, `true || ${x}`, `${x} && false`, `${x} || true`, `true && ${x}`, `false || ${x}`,
      `${this.paren(this.bool(e))} && ${x}`, `${this.paren(this.bool(e))} || ${x}`,
      `if false then ${x} else true`, `if true then true else ${x}`, `!(${x})`,
    ]);
  }

  hasExpr(e) {
    const r = this.rng;
    const name = r.chance(0.85) ? r.pick(ATTR_NAMES) : r.pick(ODD_ATTR_NAMES);
    const base = r.weighted([[4, () => this.entityBase(e)], [3, () => 'context'], [1, () => this.paren(this.rec(e))],
      [1, () => access('context', 'meta', r)], [1, () => this.paren(this.any(e))]])();
    if (r.chance(0.15) && IDENT.test(name) && !RESERVED.has(name)) {
      // Cedar 4's `has a.b`
      return `${base} has ${name}.${r.pick(['flag', 'level', 'name', 'x'])}`;
    }
    return hasText(base, name, r);
  }

  guarded(e) {
    const r = this.rng;
    const t = r.pick(Object.keys(ATTRS_BY_TYPE));
    const name = r.pick(ATTRS_BY_TYPE[t]);
    const base = r.pick(['principal', 'resource', 'context']);
    const use = (() => {
      const a = access(base, name, r);
      switch (t) {
        case 'long': return `${a} ${r.pick(['<', '>=', '=='])} ${this.long(e)}`;
        case 'str': return `${a} like ${cedarPattern(r.pick(PATTERNS), r)}`;
        case 'bool': return a;
        case 'set': return `${a}.contains(${this.any(e)})`;
        case 'ent': return `${a} in ${uidText(this.uid())}`;
        case 'rec': return `${a} has flag`;
        case 'ip': return `${a}.isInRange(ip(${cedarString(r.pick(IP_VALID))}))`;
        case 'decimal': return `${a}.lessThan(decimal(${cedarString(r.pick(DECIMAL_VALID))}))`;
        case 'datetime': return `${a} < datetime(${cedarString(r.pick(DATETIME_VALID))})`;
        case 'duration': return `${a} >= duration(${cedarString(r.pick(DURATION_VALID))})`;
      }
      return a;
    })();
    return r.chance(0.85) ? `${hasText(base, name, r)} && ${use}` : `!(${hasText(base, name, r)}) || ${use}`;
  }

  inExpr(e) {
    const r = this.rng;
    const lhs = r.weighted([[5, () => this.entityBase(e)], [1, () => this.ent(e)], [1, () => this.paren(this.any(e))]])();
    const rhs = r.weighted([
      [5, () => uidText(this.uid())],
      [3, () => `[${Array.from({ length: r.range(0, 3) }, () => uidText(this.uid())).join(', ')}]`],
      [1, () => this.ent(e)],
      [1, () => this.set(e)],
      [1, () => this.paren(this.any(e))],
    ])();
    return `${lhs} in ${rhs}`;
  }

  isExpr(e) {
    const r = this.rng;
    const lhs = r.chance(0.85) ? this.entityBase(e) : this.paren(this.any(e));
    const t = r.chance(0.9) ? r.pick([...ENTITY_TYPES, 'Action']) : r.pick(['Nope', 'Ns::Nope']);
    return r.chance(0.7) ? `${lhs} is ${t}` : `${lhs} is ${t} in ${r.chance(0.8) ? uidText(this.uid()) : this.set(e)}`;
  }

  setMethod(e) {
    const r = this.rng;
    const s = this.paren(this.set(e));
    return r.weighted([
      [3, () => `${s}.contains(${this.any(e)})`],
      [2, () => `${s}.containsAll(${this.set(e)})`],
      [2, () => `${s}.containsAny(${this.set(e)})`],
      [1, () => `${s}.isEmpty()`],
    ])();
  }

  ipMethod(e) {
    const r = this.rng;
    const x = this.paren(this.ext('ip', e));
    return r.weighted([
      [1, () => `${x}.${r.pick(['isIpv4', 'isIpv6', 'isLoopback', 'isMulticast'])}()`],
      [2, () => `${x}.isInRange(${this.ext('ip', e)})`],
    ])();
  }

  decimalMethod(e) {
    const r = this.rng;
    return `${this.paren(this.ext('decimal', e))}.${r.pick(['lessThan', 'lessThanOrEqual', 'greaterThan', 'greaterThanOrEqual'])}(${this.ext('decimal', e)})`;
  }

  tagExpr(e, t) {
    const r = this.rng;
    const base = this.entityBase(e);
    const tag = r.chance(0.1) ? this.str(e) : cedarString(r.pick(TAGS));
    if (t === 'bool' && r.chance(0.6)) {
      return r.chance(0.5) ? `${base}.hasTag(${tag})` : `${base}.hasTag(${tag}) && ${base}.getTag(${tag}) ${r.pick(['>', '=='])} ${this.long(e)}`;
    }
    return `${base}.getTag(${tag})`;
  }

  long(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.2)) return r.chance(0.7) ? this.lit('long') : this.attr('long', 0);
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    return r.weighted([
      [4, () => `${this.paren(this.long(e))} ${r.pick(['+', '-', '*'])} ${this.paren(this.long(e))}`],
      [1, () => `-${this.paren(this.long(e))}`],
      [3, () => this.attr('long', e)],
      [2, () => `(if ${this.bool(e)} then ${this.long(e)} else ${this.long(e)})`],
      [2, () => `${this.paren(this.ext('duration', e))}.${r.pick(['toMilliseconds', 'toSeconds', 'toMinutes', 'toHours', 'toDays'])}()`],
      [1, () => this.tagExpr(e, 'long')],
      [2, () => this.lit('long')],
    ])();
  }

  str(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.4)) return r.chance(0.6) ? this.lit('str') : this.attr('str', 0);
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    return r.weighted([
      [3, () => this.attr('str', e)],
      [1, () => `(if ${this.bool(e)} then ${this.str(e)} else ${this.str(e)})`],
      [1, () => this.tagExpr(e, 'str')],
    ])();
  }

  ent(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.5)) return r.pick(['principal', 'resource', 'action', uidText(this.uid())]);
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    return r.weighted([
      [2, () => this.attr('ent', e)],
      [1, () => `(if ${this.bool(e)} then ${this.ent(e)} else ${this.ent(e)})`],
    ])();
  }

  set(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.3)) return r.chance(0.6) ? this.lit('set') : this.attr('set', 0);
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    return r.weighted([
      [3, () => { const t = randomType(r, e); return `[${Array.from({ length: r.range(0, 3) }, () => this.of(r.chance(0.9) ? t : randomType(r, e), e)).join(', ')}]`; }],
      [2, () => this.attr('set', e)],
      [1, () => `(if ${this.bool(e)} then ${this.set(e)} else ${this.set(e)})`],
    ])();
  }

  rec(d) {
    const r = this.rng;
    if (d <= 0 || r.chance(0.3)) return r.chance(0.5) ? this.lit('rec') : 'context';
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    return r.weighted([
      [3, () => {
        const keys = Array.from({ length: r.range(0, 3) }, () => (r.chance(0.9) ? r.pick(ATTR_NAMES) : r.pick(ODD_ATTR_NAMES)));
        const uniq = r.chance(0.95) ? [...new Set(keys)] : keys; // a duplicate key is a parse error
        return `{${uniq.map((k) => `${IDENT.test(k) && !RESERVED.has(k) && r.chance(0.5) ? k : cedarString(k)}: ${this.of(ATTR_TYPES[k] || randomType(r, e), e)}`).join(', ')}}`;
      }],
      [2, () => this.attr('rec', e)],
      [1, () => `(if ${this.bool(e)} then ${this.rec(e)} else ${this.rec(e)})`],
    ])();
  }

  ext(kind, d) {
    const r = this.rng;
    const [good, bad] = EXT_LITS[kind];
    const lit = () => `${kind === 'ip' && r.chance(0.01) ? 'ipaddr' : kind}(${cedarString(r.chance(0.95) ? r.pick(good) : r.pick(bad))})`;
    if (d <= 0 || r.chance(0.4)) return r.chance(0.75) ? lit() : this.attr(kind, 0);
    if (this.bad()) return this.paren(this.any(d - 1));
    const e = d - 1;
    if (kind === 'datetime') {
      return r.weighted([
        [3, lit],
        [2, () => this.attr('datetime', e)],
        [2, () => `${this.paren(this.ext('datetime', e))}.offset(${this.ext('duration', e)})`],
        [1, () => `${this.paren(this.ext('datetime', e))}.toDate()`],
        [1, () => `(if ${this.bool(e)} then ${this.ext('datetime', e)} else ${this.ext('datetime', e)})`],
      ])();
    }
    if (kind === 'duration') {
      return r.weighted([
        [3, lit],
        [2, () => this.attr('duration', e)],
        [2, () => `${this.paren(this.ext('datetime', e))}.durationSince(${this.ext('datetime', e)})`],
        [1, () => `${this.paren(this.ext('datetime', e))}.toTime()`],
      ])();
    }
    return r.weighted([[3, lit], [2, () => this.attr(kind, e)], [1, () => `(if ${this.bool(e)} then ${this.ext(kind, e)} else ${this.ext(kind, e)})`]])();
  }
}

// ---------------------------------------------------------------------------------------------
// Policies

function genScope(rng, g, var_, req) {
  const tgt = req[var_];
  const pickUid = () => rng.weighted([[4, () => tgt], [3, () => g.uid()], [1, () => randomUid(rng)]])();
  if (var_ === 'action') {
    const act = () => (rng.chance(0.5) ? tgt : actionUid(rng));
    return rng.weighted([
      [3, () => 'action'],
      [3, () => `action == ${uidText(act())}`],
      [2, () => `action in ${uidText(rng.chance(0.5) ? { type: 'Action', id: 'grp' } : act())}`],
      [2, () => `action in [${Array.from({ length: rng.range(rng.chance(0.9) ? 1 : 0, 3) }, () => uidText(act())).join(', ')}]`],
      [0.02, () => 'action is Action'],
      [0.05, () => `action == ${uidText(pickUid())}`],
    ])();
  }
  return rng.weighted([
    [4, () => var_],
    [3, () => `${var_} == ${uidText(pickUid())}`],
    [3, () => `${var_} in ${uidText(pickUid())}`],
    [2, () => `${var_} is ${rng.chance(0.7) ? tgt.type || 'User' : rng.pick(ENTITY_TYPES)}`],
    [2, () => `${var_} is ${rng.chance(0.7) ? tgt.type || 'User' : rng.pick(ENTITY_TYPES)} in ${uidText(pickUid())}`],
    [0.03, () => `${var_} == ?${var_}`],
    [0.03, () => `${var_} in [${uidText(pickUid())}]`],
  ])();
}

function genPolicy(rng, g, req) {
  let s = '';
  const na = rng.weighted([[6, 0], [2, 1], [1, 2]]);
  const used = new Set();
  for (let i = 0; i < na; i++) {
    const key = rng.pick(['id', 'advice', 'flag', 'comment']);
    if (used.has(key) && rng.chance(0.9)) continue; // a repeated annotation is a parse error
    used.add(key);
    s += key === 'flag' ? `@${key} ` : `@${key}(${cedarString(rng.pick(STRINGS))}) `;
  }
  s += rng.chance(0.6) ? 'permit' : 'forbid';
  s += `(${genScope(rng, g, 'principal', req)}, ${genScope(rng, g, 'action', req)}, ${genScope(rng, g, 'resource', req)})`;
  const nc = rng.weighted([[2, 0], [5, 1], [2, 2]]);
  for (let i = 0; i < nc; i++) {
    s += ` ${rng.chance(0.75) ? 'when' : 'unless'} { ${g.bool(rng.chance(0.05) ? rng.range(4, 5) : rng.range(1, 3))} }`;
  }
  return s + ';';
}

// A template: principal and/or resource scope with a slot (rarely none: the reference refuses that).
function genTemplate(rng, g, req) {
  const slots = [];
  const scope = (var_) => {
    const t = req[var_];
    const type = rng.chance(0.7) ? t.type || 'User' : rng.pick(ENTITY_TYPES);
    const form = rng.weighted([[3, 'eq'], [3, 'in'], [2, 'isin'], [2, 'none']]);
    if (form === 'none') return genScope(rng, g, var_, req).replace(`?${var_}`, uidText(t));
    slots.push(`?${var_}`);
    if (form === 'eq') return `${var_} == ?${var_}`;
    if (form === 'in') return `${var_} in ?${var_}`;
    return `${var_} is ${type} in ?${var_}`;
  };
  let s = rng.chance(0.2) ? '@flag ' : '';
  if (rng.chance(0.1)) s += `@advice(${cedarString(rng.pick(STRINGS))}) `;
  s += rng.chance(0.6) ? 'permit' : 'forbid';
  s += `(${scope('principal')}, ${genScope(rng, g, 'action', req)}, ${scope('resource')})`;
  const nc = rng.weighted([[3, 0], [4, 1], [1, 2]]);
  for (let i = 0; i < nc; i++) s += ` ${rng.chance(0.75) ? 'when' : 'unless'} { ${g.bool(rng.range(1, 3))} }`;
  return { text: s + ';', slots };
}

// Templates and links beside the static policies (cedar-wasm's `templates` and `templateLinks`),
// mostly valid, sometimes with one of Cedar's link errors.
function addTemplates(rng, c, g, nStatic) {
  const templates = {};
  const slotsOf = {};
  const nt = rng.range(1, 3);
  for (let i = 0; i < nt; i++) {
    const id = rng.chance(0.97) ? `t${i}` : rng.pick(['policy0', 't0']); // rarely a duplicate id
    const t = genTemplate(rng, g, c.request);
    templates[id] = t.text;
    slotsOf[id] = t.slots;
  }
  const links = [];
  const ids = Object.keys(templates);
  const nl = rng.range(0, 4);
  const value = (slot) => {
    const t = c.request[slot.slice(1)];
    return rng.weighted([[4, () => ({ ...t })], [3, () => g.uid() || t], [1, () => randomUid(rng)]])();
  };
  for (let i = 0; i < nl; i++) {
    let templateId = rng.pick(ids);
    const values = {};
    for (const slot of slotsOf[templateId]) values[slot] = value(slot);
    let newId = `link${i}`;
    if (rng.chance(0.06)) {
      switch (rng.int(5)) {
        case 0: delete values[rng.pick(['?principal', '?resource'])]; break; // maybe unfilled
        case 1: values[rng.pick(['?principal', '?resource'])] = value('?resource'); break; // maybe extra
        case 2: templateId = rng.pick(['nope', 'policy0']); break; // unknown, or a static policy
        case 3: newId = rng.pick(['policy0', 't0', 'link0']); break; // taken
        default: values['?principal'] = { __entity: value('?principal') };
      }
    }
    links.push({ templateId, newId, values });
  }
  c.templates = templates;
  c.templateLinks = links;
  if (nStatic === 0 && rng.chance(0.5)) delete c.policies;
}

// Syntax damage: most of these fail to parse, a few still parse (both sides must agree either way).
function mutate(rng, text) {
  const pos = rng.int(text.length + 1);
  switch (rng.int(5)) {
    case 0:
      return text.slice(0, pos) + text.slice(pos + 1);
    case 1:
      return text.slice(0, pos) + rng.pick([';', '(', ')', '{', '}', '"', '&&', '::', ' when ', '@', '.', ',', '[', '!', '-', 'if', '\\']) + text.slice(pos);
    case 2:
      return text.slice(0, pos);
    case 3:
      return text.replace(rng.pick(['permit', 'forbid', 'principal', 'when', '==', '::']), rng.pick(['permits', 'Forbid', 'principals', 'whenever', '=', ':']));
    default:
      return text + rng.pick(['permit(principal, action, resource)', 'forbid(principal, action, resource) when { true }', '// trailing comment', '/* not a comment */']);
  }
}

// Varies the whitespace between tokens (never inside string literals): newlines, tabs, CRLF, comments.
function reformat(rng, text) {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      out += ch;
      if (ch === '\\') out += text[++i] ?? '';
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else if (ch === ' ' && rng.chance(0.15)) {
      out += rng.pick(['\n', '\t', '  ', '\r\n', ' // note "quoted" ;\n', '\n\n    ']);
    } else {
      out += ch;
    }
  }
  return out;
}

export function generateCase(rng, id) {
  escapeRng = rng;
  try {
    return generateCaseInner(rng, id);
  } finally {
    escapeRng = null;
  }
}

function generateCaseInner(rng, id) {
  const entities = genEntities(rng);
  const uids = entities.map(entityUid);
  const known = uids.filter((u) => u.type !== 'Action');
  const pickReq = () => (known.length && rng.chance(0.8) ? { ...rng.pick(known) } : randomUid(rng));
  const request = { principal: pickReq(), action: actionUid(rng), resource: pickReq(), context: genContext(rng) };
  const g = new ExprGen(rng, { uids: known, req: request });
  const np = rng.weighted([[1, 0], [4, 1], [4, 2], [3, 3], [2, 4], [1, 6]]);
  const pols = [];
  for (let i = 0; i < np; i++) pols.push(genPolicy(rng, g, request));
  let policies = pols.join(rng.chance(0.9) ? '\n' : ' ');
  if (rng.chance(0.2)) policies = reformat(rng, policies);
  if (rng.chance(0.04)) policies = mutate(rng, policies);
  const c = { id, policies, entities, request };
  if (rng.chance(0.15)) addTemplates(rng, c, g, np);
  if (rng.chance(0.03)) breakData(rng, c);
  return c;
}

export function* generate(seed, n, prefix = `s${seed}-`) {
  const rng = makeRng(seed);
  for (let i = 0; i < n; i++) yield generateCase(rng, `${prefix}${i}`);
}

function main() {
  const args = process.argv.slice(2);
  let seed = 1;
  let cases = 1000;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seed') seed = Number(args[++i]);
    else if (args[i] === '--cases') cases = Number(args[++i]);
    else {
      console.error('usage: node generate.mjs [--seed S] [--cases N]  (NDJSON cases on stdout)');
      process.exit(2);
    }
  }
  const out = [];
  for (const c of generate(seed, cases)) {
    out.push(JSON.stringify(c));
    if (out.length >= 1000) {
      process.stdout.write(out.join('\n') + '\n');
      out.length = 0;
    }
  }
  if (out.length) process.stdout.write(out.join('\n') + '\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
