// Reloading the routes file: poll, check whole, swap (routes_reload.h).
#include "services/gateway/routes_reload.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "base/log.h"
#include "gateway/json_util.h"
#include "services/gateway/budget.h"

namespace govern::gateway {

void DeclareRoutesReloadConfig(config::Schema& schema) {
  schema.Add({.key = "gateway.routes_reload_interval",
              .type = config::Type::kDuration,
              .default_value = "5s",
              .help = "How often gateway.routes_file is checked for a change (modification time, size, "
                      "inode) and reloaded: routes, virtual keys, prices and DLP rules, checked whole first "
                      "(a file that fails is logged and the routes in place stay). SIGHUP reloads at once. "
                      "0: only on SIGHUP.",
              .min = 0});
}

RoutesReloader::RoutesReloader(Proxy& proxy, RoutesReloadOptions options)
    : proxy_(proxy), options_(std::move(options)) {
  last_ = Stat(options_.file);  // the file as the service read it at start
}

RoutesReloader::~RoutesReloader() { Stop(); }

RoutesReloader::Identity RoutesReloader::Stat(const std::string& file) {
  Identity id;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return id;
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.size = static_cast<int64_t>(st.st_size);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.device = static_cast<uint64_t>(st.st_dev);
  return id;
}

void RoutesReloader::Start() {
  if (options_.interval.count() <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void RoutesReloader::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RoutesReloader::Loop() {
  std::unique_lock lock(stop_mu_);
  while (!stop_) {
    stop_cv_.wait_for(lock, options_.interval, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    (void)CheckOnce();  // logged by Apply
    lock.lock();
  }
}

Status RoutesReloader::ReloadNow() {
  std::lock_guard lock(mu_);
  return Apply(Stat(options_.file));
}

Status RoutesReloader::CheckOnce() {
  std::lock_guard lock(mu_);
  Identity now = Stat(options_.file);
  if (now == last_) return OkStatus();
  return Apply(now);
}

uint64_t RoutesReloader::reloads() const {
  std::lock_guard lock(mu_);
  return reloads_;
}

uint64_t RoutesReloader::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

Status RoutesReloader::Apply(const Identity& seen) {
  // Remembered whatever comes of it: a file that fails is reported once per change, not at every poll.
  last_ = seen;
  auto checked = [&]() -> Status {
    std::ifstream in(options_.file);
    if (!in) return NotFound("cannot read " + options_.file);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
    GOVERN_ASSIGN_OR_RETURN(ProxyConfig next, ParseProxyConfig(text));
    GOVERN_RETURN_IF_ERROR(ParseBudgets(text).status());
    next.upstream = options_.upstream;  // not reloaded (the client is made at start)
    if (options_.max_answer_time.count() > 0 && LongestAnswerTime(next) > options_.max_answer_time)
      return InvalidArgument(
          "its routes can take longer over a whole answer than the server's handler "
          "timeout set at start (retries, fallbacks, timeouts): restart to apply it");
    if (!options_.initial_text.empty()) {
      auto before = detail::ParseJson(options_.initial_text, "routes file");
      auto after = detail::ParseJson(text, "routes file");
      auto budgets = [](const Result<nlohmann::json>& j) {
        return j.ok() && j->is_object() && j->contains("budgets") ? j->at("budgets") : nlohmann::json();
      };
      if (budgets(before) != budgets(after))
        log::Warn("gateway", "routes file: budgets changed; they take effect at the next start",
                  {{"file", options_.file}});
    }
    return proxy_.Reload(std::move(next));
  }();
  if (!checked.ok()) {
    ++failures_;
    log::Error("gateway", "routes file not reloaded; the routes in place stay",
               {{"file", options_.file}, {"error", checked.ToString()}});
    return checked;
  }
  ++reloads_;
  log::Info("gateway", "routes file reloaded", {{"file", options_.file}});
  return OkStatus();
}

}  // namespace govern::gateway
