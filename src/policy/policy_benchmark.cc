// Benchmarks of Cedar decisions on a realistic organisation: 3 organisation-wide guardrail forbids and
// 12 agent permits with conditions on the tool call's arguments, an entity graph of 300 agents in 20
// teams, 100 tools in 3 tool sets, and an admins group. The policy set and entities are loaded once;
// BM_Authorize* time Authorize alone (the hot path). Run: scripts/bench or
//   build/release/src/policy/policy_benchmark --benchmark_filter=Authorize
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "policy/cedar.h"

namespace govern::policy {
namespace {

std::string OrgPolicies() {
  std::string p =
      "@id(\"no-shell\") forbid(principal, action == Action::\"call_tool\", resource == Tool::\"shell\") "
      "unless { "
      "principal in Group::\"admins\" };\n"
      "@id(\"budget\") forbid(principal, action, resource) when { context.cost_cents > 500 };\n"
      "@id(\"no-internal\") forbid(principal, action == Action::\"call_tool\", resource) when { context has "
      "args.url "
      "&& context.args.url like \"*internal.corp*\" };\n";
  for (int i = 0; i < 12; ++i) {
    p += "permit(principal == Agent::\"a" + std::to_string(i) +
         "\", action == Action::\"call_tool\", resource in ToolSet::\"set" + std::to_string(i % 3) +
         "\") when { context.args.max_results <= " + std::to_string(10 + i) + " };\n";
  }
  return p;
}

std::string OrgEntities() {
  std::string e = "[";
  auto add = [&](const std::string& s) {
    if (e.size() > 1) e += ",";
    e += s;
  };
  add(R"({"uid": {"type": "Organisation", "id": "acme"}, "attrs": {"name": "Acme"}, "parents": []})");
  add(R"({"uid": {"type": "Group", "id": "admins"}, "attrs": {}, "parents": [{"type": "Organisation", "id": "acme"}]})");
  for (int t = 0; t < 20; ++t) {
    add(R"({"uid": {"type": "Team", "id": "team)" + std::to_string(t) +
        R"("}, "attrs": {"budget_cents": 10000}, "parents": [{"type": "Organisation", "id": "acme"}]})");
  }
  for (int a = 0; a < 300; ++a) {
    std::string parents = R"([{"type": "Team", "id": "team)" + std::to_string(a % 20) + "\"}";
    if (a % 50 == 0) parents += R"(, {"type": "Group", "id": "admins"})";
    parents += "]";
    add(R"({"uid": {"type": "Agent", "id": "a)" + std::to_string(a) +
        R"("}, "attrs": {"model": "m", "tier": )" + std::to_string(a % 3) + R"(}, "parents": )" + parents +
        "}");
  }
  for (int s = 0; s < 3; ++s) {
    add(R"({"uid": {"type": "ToolSet", "id": "set)" + std::to_string(s) +
        R"("}, "attrs": {}, "parents": []})");
  }
  for (int t = 0; t < 100; ++t) {
    add(R"({"uid": {"type": "Tool", "id": "tool)" + std::to_string(t) + R"("}, "attrs": {"risk": )" +
        std::to_string(t % 5) + R"(}, "parents": [{"type": "ToolSet", "id": "set)" + std::to_string(t % 3) +
        "\"}]}");
  }
  add(R"({"uid": {"type": "Tool", "id": "shell"}, "attrs": {}, "parents": [{"type": "ToolSet", "id": "set0"}]})");
  add(R"({"uid": {"type": "Action", "id": "call_tool"}, "attrs": {}, "parents": []})");
  return e + "]";
}

struct Org {
  PolicySet policies;
  Entities entities;
  std::vector<Request> allow;   // agent i calls a tool of its set within its limit
  std::vector<Request> forbid;  // over budget
};

const Org& TheOrg() {
  static const Org* org = [] {
    auto* o = new Org{*PolicySet::Parse(OrgPolicies()), *Entities::FromJson(OrgEntities()), {}, {}};
    for (int i = 0; i < 12; ++i) {
      std::string tool = "tool" + std::to_string(i % 3);  // tool k is in set k % 3
      o->allow.push_back(
          *Request::Make({"Agent", "a" + std::to_string(i)}, {"Action", "call_tool"}, {"Tool", tool},
                         R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 1})"));
      o->forbid.push_back(
          *Request::Make({"Agent", "a" + std::to_string(i)}, {"Action", "call_tool"}, {"Tool", tool},
                         R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 900})"));
    }
    return o;
  }();
  return *org;
}

void BM_AuthorizeAllow(benchmark::State& state) {
  const Org& org = TheOrg();
  Outcome out;
  size_t k = 0;
  for (auto _ : state) {
    Authorize(org.policies, org.entities, org.allow[k], &out);
    benchmark::DoNotOptimize(out.decision);
    if (++k == org.allow.size()) k = 0;
  }
  if (out.decision != Decision::kAllow) state.SkipWithError("expected allow");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AuthorizeAllow);

void BM_AuthorizeForbid(benchmark::State& state) {
  const Org& org = TheOrg();
  Outcome out;
  size_t k = 0;
  for (auto _ : state) {
    Authorize(org.policies, org.entities, org.forbid[k], &out);
    benchmark::DoNotOptimize(out.decision);
    if (++k == org.forbid.size()) k = 0;
  }
  if (out.decision != Decision::kDeny) state.SkipWithError("expected deny");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AuthorizeForbid);

// The convenience form: policy ids as strings (allocates).
void BM_AuthorizeResponse(benchmark::State& state) {
  const Org& org = TheOrg();
  size_t k = 0;
  for (auto _ : state) {
    Response r = Authorize(org.policies, org.entities, org.allow[k]);
    benchmark::DoNotOptimize(r.decision);
    if (++k == org.allow.size()) k = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AuthorizeResponse);

void BM_RequestMake(benchmark::State& state) {
  for (auto _ : state) {
    auto r = Request::Make({"Agent", "a1"}, {"Action", "call_tool"}, {"Tool", "tool1"},
                           R"({"args": {"max_results": 5, "url": "https://example.com"}, "cost_cents": 1})");
    benchmark::DoNotOptimize(r.ok());
  }
}
BENCHMARK(BM_RequestMake);

void BM_ParsePolicies(benchmark::State& state) {
  std::string text = OrgPolicies();
  for (auto _ : state) {
    auto p = PolicySet::Parse(text);
    benchmark::DoNotOptimize(p.ok());
  }
}
BENCHMARK(BM_ParsePolicies);

void BM_LoadEntities(benchmark::State& state) {
  std::string json = OrgEntities();
  for (auto _ : state) {
    auto e = Entities::FromJson(json);
    benchmark::DoNotOptimize(e.ok());
  }
}
BENCHMARK(BM_LoadEntities);

}  // namespace
}  // namespace govern::policy

BENCHMARK_MAIN();
