// Writes cases.ndjson: every input of inputs.js with what the Cedar reference,
// @cedar-policy/cedar-wasm (package.json pins 4.13.0), answered for it:
//   schema_ok    checkParseSchema accepted the schema
//   errors       ids of the policies validate() reported errors for (sorted, unique)
//   warnings     ids of the policies validate() reported warnings for
//   request_ok   isAuthorized with the schema accepted the request and entities
//   decision     its decision when it did
// Schemas named "@name" in a case are in schemas.json (written here too).
// Run: npm ci && node expect.js > cases.ndjson
const cedar = require("@cedar-policy/cedar-wasm/nodejs");
const inputs = require("./inputs.js");
// A schema written "@name" is inputs.schemas[name]; they are written to schemas.json for the test.
require("fs").writeFileSync(__dirname + "/schemas.json", JSON.stringify(inputs.schemas, null, 1) + "\n");
const schemaOf = (c) => (typeof c.schema === "string" && c.schema.startsWith("@") ? inputs.schemas[c.schema.slice(1)] : c.schema);
const ids = (l) => [...new Set((l || []).map((e) => e.policyId))].sort();
for (const c of inputs) {
  const out = Object.assign({}, c);
  delete out.skip_unparsed;
  const e = {};
  const schema = schemaOf(c);
  const parsed = cedar.checkParseSchema(schema);
  e.schema_ok = parsed.type === "success";
  if (e.schema_ok && c.policies !== undefined) {
    const v = cedar.validate({ schema, policies: { staticPolicies: c.policies } });
    if (v.type !== "success" && c.skip_unparsed) continue;  // a mutant the reference cannot parse
    if (v.type !== "success") throw new Error(`${c.name}: validate failed: ${JSON.stringify(v.errors)}`);
    e.errors = ids(v.validationErrors);
    e.warnings = ids(v.validationWarnings);
  }
  if (e.schema_ok && c.request !== undefined) {
    const r = cedar.isAuthorized({
      principal: c.request.principal, action: c.request.action, resource: c.request.resource,
      context: c.request.context || {}, entities: c.entities || [], schema,
      policies: { staticPolicies: c.request_policies || "permit(principal, action, resource);" },
    });
    e.request_ok = r.type === "success";
    if (e.request_ok) e.decision = r.response.decision;
  }
  out.expected = e;
  console.log(JSON.stringify(out));
}
