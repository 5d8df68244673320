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
