// The Kafka-compatible broker: topics, request handlers by API key, and the TCP server (see broker.h).
#include "streams/broker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "base/file.h"
#include "base/log.h"
#include "streams/batch.h"
#include "streams/errors.h"
#include "streams/security.h"
#include "streams/wire.h"

namespace govern::streams {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
namespace fs = std::filesystem;

bool ValidTopicName(std::string_view name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Topic {
  std::string name;
  std::vector<std::shared_ptr<PartitionLog>> partitions;
};

}  // namespace

class Connection;

class Broker::Impl {
 public:
  explicit Impl(BrokerOptions o) : opts(std::move(o)), acceptor(io), retention_timer(io) {
    if (opts.advertised_host.empty()) opts.advertised_host = opts.listen_host;
    RegisterBuiltins();
  }

  Status Start();
  void Stop();
  void Accept();
  Status CreateTopic(const std::string& name, int32_t partitions);
  Status LoadTopics();
  std::shared_ptr<PartitionLog> Find(std::string_view topic, int32_t partition) const;
  std::shared_ptr<Topic> FindTopic(std::string_view topic) const;
  void WakeFetchers();
  void ScheduleRetention();
  Result<int64_t> NextProducerId();

  void RegisterBuiltins();
  void ApiVersions(const Request& req, Respond respond);
  void Metadata(const Request& req, Respond respond);
  void Produce(const Request& req, Respond respond);
  void Fetch(const Request& req, Respond respond);
  void ListOffsets(const Request& req, Respond respond);
  void CreateTopics(const Request& req, Respond respond);
  void DeleteTopics(const Request& req, Respond respond);
  void InitProducerId(const Request& req, Respond respond);
  // The request's principal may do `op` (streams/security.h); true without security configured.
  bool Permit(const Request& req, AclOp op, ResourceType type, std::string_view name) const {
    return !opts.security || opts.security->Allowed(*req.session, op, type, name);
  }

  BrokerOptions opts;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor;
  asio::steady_timer retention_timer;
  std::vector<std::thread> threads;
  std::unique_ptr<Syncer> syncer;
  std::map<int16_t, ApiSpec> apis;
  Broker::TopicsDeletedHook topics_deleted;
  uint16_t bound_port = 0;
  bool started = false;
  int lock_fd = -1;
  void ReleaseLock() {
    if (lock_fd >= 0) ::close(lock_fd);
    lock_fd = -1;
  }

  mutable std::shared_mutex topics_mu;
  std::map<std::string, std::shared_ptr<Topic>, std::less<>> topics;
  // Topics DeleteTopics took out of `topics` whose directories are not yet removed: no topic of the same
  // name may be created (it would open those directories) until they are gone.
  std::set<std::string, std::less<>> deleting;
  static std::string MarkedForDeletion(std::string_view name) {
    return "Topic '" + std::string(name) + "' is marked for deletion.";
  }
  bool Deleting(std::string_view name) const {
    std::shared_lock<std::shared_mutex> lock(topics_mu);
    return deleting.find(name) != deleting.end();
  }

  std::mutex pid_mu;
  int64_t next_pid = 0;
  int64_t pid_limit = 0;

  struct FetchWaiter;
  std::mutex waiters_mu;
  std::list<std::shared_ptr<FetchWaiter>> waiters;
  std::atomic<bool> wake_posted{false};

  std::mutex conns_mu;
  std::set<std::shared_ptr<Connection>> conns;
};

// One client connection. Every socket operation runs on the socket's strand; handlers answer from any
// thread and their replies are posted back to it, slotted into request order.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Broker::Impl& broker, tcp::socket socket) : broker_(broker), socket_(std::move(socket)) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
  }

  void Start() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->ReadSize(); });
  }
  void Close() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->Shutdown(); });
  }

 private:
  struct Slot {
    bool ready = false;
    int32_t correlation_id = 0;
    bool flexible_header = false;
    Reply reply;
  };

  void Shutdown() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    std::lock_guard<std::mutex> lock(broker_.conns_mu);
    broker_.conns.erase(shared_from_this());
  }

  void ReadSize() {
    if (closed_) return;
    if (slots_.size() >= broker_.opts.max_inflight_per_connection || holding_) {
      paused_ = true;  // resumed by Flush once replies drain
      return;
    }
    asio::async_read(
        socket_, asio::buffer(size_buf_, 4),
        [self = shared_from_this()](boost::system::error_code ec, size_t) {
          if (ec) return self->Shutdown();
          uint32_t n = LoadBe32(self->size_buf_);
          if (n < 8 || n > self->broker_.opts.max_request_bytes) {
            log::Warn("streams", "closing connection: bad frame size", {{"size", std::to_string(n)}});
            return self->Shutdown();
          }
          self->ReadFrame(n);
        });
  }

  void ReadFrame(uint32_t n) {
    auto frame = std::make_shared<std::string>(n, '\0');
    asio::async_read(socket_, asio::buffer(frame->data(), n),
                     [self = shared_from_this(), frame](boost::system::error_code ec, size_t) {
                       if (ec) return self->Shutdown();
                       self->Dispatch(std::move(frame));
                       self->ReadSize();
                     });
  }

  void Dispatch(std::shared_ptr<std::string> frame) {
    auto peek = PeekRequestHeader(*frame);
    if (!peek.ok()) return Shutdown();
    auto api = broker_.apis.find(peek->api_key);
    bool known = api != broker_.apis.end();
    // ApiVersions of a version we do not know is answered (in the v0 format) so the client steps down.
    bool newer_api_versions =
        peek->api_key == api::kApiVersions && known && peek->api_version > api->second.max_version;
    if (!known || peek->api_version < 0 ||
        (peek->api_version > api->second.max_version && !newer_api_versions)) {
      log::Warn(
          "streams", "closing connection: unsupported request",
          {{"api_key", std::to_string(peek->api_key)}, {"api_version", std::to_string(peek->api_version)}});
      return Shutdown();
    }
    if (broker_.opts.security && !broker_.opts.security->Admit(*session_, peek->api_key)) {
      log::Info("streams", "closing connection: not authenticated, or the session expired or was revoked",
                {{"api_key", std::to_string(peek->api_key)}});
      return Shutdown();
    }
    bool flexible = peek->api_version >= api->second.first_flexible_version;
    auto header = ParseRequestHeader(*frame, flexible && !newer_api_versions);
    if (!header.ok()) return Shutdown();
    uint64_t seq = first_seq_ + slots_.size();
    slots_.push_back({.correlation_id = header->correlation_id,
                      .flexible_header = flexible && peek->api_key != api::kApiVersions});
    if (api->second.pause_reading) {
      holding_ = true;
      hold_seq_ = seq;
    }
    Request req{*header, std::move(frame), peer_, session_};
    auto self = shared_from_this();
    api->second.handler(req, [self, seq](Reply reply) {
      asio::post(self->socket_.get_executor(),
                 [self, seq, r = std::move(reply)]() mutable { self->Fill(seq, std::move(r)); });
    });
  }

  void Fill(uint64_t seq, Reply reply) {
    if (closed_ || seq < first_seq_) return;
    Slot& s = slots_[seq - first_seq_];
    s.ready = true;
    s.reply = std::move(reply);
    Flush();
  }

  void Flush() {
    while (!slots_.empty() && slots_.front().ready) {
      Slot& s = slots_.front();
      if (s.reply.kind == Reply::Kind::kClose) {
        closing_ = true;
        break;
      }
      if (s.reply.kind == Reply::Kind::kSend) {
        Writer w;
        w.Int32(0);
        w.Int32(s.correlation_id);
        if (s.flexible_header) w.EmptyTaggedFields();
        w.Raw(s.reply.body);
        w.PatchInt32(0, static_cast<int32_t>(w.size() - 4));
        pending_out_ += w.str();
      }
      slots_.pop_front();
      first_seq_++;
    }
    if (holding_ && first_seq_ > hold_seq_) holding_ = false;
    Write();
    if (paused_ && !holding_ && slots_.size() < broker_.opts.max_inflight_per_connection && !closing_) {
      paused_ = false;
      ReadSize();
    }
  }

  void Write() {
    if (writing_ || closed_) return;
    if (pending_out_.empty()) {
      if (closing_) Shutdown();
      return;
    }
    writing_ = true;
    out_.swap(pending_out_);
    pending_out_.clear();
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        self->writing_ = false;
                        self->out_.clear();
                        if (ec) return self->Shutdown();
                        self->Write();
                      });
  }

  Broker::Impl& broker_;
  tcp::socket socket_;
  char size_buf_[4];
  std::deque<Slot> slots_;
  uint64_t first_seq_ = 0;
  uint64_t hold_seq_ = 0;  // with holding_: reading resumes once this request is answered
  std::string peer_;
  std::string out_, pending_out_;
  bool writing_ = false, paused_ = false, closing_ = false, closed_ = false, holding_ = false;
  std::shared_ptr<Session> session_ = std::make_shared<Session>();
};

// ---------------------------------------------------------------------------------------------------
// Lifecycle and topics

Status Broker::Impl::Start() {
  if (opts.data_dir.empty()) return InvalidArgument("streams: data_dir is empty");
  std::error_code fec;
  fs::create_directories(opts.data_dir, fec);
  if (fec) return Internal("streams: create " + opts.data_dir + ": " + fec.message());
  // One broker per data directory: two writing the same logs would interleave batches.
  lock_fd = ::open((opts.data_dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return Internal("streams: open " + opts.data_dir + "/.lock: " + std::strerror(errno));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
    return FailedPrecondition("streams: another broker is using " + opts.data_dir);
  syncer = std::make_unique<Syncer>(8, nullptr, opts.sync_depth);
  {
    std::ifstream in(opts.data_dir + "/producer-id-block");
    int64_t v = 0;
    if (in >> v) next_pid = pid_limit = v;
  }
  GOVERN_RETURN_IF_ERROR(LoadTopics());
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(opts.listen_host, ec);
  if (ec) return InvalidArgument("streams: listen address " + opts.listen_host + ": " + ec.message());
  tcp::endpoint ep(addr, opts.listen_port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Unavailable("streams: listen on " + opts.listen_host + ":" + std::to_string(opts.listen_port) +
                       ": " + ec.message());
  bound_port = acceptor.local_endpoint().port();
  work.emplace(io.get_executor());
  Accept();
  ScheduleRetention();
  for (int i = 0; i < std::max(1, opts.threads); i++) threads.emplace_back([this] { io.run(); });
  started = true;
  log::Info("streams", "broker listening",
            {{"address", opts.listen_host + ":" + std::to_string(bound_port)}, {"data_dir", opts.data_dir}});
  return OkStatus();
}

void Broker::Impl::Stop() {
  if (!started) {
    syncer.reset();
    ReleaseLock();
    return;
  }
  started = false;
  asio::post(io, [this] {
    boost::system::error_code ec;
    acceptor.close(ec);
    retention_timer.cancel();
  });
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    for (auto& c : conns) c->Close();
  }
  {
    std::lock_guard<std::mutex> lock(waiters_mu);
    waiters.clear();
  }
  work.reset();
  // Give closes a moment to run, then stop the loops.
  asio::post(io, [this] { io.stop(); });
  for (auto& t : threads) t.join();
  threads.clear();
  // Pending syncs complete before the logs they point into close.
  syncer.reset();
  std::unique_lock<std::shared_mutex> lock(topics_mu);
  topics.clear();
  std::lock_guard<std::mutex> cl(conns_mu);
  conns.clear();
  ReleaseLock();
}

void Broker::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      log::Warn("streams", "accept", {{"error", ec.message()}});
    } else {
      boost::system::error_code nec;
      socket.set_option(tcp::no_delay(true), nec);
      auto conn = std::make_shared<Connection>(*this, std::move(socket));
      {
        std::lock_guard<std::mutex> lock(conns_mu);
        conns.insert(conn);
      }
      conn->Start();
    }
    Accept();
  });
}

Status Broker::Impl::LoadTopics() {
  std::map<std::string, std::map<int32_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(opts.data_dir, ec)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    auto dash = name.rfind('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) continue;
    std::string topic = name.substr(0, dash), idx = name.substr(dash + 1);
    if (!ValidTopicName(topic) || idx.find_first_not_of("0123456789") != std::string::npos || idx.size() > 6)
      continue;
    found[topic][std::stoi(idx)] = entry.path().string();
  }
  if (ec) return Internal("streams: list " + opts.data_dir + ": " + ec.message());
  for (auto& [name, parts] : found) {
    auto t = std::make_shared<Topic>();
    t->name = name;
    for (int32_t i = 0; i < static_cast<int32_t>(parts.size()); i++) {
      auto it = parts.find(i);
      if (it == parts.end())
        return DataLoss("streams: topic " + name + " lacks partition " + std::to_string(i));
      auto log = PartitionLog::Open(it->second, opts.log, syncer.get());
      if (!log.ok()) return log.status().WithContext("streams: open " + it->second);
      std::shared_ptr<PartitionLog> shared(std::move(*log));
      shared->set_on_advance([this] { WakeFetchers(); });
      t->partitions.push_back(std::move(shared));
    }
    topics[name] = std::move(t);
  }
  return OkStatus();
}

Status Broker::Impl::CreateTopic(const std::string& name, int32_t partitions) {
  if (!ValidTopicName(name)) return InvalidArgument("invalid topic name");
  if (partitions <= 0 || partitions > 10000) return OutOfRange("invalid partition count");
  std::unique_lock<std::shared_mutex> lock(topics_mu);
  if (topics.count(name)) return AlreadyExists("topic " + name + " exists");
  // Unavailable, not AlreadyExists: Metadata's auto-create answers this retriable (LEADER_NOT_AVAILABLE).
  if (deleting.count(name)) return Unavailable(MarkedForDeletion(name));
  auto t = std::make_shared<Topic>();
  t->name = name;
  for (int32_t i = 0; i < partitions; i++) {
    auto log =
        PartitionLog::Open(opts.data_dir + "/" + name + "-" + std::to_string(i), opts.log, syncer.get());
    if (!log.ok()) return log.status();
    std::shared_ptr<PartitionLog> shared(std::move(*log));
    shared->set_on_advance([this] { WakeFetchers(); });
    t->partitions.push_back(std::move(shared));
  }
  topics[name] = std::move(t);
  lock.unlock();
  // The partition directories' names must survive a crash.
  GOVERN_RETURN_IF_ERROR(SyncDirectory(opts.data_dir));
  log::Info("streams", "topic created", {{"topic", name}, {"partitions", std::to_string(partitions)}});
  return OkStatus();
}

std::shared_ptr<Topic> Broker::Impl::FindTopic(std::string_view topic) const {
  std::shared_lock<std::shared_mutex> lock(topics_mu);
  auto it = topics.find(topic);
  return it == topics.end() ? nullptr : it->second;
}

std::shared_ptr<PartitionLog> Broker::Impl::Find(std::string_view topic, int32_t partition) const {
  auto t = FindTopic(topic);
  if (!t || partition < 0 || partition >= static_cast<int32_t>(t->partitions.size())) return nullptr;
  return t->partitions[static_cast<size_t>(partition)];
}

void Broker::Impl::ScheduleRetention() {
  if (opts.log.retention_ms < 0 && opts.log.retention_bytes < 0) return;
  retention_timer.expires_after(std::chrono::milliseconds(opts.retention_check_ms));
  retention_timer.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    std::vector<std::shared_ptr<PartitionLog>> logs;
    {
      std::shared_lock<std::shared_mutex> lock(topics_mu);
      for (auto& [n, t] : topics) logs.insert(logs.end(), t->partitions.begin(), t->partitions.end());
    }
    for (auto& l : logs) {
      auto r = l->ApplyRetention(NowMs());
      if (!r.ok()) log::Warn("streams", "retention", {{"dir", l->dir()}, {"error", r.status().ToString()}});
    }
    ScheduleRetention();
  });
}

Result<int64_t> Broker::Impl::NextProducerId() {
  std::lock_guard<std::mutex> lock(pid_mu);
  if (next_pid >= pid_limit) {
    // Producer ids stay unique across restarts: a block is reserved durably before any id in it is used.
    int64_t limit = next_pid + 1000;
    GOVERN_RETURN_IF_ERROR(
        ReplaceFileDurably(opts.data_dir + "/producer-id-block", std::to_string(limit) + "\n"));
    pid_limit = limit;
  }
  return next_pid++;
}

// ---------------------------------------------------------------------------------------------------
// Handlers

namespace {
constexpr int16_t kApiVersionsMax = 3;
}

void Broker::Impl::RegisterBuiltins() {
  auto bind = [this](void (Impl::*fn)(const Request&, Respond)) {
    return [this, fn](const Request& r, Respond respond) { (this->*fn)(r, std::move(respond)); };
  };
  apis[api::kProduce] = {0, 7, 9, bind(&Impl::Produce)};
  apis[api::kFetch] = {0, 11, 12, bind(&Impl::Fetch)};
  apis[api::kListOffsets] = {0, 3, 6, bind(&Impl::ListOffsets)};
  apis[api::kMetadata] = {0, 6, 9, bind(&Impl::Metadata)};
  apis[api::kApiVersions] = {0, kApiVersionsMax, 3, bind(&Impl::ApiVersions)};
  apis[api::kCreateTopics] = {0, 4, 5, bind(&Impl::CreateTopics)};
  apis[api::kDeleteTopics] = {0, 1, 4, bind(&Impl::DeleteTopics)};
  apis[api::kInitProducerId] = {0, 1, 2, bind(&Impl::InitProducerId)};
  if (opts.security && opts.security->authenticator()) {
    auto sasl = [sec = opts.security](auto fn) {
      return [sec, fn](const Request& r, Respond respond) {
        auto body = ((*sec).*fn)(*r.session, r.header.api_version, r.header.body);
        respond(body ? Reply::Send(std::move(*body)) : Reply::Close());
      };
    };
    apis[kApiSaslHandshake] = {0, 1, 0x7fff, sasl(&Security::SaslHandshake)};
    apis[kApiSaslAuthenticate] = {0, 2, 2, sasl(&Security::SaslAuthenticate)};
  }
}

void Broker::Impl::ApiVersions(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  Writer w;
  if (v > kApiVersionsMax) {
    // The v0 format, so a client that only knows older versions can read the error and the list.
    w.Int16(kerr::kUnsupportedVersion);
    w.ArrayCount(static_cast<int32_t>(apis.size()));
    for (auto& [key, spec] : apis) {
      w.Int16(key);
      w.Int16(spec.min_version);
      w.Int16(spec.max_version);
    }
    return respond(Reply::Send(std::move(w.str())));
  }
  if (!ParseApiVersionsRequest(req.header.body, v).ok()) return respond(Reply::Close());
  w.Int16(kerr::kNone);
  if (v >= 3) {
    w.CompactArrayCount(static_cast<int32_t>(apis.size()));
  } else {
    w.ArrayCount(static_cast<int32_t>(apis.size()));
  }
  for (auto& [key, spec] : apis) {
    w.Int16(key);
    w.Int16(spec.min_version);
    w.Int16(spec.max_version);
    if (v >= 3) w.EmptyTaggedFields();
  }
  if (v >= 1) w.Int32(0);  // throttle
  if (v >= 3) w.EmptyTaggedFields();
  respond(Reply::Send(std::move(w.str())));
}

void Broker::Impl::Metadata(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseMetadataRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  std::vector<std::pair<std::string, std::shared_ptr<Topic>>> list;
  std::set<std::string> denied;    // named topics the principal may not describe
  std::set<std::string> deferred;  // named topics not created yet: their deleted namesake's files remain
  if (!parsed->topics) {
    std::shared_lock<std::shared_mutex> lock(topics_mu);
    for (auto& [n, t] : topics)
      if (Permit(req, AclOp::kDescribe, ResourceType::kTopic, n)) list.emplace_back(n, t);
  } else {
    for (std::string_view name : *parsed->topics) {
      if (!Permit(req, AclOp::kDescribe, ResourceType::kTopic, name)) {
        denied.emplace(name);
        list.emplace_back(std::string(name), nullptr);
        continue;
      }
      auto t = FindTopic(name);
      if (!t && opts.auto_create_topics && parsed->allow_auto_topic_creation && ValidTopicName(name) &&
          (Permit(req, AclOp::kCreate, ResourceType::kCluster, "") ||
           Permit(req, AclOp::kCreate, ResourceType::kTopic, name))) {
        Status s = CreateTopic(std::string(name), opts.default_partitions);
        if (s.code() == Code::kUnavailable && Deleting(name))
          deferred.emplace(name);
        else if (!s.ok() && s.code() != Code::kAlreadyExists)
          log::Warn("streams", "auto-create topic", {{"topic", std::string(name)}, {"error", s.ToString()}});
        t = FindTopic(name);
      }
      list.emplace_back(std::string(name), t);
    }
  }
  Writer w;
  if (v >= 3) w.Int32(0);
  w.ArrayCount(1);
  w.Int32(opts.node_id);
  w.String(opts.advertised_host);
  w.Int32(bound_port);
  if (v >= 1) w.NullableString(std::nullopt);  // rack
  if (v >= 2) w.NullableString(opts.cluster_id);
  if (v >= 1) w.Int32(opts.node_id);  // controller
  w.ArrayCount(static_cast<int32_t>(list.size()));
  for (auto& [name, t] : list) {
    w.Int16(denied.count(name) ? kErrTopicAuthorizationFailed
            : t                ? kerr::kNone
            : deferred.count(name)
                ? kerr::kLeaderNotAvailable
                : (ValidTopicName(name) ? kerr::kUnknownTopicOrPartition : kerr::kInvalidTopic));
    w.String(name);
    if (v >= 1) w.Bool(false);
    int32_t n = t ? static_cast<int32_t>(t->partitions.size()) : 0;
    w.ArrayCount(n);
    for (int32_t i = 0; i < n; i++) {
      w.Int16(kerr::kNone);
      w.Int32(i);
      w.Int32(opts.node_id);
      w.ArrayCount(1);
      w.Int32(opts.node_id);
      w.ArrayCount(1);
      w.Int32(opts.node_id);
      if (v >= 5) w.ArrayCount(0);
    }
  }
  respond(Reply::Send(std::move(w.str())));
}

void Broker::Impl::Produce(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseProduceRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  struct Part {
    int32_t index;
    int16_t error = kerr::kNone;
    int64_t base_offset = -1;
    int64_t log_start = -1;
  };
  struct State {
    std::mutex mu;
    std::vector<std::pair<std::string, std::vector<Part>>> topics;
    std::atomic<int> pending{1};
    Respond respond;
    int16_t version;
    bool acks0;
  };
  auto st = std::make_shared<State>();
  st->respond = std::move(respond);
  st->version = v;
  st->acks0 = parsed->acks == 0;
  auto finish = [st] {
    if (st->pending.fetch_sub(1) != 1) return;
    if (st->acks0) return st->respond(Reply::None());
    Writer w;
    w.ArrayCount(static_cast<int32_t>(st->topics.size()));
    for (auto& [name, parts] : st->topics) {
      w.String(name);
      w.ArrayCount(static_cast<int32_t>(parts.size()));
      for (Part& p : parts) {
        w.Int32(p.index);
        w.Int16(p.error);
        w.Int64(p.base_offset);
        if (st->version >= 2) w.Int64(-1);  // log append time: CreateTime topics
        if (st->version >= 5) w.Int64(p.log_start);
      }
    }
    if (st->version >= 1) w.Int32(0);
    st->respond(Reply::Send(std::move(w.str())));
  };

  int16_t reject = kerr::kNone;
  if (v < 3) {
    reject = kerr::kUnsupportedVersion;
  } else if (parsed->transactional_id) {
    reject = kerr::kTransactionalIdAuthorizationFailed;
  } else if (parsed->acks != 0 && parsed->acks != 1 && parsed->acks != -1) {
    reject = kerr::kInvalidRequiredAcks;
  }
  // Shape the answer first, so the appends' callbacks fill slots that no longer move.
  for (auto& t : parsed->topics) {
    std::vector<Part> parts;
    for (auto& p : t.partitions) parts.push_back({p.index});
    st->topics.emplace_back(std::string(t.name), std::move(parts));
  }
  for (size_t ti = 0; ti < parsed->topics.size(); ti++) {
    auto& t = parsed->topics[ti];
    for (size_t pi = 0; pi < t.partitions.size(); pi++) {
      Part& out = st->topics[ti].second[pi];
      if (reject != kerr::kNone) {
        out.error = reject;
        continue;
      }
      if (!Permit(req, AclOp::kWrite, ResourceType::kTopic, t.name)) {
        out.error = kErrTopicAuthorizationFailed;
        continue;
      }
      auto log = Find(t.name, t.partitions[pi].index);
      if (!log) {
        out.error = kerr::kUnknownTopicOrPartition;
        continue;
      }
      out.log_start = log->log_start_offset();
      const Screener* screener = opts.security ? opts.security->screener() : nullptr;
      ScreenMode screen = screener ? screener->ModeFor(t.name) : ScreenMode::kOff;
      std::vector<std::pair<std::string, BatchHeader>> batches;
      Status s = t.partitions[pi].records
                     ? ForEachBatch(*t.partitions[pi].records,
                                    [&](std::string_view b) -> Status {
                                      if (b.size() > opts.max_message_bytes)
                                        return ResourceExhausted("batch too large");
                                      GOVERN_ASSIGN_OR_RETURN(BatchHeader h, ParseBatch(b));
                                      if (h.transactional() || h.control())
                                        return Unimplemented("transactional batches are not supported");
                                      if (screen != ScreenMode::kOff) {
                                        auto verdict = screener->Screen(b, screen);
                                        if (!verdict.ok()) return verdict.status();
                                        if (verdict->blocked) return PermissionDenied(verdict->detectors);
                                        if (verdict->rewritten) {
                                          GOVERN_ASSIGN_OR_RETURN(h, ParseBatch(*verdict->rewritten));
                                          batches.emplace_back(std::move(*verdict->rewritten), h);
                                          return OkStatus();
                                        }
                                      }
                                      batches.emplace_back(std::string(b), h);
                                      return OkStatus();
                                    })
                     : InvalidArgument("null records");
      if (s.code() == Code::kPermissionDenied || s.code() == Code::kFailedPrecondition) {
        // Screening: the whole partition's records are refused; Produce v7 has no message field.
        log::Info("streams", "produce refused by screening",
                  {{"topic", std::string(t.name)},
                   {"partition", std::to_string(out.index)},
                   {s.code() == Code::kPermissionDenied ? "detectors" : "error", s.message()}});
        out.error = s.code() == Code::kPermissionDenied ? kErrPolicyViolation : kErrInvalidRecord;
        continue;
      }
      if (!s.ok()) {
        out.error = s.code() == Code::kResourceExhausted ? kerr::kMessageTooLarge
                    : s.code() == Code::kUnimplemented   ? kerr::kUnsupportedForMessageFormat
                                                         : kerr::kCorruptMessage;
        continue;
      }
      for (auto& [bytes, h] : batches) {
        st->pending.fetch_add(1);
        AppendInfo info = log->Append(bytes, h, log->latest_epoch() < 0 ? 0 : log->latest_epoch(),
                                      [st, &out, finish](Status ds) {
                                        if (!ds.ok()) {
                                          std::lock_guard<std::mutex> l(st->mu);
                                          out.error = kerr::kKafkaStorageError;
                                        }
                                        finish();
                                      });
        std::lock_guard<std::mutex> l(st->mu);
        if (info.error != kerr::kNone) {
          out.error = info.error;
          st->pending.fetch_sub(1);  // no callback will come
          break;
        }
        if (out.base_offset < 0) out.base_offset = info.base_offset;
      }
    }
  }
  finish();
}

struct Broker::Impl::FetchWaiter {
  std::atomic<bool> done{false};
  std::function<bool(bool)> attempt;  // attempt(final): true once answered
  std::unique_ptr<asio::steady_timer> timer;
};

void Broker::Impl::WakeFetchers() {
  if (wake_posted.exchange(true)) return;
  asio::post(io, [this] {
    wake_posted.store(false);
    std::vector<std::shared_ptr<FetchWaiter>> list;
    {
      std::lock_guard<std::mutex> lock(waiters_mu);
      list.assign(waiters.begin(), waiters.end());
    }
    for (auto& w : list) w->attempt(false);
  });
}

void Broker::Impl::Fetch(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseFetchRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  auto request = std::make_shared<FetchRequest>(std::move(*parsed));
  auto frame = req.frame;  // the request's views point into it
  // Builds the response; returns its record bytes so the caller can judge min_bytes.
  std::set<std::string_view> unreadable;  // topics the principal may not read
  for (auto& t : request->topics)
    if (!Permit(req, AclOp::kRead, ResourceType::kTopic, t.name)) unreadable.insert(t.name);
  auto build = [this, request, v, unreadable](Writer& w, bool* any_error) -> size_t {
    size_t total = 0;
    if (v >= 1) w.Int32(0);
    if (v >= 7) {
      w.Int16(kerr::kNone);
      w.Int32(0);  // no fetch sessions: every fetch is a full one
    }
    w.ArrayCount(static_cast<int32_t>(request->topics.size()));
    for (auto& t : request->topics) {
      w.String(t.name);
      w.ArrayCount(static_cast<int32_t>(t.partitions.size()));
      for (auto& p : t.partitions) {
        int16_t error = kerr::kNone;
        int64_t hw = -1, start = -1;
        std::string records;
        bool denied = unreadable.count(t.name) > 0;
        auto log = v < 4 || denied ? std::shared_ptr<PartitionLog>() : Find(t.name, p.index);
        if (v < 4) {
          error = kerr::kUnsupportedVersion;
        } else if (denied) {
          error = kErrTopicAuthorizationFailed;
        } else if (!log) {
          error = kerr::kUnknownTopicOrPartition;
        } else {
          hw = log->high_watermark();
          start = log->log_start_offset();
          if (p.fetch_offset < start || p.fetch_offset > log->log_end_offset()) {
            error = kerr::kOffsetOutOfRange;
          } else if (p.max_bytes > 0 && total < static_cast<size_t>(request->max_bytes)) {
            size_t budget =
                std::min(static_cast<size_t>(p.max_bytes), static_cast<size_t>(request->max_bytes) - total);
            auto data = log->Read(p.fetch_offset, budget, hw);
            if (data.ok()) {
              // Past the first partition, stay within max_bytes rather than send one whole batch more.
              if (total > 0 && data->size() > budget) data->clear();
              records = std::move(*data);
            } else {
              error = kerr::kOffsetOutOfRange;
            }
          }
        }
        if (error != kerr::kNone) *any_error = true;
        total += records.size();
        w.Int32(p.index);
        w.Int16(error);
        w.Int64(hw);
        if (v >= 4) w.Int64(hw);  // last stable offset: no transactions, so the high watermark
        if (v >= 5) w.Int64(start);
        if (v >= 4) w.ArrayCount(0);  // aborted transactions
        if (v >= 11) w.Int32(-1);     // preferred read replica
        w.NullableBytes(records);
      }
    }
    return total;
  };
  auto waiter = std::make_shared<FetchWaiter>();
  auto shared_respond = std::make_shared<Respond>(std::move(respond));
  waiter->attempt = [this, build, request, frame, shared_respond,
                     w = std::weak_ptr<FetchWaiter>(waiter)](bool final) {
    auto self = w.lock();
    if (!self || self->done.load()) return true;
    Writer out;
    bool any_error = false;
    size_t bytes = build(out, &any_error);
    if (!final && !any_error && bytes < static_cast<size_t>(std::max(request->min_bytes, 1)) &&
        request->max_wait_ms > 0)
      return false;
    // The timer is left to fire into a finished waiter: cancelling it here could race its own handler.
    if (self->done.exchange(true)) return true;
    {
      std::lock_guard<std::mutex> lock(waiters_mu);
      waiters.remove(self);
    }
    (*shared_respond)(Reply::Send(std::move(out.str())));
    return true;
  };
  if (waiter->attempt(false)) return;
  // Long poll: wait for appends (WakeFetchers) or max_wait.
  waiter->timer = std::make_unique<asio::steady_timer>(io, std::chrono::milliseconds(request->max_wait_ms));
  {
    std::lock_guard<std::mutex> lock(waiters_mu);
    waiters.push_back(waiter);
  }
  waiter->timer->async_wait([waiter](boost::system::error_code) { waiter->attempt(true); });
  // An append between the first attempt and registering would otherwise wait out max_wait.
  waiter->attempt(false);
}

void Broker::Impl::ListOffsets(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseListOffsetsRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  Writer w;
  if (v >= 2) w.Int32(0);
  w.ArrayCount(static_cast<int32_t>(parsed->topics.size()));
  for (auto& t : parsed->topics) {
    w.String(t.name);
    w.ArrayCount(static_cast<int32_t>(t.partitions.size()));
    for (auto& p : t.partitions) {
      int16_t error = kerr::kNone;
      int64_t offset = -1, ts = -1;
      bool denied = !Permit(req, AclOp::kDescribe, ResourceType::kTopic, t.name);
      auto log = denied ? nullptr : Find(t.name, p.index);
      if (v < 1) {
        error = kerr::kUnsupportedVersion;
      } else if (denied) {
        error = kErrTopicAuthorizationFailed;
      } else if (!log) {
        error = kerr::kUnknownTopicOrPartition;
      } else if (p.timestamp == -1) {
        offset = log->high_watermark();
      } else if (p.timestamp == -2) {
        offset = log->log_start_offset();
      } else {
        offset = log->OffsetForTime(p.timestamp);
        if (offset >= 0) ts = p.timestamp;
      }
      w.Int32(p.index);
      w.Int16(error);
      if (v == 0) {
        w.ArrayCount(0);
      } else {
        w.Int64(ts);
        w.Int64(offset);
      }
    }
  }
  respond(Reply::Send(std::move(w.str())));
}

void Broker::Impl::CreateTopics(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseCreateTopicsRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  Writer w;
  if (v >= 2) w.Int32(0);
  w.ArrayCount(static_cast<int32_t>(parsed->topics.size()));
  for (auto& t : parsed->topics) {
    int16_t error = kerr::kNone;
    std::string message;
    int32_t n = t.num_partitions == -1 ? opts.default_partitions : t.num_partitions;
    if (!Permit(req, AclOp::kCreate, ResourceType::kCluster, "") &&
        !Permit(req, AclOp::kCreate, ResourceType::kTopic, t.name)) {
      error = kErrTopicAuthorizationFailed;
      message = "not authorised to create this topic";
    } else if (!ValidTopicName(t.name)) {
      error = kerr::kInvalidTopic;
      message = "topic names are 1-249 characters of [a-zA-Z0-9._-]";
    } else if (t.has_assignments) {
      error = kerr::kInvalidRequest;
      message = "manual replica assignment is not supported";
    } else if (t.replication_factor != -1 && t.replication_factor != 1) {
      error = kerr::kInvalidReplicationFactor;
      message = "this broker keeps one copy";
    } else if (n <= 0 || n > 10000) {
      error = kerr::kInvalidPartitions;
      message = "partitions must be 1..10000";
    } else if (FindTopic(t.name)) {
      error = kerr::kTopicAlreadyExists;
      message = "topic exists";
    } else if (Deleting(t.name)) {
      error = kerr::kTopicAlreadyExists;  // as Kafka answers while a deleted topic's files remain
      message = MarkedForDeletion(t.name);
    } else if (!parsed->validate_only) {
      Status s = CreateTopic(std::string(t.name), n);
      if (!s.ok()) {
        bool exists =
            s.code() == Code::kAlreadyExists || (s.code() == Code::kUnavailable && Deleting(t.name));
        error = exists ? kerr::kTopicAlreadyExists : kerr::kKafkaStorageError;
        message = s.message();
      }
    }
    w.String(t.name);
    w.Int16(error);
    if (v >= 1)
      w.NullableString(error == kerr::kNone ? std::nullopt : std::optional<std::string_view>(message));
  }
  respond(Reply::Send(std::move(w.str())));
}

void Broker::Impl::DeleteTopics(const Request& req, Respond respond) {
  int16_t v = req.header.api_version;
  auto parsed = ParseDeleteTopicsRequest(req.header.body, v);
  if (!parsed.ok()) return respond(Reply::Close());
  std::vector<std::pair<std::string, int16_t>> answers;  // per name asked, in order
  std::vector<std::shared_ptr<Topic>> deleted;
  for (std::string_view name : parsed->names) {
    std::shared_ptr<Topic> t;
    bool may_delete = Permit(req, AclOp::kDelete, ResourceType::kTopic, name);
    if (may_delete) {
      std::unique_lock<std::shared_mutex> lock(topics_mu);
      auto it = topics.find(name);
      if (it != topics.end()) {
        t = it->second;
        topics.erase(it);
        deleting.emplace(name);
      }
    }
    int16_t error = !may_delete ? kErrTopicAuthorizationFailed
                    : t         ? kerr::kNone
                                : kerr::kUnknownTopicOrPartition;
    if (t) deleted.push_back(t);
    answers.emplace_back(std::string(name), error);
  }
  // The files go once the groups' offsets of these topics are gone (durably), then the name is free
  // again, then the answer. When the offsets could not be dropped the topics stay, files and all.
  auto finish = [this, v, deleted, answers = std::move(answers),
                 respond = std::move(respond)](Status offsets) mutable {
    if (!offsets.ok())
      log::Warn("streams", "offsets of deleted topics not removed; topics kept",
                {{"error", offsets.ToString()}});
    std::set<std::string> failed;
    for (const auto& t : deleted) {
      if (!offsets.ok()) {
        std::unique_lock<std::shared_mutex> lock(topics_mu);
        topics[t->name] = t;
        deleting.erase(t->name);
        failed.insert(t->name);
        continue;
      }
      for (auto& p : t->partitions) {
        std::error_code ec;
        fs::remove_all(p->dir(), ec);
        if (ec) log::Warn("streams", "delete partition", {{"dir", p->dir()}, {"error", ec.message()}});
        // Close the log only after syncs already queued for it have called back (they run in order).
        syncer->Request(nullptr, [keep = p](Status) {});
      }
      {
        std::unique_lock<std::shared_mutex> lock(topics_mu);
        deleting.erase(t->name);
      }
      log::Info("streams", "topic deleted", {{"topic", t->name}});
    }
    Writer w;
    if (v >= 1) w.Int32(0);
    w.ArrayCount(static_cast<int32_t>(answers.size()));
    for (auto& [name, error] : answers) {
      w.String(name);
      w.Int16(error == kerr::kNone && failed.count(name) ? kerr::kKafkaStorageError : error);
    }
    respond(Reply::Send(std::move(w.str())));
  };
  if (deleted.empty() || !topics_deleted) return finish(OkStatus());
  std::vector<std::string> names;
  for (const auto& t : deleted) names.push_back(t->name);
  // The hook calls back on another thread (the offsets' sync thread): the file work runs on ours.
  topics_deleted(std::move(names), [this, finish = std::move(finish)](Status s) mutable {
    asio::post(io, [finish = std::move(finish), s = std::move(s)]() mutable { finish(std::move(s)); });
  });
}

void Broker::Impl::InitProducerId(const Request& req, Respond respond) {
  auto parsed = ParseInitProducerIdRequest(req.header.body, req.header.api_version);
  if (!parsed.ok()) return respond(Reply::Close());
  Writer w;
  w.Int32(0);
  if (!parsed->transactional_id && !Permit(req, AclOp::kIdempotentWrite, ResourceType::kCluster, "")) {
    w.Int16(kErrClusterAuthorizationFailed);
    w.Int64(-1);
    w.Int16(-1);
  } else if (parsed->transactional_id) {
    w.Int16(kerr::kTransactionalIdAuthorizationFailed);
    w.Int64(-1);
    w.Int16(-1);
  } else {
    auto id = NextProducerId();
    w.Int16(id.ok() ? kerr::kNone : kerr::kKafkaStorageError);
    w.Int64(id.ok() ? *id : -1);
    w.Int16(id.ok() ? 0 : -1);
  }
  respond(Reply::Send(std::move(w.str())));
}

// ---------------------------------------------------------------------------------------------------

Broker::Broker(BrokerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Broker::~Broker() { Stop(); }
void Broker::RegisterApi(int16_t api_key, ApiSpec spec) { impl_->apis[api_key] = std::move(spec); }
void Broker::OnTopicsDeleted(TopicsDeletedHook hook) { impl_->topics_deleted = std::move(hook); }
Status Broker::Start() { return impl_->Start(); }
void Broker::Stop() {
  if (impl_) impl_->Stop();
}
uint16_t Broker::port() const { return impl_->bound_port; }
const BrokerOptions& Broker::options() const { return impl_->opts; }
Status Broker::CreateTopic(const std::string& name, int32_t partitions) {
  return impl_->CreateTopic(name, partitions);
}
std::shared_ptr<PartitionLog> Broker::Partition(const std::string& topic, int32_t partition) const {
  return impl_->Find(topic, partition);
}
std::vector<std::string> Broker::Topics() const {
  std::shared_lock<std::shared_mutex> lock(impl_->topics_mu);
  std::vector<std::string> out;
  for (auto& [n, t] : impl_->topics) out.push_back(n);
  return out;
}
uint64_t Broker::syncs() const { return impl_->syncer ? impl_->syncer->syncs() : 0; }
uint64_t Broker::sync_rounds() const { return impl_->syncer ? impl_->syncer->rounds() : 0; }
Syncer::Stats Broker::sync_stats() const { return impl_->syncer ? impl_->syncer->stats() : Syncer::Stats{}; }

}  // namespace govern::streams
