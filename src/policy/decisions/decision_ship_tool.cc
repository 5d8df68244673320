// decision_ship_tool: the driver of the end-to-end test (tests/e2e/policy_decisions). Records
// decisions into a decision log, ships them to telemetry intake (optionally killing itself with SIGKILL
// between intake's 200 and the cursor update), and checks through telemetry's query API that every
// recorded decision is stored exactly once.
//
//   decision_ship_tool record --dir D --count N [--mode buffered|durable] --ids FILE
//   decision_ship_tool ship   --dir D --endpoint URL --key gvk_... [--batch N]
//                             [--kill-after-batches K] [--slow-ms MS]
//       ships until everything recorded is shipped, then exits 0; with --kill-after-batches K it
//       SIGKILLs itself after intake's 200 for batch K, before the cursor moves past it
//       (--slow-ms pauses after each 200, so an outside kill -9 lands mid-run).
//   decision_ship_tool verify --endpoint URL --key QUERY_KEY --ids FILE [--timeout-s S]
//       exit 0 when the query API returns each id in FILE exactly once and no other decision.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "policy/decisions/decision_log.h"
#include "policy/decisions/shipper.h"

namespace govern::policy {
namespace {

int Fail(const std::string& why) {
  std::cerr << "decision_ship_tool: " << why << "\n";
  return 1;
}

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> f;
  for (int i = 2; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  return f;
}

int Record(std::map<std::string, std::string>& f) {
  DecisionLogOptions o;
  o.dir = f["--dir"];
  o.mode = f["--mode"] == "durable" ? RecordMode::kDurable : RecordMode::kBuffered;
  o.context = ContextKind::kFull;
  auto log = DecisionLog::Open(o);
  if (!log.ok()) return Fail(log.status().ToString());
  const int n = std::atoi(f["--count"].c_str());
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    DecisionRecord r;
    r.organisation = "acme";
    r.principal = "Agent::\"a" + std::to_string(i % 17) + "\"";
    r.action = "Action::\"call_tool\"";
    r.resource = "Tool::\"tool" + std::to_string(i % 5) + "\"";
    r.decision = i % 4 == 0 ? RecordedDecision::kDeny : RecordedDecision::kAllow;
    r.determining_policies = {"policy" + std::to_string(i % 12)};
    r.bundle_version = 7;
    r.context_kind = ContextKind::kFull;
    r.context = "{\"n\":" + std::to_string(i) + ",\"args\":{\"q\":\"caf\xc3\xa9\"}}";
    auto id = (*log)->Record(r);
    if (!id.ok()) return Fail(id.status().ToString());
    ids.push_back(id->ToString());
  }
  if (Status st = (*log)->Flush(); !st.ok()) return Fail(st.ToString());
  std::ofstream out(f["--ids"], std::ios::app);
  for (const auto& id : ids) out << id << "\n";
  out.close();
  if (!out) return Fail("cannot write " + f["--ids"]);
  std::cout << "recorded " << n << "\n";
  return 0;
}

int Ship(std::map<std::string, std::string>& f) {
  auto log = DecisionLog::Open({.dir = f["--dir"]});
  if (!log.ok()) return Fail(log.status().ToString());
  ShipperOptions o;
  o.endpoint = f["--endpoint"];
  o.key = f["--key"];
  if (!f["--batch"].empty()) o.batch_events = static_cast<size_t>(std::atoi(f["--batch"].c_str()));
  o.max_backoff = std::chrono::milliseconds(1000);
  const int kill_after = f["--kill-after-batches"].empty() ? 0 : std::atoi(f["--kill-after-batches"].c_str());
  const int slow_ms = f["--slow-ms"].empty() ? 0 : std::atoi(f["--slow-ms"].c_str());
  auto batches = std::make_shared<int>(0);
  o.after_send_probe = [kill_after, slow_ms, batches](uint64_t next_seq) {
    ++*batches;
    std::cout << "acknowledged up to " << next_seq - 1 << "\n" << std::flush;
    if (kill_after > 0 && *batches == kill_after) kill(getpid(), SIGKILL);
    if (slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
  };
  auto shipper = DecisionShipper::Create(log->get(), o);
  if (!shipper.ok()) return Fail(shipper.status().ToString());
  (*shipper)->Start();
  const uint64_t end = (*log)->wal().DurableSequence() + 1;
  while ((*shipper)->GetStats().next_seq < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  (*shipper)->Stop();
  auto s = (*shipper)->GetStats();
  std::cout << "shipped " << s.events_shipped << " events in " << s.batches_shipped << " batches, "
            << s.retries << " retries, " << s.quarantined << " quarantined\n";
  return s.quarantined == 0 ? 0 : Fail("decisions were quarantined");
}

int Verify(std::map<std::string, std::string>& f) {
  std::ifstream in(f["--ids"]);
  std::set<std::string> want;
  size_t lines = 0;
  for (std::string id; std::getline(in, id);) {
    ++lines;
    want.insert(id);
  }
  if (want.empty() || want.size() != lines) return Fail("the ids file is empty or repeats an id");
  const int timeout_s = f["--timeout-s"].empty() ? 60 : std::atoi(f["--timeout-s"].c_str());
  net::HttpClient client;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::map<std::string, int> seen;
  for (;;) {
    seen.clear();
    std::string cursor;
    for (;;) {
      std::string url =
          f["--endpoint"] + "/v1/query/events?from=0&order=oldest&limit=1000&type=policy.decision";
      if (!cursor.empty()) url += "&cursor=" + cursor;
      net::ClientRequest req;
      req.url = url;
      req.headers.Set("Authorization", "Bearer " + f["--key"]);
      auto resp = client.Send(std::move(req));
      if (!resp.ok()) return Fail(resp.status().ToString());
      if (resp->status != 200) return Fail("query: " + std::to_string(resp->status) + " " + resp->body);
      auto page = nlohmann::json::parse(resp->body, nullptr, false);
      if (page.is_discarded()) return Fail("query: not JSON");
      for (const auto& e : page["events"]) {
        ++seen[e["id"].get<std::string>()];
        if (e["attributes"]["principal"].get<std::string>().rfind("Agent::", 0) != 0) {
          return Fail("event without its attributes: " + e.dump());
        }
      }
      if (!page.contains("next_cursor") || page["next_cursor"].is_null()) break;
      cursor = page["next_cursor"].get<std::string>();
      // The cursor is base64url or base64; escape what a query string needs escaped.
      std::string escaped;
      for (char c : cursor) {
        if (c == '+')
          escaped += "%2B";
        else if (c == '/')
          escaped += "%2F";
        else if (c == '=')
          escaped += "%3D";
        else
          escaped += c;
      }
      cursor = escaped;
    }
    if (seen.size() >= want.size() || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  size_t twice = 0, unknown = 0, missing = 0;
  for (const auto& [id, n] : seen) {
    if (n > 1) ++twice;
    if (want.count(id) == 0) ++unknown;
  }
  for (const auto& id : want) missing += seen.count(id) == 0;
  std::cout << "query: " << seen.size() << " distinct decisions, " << want.size() << " recorded, " << missing
            << " missing, " << twice << " returned twice, " << unknown << " unknown\n";
  return missing == 0 && twice == 0 && unknown == 0 ? 0 : 1;
}

}  // namespace
}  // namespace govern::policy

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: decision_ship_tool record|ship|verify --flag value ...\n";
    return 2;
  }
  auto flags = govern::policy::Flags(argc, argv);
  const std::string cmd = argv[1];
  if (cmd == "record") return govern::policy::Record(flags);
  if (cmd == "ship") return govern::policy::Ship(flags);
  if (cmd == "verify") return govern::policy::Verify(flags);
  std::cerr << "unknown command " << cmd << "\n";
  return 2;
}
