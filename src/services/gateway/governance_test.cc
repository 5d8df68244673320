// Governance without a database: Govern tokens checked locally, the Cedar policy gate from a signed bundle
// file (allow, deny, swaps, refused bundles, no bundle), budget configuration, and the refusals through the
// real proxy over real sockets in front of the model stub, in each SDK's error shape, with their records.
#include "services/gateway/governance.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "bundle/keys.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"
#include "tokens/jose.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr const char* kIssuer = "https://auth.test";
constexpr const char* kKey = "gvg_governed_key_01";

std::string Dir(std::string_view what) {
  std::string d = ::testing::TempDir() + "gw_gov_" + std::to_string(::getpid()) + "_" + std::string(what) +
                  "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

void WriteFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Signs Govern access tokens with one HS256 key, as the auth service's internal ring does.
struct TokenMint {
  tokens::SigningKey key = *tokens::SigningKey::Hs256("k1", std::vector<uint8_t>(32, 7));
  std::shared_ptr<const tokens::KeySet> keys =
      std::make_shared<const tokens::KeySet>(std::vector<tokens::VerifyKey>{key.verify_key()});

  std::string Sign(tokens::Claims c) const {
    auto t = tokens::SignCompact(key, tokens::ClaimsToJson(c), "at+jwt");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : "";
  }
  static tokens::Claims Base(std::string sub, std::string org = "acme") {
    tokens::Claims c;
    c.iss = kIssuer;
    c.sub = std::move(sub);
    c.aud = {"govern"};
    c.org = std::move(org);
    int64_t now = std::time(nullptr);
    c.iat = now;
    c.exp = now + 300;
    c.jti = "j-" + c.sub;
    return c;
  }
  std::string User(std::string sub, std::string org = "acme") const {
    return Sign(Base(std::move(sub), std::move(org)));
  }
  std::string Agent(std::string client, std::string org = "acme") const {
    tokens::Claims c = Base(client, std::move(org));
    c.client_id = client;
    return Sign(c);
  }
  std::unique_ptr<TokenAuth> Auth() const {
    auto a = TokenAuth::Create({.issuer = kIssuer, .local_keys = keys, .pull = false});
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? std::move(*a) : nullptr;
  }
};

TEST(TokenAuth, PrincipalsComeFromTheToken) {
  TokenMint mint;
  auto auth = mint.Auth();
  ASSERT_TRUE(auth);
  auto user = auth->Check(mint.User("usr_1"));
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(user->Name(), "User:usr_1");
  EXPECT_EQ(user->org, "acme");

  auto agent = auth->Check(mint.Agent("cli_7", "globex"));
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  EXPECT_EQ(agent->Name(), "Agent:cli_7");
  EXPECT_EQ(agent->org, "globex");

  // Token exchange: an agent acting for a person is the agent, on the person's behalf.
  tokens::Claims delegated = TokenMint::Base("usr_2");
  delegated.actors = {{"cli_9", "cli_9"}};
  auto acting = auth->Check(mint.Sign(delegated));
  ASSERT_TRUE(acting.ok()) << acting.status().ToString();
  EXPECT_EQ(acting->Name(), "Agent:cli_9");
  EXPECT_EQ(acting->on_behalf_of, "usr_2");

  // A repeat is served from the checker's cache of verified tokens.
  std::string t = mint.User("usr_3");
  ASSERT_TRUE(auth->Check(t).ok());
  size_t cached = auth->checker().CachedForTesting();
  ASSERT_TRUE(auth->Check(t).ok());
  EXPECT_EQ(auth->checker().CachedForTesting(), cached);
  EXPECT_GE(cached, 1u);
}

TEST(TokenAuth, RefusesBadTokens) {
  TokenMint mint;
  auto auth = mint.Auth();
  ASSERT_TRUE(auth);
  tokens::Claims expired = TokenMint::Base("usr_1");
  expired.iat -= 3600;
  expired.exp = expired.iat + 60;
  auto r = auth->Check(mint.Sign(expired));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnauthenticated);
  EXPECT_NE(r.status().message().find("expired"), std::string::npos) << r.status().message();

  tokens::Claims other_aud = TokenMint::Base("usr_1");
  other_aud.aud = {"govern:telemetry"};
  EXPECT_FALSE(auth->Check(mint.Sign(other_aud)).ok());

  tokens::Claims other_iss = TokenMint::Base("usr_1");
  other_iss.iss = "https://elsewhere";
  EXPECT_FALSE(auth->Check(mint.Sign(other_iss)).ok());

  tokens::Claims no_org = TokenMint::Base("usr_1", "");
  auto n = auth->Check(mint.Sign(no_org));
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("organisation"), std::string::npos);

  std::string tampered = mint.User("usr_1");
  tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(auth->Check(tampered).ok());

  // Another key's token.
  TokenMint other;
  other.key = *tokens::SigningKey::Hs256("k1", std::vector<uint8_t>(32, 8));
  EXPECT_FALSE(auth->Check(other.User("usr_1")).ok());

  EXPECT_FALSE(TokenAuth::LooksLikeToken(kKey));
  EXPECT_FALSE(TokenAuth::LooksLikeToken("a.b"));
  EXPECT_FALSE(TokenAuth::LooksLikeToken("a b.c.d"));
  EXPECT_TRUE(TokenAuth::LooksLikeToken(mint.User("usr_1")));
}

constexpr const char* kPolicies = R"(
@id("agents-use-gpt")
permit(principal is Gateway::Agent, action == Gateway::Action::"invoke", resource == Gateway::Model::"gpt-stub");
@id("keys-use-all")
permit(principal is Gateway::Key, action == Gateway::Action::"invoke", resource);
@id("users-small-prompts")
permit(principal is Gateway::User, action == Gateway::Action::"invoke", resource)
  when { context.estimated_tokens < 1000 };
@id("no-claude-for-globex")
forbid(principal, action, resource == Gateway::Model::"claude-stub") when { context.organisation == "globex" };
)";

// A signing key, its trust file and bundles written to a file the gate reads.
struct BundleFiles {
  std::string dir;
  bundle::SigningKey key;
  std::string trust_file, bundle_file;

  explicit BundleFiles(std::string d, uint8_t seed = 3)
      : dir(std::move(d)), key(*bundle::SigningKey::FromSeed(std::vector<uint8_t>(32, seed))) {
    trust_file = dir + "/trust.pub";
    bundle_file = dir + "/bundle.tar.gz";
    WriteFile(trust_file, key.Public()->Text());
  }
  std::string Build(uint64_t version, std::string policies, const bundle::SigningKey* signer = nullptr,
                    std::string org = "acme") {
    bundle::BuildInput in;
    in.kind = "policy";
    in.org = std::move(org);
    in.version = version;
    in.created = 1795833000;
    in.files["policies.cedar"] = std::move(policies);
    in.files["entities.json"] = "[]";
    auto b = bundle::Build(in, {signer ? signer : &key});
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : "";
  }
  void Write(uint64_t version, std::string policies) {
    WriteFile(bundle_file, Build(version, std::move(policies)));
  }
  PolicyGateOptions Options() const {
    return {.bundle_file = bundle_file, .trust_files = {trust_file}, .org = "acme", .reload_interval = {}};
  }
};

PolicyQuery Query(std::string_view type, std::string_view id, std::string_view model,
                  std::string_view org = "acme", int64_t tokens = 10) {
  return {.principal_type = type,
          .principal_id = id,
          .org = org,
          .model = model,
          .format = "openai",
          .estimated_tokens = tokens};
}

TEST(PolicyGate, DecidesEachRequestFromTheBundle) {
  BundleFiles f(Dir("bundle"));
  f.Write(1, kPolicies);
  auto gate = PolicyGate::Create(f.Options());
  ASSERT_TRUE(gate.ok()) << gate.status().ToString();
  PolicyGate& g = **gate;
  EXPECT_EQ(g.version(), 1u);

  GateDecision d = g.Decide(Query("Agent", "cli_1", "gpt-stub"));
  EXPECT_EQ(d.kind, GateDecision::Kind::kAllow);
  EXPECT_EQ(d.reason, "agents-use-gpt");
  EXPECT_EQ(d.bundle_version, 1u);
  d = g.Decide(Query("Agent", "cli_1", "claude-stub"));
  EXPECT_EQ(d.kind, GateDecision::Kind::kDeny);
  EXPECT_EQ(d.reason, "no permit matched");
  EXPECT_EQ(g.Decide(Query("Key", "gvg_governed", "claude-stub")).kind, GateDecision::Kind::kAllow);
  d = g.Decide(Query("Key", "gvg_governed", "claude-stub", "globex"));
  EXPECT_EQ(d.kind, GateDecision::Kind::kDeny);
  EXPECT_EQ(d.reason, "no-claude-for-globex");
  EXPECT_EQ(g.Decide(Query("User", "usr_1", "gpt-stub", "acme", 999)).kind, GateDecision::Kind::kAllow);
  EXPECT_EQ(g.Decide(Query("User", "usr_1", "gpt-stub", "acme", 1000)).kind, GateDecision::Kind::kDeny);

  // A new version swaps in on reload; a bundle signed by an untrusted key, or for another organisation,
  // is refused and the loaded one keeps deciding.
  f.Write(2, "permit(principal, action, resource);");
  ASSERT_TRUE(g.Reload().ok());
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.Decide(Query("Agent", "cli_1", "claude-stub")).kind, GateDecision::Kind::kAllow);
  auto stranger = *bundle::SigningKey::FromSeed(std::vector<uint8_t>(32, 9));
  WriteFile(f.bundle_file, f.Build(3, "forbid(principal, action, resource);", &stranger));
  EXPECT_FALSE(g.Reload().ok());
  WriteFile(f.bundle_file, f.Build(3, "forbid(principal, action, resource);", nullptr, "globex"));
  EXPECT_FALSE(g.Reload().ok());
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.Decide(Query("Agent", "cli_1", "claude-stub")).kind, GateDecision::Kind::kAllow);
}

// Two virtual keys that share their first 12 characters are two principals: a policy naming one does
// not reach the other (their ids were the shared prefix once).
TEST(PolicyGate, KeysSharingAPrefixAreDifferentPrincipals) {
  VirtualKeyConfig k1{"gvg_shared_prefix_aaaa", "acme"}, k2{"gvg_shared_prefix_bbbb", "acme"};
  Caller c1 = KeyCaller(k1), c2 = KeyCaller(k2);
  EXPECT_NE(c1.Name(), c2.Name());
  // The id is the first 16 hex digits of the key's SHA-256 (printf %s key | sha256sum): stable.
  EXPECT_EQ(VirtualKeyId("gvg_reload_test_0001"), "382c52b398d5d78f");
  EXPECT_EQ(c1.principal_id, VirtualKeyId(k1.key));
  EXPECT_EQ(c1.principal_id.find("gvg_"), std::string::npos);  // nothing of the key

  BundleFiles f(Dir("prefix"));
  f.Write(1, "permit(principal, action, resource);\nforbid(principal == Gateway::Key::\"" + c1.principal_id +
                 "\", action, resource);");
  auto gate = PolicyGate::Create(f.Options());
  ASSERT_TRUE(gate.ok()) << gate.status().ToString();
  EXPECT_EQ((*gate)->Decide(Query("Key", c1.principal_id, "gpt-stub")).kind, GateDecision::Kind::kDeny);
  EXPECT_EQ((*gate)->Decide(Query("Key", c2.principal_id, "gpt-stub")).kind, GateDecision::Kind::kAllow);
}

TEST(PolicyGate, WithoutABundleEveryRequestIsRefused) {
  BundleFiles f(Dir("nobundle"));
  auto gate = PolicyGate::Create(f.Options());  // the file does not exist yet
  ASSERT_TRUE(gate.ok()) << gate.status().ToString();
  EXPECT_EQ((*gate)->Decide(Query("Key", "k", "gpt-stub")).kind, GateDecision::Kind::kUnavailable);
  f.Write(1, kPolicies);
  ASSERT_TRUE((*gate)->Reload().ok());
  EXPECT_EQ((*gate)->Decide(Query("Key", "k", "gpt-stub")).kind, GateDecision::Kind::kAllow);

  PolicyGateOptions no_trust = f.Options();
  no_trust.trust_files = {};
  EXPECT_FALSE(PolicyGate::Create(no_trust).ok());
}

TEST(Budgets, ParsesTheBudgetsOfTheRoutesFile) {
  auto b = ParseBudgets(R"({"routes": [], "budgets": [
      {"id": "acme-month", "scope": "org", "org": "acme", "limit": 50},
      {"id": "k", "scope": "key", "key": "gvg_x", "limit": 1.5, "period": "day", "lease": 0.25, "reserve": 0.01},
      {"id": "ml", "scope": "team", "members": ["gvg_x", "Agent:cli_1"], "limit": 2, "period": "hour"},
      {"id": "p", "scope": "principal", "principal": "User:usr_1", "limit": 3, "period": "total"}]})");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->size(), 4u);
  EXPECT_EQ((*b)[0].limit_micros, 50'000'000);
  EXPECT_EQ((*b)[0].lease_micros, 5'000'000);  // a tenth by default
  EXPECT_EQ((*b)[0].period, BudgetPeriod::kMonth);
  EXPECT_EQ((*b)[1].lease_micros, 250'000);
  EXPECT_EQ((*b)[1].reserve_micros, 10'000);
  EXPECT_EQ((*b)[2].members.size(), 2u);
  EXPECT_EQ((*b)[3].period, BudgetPeriod::kTotal);

  for (const char* bad :
       {R"({"budgets": {}})", R"({"budgets": [{"id": "a", "scope": "org", "org": "x"}]})",
        R"({"budgets": [{"id": "a", "scope": "nobody", "limit": 1}]})",
        R"({"budgets": [{"id": "a b", "scope": "org", "org": "x", "limit": 1}]})",
        R"({"budgets": [{"id": "a", "scope": "key", "key": "sk-1", "limit": 1}]})",
        R"({"budgets": [{"id": "a", "scope": "team", "members": [], "limit": 1}]})",
        R"({"budgets": [{"id": "a", "scope": "org", "org": "x", "limit": -1}]})",
        R"({"budgets": [{"id": "a", "scope": "org", "org": "x", "limit": 1, "period": "week"}]})",
        R"({"budgets": [{"id": "a", "scope": "org", "org": "x", "limit": 1},
                                          {"id": "a", "scope": "org", "org": "y", "limit": 1}]})"}) {
    EXPECT_FALSE(ParseBudgets(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseBudgets(R"({"routes": []})")->empty());

  int64_t t = 1'795'833'000'000'000;  // 2026-11-28T02:30:00Z
  EXPECT_EQ(PeriodKey(BudgetPeriod::kHour, t), "2026-11-28T02");
  EXPECT_EQ(PeriodKey(BudgetPeriod::kDay, t), "2026-11-28");
  EXPECT_EQ(PeriodKey(BudgetPeriod::kMonth, t), "2026-11");
  EXPECT_EQ(PeriodKey(BudgetPeriod::kTotal, t), "total");
}

TEST(Budgets, NothingIsSpentWithoutALease) {
  auto configs = ParseBudgets(R"({"budgets": [{"id": "acme", "scope": "org", "org": "acme", "limit": 5}]})");
  ASSERT_TRUE(configs.ok());
  BudgetBook book(std::move(*configs), {.replica = "r1"});
  // Never synced: the budget store was not reached, so the replica holds nothing to spend.
  auto t = book.Admit({.org = "acme"});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kUnavailable);
  // Budgets of other subjects do not apply.
  auto other = book.Admit({.org = "globex"});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
}

// The proxy with governance: Govern tokens beside virtual keys, and the policy's refusals in each SDK's
// shape, recorded with the decision.
class GovernedProxyTest : public testing::ProxyFixture {
 protected:
  void SetUp() override {
    auto stub = model_stub::StubServer::Start({.port = 0, .threads = 1});
    ASSERT_TRUE(stub.ok()) << stub.status().ToString();
    stub_ = std::move(*stub);
    std::string base = "http://127.0.0.1:" + std::to_string(stub_->port());
    files_ = std::make_unique<BundleFiles>(Dir("proxy"));
    files_->Write(1, kPolicies);
    auto gov = std::make_shared<Governance>();
    gov->tokens = mint_.Auth();
    auto gate = PolicyGate::Create(files_->Options());
    ASSERT_TRUE(gate.ok()) << gate.status().ToString();
    gov->policy = std::move(*gate);

    ProxyConfig c;
    c.routes = {{"gpt-stub", base, WireFormat::kOpenAI, ""},
                {"claude-stub", base, WireFormat::kAnthropic, ""}};
    c.keys = {{kKey, "globex", 0, 0}};
    c.governance = gov;
    StartProxy(std::move(c), net::ServerConfig{}.workers);
  }
  void TearDown() override {
    StopProxy();
    if (stub_) stub_->Stop();
  }

  net::ClientResponse Post(std::string_view path, std::string_view model, std::string_view credential,
                           bool anthropic = false) {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + std::string(path);
    r.headers.Set("Content-Type", "application/json");
    if (anthropic) {
      r.headers.Set("x-api-key", credential);
      r.headers.Set("anthropic-version", "2023-06-01");
      r.body =
          Json{{"model", model}, {"max_tokens", 16}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}
              .dump();
    } else {
      r.headers.Set("Authorization", "Bearer " + std::string(credential));
      r.body = Json{{"model", model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump();
    }
    auto resp = client_->Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }
  std::vector<UsageRecord> Records() {
    std::lock_guard lock(mu_);
    return records_;
  }

  TokenMint mint_;
  std::unique_ptr<BundleFiles> files_;
  std::unique_ptr<model_stub::StubServer> stub_;
};

TEST_F(GovernedProxyTest, TokensAuthenticateAndPolicyDecides) {
  // An agent's token, allowed on gpt-stub.
  auto ok = Post("/v1/chat/completions", "gpt-stub", mint_.Agent("cli_1"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  // The same agent on claude-stub: no permit. OpenAI's shape.
  auto denied = Post("/v1/chat/completions", "claude-stub", mint_.Agent("cli_1"));
  EXPECT_EQ(denied.status, 403) << denied.body;
  Json j = Json::parse(denied.body);
  EXPECT_EQ(j["error"]["type"], "permission_denied");
  EXPECT_EQ(j["error"]["code"], "policy_denied");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("Agent:cli_1"), std::string::npos);
  EXPECT_EQ(denied.headers.Get("x-should-retry").value_or(""), "false");
  // Anthropic's shape, for a virtual key of globex (forbidden claude-stub).
  auto forbidden = Post("/v1/messages", "claude-stub", kKey, true);
  EXPECT_EQ(forbidden.status, 403) << forbidden.body;
  j = Json::parse(forbidden.body);
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "permission_error");
  // The virtual key may use gpt-stub.
  EXPECT_EQ(Post("/v1/chat/completions", "gpt-stub", kKey).status, 200);

  // Bad tokens: 401 in each shape, not recorded.
  tokens::Claims expired = TokenMint::Base("usr_1");
  expired.iat -= 3600;
  expired.exp = expired.iat + 60;
  auto bad = Post("/v1/chat/completions", "gpt-stub", mint_.Sign(expired));
  EXPECT_EQ(bad.status, 401);
  j = Json::parse(bad.body);
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("expired"), std::string::npos) << bad.body;
  auto bad2 = Post("/v1/messages", "claude-stub", "x.y.z", true);
  EXPECT_EQ(bad2.status, 401);
  EXPECT_EQ(Json::parse(bad2.body)["error"]["type"], "authentication_error");

  auto recs = Records();
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].principal, "Agent:cli_1");
  EXPECT_EQ(recs[0].org, "acme");
  EXPECT_EQ(recs[0].decision, "allow");
  EXPECT_EQ(recs[0].decision_reason, "agents-use-gpt");
  EXPECT_EQ(recs[0].status, 200);
  EXPECT_EQ(recs[1].decision, "deny");
  EXPECT_EQ(recs[1].status, 403);
  EXPECT_FALSE(recs[1].error.empty());
  EXPECT_EQ(recs[2].principal, "Key:" + VirtualKeyId(kKey));
  EXPECT_EQ(recs[2].decision, "deny");
  EXPECT_EQ(recs[2].decision_reason, "no-claude-for-globex");
  EXPECT_EQ(recs[3].decision, "allow");
  Json rec = Json::parse(UsageRecordJson(recs[1]));
  EXPECT_EQ(rec["decision"], "deny");
  EXPECT_EQ(rec["principal"], "Agent:cli_1");
}

}  // namespace
}  // namespace govern::gateway
