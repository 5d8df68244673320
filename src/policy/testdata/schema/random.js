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
      "resource.score.lessThan(decimal(\"1.0\"))", "resource.created < datetime(\"2024-01-01\")"],
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
