// Random policies over a schema for the corpus: expressions built from the schema's attributes,
// literals and every operator, well-typed and ill-typed alike, from a fixed seed so that the corpus
// is regenerated identically. Used by inputs.js.
module.exports = function randomCases(schema, count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const pick = (a) => a[rnd(a.length)];
  const atoms = [
    "principal", "resource", "context", "principal.age", "principal.name", "principal.email", "principal.roles",
    "principal.profile", "principal.profile.level", "principal.profile.nick", "principal.manager", "principal.ip",
    "resource.owner", "resource.public", "resource.size", "resource.labels", "resource.created", "resource.ttl",
    "resource.score", "resource.owner.age", "context.ip", "context.mfa", "context.args", "context.args.max",
    "context.args.url", "principal.nope", "1", "0", "-3", "\"a\"", "\"x*\"", "true", "false", "User::\"a\"",
    "Team::\"t\"", "Org::\"o\"", "Doc::\"d\"", "Action::\"read\"", "action", "[1, 2]", "[\"a\"]", "{level: 1}",
    "ip(\"10.0.0.1\")", "decimal(\"1.5\")", "datetime(\"2024-01-01\")", "duration(\"1h\")", "[]",
  ];
  const guards = ["principal has name", "principal has manager", "principal has ip", "resource has ttl",
    "resource has score", "context has mfa", "context.args has url", "principal.profile has nick",
    "principal is User", "principal.hasTag(\"k\")", "context has ip"];
  function expr(d) {
    if (d <= 0 || rnd(4) === 0) return pick(atoms);
    return `(${compound(d)})`;
  }
  function compound(d) {
    switch (rnd(16)) {
      case 0: return `${expr(d - 1)} == ${expr(d - 1)}`;
      case 1: return `${expr(d - 1)} && ${expr(d - 1)}`;
      case 2: return `(${expr(d - 1)} || ${expr(d - 1)})`;
      case 3: return `!(${expr(d - 1)})`;
      case 4: return `${expr(d - 1)} < ${expr(d - 1)}`;
      case 5: return `(${expr(d - 1)} + ${expr(d - 1)})`;
      case 6: return `${expr(d - 1)} in ${expr(d - 1)}`;
      case 7: return `(${expr(d - 1)}).contains(${expr(d - 1)})`;
      case 8: return `(if ${expr(d - 1)} then ${expr(d - 1)} else ${expr(d - 1)})`;
      case 9: return `${pick(guards)} && ${expr(d - 1)}`;
      case 10: return `${expr(d - 1)} like "a*"`;
      case 11: return `${expr(d - 1)} is User`;
      case 12: return `principal.getTag("k") == ${expr(d - 1)}`;
      case 13: return `(${expr(d - 1)}).containsAny(${expr(d - 1)})`;
      case 14: return `${expr(d - 1)} has age`;
      default: return `(${expr(d - 1)}).isEmpty()`;
    }
  }
  const scopes = ["principal, action, resource", "principal, action == Action::\"read\", resource",
    "principal is User, action, resource", "principal in Team::\"t\", action in [Action::\"read\", Action::\"admin\"], resource",
    "principal, action == Action::\"admin\", resource is Org", "principal, action in Action::\"group\", resource"];
  const out = [];
  for (let i = 0; i < count; i++) {
    const policies = [];
    const n = 1 + rnd(3);
    for (let k = 0; k < n; k++) {
      policies.push(`${pick(["permit", "forbid"])}(${pick(scopes)}) ${pick(["when", "when", "unless"])} { ${expr(1 + rnd(3))} };`);
    }
    out.push({ name: `random ${seed}-${i}`, schema, policies: policies.join("\n") });
  }
  return out;
};

// Mostly well-typed policies: expressions generated for the type they must have, so that the
// validator's finer rules (has-guards through && || if, singleton Booleans, impossible policies,
// entity hierarchies) decide the answer rather than a type error. One leaf in ten is off-type.
module.exports.typed = function typedCases(schema, count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const pick = (a) => a[rnd(a.length)];
  const leaf = {
    long: ["principal.age", "resource.size", "context.args.max", "principal.profile.level", "resource.owner.age", "3", "-1",
      "principal.manager.age", "resource.ttl.toHours()"],
    string: ["principal.email", "principal.name", "\"a\"", "principal.profile.nick", "context.args.url", "principal.getTag(\"k\")",
      "resource.owner.name"],
    bool: ["resource.public", "context.mfa", "true", "false", "context.ip.isLoopback()", "principal.ip.isIpv4()",
      "resource.score.lessThan(decimal(\"1.0\"))", "(resource.created < datetime(\"2024-01-01\"))"],
    entity: ["principal", "resource", "resource.owner", "principal.manager", "User::\"a\"", "Team::\"t\"", "Org::\"o\"",
      "Doc::\"d\"", "action", "Action::\"read\"", "Action::\"group\""],
    set: ["principal.roles", "resource.labels", "[\"a\", \"b\"]", "[1]"],
  };
  const guards = ["principal has name", "principal has manager", "principal has ip", "resource has ttl",
    "resource has score", "context has mfa", "context has args", "context.args has url", "principal.profile has nick",
    "principal is User", "resource is Doc", "principal.hasTag(\"k\")", "resource.owner has name",
    "principal.manager has name", "context has ip", "principal has age"];
  const kinds = Object.keys(leaf);
  function gen(t, d) {
    if (rnd(10) === 0) t = pick(kinds);
    if (d <= 0 || rnd(3) === 0) return pick(leaf[t]);
    const g = (k) => gen(k, d - 1);
    switch (t) {
      case "bool":
        switch (rnd(13)) {
          case 0: return `(${g("bool")} && ${g("bool")})`;
          case 1: return `(${g("bool")} || ${g("bool")})`;
          case 2: return `!${g("bool")}`;
          case 3: return `(${g("long")} < ${g("long")})`;
          case 4: return `(${g("string")} == ${g("string")})`;
          case 5: return `(${g("entity")} == ${g("entity")})`;
          case 6: return `(${g("entity")} in ${g("entity")})`;
          case 7: return `${g("set")}.contains(${g("string")})`;
          case 8: return `(${pick(guards)} && ${g("bool")})`;
          case 9: return `(if ${pick(guards)} then ${g("bool")} else ${g("bool")})`;
          case 10: return `(${g("string")} like "a*")`;
          case 11: return `(${g("entity")} is ${pick(["User", "Team", "Doc", "Org"])})`;
          default: return `(!(${pick(guards)}) || ${g("bool")})`;
        }
      case "long":
        return pick([`(${g("long")} + ${g("long")})`, `(-${g("long")})`, `(if ${pick(guards)} then ${g("long")} else ${g("long")})`]);
      case "string":
        return `(if ${g("bool")} then ${g("string")} else ${g("string")})`;
      case "entity":
        return `(if ${g("bool")} then ${g("entity")} else ${g("entity")})`;
      default:
        return pick([`[${g("string")}]`, leaf.set[0]]);
    }
  }
  const scopes = ["principal, action, resource", "principal, action == Action::\"read\", resource",
    "principal is User, action, resource", "principal in Team::\"t\", action in [Action::\"read\", Action::\"admin\"], resource",
    "principal, action == Action::\"admin\", resource is Org", "principal, action in Action::\"group\", resource",
    "principal, action in [Action::\"read\", Action::\"write\"], resource in Org::\"o\""];
  const out = [];
  for (let i = 0; i < count; i++) {
    const policies = [];
    const n = 1 + rnd(3);
    for (let k = 0; k < n; k++) {
      let p = `${pick(["permit", "forbid"])}(${pick(scopes)})`;
      const m = 1 + rnd(2);
      for (let j = 0; j < m; j++) p += ` ${pick(["when", "when", "unless"])} { ${gen("bool", 1 + rnd(3))} }`;
      policies.push(p + ";");
    }
    out.push({ name: `typed ${seed}-${i}`, schema, policies: policies.join("\n") });
  }
  return out;
};

// Random requests and entity sets against the base schema: each part is valid or broken in one of
// the ways the reference checks (types, actions, context shape, attribute types, parents, tags,
// enumerated ids, strings for extension values, bare uids for entity values).
module.exports.requests = function requestCases(schema, count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const pick = (a) => a[rnd(a.length)];
  // Mostly the first (valid) variant: one part in ten or so is broken.
  const mostly = (a) => (rnd(20) < 19 ? a[0] : pick(a));
  const uid = (type, id) => ({ type, id });
  const ips = ["10.0.0.1", "127.0.0.1", "::1", "10.0.0.300", "nope"];
  const ipv = () => { const ip = rnd(4) ? pick(ips.slice(0, 3)) : pick(ips); return rnd(2) ? ip : { __extn: { fn: "ip", arg: ip } }; };
  const contexts = [
    () => ({ ip: ipv(), args: { max: rnd(20) } }),
    () => ({ ip: ipv(), args: { max: rnd(20), url: "u" }, mfa: !!rnd(2) }),
    () => ({ ip: ipv() }),
    () => ({ ip: ipv(), args: { max: "1" } }),
    () => ({ ip: ipv(), args: { max: 1 }, extra: 1 }),
    () => ({ ip: 5, args: { max: 1 } }),
    () => ({}),
    () => ({ ip: ipv(), args: { max: 1 }, mfa: "yes" }),
  ];
  const attrVariants = {
    age: () => mostly([rnd(40), "x", true]),
    email: () => mostly(["e", 1]),
    roles: () => mostly([[], ["a"], [1], "a"]),
    profile: () => mostly([{ level: 1 }, { level: 1, nick: "n" }, { level: "1" }, {}, { level: 1, x: 1 }]),
    name: () => mostly(["n", 2]),
    manager: () => mostly([{ __entity: uid("User", "b") }, uid("User", "b"), uid("Doc", "d"), "b"]),
    ip: () => ipv(),
  };
  function user(id) {
    const attrs = {};
    for (const k of ["age", "email", "roles", "profile"]) if (rnd(30)) attrs[k] = attrVariants[k]();
    for (const k of ["name", "manager", "ip"]) if (!rnd(3)) attrs[k] = attrVariants[k]();
    if (!rnd(20)) attrs.bogus = 1;
    const parents = [];
    if (rnd(2)) parents.push(uid("Team", "t"));
    if (!rnd(4)) parents.push(uid(mostly(["Org", "Doc", "Team", "User"]), "p"));
    const e = { uid: uid("User", id), attrs, parents };
    if (!rnd(3)) e.tags = mostly([{ k: "v" }, { k: 1 }, {}]);
    return e;
  }
  function doc(id) {
    const attrs = { owner: mostly([{ __entity: uid("User", "a") }, uid("User", "a"), uid("User", "b")]), public: !!rnd(2),
      size: rnd(100), labels: [], created: mostly(["2024-01-01", { __extn: { fn: "datetime", arg: "2024-01-01" } }, "bad"]) };
    if (!rnd(3)) attrs.score = mostly(["1.5", { __extn: { fn: "decimal", arg: "0.5" } }, "x", 1]);
    if (!rnd(3)) attrs.ttl = mostly(["1h", { __extn: { fn: "duration", arg: "2h" } }, 3]);
    if (!rnd(30)) delete attrs.size;
    return { uid: uid("Doc", id), attrs, parents: rnd(5) ? [] : [uid("Org", "o")] };
  }
  const policies = `permit(principal, action == Action::"read", resource) when { context.ip.isLoopback() };
permit(principal in Team::"t", action, resource) when { resource has owner && resource.owner == principal };
forbid(principal, action, resource) when { principal has age && principal.age < 18 };
permit(principal, action, resource) when { resource has score && resource.score.lessThan(decimal("1.0")) };
permit(principal, action == Action::"write", resource) when { resource has created && resource.created < datetime("2025-01-01") && principal has manager };`;
  const out = [];
  for (let i = 0; i < count; i++) {
    const action = rnd(10) ? pick(["read", "read", "write", "child"]) : pick(["admin", "group", "nope"]);
    const principal = rnd(12) ? uid("User", "a") : uid(pick(["Team", "Org", "Ghost", "Color"]), pick(["t", "red"]));
    const resource = rnd(12) ? uid("Doc", "d") : uid(pick(["Org", "Team", "Color"]), pick(["o", "red", "green"]));
    const context = action === "read" ? (rnd(3) ? pick(contexts.slice(0, 2))() : pick(contexts)()) : rnd(8) ? {} : pick(contexts)();
    const entities = [];
    if (rnd(4)) entities.push(user("a"));
    if (rnd(3)) entities.push(user("b"));
    if (rnd(4)) entities.push(doc("d"));
    if (!rnd(3)) entities.push({ uid: uid("Team", "t"), attrs: rnd(4) ? { name: "n" } : {}, parents: rnd(2) ? [] : [uid("Org", "o")] });
    if (!rnd(10)) entities.push({ uid: uid(pick(["Color", "Ghost", "Action"]), pick(["red", "green", "read", "zz"])), attrs: {}, parents: [] });
    out.push({ name: `request ${seed}-${i}`, schema, request: { principal, action: uid("Action", action), resource, context },
      entities, request_policies: policies });
  }
  return out;
};

// Schemas mutated at the token level (a token dropped, repeated, or replaced by another token of the
// same schema), in both formats: which ones the reference still accepts decides the answer.
module.exports.schemaMutations = function schemaMutations(texts, count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const out = [];
  for (let i = 0; i < count; i++) {
    // A JSON schema is passed to the reference as an object (a string is read as the Cedar syntax),
    // so a mutated JSON text that no longer parses as JSON is skipped.
    const text = texts[rnd(texts.length)];
    const toks = text.match(/"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|::|\s+|./g);
    const n = 1 + rnd(2);
    for (let k = 0; k < n; k++) {
      const at = rnd(toks.length);
      switch (rnd(3)) {
        case 0: toks.splice(at, 1); break;
        case 1: toks.splice(at, 0, toks[at]); break;
        default: toks[at] = toks[rnd(toks.length)];
      }
    }
    let schema = toks.join("");
    if (text.startsWith("{")) {
      try {
        schema = JSON.parse(schema);
      } catch (e) {
        continue;
      }
      if (typeof schema !== "object" || schema === null || Array.isArray(schema)) continue;
    }
    out.push({ name: `mutated schema ${seed}-${i}`, schema });
  }
  return out;
};

// Policy sets mutated at the token level against their schema; the ones the reference cannot parse
// are skipped by expect.js (the policy parser has its own corpus), the rest test the validator on
// shapes no generator writes.
module.exports.policyMutations = function policyMutations(bases, count, seed) {
  let s = seed >>> 0;
  const rnd = (n) => {
    s = (s * 1103515245 + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const out = [];
  for (let i = 0; i < count; i++) {
    const base = bases[rnd(bases.length)];
    const toks = base.policies.match(/"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*|::|&&|\|\||==|!=|<=|>=|\s+|./g);
    const n = 1 + rnd(3);
    for (let k = 0; k < n; k++) {
      const at = rnd(toks.length);
      switch (rnd(3)) {
        case 0: toks.splice(at, 1); break;
        case 1: toks.splice(at, 0, toks[at]); break;
        default: toks[at] = toks[rnd(toks.length)];
      }
    }
    out.push({ name: `mutated policy ${seed}-${i}`, schema: base.schema, policies: toks.join(""), skip_unparsed: true });
  }
  return out;
};
