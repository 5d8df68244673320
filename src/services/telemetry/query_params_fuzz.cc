// Fuzz target for what the query API parses from outside: query parameters, page cursors and DLP
// policy documents. Each must refuse bad input with an error, never crash; a policy that parses must
// survive being written out and parsed again unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "services/telemetry/dlp_policies.h"
#include "services/telemetry/query.h"
#include "services/telemetry/query_api.h"

using namespace govern;
using namespace govern::telemetry;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  // name=value pairs separated by '&', as Request::QueryParams() hands them over (already decoded).
  std::vector<std::pair<std::string, std::string>> params;
  size_t start = 0;
  while (start <= in.size()) {
    size_t end = in.find('&', start);
    if (end == std::string_view::npos) end = in.size();
    std::string_view pair = in.substr(start, end - start);
    size_t eq = pair.find('=');
    params.emplace_back(std::string(pair.substr(0, eq)),
                        eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
    start = end + 1;
  }
  Result<ParsedQuery> parsed = ParseQueryParams(params, 1'795'996'800'000'000'000);
  if (parsed.ok()) {
    EventQuery q = parsed->query;
    q.org = "fuzz";
    if (q.from_ns >= q.to_ns || q.limit < 1 || q.limit > 1000) abort();
    if (parsed->cursor) (void)ApplyCursor(*parsed->cursor, parsed->time_range_given, &q);
    // A cursor made for a query is accepted by that query and gives back its key.
    EventKey key{static_cast<int64_t>(size) - 7, std::string(in.substr(0, 64))};
    std::string token = EncodeCursor(q, key);
    EventQuery again = q;
    if (!ApplyCursor(token, true, &again).ok() || !again.after || *again.after != key) abort();
  }

  EventQuery q;
  q.org = "fuzz";
  (void)ApplyCursor(in, false, &q);

  Result<dlp::Policy> policy = ParseDlpPolicy(in);
  if (policy.ok()) {
    std::string out = DlpPolicyJson(*policy, true);
    Result<dlp::Policy> back = ParseDlpPolicy(out);
    if (!back.ok() || DlpPolicyJson(*back, true) != out) abort();
  }
  return 0;
}
