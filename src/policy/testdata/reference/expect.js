// Adds the reference's answer to each decision case: reads NDJSON cases (the eval-cases input format
// of src/policy/cases.h, plus an optional "name") on stdin and writes each case with "expected" set to
// what @cedar-policy/cedar-wasm answers. Run: cd reference && npm ci && node expect.js < in > out
const cedar = require("@cedar-policy/cedar-wasm/nodejs");
const lines = require("fs").readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
for (const l of lines) {
  const c = JSON.parse(l);
  delete c.expected;
  const r = cedar.isAuthorized({
    principal: c.request.principal, action: c.request.action, resource: c.request.resource,
    context: c.request.context || {}, entities: c.entities || [], policies: { staticPolicies: c.policies },
  });
  if (r.type !== "success") {
    c.expected = { failure: true };
  } else {
    c.expected = {
      decision: r.response.decision,
      reason: [...r.response.diagnostics.reason].sort(),
      errors: r.response.diagnostics.errors.map((e) => e.policyId).sort(),
    };
  }
  console.log(JSON.stringify(c));
}
