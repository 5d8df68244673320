// The inputs of the schema corpus: schemas, policy sets and requests. expect.js adds the reference's
// answers. Each case: name, schema (Cedar schema text or a JSON schema object), and policies and/or
// request (+ entities, request_policies).
const S = `
entity Org;
entity Team in [Org] { name: String };
entity User in [Team, Org] { age: Long, name?: String, email: String, manager?: User, roles: Set<String>,
  profile: { level: Long, nick?: String }, ip?: ipaddr } tags String;
entity Doc { owner: User, public: Bool, size: Long, labels: Set<String>, created: datetime, ttl?: duration,
  score?: decimal };
entity Color enum ["red", "blue"];
type Args = { max: Long, url?: String };
action read appliesTo { principal: [User], resource: [Doc], context: { ip: ipaddr, mfa?: Bool, args: Args } };
action write in [read] appliesTo { principal: User, resource: Doc };
action admin appliesTo { principal: [User, Team], resource: [Doc, Org] };
action group;
action child in [group] appliesTo { principal: User, resource: Doc };
`;
const N = `
namespace Acme {
  entity Agent in [Team] { level: Long };
  entity Team;
  entity Tool { risky: Bool };
  action call_tool appliesTo { principal: Agent, resource: Tool, context: { cost: Long } };
}
entity Plain;
action ping appliesTo { principal: Acme::Agent, resource: Plain };
`;
const J = {
  "": {
    entityTypes: {
      User: { memberOfTypes: ["Team"], shape: { type: "Record", attributes: {
        age: { type: "Long" }, name: { type: "String", required: false },
        tags: { type: "Set", element: { type: "String" } }, boss: { type: "Entity", name: "User", required: false },
        addr: { type: "Extension", name: "ipaddr" }, meta: { type: "Meta" } } } },
      Team: {},
      Doc: { shape: { type: "Record", attributes: { owner: { type: "EntityOrCommon", name: "User" } } } },
    },
    actions: {
      view: { appliesTo: { principalTypes: ["User"], resourceTypes: ["Doc"],
        context: { type: "Record", attributes: { n: { type: "Long" }, flag: { type: "Boolean", required: false } } } } },
      all: {},
      edit: { memberOf: [{ id: "all" }], appliesTo: { principalTypes: ["User", "Team"], resourceTypes: ["Doc"] } },
    },
    commonTypes: { Meta: { type: "Record", attributes: { level: { type: "Long" } } } },
  },
};
const cases = [];
const pol = (name, policies, schema = S) => cases.push({ name, schema, policies });
const sch = (name, schema) => cases.push({ name, schema });
const req = (name, request, entities, schema = S, request_policies) =>
  cases.push({ name, schema, request, entities, ...(request_policies ? { request_policies } : {}) });

// ---- schema parsing: Cedar syntax ----
sch("empty", "");
sch("base", S);
sch("namespaced", N);
sch("json", J);
sch("unknown attribute type", "entity User { a: Lng };");
sch("unterminated record", "entity User { a: Long ");
sch("missing semicolon", "entity User");
sch("entity in unknown", "entity User in [Nope];");
sch("set type", "entity U { s: Set<Set<Long>> };");
sch("record nesting", "entity U { r: { a: { b?: String } } };");
sch("optional attr", "entity U { a?: Long, \"b c\": String };");
sch("duplicate entity", "entity U; entity U;");
sch("duplicate attribute", "entity U { a: Long, a: String };");
sch("duplicate action", "action a; action a;");
sch("common type", "type T = { a: Long }; entity U { t: T };");
sch("common type cycle", "type A = B; type B = A; entity U { a: A };");
sch("common type unknown", "type A = Nope;");
sch("tags", "entity U tags Set<String>;");
sch("enum entity", "entity E enum [\"a\", \"b\"];");
sch("enum empty", "entity E enum [];");
sch("enum with attrs", "entity E enum [\"a\"] { x: Long };");
sch("multiple names", "entity A, B in [C]; entity C;");
sch("action names", "action \"a b\", c appliesTo { principal: [U], resource: [U] }; entity U;");
sch("action in unknown", "action a in [b];");
sch("action in qualified", "action a in [Action::\"b\"]; action b;");
sch("action cycle", "action a in [b]; action b in [a];");
sch("action context common", "type C = { n: Long }; entity U; action a appliesTo { principal: U, resource: U, context: C };");
sch("action context not record", "entity U; action a appliesTo { principal: U, resource: U, context: Long };");
sch("appliesTo without principal", "entity U; action a appliesTo { resource: U };");
sch("appliesTo without resource", "entity U; action a appliesTo { principal: U };");
sch("appliesTo empty lists", "entity U; action a appliesTo { principal: [], resource: [] };");
sch("appliesTo duplicate key", "entity U; action a appliesTo { principal: U, principal: U, resource: U };");
sch("appliesTo trailing comma", "entity U; action a appliesTo { principal: U, resource: U, };");
sch("annotations", "@doc(\"x\") entity U { @doc(\"a\") a: Long }; @id(\"a\") action a;");
sch("namespace annotation", "@doc(\"n\") namespace N { entity U; }");
sch("nested namespace path", "namespace A::B { entity U; action a appliesTo { principal: U, resource: U }; }");
sch("unknown keyword", "entiti U;");
sch("comment", "// hello\nentity U; // trailing\n");
sch("entity equals record", "entity U = { a: Long };");
sch("entity type reserved name", "entity Long;");
sch("common reserved name", "type Long = String;");
sch("extension types", "entity U { a: ipaddr, b: decimal, c: datetime, d: duration };");
sch("cedar builtin prefix", "entity U { a: __cedar::Long };");
sch("Boolean in cedar syntax", "entity U { a: Boolean };");
sch("entity referring across namespace", "namespace A { entity U in [B::T]; } namespace B { entity T; }");
sch("unqualified across namespace", "namespace A { entity U in [T]; } namespace B { entity T; }");
sch("empty-namespace fallback", "entity T; namespace A { entity U in [T]; }");
sch("set without element", "entity U { s: Set };");
sch("bad string escape", "entity U { \"\\q\": Long };");
sch("unexpected character", "entity U { a: Long } $");
sch("type decl missing =", "type T { a: Long };");
// ---- schema parsing: JSON ----
sch("json unknown field", { "": { entityTypes: {}, actions: {}, foo: 1 } });
sch("json missing actions", { "": { entityTypes: {} } });
sch("json bad type", { "": { entityTypes: { U: { shape: { type: "Record", attributes: { a: { type: "Lng" } } } } }, actions: {} } });
sch("json shape not record", { "": { entityTypes: { U: { shape: { type: "Long" } } }, actions: {} } });
sch("json unknown member type", { "": { entityTypes: { U: { memberOfTypes: ["X"] } }, actions: {} } });
sch("json action memberOf unknown", { "": { entityTypes: {}, actions: { a: { memberOf: [{ id: "b" }] } } } });
sch("json enum", { "": { entityTypes: { E: { enum: ["a"] } }, actions: {} } });
sch("json tags", { "": { entityTypes: { E: { tags: { type: "String" } } }, actions: {} } });
sch("json namespace", { NS: { entityTypes: { U: {} }, actions: { a: { appliesTo: { principalTypes: ["U"], resourceTypes: ["NS::U"] } } } } });
sch("json extension unknown", { "": { entityTypes: { U: { shape: { type: "Record", attributes: { a: { type: "Extension", name: "nope" } } } } }, actions: {} } });
sch("json set missing element", { "": { entityTypes: { U: { shape: { type: "Record", attributes: { a: { type: "Set" } } } } }, actions: {} } });
sch("json appliesTo missing principalTypes", { "": { entityTypes: { U: {} }, actions: { a: { appliesTo: { resourceTypes: ["U"] } } } } });
sch("json additionalAttributes", { "": { entityTypes: { U: { shape: { type: "Record", attributes: {}, additionalAttributes: true } } }, actions: {} } });

// ---- policy validation ----
const P = (cond, scope = "principal, action, resource") => `permit(${scope}) when { ${cond} };`;
pol("valid simple", P("principal.age > 18"));
pol("optional without has", P("principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("optional with has", P("principal has name && principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("optional has in if", P("if principal has name then principal.name == \"a\" else false", "principal, action == Action::\"read\", resource"));
pol("optional has in or", P("!(principal has name) || principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("has on other expr", P("resource.owner has name && principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("has across when clauses", "permit(principal, action == Action::\"read\", resource) when { principal has name } when { principal.name == \"a\" };");
pol("has then unless", "permit(principal, action == Action::\"read\", resource) when { principal has name } unless { principal.name == \"a\" };");
pol("missing attribute", P("principal.nope == 1", "principal, action == Action::\"read\", resource"));
pol("attribute of team in admin", P("principal.age > 1", "principal, action == Action::\"admin\", resource"));
pol("is guard", P("principal is User && principal.age > 1", "principal, action == Action::\"admin\", resource"));
pol("scope is", P("principal.age > 1", "principal is User, action == Action::\"admin\", resource"));
pol("unknown entity type literal", P("principal == Foo::\"x\""));
pol("unknown action", "permit(principal, action == Action::\"nope\", resource);");
pol("unknown action in list", "permit(principal, action in [Action::\"read\", Action::\"nope\"], resource);");
pol("action group scope", "permit(principal, action in Action::\"group\", resource);");
pol("action group no appliesTo eq", "permit(principal, action == Action::\"group\", resource);");
pol("action in read", "permit(principal, action in Action::\"read\", resource) when { context.ip.isLoopback() };");
pol("principal type not applicable", "permit(principal is Team, action == Action::\"read\", resource);");
pol("principal eq other type", "permit(principal == Team::\"t\", action == Action::\"read\", resource);");
pol("principal in team", "permit(principal in Team::\"t\", action == Action::\"read\", resource);");
pol("principal in org", "permit(principal in Org::\"o\", action == Action::\"read\", resource);");
pol("principal in doc", "permit(principal in Doc::\"d\", action, resource);");
pol("resource in org admin", "permit(principal, action == Action::\"admin\", resource in Org::\"o\");");
pol("is in", "permit(principal is User in Team::\"t\", action, resource);");
pol("is in impossible", "permit(principal is User in Doc::\"d\", action, resource);");
pol("impossible false", P("false"));
pol("impossible and", P("false && principal.nope"));
pol("true or error skipped", P("true || principal.nope"));
pol("eq disjoint", P("principal == resource"));
pol("eq long string", P("1 == \"a\""));
pol("eq records", P("{a: 1} == {b: 1}"));
pol("eq records same", P("{a: 1} == {a: 2}"));
pol("eq sets incompatible", P("[1] == [\"a\"]"));
pol("eq literal entities", P("Color::\"red\" == Color::\"blue\""));
pol("enum bad id", P("resource == Color::\"green\""));
pol("long plus string", P("principal.age + \"a\" > 1", "principal, action == Action::\"read\", resource"));
pol("not on long", P("!1"));
pol("neg string", P("-\"a\" == 1"));
pol("when is long", P("1"));
pol("when is string", P("\"a\""));
pol("if branches incompatible", P("(if context.mfa then 1 else \"a\") == 1", "principal, action == Action::\"read\", resource"));
pol("if true skips else", P("(if true then 1 else \"a\") == 1"));
pol("if cond not bool", P("if 1 then true else false"));
pol("like on long", P("principal.age like \"1*\"", "principal, action == Action::\"read\", resource"));
pol("like ok", P("principal.email like \"*@x.com\"", "principal, action == Action::\"read\", resource"));
pol("set heterogeneous", P("[1, \"a\"].contains(1)"));
pol("empty set literal", P("[].isEmpty()"));
pol("empty set in contains", P("principal.roles.containsAny([])", "principal, action == Action::\"read\", resource"));
pol("contains wrong elem", P("principal.roles.contains(1)", "principal, action == Action::\"read\", resource"));
pol("contains ok", P("principal.roles.contains(\"admin\")", "principal, action == Action::\"read\", resource"));
pol("containsAll ok", P("principal.roles.containsAll([\"a\", \"b\"])", "principal, action == Action::\"read\", resource"));
pol("containsAll non set", P("principal.roles.containsAll(\"a\")", "principal, action == Action::\"read\", resource"));
pol("contains on non set", P("principal.age.contains(1)", "principal, action == Action::\"read\", resource"));
pol("isEmpty on string", P("principal.email.isEmpty()", "principal, action == Action::\"read\", resource"));
pol("record attr", P("principal.profile.level > 1", "principal, action == Action::\"read\", resource"));
pol("record optional attr", P("principal.profile.nick == \"a\"", "principal, action == Action::\"read\", resource"));
pol("record optional has", P("principal.profile has nick && principal.profile.nick == \"a\"", "principal, action == Action::\"read\", resource"));
pol("record missing attr", P("principal.profile.nope == 1", "principal, action == Action::\"read\", resource"));
pol("record has missing", P("principal.profile has nope", "principal, action == Action::\"read\", resource"));
pol("record has required", P("principal.profile has level", "principal, action == Action::\"read\", resource"));
pol("entity has required", P("principal has age", "principal, action == Action::\"read\", resource"));
pol("entity not has required", P("!(principal has age)", "principal, action == Action::\"read\", resource"));
pol("has undeclared", P("principal has nope"));
pol("context attr", P("context.args.max < 10", "principal, action == Action::\"read\", resource"));
pol("context optional in common", P("context.args.url like \"*x*\"", "principal, action == Action::\"read\", resource"));
pol("context optional in common guarded", P("context.args has url && context.args.url like \"*x*\"", "principal, action == Action::\"read\", resource"));
pol("context attr all actions", P("context.args.max < 10"));
pol("context has guard all actions", P("context has args && context.args.max < 10"));
pol("context index", P("context[\"args\"][\"max\"] < 10", "principal, action == Action::\"read\", resource"));
pol("entity attr chain", P("resource.owner.age > 3", "principal, action == Action::\"read\", resource"));
pol("entity optional chain", P("principal.manager.age > 3", "principal, action == Action::\"read\", resource"));
pol("entity optional chain guarded", P("principal has manager && principal.manager.age > 3", "principal, action == Action::\"read\", resource"));
pol("ext ip ok", P("context.ip.isInRange(ip(\"10.0.0.0/8\"))", "principal, action == Action::\"read\", resource"));
pol("ext ip bad literal", P("context.ip.isInRange(ip(\"10.0.0.0/99\"))", "principal, action == Action::\"read\", resource"));
pol("ext non literal", P("ip(principal.email).isIpv4()", "principal, action == Action::\"read\", resource"));
pol("ext wrong arg type", P("context.ip.isInRange(decimal(\"1.0\"))", "principal, action == Action::\"read\", resource"));
pol("ext method on long", P("principal.age.isIpv4()", "principal, action == Action::\"read\", resource"));
pol("decimal compare", P("resource has score && resource.score.lessThan(decimal(\"1.5\"))", "principal, action == Action::\"read\", resource"));
pol("decimal lt operator", P("resource has score && resource.score < decimal(\"1.5\")", "principal, action == Action::\"read\", resource"));
pol("datetime lt", P("resource.created < datetime(\"2024-01-01\")", "principal, action == Action::\"read\", resource"));
pol("datetime offset", P("resource.created.offset(duration(\"1h\")) > datetime(\"2024-01-01\")", "principal, action == Action::\"read\", resource"));
pol("duration methods", P("resource has ttl && resource.ttl.toHours() > 1", "principal, action == Action::\"read\", resource"));
pol("datetime vs duration", P("resource.created < duration(\"1h\")", "principal, action == Action::\"read\", resource"));
pol("long lt datetime", P("1 < datetime(\"2024-01-01\")"));
pol("tags unguarded", P("principal.getTag(\"x\") == \"a\"", "principal, action == Action::\"read\", resource"));
pol("tags guarded", P("principal.hasTag(\"x\") && principal.getTag(\"x\") == \"a\"", "principal, action == Action::\"read\", resource"));
pol("tags on untagged", P("resource.hasTag(\"x\")", "principal, action == Action::\"read\", resource"));
pol("getTag on untagged", P("resource.getTag(\"x\") == \"a\"", "principal, action == Action::\"read\", resource"));
pol("tag key non string", P("principal.hasTag(1)", "principal, action == Action::\"read\", resource"));
pol("in wrong rhs", P("principal in 1"));
pol("in set heterogeneous", P("principal in [Team::\"a\", Doc::\"b\"]"));
pol("in set ok", P("principal in [Team::\"a\", Team::\"b\"]"));
pol("in lhs not entity", P("1 in Team::\"a\""));
pol("action in literal", P("action in Action::\"read\""));
pol("action in set", P("action in [Action::\"read\", Action::\"admin\"]"));
pol("action eq literal", P("action == Action::\"write\""));
pol("action eq other in scope", P("action == Action::\"write\"", "principal, action == Action::\"read\", resource"));
pol("record literal attr", P("{a: 1, b: \"x\"}.a == 1"));
pol("record literal missing attr", P("{a: 1}.b == 1"));
pol("record literal has", P("{a: 1} has b"));
pol("set of records", P("[{a: 1}, {a: 2}].contains({a: 3})"));
pol("set of records incompatible", P("[{a: 1}, {b: 2}].contains({a: 3})"));
pol("unless impossible", "permit(principal, action, resource) unless { true };");
pol("forbid with errors", "forbid(principal, action, resource) when { resource.nope };");
pol("multiple policies", `${P("principal.age > 1", "principal, action == Action::\"read\", resource")}
${P("principal.nope", "principal, action == Action::\"read\", resource")}
permit(principal == Team::"t", action == Action::"read", resource);
${P("false")}`);
pol("resource owner eq principal", P("resource.owner == principal", "principal, action == Action::\"read\", resource"));
pol("principal eq user literal", P("principal == User::\"alice\""));
pol("set of entities contains", P("[User::\"a\", User::\"b\"].contains(principal)", "principal, action == Action::\"read\", resource"));
pol("set of entities contains other type", P("[Doc::\"a\"].contains(principal)", "principal, action == Action::\"read\", resource"));
pol("ip attr optional", P("principal.ip.isLoopback()", "principal, action == Action::\"read\", resource"));
pol("mult", P("principal.age * 2 > 30", "principal, action == Action::\"read\", resource"));
pol("mult bool", P("principal.age * true > 30", "principal, action == Action::\"read\", resource"));
pol("bool eq", P("resource.public == true", "principal, action == Action::\"read\", resource"));
pol("bool and long", P("resource.public && resource.size", "principal, action == Action::\"read\", resource"));
pol("or long", P("resource.public || 1", "principal, action == Action::\"read\", resource"));
pol("namespaced ok", "permit(principal, action == Acme::Action::\"call_tool\", resource) when { context.cost < 10 && resource.risky == false && principal.level > 1 };", N);
pol("namespaced unqualified type", "permit(principal is Agent, action, resource);", N);
pol("namespaced in team", "permit(principal in Acme::Team::\"t\", action == Acme::Action::\"call_tool\", resource);", N);
pol("namespaced wrong action ns", "permit(principal, action == Action::\"call_tool\", resource);", N);
pol("namespaced ping", "permit(principal, action == Action::\"ping\", resource) when { principal.level > 1 };", N);
pol("json schema ok", "permit(principal, action == Action::\"view\", resource) when { principal.age > context.n && resource.owner == principal };", J);
pol("json optional", "permit(principal, action == Action::\"view\", resource) when { principal.name == \"a\" || context.flag };", J);
pol("json common type", "permit(principal, action == Action::\"view\", resource) when { principal.meta.level > 1 };", J);
pol("json group", "permit(principal, action in Action::\"all\", resource) when { principal.age > 1 };", J);
pol("json edit context empty", "permit(principal, action == Action::\"edit\", resource) when { context.n > 1 };", J);
pol("json boss optional", "permit(principal, action == Action::\"view\", resource) when { principal.boss == principal };", J);
pol("json ext attr", "permit(principal, action == Action::\"view\", resource) when { principal.addr.isIpv4() };", J);
pol("syntax-valid unknown ext method", P("context.ip.isIpv4() && principal.roles.isEmpty()", "principal, action == Action::\"read\", resource"));
pol("not of has", P("!(principal has name) && principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("has guard lost in or", P("(principal has name || true) && principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("has in both or branches", P("(principal has name && true || principal has name && false) && principal.name == \"a\"", "principal, action == Action::\"read\", resource"));
pol("if then has", P("if principal has name then principal.name == \"x\" else principal.name == \"y\"", "principal, action == Action::\"read\", resource"));
pol("like on entity", P("principal like \"a\""));
pol("is on long", P("1 is User"));
pol("is unknown type", P("principal is Nope"));
pol("scope is unknown", "permit(principal is Nope, action, resource);");
pol("scope eq unknown", "permit(principal == Nope::\"x\", action, resource);");
pol("scope in unknown", "permit(principal, action, resource in Nope::\"x\");");
pol("team name attr", P("principal.name == \"x\"", "principal is Team, action == Action::\"admin\", resource"));
pol("org resource no attrs", P("resource.size > 1", "principal, action == Action::\"admin\", resource is Org"));
pol("string compare", P("principal.email < \"b\"", "principal, action == Action::\"read\", resource"));
pol("nested set", P("[[1], [2]].contains([3])"));
pol("set contains literal mixed ents", P("[principal, resource].isEmpty()", "principal, action == Action::\"read\", resource"));

// ---- more type rules ----
const RD = "principal, action == Action::\"read\", resource";
pol("has on optional entity chain", P("principal.manager has name && principal.manager.name == \"a\"", RD));
pol("has compared to true", P("(principal has name) == true && principal.name == \"a\"", RD));
pol("context optional bool", P("context.mfa", RD));
pol("context optional bool guarded", P("context has mfa && context.mfa", RD));
pol("set eq set literal", P("principal.roles == [\"a\"]", RD));
pol("set eq wrong elem", P("principal.roles == [1]", RD));
pol("in optional entity", P("principal in principal.manager", RD));
pol("in optional entity guarded", P("principal has manager && principal in principal.manager", RD));
pol("resource in principal", P("resource in principal", RD));
pol("principal eq principal", P("principal == principal", RD));
pol("long literal eq", P("1 == 1", RD));
pol("bool literal eq false", P("true == false", RD));
pol("ip literal eq", P("ip(\"1.1.1.1\") == ip(\"1.1.1.1\")", RD));
pol("tag key expression", P("principal.hasTag(principal.email) && principal.getTag(principal.email) == \"a\"", RD));
pol("tag other key", P("principal.hasTag(\"a\") && principal.getTag(\"b\") == \"a\"", RD));
pol("record eq missing optional", P("principal.profile == {level: 1}", RD));
pol("record eq optional given", P("principal.profile == {level: 1, nick: \"x\"}", RD));
pol("common record eq", P("context.args == {max: 1}", RD));
pol("action eq group", P("action == Action::\"group\""));
pol("action in group cond", P("action in Action::\"group\""));
pol("resource is doc cond", P("resource is Doc"));
pol("has email then email", P("principal has email && principal.email == \"a\""));
pol("if has else access", P("if principal has name then true else principal.name == \"a\"", RD));
pol("long eq string attrs", P("principal.age == principal.email", RD));
pol("if true entity", P("(if true then principal else resource) == principal", RD));
pol("if entity lub", P("(if context has mfa then principal else resource) == principal", RD));
pol("string lt", P("\"a\" < \"b\""));
pol("bool lt", P("true < false"));
pol("neg long", P("-principal.age < 0", RD));
pol("like string literal", P("\"abc\" like \"a*\""));
pol("set contains set", P("[[1]].contains([1])"));
pol("containsAny entities", P("[principal].containsAny([resource])", RD));
pol("containsAll mixed", P("[1].containsAll([\"a\"])"));
pol("is in set", P("principal is User in [Team::\"a\", Org::\"b\"]", RD));
pol("datetime methods", P("resource.created.toDate() == datetime(\"2024-01-01\") && resource.created.toTime() < duration(\"1h\")", RD));
pol("durationSince", P("resource.created.durationSince(datetime(\"2024-01-01\")).toDays() > 3", RD));
pol("decimal eq", P("decimal(\"1.0\") == decimal(\"1.00\")"));
pol("ip isIpv6 literal", P("ip(\"::1\").isIpv6()"));
pol("bad duration literal", P("duration(\"1x\") < duration(\"1h\")"));
pol("bad datetime literal", P("datetime(\"2024-13-01\") < datetime(\"2024-01-01\")"));
pol("unless with has", "permit(principal, action == Action::\"read\", resource) unless { principal has name } when { principal.name == \"x\" };");
pol("forbid impossible", "forbid(principal, action == Action::\"read\", resource is Org);");
pol("admin is team", "permit(principal is Team, action == Action::\"admin\", resource is Org) when { principal.name == \"x\" };");
pol("admin any has name", P("principal has name && principal.name == \"x\"", "principal, action == Action::\"admin\", resource"));
pol("enum literal ok", P("Color::\"red\" != Color::\"blue\""));
pol("entity literal attr", P("User::\"a\".age > 1"));
pol("entity literal optional attr", P("User::\"a\".name == \"x\""));
pol("action attr", P("action.foo == 1"));
pol("context record has on all", P("context has ip"));

// ---- requests and entities ----
const R = (p, a, r, context) => ({ principal: p, action: a, resource: r, context });
const U = (id) => ({ type: "User", id });
const A = (id) => ({ type: "Action", id });
const D = (id) => ({ type: "Doc", id });
const ctx = { ip: { __extn: { fn: "ip", arg: "10.0.0.1" } }, args: { max: 5 } };
req("request ok", R(U("a"), A("read"), D("d"), ctx), []);
req("request ip as string", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1", args: { max: 5 } }), []);
req("request bad ip string", R(U("a"), A("read"), D("d"), { ip: "10.0.0.999", args: { max: 5 } }), []);
req("request missing context attr", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1" }), []);
req("request extra context attr", R(U("a"), A("read"), D("d"), { ...ctx, zz: 1 }), []);
req("request optional context attr", R(U("a"), A("read"), D("d"), { ...ctx, mfa: true }), []);
req("request optional wrong type", R(U("a"), A("read"), D("d"), { ...ctx, mfa: 1 }), []);
req("request nested wrong type", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1", args: { max: "5" } }), []);
req("request nested extra", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1", args: { max: 5, zz: 1 } }), []);
req("request nested optional", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1", args: { max: 5, url: "u" } }), []);
req("request wrong principal type", R({ type: "Team", id: "t" }, A("read"), D("d"), ctx), []);
req("request wrong resource type", R(U("a"), A("read"), { type: "Org", id: "o" }, ctx), []);
req("request unknown action", R(U("a"), A("nope"), D("d"), {}), []);
req("request group action", R(U("a"), A("group"), D("d"), {}), []);
req("request unknown principal type", R({ type: "Ghost", id: "g" }, A("write"), D("d"), {}), []);
req("request admin team", R({ type: "Team", id: "t" }, A("admin"), { type: "Org", id: "o" }, {}), []);
req("request context for empty", R(U("a"), A("write"), D("d"), { x: 1 }), []);
req("request enum resource", R(U("a"), A("write"), { type: "Color", id: "red" }, {}), []);
const user = (attrs, parents = [], tags) => ({ uid: U("a"), attrs, parents, ...(tags ? { tags } : {}) });
const okUser = { age: 3, email: "e", roles: ["r"], profile: { level: 1 } };
req("entity ok", R(U("a"), A("write"), D("d"), {}), [user(okUser, [{ type: "Team", id: "t" }])],
    S, "permit(principal in Team::\"t\", action, resource);");
req("entity missing attr", R(U("a"), A("write"), D("d"), {}), [user({ age: 3 })]);
req("entity extra attr", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, x: 1 })]);
req("entity wrong attr type", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, age: "3" })]);
req("entity set elem type", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, roles: [1] })]);
req("entity bad parent type", R(U("a"), A("write"), D("d"), {}), [user(okUser, [D("d")])]);
req("entity ancestor org", R(U("a"), A("write"), D("d"), {}), [user(okUser, [{ type: "Org", id: "o" }])]);
req("entity tags ok", R(U("a"), A("write"), D("d"), {}), [user(okUser, [], { k: "v" })]);
req("entity tags wrong", R(U("a"), A("write"), D("d"), {}), [user(okUser, [], { k: 1 })]);
req("entity tags on untagged", R(U("a"), A("write"), D("d"), {}), [{ uid: { type: "Team", id: "t" }, attrs: { name: "n" }, parents: [], tags: { k: "v" } }]);
req("entity unknown type", R(U("a"), A("write"), D("d"), {}), [{ uid: { type: "Ghost", id: "g" }, attrs: {}, parents: [] }]);
req("entity enum bad", R(U("a"), A("write"), D("d"), {}), [{ uid: { type: "Color", id: "green" }, attrs: {}, parents: [] }]);
req("entity enum ok", R(U("a"), A("write"), D("d"), {}), [{ uid: { type: "Color", id: "red" }, attrs: {}, parents: [] }]);
req("entity optional entity attr", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, manager: { __entity: U("b") } })]);
req("entity entity attr wrong type", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, manager: { __entity: D("b") } })]);
req("entity record extra", R(U("a"), A("write"), D("d"), {}), [user({ ...okUser, profile: { level: 1, x: 2 } })]);
req("doc ok", R(U("a"), A("write"), D("d"), {}), [{ uid: D("d"), attrs: { owner: { __entity: U("a") }, public: true, size: 1, labels: [], created: { __extn: { fn: "datetime", arg: "2024-01-01" } } }, parents: [] }],
    S, "permit(principal, action, resource) when { resource.owner == principal };");
req("doc bad datetime", R(U("a"), A("write"), D("d"), {}), [{ uid: D("d"), attrs: { owner: { __entity: U("a") }, public: true, size: 1, labels: [], created: { __extn: { fn: "datetime", arg: "nope" } } }, parents: [] }]);
req("ip string evaluates as ip", R(U("a"), A("read"), D("d"), { ip: "10.0.0.1", args: { max: 5 } }), [], S,
    "permit(principal, action, resource) when { context.ip.isInRange(ip(\"10.0.0.0/8\")) };");
req("bare uid attribute evaluates as entity", R(U("a"), A("write"), D("d"), {}), [{ uid: D("d"), attrs: { owner: U("a"), public: true, size: 1, labels: [], created: "2024-01-01", score: "1.5" }, parents: [] }],
    S, "permit(principal, action, resource) when { resource.owner == principal && resource.score.lessThan(decimal(\"2.0\")) && resource.created < datetime(\"2025-01-01\") };");
req("json request ok", R(U("a"), A("view"), D("d"), { n: 1 }), [], J);
req("json request bad context", R(U("a"), A("view"), D("d"), { n: true }), [], J);
req("json request team edit", R({ type: "Team", id: "t" }, A("edit"), D("d"), {}), [], J);
req("namespaced request", R({ type: "Acme::Agent", id: "a" }, { type: "Acme::Action", id: "call_tool" }, { type: "Acme::Tool", id: "t" }, { cost: 1 }), [], N);
req("namespaced request unqualified action", R({ type: "Acme::Agent", id: "a" }, A("call_tool"), { type: "Acme::Tool", id: "t" }, { cost: 1 }), [], N);

// Seeded random policies over the base schema, named "@base" to keep the corpus small.
cases.push(...require("./random.js")("@base", 300, 7));
cases.push(...require("./random.js").typed("@base", 500, 11));
cases.push(...require("./random.js").requests("@base", 300, 5));
cases.push(...require("./random.js").schemaMutations([S, N, JSON.stringify(J)], 1500, 3));

cases.push(...require("./random.js").policyMutations(
    cases.filter((c) => c.policies !== undefined && !c.name.startsWith("random") && !c.name.startsWith("typed")), 3000, 43));

// The base schema is written once, in schemas.json.
for (const c of cases) if (c.schema === S) c.schema = "@base";

module.exports = cases;
module.exports.schemas = { base: S };
