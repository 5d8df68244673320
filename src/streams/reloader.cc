// SecurityReloader (see reloader.h).
#include "streams/reloader.h"

#include <sys/stat.h>

#include "base/log.h"

namespace govern::streams {

SecurityReloader::SecurityReloader(ReloadOptions options, std::shared_ptr<Security> security,
                                   std::shared_ptr<Authenticator> authenticator)
    : options_(std::move(options)),
      security_(std::move(security)),
      authenticator_(std::move(authenticator)) {}

SecurityReloader::~SecurityReloader() { Stop(); }

std::optional<SecurityReloader::Identity> SecurityReloader::Stat(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                  static_cast<int64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                  static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

Status SecurityReloader::CheckAcl() {
  if (options_.acl_file.empty()) return OkStatus();
  auto id = Stat(options_.acl_file);
  if (acl_checked_ && id == acl_seen_) return OkStatus();
  bool first = !acl_checked_;
  acl_checked_ = true;
  acl_seen_ = id;
  auto loaded = Authorizer::LoadFile(options_.acl_file, options_.super_users);
  if (!loaded.ok()) {
    log::Warn("streams", "ACL file not reloaded; the rules in place stay",
              {{"file", options_.acl_file}, {"error", loaded.status().ToString()}});
    return loaded.status();
  }
  security_->SetAuthorizer(*loaded);
  reloads_++;
  if (!first)
    log::Info("streams", "ACL file reloaded",
              {{"file", options_.acl_file}, {"rules", std::to_string((*loaded)->size())}});
  return OkStatus();
}

Status SecurityReloader::CheckUsers() {
  if (options_.users_file.empty() || !authenticator_) return OkStatus();
  auto id = Stat(options_.users_file);
  if (users_checked_ && id == users_seen_) return OkStatus();
  bool first = !users_checked_;
  users_checked_ = true;
  users_seen_ = id;
  auto loaded = UserStore::LoadFile(options_.users_file);
  if (!loaded.ok()) {
    log::Warn("streams", "users file not reloaded; the users in place stay",
              {{"file", options_.users_file}, {"error", loaded.status().ToString()}});
    return loaded.status();
  }
  authenticator_->SetUsers(*loaded);
  reloads_++;
  if (!first)
    log::Info("streams", "users file reloaded",
              {{"file", options_.users_file}, {"users", std::to_string((*loaded)->size())}});
  return OkStatus();
}

Status SecurityReloader::CheckOnce() {
  std::lock_guard<std::mutex> l(mu_);
  Status a = CheckAcl();
  Status u = CheckUsers();
  return a.ok() ? u : a;
}

uint64_t SecurityReloader::reloads() const {
  std::lock_guard<std::mutex> l(mu_);
  return reloads_;
}

void SecurityReloader::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> l(stop_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(stop_mu_);
    while (!stopping_) {
      l.unlock();
      (void)CheckOnce();  // logged inside
      l.lock();
      stop_cv_.wait_for(l, options_.period, [this] { return stopping_; });
    }
  });
}

void SecurityReloader::Stop() {
  {
    std::lock_guard<std::mutex> l(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace govern::streams
