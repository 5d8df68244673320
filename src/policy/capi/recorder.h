// The C ABI's bridge to the decision log: capi.cc hands it the facts of a decision, it builds the
// DecisionRecord (keeping the decision log's types out of capi.cc).
//
// Thread-safety: Record, Flush and stats may be called from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::policy::capi {

// One decision as the engine made it: uid parts, the outcome and the ids of the policies.
struct DecisionFacts {
  std::string_view principal_type, principal_id, action_type, action_id, resource_type, resource_id;
  bool allow = false;
  const std::vector<uint32_t>* reason = nullptr;  // indices into ids
  const std::vector<std::pair<uint32_t, std::string>>* errors = nullptr;
  const std::vector<std::string>* ids = nullptr;  // the policy set's ids by index
  uint64_t bundle_version = 0;
  std::string_view organisation;  // used when the log was opened without one
  std::string_view context_json;  // "" means {}
};

class Recorder {
 public:
  // mode: 0 buffered, 1 durable; context: 0 hash, 1 full, 2 none (the C enums' values).
  static Result<std::unique_ptr<Recorder>> Open(const std::string& dir, int mode, int context,
                                                std::string organisation);
  ~Recorder();

  // Records one decision; writes its id (36 characters and a NUL) to id_out.
  Status Record(const DecisionFacts& facts, char id_out[37]);
  Status Flush();

  struct Stats {
    uint64_t recorded = 0, synced = 0, failed = 0, refused = 0, pending_bytes = 0;
  };
  Stats GetStats() const;

 private:
  struct Impl;
  explicit Recorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Appends the Cedar uid text Type::"id" (the id escaped as a Cedar string) to `out`.
void AppendUid(std::string_view type, std::string_view id, std::string* out);

}  // namespace govern::policy::capi
