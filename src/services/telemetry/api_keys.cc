// Telemetry API keys: its key table, and its one refusal message for every way a key can be wrong.
#include "services/telemetry/api_keys.h"

namespace govern::telemetry {
namespace {

// What every refusal says (docs/telemetry.md): a caller must not learn which key_ids exist or what
// scope a key has.
constexpr std::string_view kBadKey = "invalid, revoked or wrong-scope API key";

}  // namespace

const service_keys::KeyTable& IngestKeys() {
  static const service_keys::KeyTable table{.table = "telemetry_ingest_keys",
                                            .prefix = "gvk",
                                            .scopes = {std::string(kIngestScope), std::string(kQueryScope)},
                                            .log_component = "telemetry"};
  return table;
}

void VerifyKey(service_keys::KeyCache& cache, std::string_view key, std::string_view scope,
               std::function<void(Result<std::string> org)> done) {
  cache.Verify(key,
               [scope = std::string(scope), done = std::move(done)](Result<service_keys::KeyIdentity> who) {
                 if (who.ok() && who->scope == scope) return done(std::move(who->org));
                 if (who.ok() || who.status().code() == Code::kUnauthenticated) {
                   return done(Unauthenticated(std::string(kBadKey)));
                 }
                 done(who.status());
               });
}

}  // namespace govern::telemetry
