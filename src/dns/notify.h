// NOTIFY out (RFC 1996): tells secondaries that a zone changed, so they ask for an IXFR at once
// instead of waiting for their refresh timer.
//
// Notifier owns one thread and one UDP socket per address family. Send() queues a NOTIFY of a zone's
// serial to each target (TSIG-signed when the target names a key) and returns at once; the thread
// sends it, and resends with a doubling timeout until the secondary answers (a NOERROR NOTIFY
// response, its TSIG checked) or the attempts run out. A newer NOTIFY for the same zone and target
// replaces a pending one. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "dns/tsig.h"
#include "dns/xfr.h"

namespace govern::dns {

struct NotifyOptions {
  int attempts = 5;             // sends per NOTIFY before giving up (BIND and Knot use 5)
  int first_timeout_ms = 1000;  // wait for an answer, doubled after each send
};

class Notifier {
 public:
  static Result<std::unique_ptr<Notifier>> Start(TsigKeyring keys, NotifyOptions options = {});
  ~Notifier();  // stops; pending NOTIFYs are dropped
  // `apex` is the zone's wire name; `soa_rdata` its current SOA (put in the answer section, RFC 1996
  // section 3.7, so a secondary may skip its SOA query).
  void Send(std::string_view apex, uint32_t soa_ttl, std::string_view soa_rdata,
            const std::vector<NotifyTarget>& targets);
  uint64_t sent() const { return sent_.load(); }          // datagrams, resends included
  uint64_t answered() const { return answered_.load(); }  // NOTIFYs a secondary acknowledged
  uint64_t failed() const { return failed_.load(); }      // given up, refused, or a bad TSIG on the answer
  // Blocks until nothing is pending or the timeout passes; true when nothing is pending (for tests).
  bool WaitIdle(int timeout_ms);
  // Replaces the keys NOTIFYs are signed with (keys made through the API): later Send calls use them;
  // NOTIFYs already queued keep the key they were signed with.
  void SetKeys(TsigKeyring keys);

 private:
  Notifier() = default;
  void Loop();
  void Wake();
  struct Pending;
  std::shared_ptr<const TsigKeyring> keys_;  // guarded by mu_ (swapped whole by SetKeys)
  NotifyOptions options_;
  int fd4_ = -1, fd6_ = -1, wake_fd_ = -1;
  std::mutex mu_;
  std::vector<std::unique_ptr<Pending>> pending_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<uint64_t> sent_{0}, answered_{0}, failed_{0};
};

}  // namespace govern::dns
