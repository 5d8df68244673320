// Cross-checks govern_scim against two independent npm implementations over a generated corpus:
//  - scim2-parse-filter: the same filter selects the same resources;
//  - scim-patch: the same PATCH operations give the same resource.
// Usage: node crosscheck.mjs <scim_tool> [seed]. Exits 1 on any difference, printing the first ones.
//
// The corpus stays inside the meaning both sides share. Where the libraries knowingly differ from RFC
// 7644 (and from us), the generator does not go:
//  - scim2-parse-filter compares strings case-sensitively whatever the attribute's caseExact, so all
//    generated strings are lower case (case rules are tested in src/scim/testdata);
//  - its `ne` is "some value differs" and false on an absent attribute (ours: no value equals), so
//    `ne` is generated only on attributes every resource has, single-valued;
//  - it applies a value filter to the whole list rather than to each element, so value filters hold
//    one condition;
//  - it does not read the core schema URN prefix nor `emails op v` without a sub-attribute;
//  - scim-patch replaces a whole complex attribute given in a path-less value (RFC 7644 3.5.2.3 keeps
//    sub-attributes not given: we do), does not de-duplicate path-less adds, and does not keep one
//    primary; it keeps empty objects (we drop them: compared after the same tidying).
import { execFileSync } from "node:child_process";
import { parse, filter } from "scim2-parse-filter";
import { scimPatch } from "scim-patch";

const tool = process.argv[2];
let seed = Number(process.argv[3] ?? 20261130);
function rand() {
  // mulberry32
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const chance = (p) => rand() < p;

const ENT = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
const WORDS = ["alice", "bob", "carol", "dave", "eve", "ops", "eng", "a", "ab", "b", "zed", "m"];
const DOMAINS = ["example.com", "corp.test", "x.org"];
const TYPES = ["work", "home", "other"];

function makeUser(i) {
  const u = {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
    id: `u${i}`,
    userName: `${pick(WORDS)}${i}`,
    displayName: pick(WORDS),
    active: chance(0.6),
  };
  if (chance(0.6)) u.title = pick(WORDS);
  if (chance(0.5)) u.userType = pick(["employee", "intern", "contractor"]);
  if (chance(0.7)) {
    u.name = {};
    if (chance(0.8)) u.name.givenName = pick(WORDS);
    if (chance(0.8)) u.name.familyName = pick(WORDS);
    if (Object.keys(u.name).length === 0) delete u.name;
  }
  if (chance(0.7)) {
    const n = 1 + Math.floor(rand() * 3);
    const types = [...TYPES].sort(() => rand() - 0.5);
    u.emails = [];
    for (let k = 0; k < n; k++) {
      const e = { value: `${pick(WORDS)}${k}@${pick(DOMAINS)}`, type: types[k] };
      if (k === 0 && chance(0.5)) e.primary = true;
      u.emails.push(e);
    }
  }
  if (chance(0.5)) {
    u.schemas.push(ENT);
    u[ENT] = { department: pick(["sales", "eng", "ops"]) };
    if (chance(0.5)) u[ENT].employeeNumber = `${Math.floor(rand() * 100)}`;
    if (chance(0.4)) u[ENT].manager = { value: `u${Math.floor(rand() * 30)}` };
  }
  return u;
}

// Attributes for filters: [path, kind], kind = string | bool; `always` = present on every resource.
const ATTRS = [
  ["userName", "string", true], ["displayName", "string", true], ["title", "string", false],
  ["userType", "string", false], ["name.givenName", "string", false], ["name.familyName", "string", false],
  ["emails.value", "string", false], ["emails.type", "string", false], ["active", "bool", true],
  ["emails.primary", "bool", false], [`${ENT}:department`, "string", false],
  [`${ENT}:employeeNumber`, "string", false], [`${ENT}:manager.value`, "string", false],
];
const STRING_OPS = ["eq", "co", "sw", "ew", "gt", "ge", "lt", "le"];
function literal() {
  return JSON.stringify(chance(0.5) ? pick(WORDS) : pick([...TYPES, ...DOMAINS, "sales", "eng", "employee", "u1", "@", "1", "a1"]));
}
function attrExp() {
  const [path, kind, always] = pick(ATTRS);
  if (chance(0.12)) return `${path} pr`;
  if (kind === "bool") return `${path} eq ${chance(0.5)}`;
  if (always && chance(0.2)) return `${path} ne ${literal()}`;
  return `${path} ${pick(STRING_OPS)} ${literal()}`;
}
function valueFilter(depth) {
  const sub = () => {
    const r = rand();
    if (r < 0.4) return `type eq ${JSON.stringify(pick(TYPES))}`;
    if (r < 0.6) return `primary eq ${chance(0.5)}`;
    if (r < 0.7) return "primary pr";
    return `value ${pick(["co", "sw", "ew"])} ${literal()}`;
  };
  // One condition only: scim2-parse-filter tests a bracketed filter against the whole list, not each
  // element (emails[type eq "work" and type eq "home"] matches a user with both), unlike RFC 7644.
  return `emails[${sub()}]`;
}
function genFilter(depth = 0) {
  const r = rand();
  if (depth > 3 || r < 0.35) return chance(0.85) ? attrExp() : valueFilter(depth);
  if (r < 0.5) return `not (${genFilter(depth + 1)})`;
  if (r < 0.6) return `(${genFilter(depth + 1)})`;
  return `${genFilter(depth + 1)} ${pick(["and", "or"])} ${genFilter(depth + 1)}`;
}

function runTool(mode, input) {
  const out = execFileSync(tool, [mode], { input: JSON.stringify(input), maxBuffer: 1 << 28 });
  return JSON.parse(out.toString());
}

let failures = 0;
function fail(msg) {
  if (failures++ < 10) console.error(msg);
}

// --- filters ---
const users = Array.from({ length: 40 }, (_, i) => makeUser(i));
const filters = Array.from({ length: 2000 }, () => genFilter());
const ours = runTool("filter", { type: "User", resources: users, filters });
for (let i = 0; i < filters.length; i++) {
  let theirs;
  try {
    const f = filter(parse(filters[i]));
    theirs = users.filter(f).map((u) => u.id);
  } catch (e) {
    theirs = { error: String(e) };
  }
  const mine = ours[i].ids ?? { error: ours[i].error + ": " + ours[i].detail };
  if (JSON.stringify(mine) !== JSON.stringify(theirs)) {
    fail(`filter ${JSON.stringify(filters[i])}\n  govern: ${JSON.stringify(mine)}\n  scim2-parse-filter: ${JSON.stringify(theirs)}`);
  }
}
const matched = ours.filter((o) => o.ids && o.ids.length > 0 && o.ids.length < users.length).length;
console.log(`filters: ${filters.length} compared, ${matched} selecting some but not all resources`);

// --- PATCH ---
function genOp(user) {
  const r = rand();
  const simple = pick(["title", "displayName", "nickName", "userType", "locale"]);
  if (r < 0.12) return { op: pick(["replace", "add", "Replace", "Add"]), path: simple, value: pick(WORDS) };
  if (r < 0.2) return { op: "remove", path: pick([simple, "name.givenName", "emails", "name"]) };
  if (r < 0.3) return { op: pick(["replace", "add"]), path: pick(["name.givenName", "name.familyName"]), value: pick(WORDS) };
  if (r < 0.37) return { op: "replace", path: "active", value: chance(0.5) };
  if (r < 0.45) return { op: "replace", value: { active: chance(0.5), title: pick(WORDS) } };
  if (r < 0.52) return { op: "replace", value: { "name.givenName": pick(WORDS), displayName: pick(WORDS) } };
  if (r < 0.6) return { op: "add", path: "emails", value: [{ value: `new${Math.floor(rand() * 1e6)}@x.org`, type: pick(TYPES) }] };
  if (r < 0.66) return { op: "replace", path: "emails", value: [{ value: `${pick(WORDS)}@corp.test`, type: "work" }] };
  if (r < 0.76) return { op: pick(["replace", "add"]), path: `emails[type eq ${JSON.stringify(pick(TYPES))}].value`, value: `${pick(WORDS)}@y.test` };
  if (r < 0.84) return { op: "remove", path: `emails[type eq ${JSON.stringify(pick(TYPES))}]` };
  if (r < 0.9) return { op: pick(["add", "replace"]), path: `${ENT}:department`, value: pick(["sales", "eng"]) };
  if (r < 0.95 && user.emails) return { op: "remove", path: `emails[value eq ${JSON.stringify(pick(user.emails).value)}]` };
  return { op: "replace", path: `emails[type eq ${JSON.stringify(pick(TYPES))}]`, value: { display: pick(WORDS) } };
}
function tidy(v) {
  if (Array.isArray(v)) {
    const out = v.map(tidy).filter((x) => !isEmpty(x));
    return out;
  }
  if (v !== null && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      const t = tidy(x);
      if (!isEmpty(t)) out[k] = t;
    }
    return out;
  }
  return v;
}
function isEmpty(v) {
  return v === null || v === undefined || (Array.isArray(v) && v.length === 0) ||
    (typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
}
function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v).sort()) out[k] = canonical(v[k]);
    return out;
  }
  return v;
}
function settle(user) {
  const t = tidy(user);
  t.schemas = ["urn:ietf:params:scim:schemas:core:2.0:User", ...(t[ENT] ? [ENT] : [])];
  return canonical(t);
}
const cases = [];
for (let i = 0; i < 1500; i++) {
  const user = makeUser(1000 + i);
  if (!user.emails) user.emails = [{ value: "seed@x.org", type: "work" }];
  delete user.emails[0].primary;  // scim-patch keeps no single primary: stay out of that
  for (const e of user.emails) delete e.primary;
  const ops = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => genOp(user));
  cases.push({ resource: user, Operations: ops });
}
const patched = runTool("patch", { type: "User", cases });
let applied = 0;
let skipped = 0;
for (let i = 0; i < cases.length; i++) {
  let theirs;
  try {
    theirs = settle(scimPatch(JSON.parse(JSON.stringify(cases[i].resource)), cases[i].Operations, { mutateDocument: true, treatMissingAsAdd: true }));
  } catch (e) {
    theirs = { error: e.constructor.name };
  }
  const mine = patched[i].result ? canonical(patched[i].result) : { error: patched[i].error };
  if (patched[i].result) applied++;
  const bothErr = mine.error !== undefined && theirs.error !== undefined;
  // scim-patch refuses to remove through a filter when the attribute is absent; for us (and Entra,
  // which re-sends removals) it is already removed.
  if (theirs.error === "FilterOnEmptyArray" && mine.error === undefined) {
    skipped++;
    continue;
  }
  if (!bothErr && JSON.stringify(mine) !== JSON.stringify(theirs)) {
    fail(`patch ${JSON.stringify(cases[i].Operations)}\n  on ${JSON.stringify(cases[i].resource)}\n  govern: ${JSON.stringify(mine)}\n  scim-patch: ${JSON.stringify(theirs)}`);
  }
}
console.log(`patches: ${cases.length} compared, ${applied} applied by govern, ${skipped} skipped (removal through a filter on an absent attribute)`);
if (failures > 0) {
  console.error(`${failures} differences`);
  process.exit(1);
}
console.log("no differences");
