// SecurityReloader: picks up edits to the ACL file and the PLAIN users file while the broker runs, so
// granting or withdrawing access needs no restart.
//
// Every period (and on CheckOnce) each file's identity (device, inode, size, modification time) is
// compared with the last one seen; a file that changed is read and parsed whole, and only a file that
// parses replaces what is in place, in one atomic swap (Security::SetAuthorizer,
// Authenticator::SetUsers): a request is decided by the old rules or the new ones, never a mix, and a
// broken edit keeps the old rules (logged once per change of the file). Write the new file beside the
// old one and rename it over it, so a poll never sees half a file; an edit in place that is caught
// half-written is read again once it changes again.
//
// Changed users end the sessions they no longer support (a removed user, a changed password) on those
// sessions' next request (security.h). The first check after construction reloads both files, so an
// edit made between the service's own load and the reloader's start is not missed.
//
// Thread-safe: CheckOnce may run beside the polling thread; Start/Stop from one owner thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "streams/security.h"

namespace govern::streams {

struct ReloadOptions {
  std::string acl_file;                  // empty: not watched
  std::vector<std::string> super_users;  // kept across ACL reloads
  std::string users_file;                // empty: not watched (needs PLAIN offered)
  std::chrono::milliseconds period{std::chrono::seconds(5)};
};

class SecurityReloader {
 public:
  // `authenticator` is the one inside `security` (null: the users file is not watched).
  SecurityReloader(ReloadOptions options, std::shared_ptr<Security> security,
                   std::shared_ptr<Authenticator> authenticator);
  ~SecurityReloader();  // Stop()
  SecurityReloader(const SecurityReloader&) = delete;
  SecurityReloader& operator=(const SecurityReloader&) = delete;

  // Reloads every watched file that changed since the last look. The first error (unreadable or
  // unparsable file; the old rules stay) is returned; the other file is still handled.
  Status CheckOnce();
  // A thread calling CheckOnce every period; errors are logged. Stop joins it.
  void Start();
  void Stop();

  uint64_t reloads() const;  // files swapped in so far

 private:
  struct Identity {
    uint64_t dev = 0, ino = 0;
    int64_t size = -1, mtime_ns = 0, ctime_ns = 0;
    friend bool operator==(const Identity&, const Identity&) = default;
  };
  static std::optional<Identity> Stat(const std::string& path);
  struct Watched {
    std::optional<Identity> seen;
    bool checked = false;
  };
  // Reloads `path` through `load` (returns how many rules/users it swapped in) if the file's identity
  // changed since `watched` last looked. Caller holds mu_.
  template <typename Load>
  Status CheckFile(const std::string& path, Watched& watched, const char* what, const char* kept, Load load);

  ReloadOptions options_;
  std::shared_ptr<Security> security_;
  std::shared_ptr<Authenticator> authenticator_;
  mutable std::mutex mu_;  // serialises checks; guards the fields below
  Watched acl_, users_;
  uint64_t reloads_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace govern::streams
