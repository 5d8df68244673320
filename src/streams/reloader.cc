// SecurityReloader (see reloader.h).
#include "streams/reloader.h"

#include <fmt/format.h>
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

template <typename Load>
Status SecurityReloader::CheckFile(const std::string& path, Watched& watched, const char* what,
                                   const char* kept, Load load) {
  if (path.empty()) return OkStatus();
  auto id = Stat(path);
  if (watched.checked && id == watched.seen) return OkStatus();
  bool first = !watched.checked;
  watched.checked = true;
  watched.seen = id;
  auto loaded = load();  // parses the file and, only when it parses, swaps it in
  if (!loaded.ok()) {
    log::Warn("streams", std::string(what) + " not reloaded; the " + kept + " in place stay",
              {{"file", path}, {"error", loaded.status().ToString()}});
    return loaded.status();
  }
  reloads_++;
  if (!first)
    log::Info("streams", std::string(what) + " reloaded", {{"file", path}, {kept, std::to_string(*loaded)}});
  return OkStatus();
}

Status SecurityReloader::CheckOnce() {
  std::lock_guard<std::mutex> l(mu_);
  Status a = CheckFile(options_.acl_file, acl_, "ACL file", "rules", [&]() -> Result<size_t> {
    GOVERN_ASSIGN_OR_RETURN(auto rules, Authorizer::LoadFile(options_.acl_file, options_.super_users));
    security_->SetAuthorizer(rules);
    return rules->size();
  });
  Status u = OkStatus();
  if (authenticator_)
    u = CheckFile(options_.users_file, users_, "users file", "users", [&]() -> Result<size_t> {
      GOVERN_ASSIGN_OR_RETURN(auto users, UserStore::LoadFile(options_.users_file));
      authenticator_->SetUsers(users);
      return users->size();
    });
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
