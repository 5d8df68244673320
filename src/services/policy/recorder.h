// DecisionRecorder: the sidecar's link to the decision log (src/policy/decisions): every decision is
// appended to the local WAL through DecisionLog, and DecisionShipper forwards the records to telemetry
// intake when policy.decisions.ship.endpoint is set. The sidecar builds the record with
// policy::RecordFrom (policy/decisions/record_from.h), as the C ABI does.
//
// Thread-safety: Record and Stats may be called from many threads at once; Open/Stop from one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "config/config.h"

namespace govern::policy {
struct DecisionRecord;
}  // namespace govern::policy

namespace govern::policy_service {

class DecisionRecorder {
 public:
  // Declares policy.decisions.* (the decision log's and shipper's keys).
  static void DeclareConfig(config::Schema& schema);
  // Opens the log (<data_dir>/policy/decisions unless policy.decisions.dir says otherwise) and starts
  // the shipper when one is configured (else forgets a shipper cursor left from earlier runs).
  static Result<std::unique_ptr<DecisionRecorder>> Open(const config::Config& cfg,
                                                        const std::string& data_dir);
  ~DecisionRecorder();

  // Appends the decision; returns its id (UUID text). An error means the decision was not recorded.
  Result<std::string> Record(const policy::DecisionRecord& record);
  // Whether Record waits for the disk (durable mode): then the caller must not call it on an event loop.
  bool durable() const;
  // {"mode", "recorded", "synced", "failed", "refused", "shipping": {...} or null} as JSON text.
  std::string StatsJson() const;
  // Stops the shipper and closes the log (queued records are synced first). Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit DecisionRecorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace govern::policy_service
