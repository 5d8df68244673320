#include "loadgen.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <vector>

#include "generator.h"
#include "http_conn.h"
#include "report.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_proto.h"

namespace govern::telemetry::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Shared {
  const Options* options;
  std::mutex mu;  // guards acked file, latencies, summary counters below
  FILE* acked = nullptr;
  bench::LatencyRecorder latency;
  Summary summary;
  std::atomic<int64_t> acked_events{0};
  std::atomic<bool> stop{false};
  Clock::time_point deadline;
};

bool Stopping(Shared& s) { return s.stop.load(std::memory_order_relaxed) || Clock::now() >= s.deadline; }

void SleepUnlessStopping(Shared& s, std::chrono::nanoseconds d) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until && !Stopping(s))
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(until - Clock::now(), std::chrono::milliseconds(20)));
}

void Worker(Shared& s, int index) {
  const Options& o = *s.options;
  benchgen::GeneratorOptions go;
  go.seed = o.seed;
  go.stream = static_cast<uint32_t>(index);
  go.org = o.org;
  go.start_unix_nanos = o.start_unix_nanos != 0 ? o.start_unix_nanos : NowNanos();
  go.events_per_second = (o.rate > 0 ? o.rate : 100000) / o.connections;
  benchgen::Generator gen(go);
  HttpConnection conn(o.host, o.port);
  const bool otlp = o.format == Format::kOtlpProto;
  std::string head = std::string("POST ") + (otlp ? "/v1/logs" : "/v1/events") +
                     " HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) + "\r\nContent-Type: " +
                     (!o.content_type.empty() ? o.content_type
                                              : (otlp ? "application/x-protobuf" : "application/x-ndjson")) +
                     "\r\n";
  if (!o.key.empty()) head += "Authorization: Bearer " + o.key + "\r\n";
  const double interval_s = o.rate > 0 ? o.batch * o.connections / o.rate : 0;
  auto next_send = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(interval_s * index / o.connections));
  std::vector<Event> events(static_cast<size_t>(o.batch));
  bench::LatencyRecorder latency;
  while (!Stopping(s)) {
    if (o.max_events > 0 && s.acked_events.load() >= o.max_events) break;
    if (interval_s > 0) {
      if (Clock::now() < next_send) SleepUnlessStopping(s, next_send - Clock::now());
      next_send += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s));
      if (Stopping(s)) break;
    }
    for (Event& e : events) gen.Next(&e);
    const std::string body = otlp ? benchgen::RenderOtlpProto(events) : benchgen::RenderNdjson(events);
    // With an acked file: the ids the intake will assign (decode our own body with the intake's decoder
    // and run AssignMissingIds) and the content hashes. That costs as much CPU as the intake's own work,
    // so without an acked file (a pure throughput run) it is skipped.
    const bool record = s.acked != nullptr;
    DecodedBatch decoded;
    std::string lines;
    if (record) {
      auto d = otlp ? DecodeOtlpLogsProto(body, o.org) : DecodeNdjson(body, o.org);
      if (!d.ok()) {
        std::lock_guard lock(s.mu);
        if (s.summary.first_failure.empty()) s.summary.first_failure = "own batch: " + d.status().message();
        s.stop = true;
        break;
      }
      decoded = std::move(*d);
      AssignMissingIds(decoded.events);
      lines.reserve(decoded.events.size() * 130);
      for (const Event& e : decoded.events) {
        lines += e.id;
        lines += '\t';
        lines += benchgen::ContentHash(e);
        lines += '\n';
      }
    }
    const int64_t count = static_cast<int64_t>(events.size());
    bool acked = false;
    while (!Stopping(s)) {
      const auto t0 = Clock::now();
      const int64_t sent_at = NowNanos();
      auto reply = conn.Post(head, body);
      // /v1/events answers {"accepted": n, "ids": [...]}: the ids the server gave are the truth; count
      // any that differ from ours (they should not) and write the server's.
      int64_t mismatched = 0;
      std::string server_lines;
      if (record && reply.ok() && reply->status / 100 == 2 && !otlp) {
        nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("ids") && j["ids"].is_array() &&
            j["ids"].size() == decoded.events.size()) {
          for (size_t k = 0; k < decoded.events.size(); ++k) {
            const auto& id = j["ids"][k];
            const std::string given = id.is_string() ? id.get<std::string>() : std::string();
            if (given != decoded.events[k].id) ++mismatched;
            server_lines += given + '\t' + benchgen::ContentHash(decoded.events[k]) + '\n';
          }
        }
      }
      std::lock_guard lock(s.mu);
      ++s.summary.sent_batches;
      if (s.summary.first_send_unix_nanos == 0 || sent_at < s.summary.first_send_unix_nanos)
        s.summary.first_send_unix_nanos = sent_at;
      if (!reply.ok()) {
        ++s.summary.connection_errors;
        s.mu.unlock();
        SleepUnlessStopping(s, std::chrono::milliseconds(100));
        s.mu.lock();
        continue;
      }
      if (reply->status >= 200 && reply->status < 300) {
        const std::string& out = mismatched > 0 ? server_lines : lines;
        if (s.acked != nullptr) {
          std::fwrite(out.data(), 1, out.size(), s.acked);
          std::fflush(s.acked);
        }
        s.summary.id_mismatches += mismatched;
        ++s.summary.acked_batches;
        s.summary.acked_events += count;
        s.acked_events.fetch_add(count);
        s.summary.last_ack_unix_nanos = std::max(s.summary.last_ack_unix_nanos, NowNanos());
        latency.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
        acked = true;
        break;
      }
      double wait_s = 1;
      if (reply->status == 429 || reply->status == 503) {
        ++s.summary.refused;
        if (reply->retry_after_s >= 0) wait_s = reply->retry_after_s;
      } else if (reply->status >= 500) {
        ++s.summary.server_errors;
        if (s.summary.first_failure.empty())
          s.summary.first_failure = reply->status_line + ": " + reply->body;
      } else {
        ++s.summary.failed_batches;
        if (s.summary.first_failure.empty())
          s.summary.first_failure = reply->status_line + ": " + reply->body;
        break;
      }
      s.mu.unlock();
      SleepUnlessStopping(
          s, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(wait_s)));
      s.mu.lock();
    }
    if (!acked) {
      std::lock_guard lock(s.mu);
      if (Stopping(s)) ++s.summary.abandoned_batches;
    }
  }
  std::lock_guard lock(s.mu);
  s.latency.Merge(latency);
}

}  // namespace

std::string Summary::Json() const {
  nlohmann::json j = {{"sent_batches", sent_batches},
                      {"acked_batches", acked_batches},
                      {"acked_events", acked_events},
                      {"refused", refused},
                      {"server_errors", server_errors},
                      {"failed_batches", failed_batches},
                      {"connection_errors", connection_errors},
                      {"abandoned_batches", abandoned_batches},
                      {"id_mismatches", id_mismatches},
                      {"cpu_seconds", cpu_seconds},
                      {"elapsed_s", elapsed_s},
                      {"acked_rate", acked_rate()},
                      {"latency_p50_ms", latency_p50_ms},
                      {"latency_p90_ms", latency_p90_ms},
                      {"latency_p99_ms", latency_p99_ms},
                      {"latency_max_ms", latency_max_ms},
                      {"first_send_unix_nanos", first_send_unix_nanos},
                      {"last_ack_unix_nanos", last_ack_unix_nanos},
                      {"first_failure", first_failure}};
  return j.dump();
}

Status ParseUrl(const std::string& url, Options* options) {
  constexpr std::string_view kScheme = "http://";
  if (url.compare(0, kScheme.size(), kScheme) != 0) return InvalidArgument("url: want http://HOST:PORT");
  std::string rest = url.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || rest.find('/') != std::string::npos)
    return InvalidArgument("url: want http://HOST:PORT");
  options->host = rest.substr(0, colon);
  if (options->host == "localhost") options->host = "127.0.0.1";
  const int port = std::atoi(rest.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return InvalidArgument("url: bad port");
  options->port = port;
  return Status::Ok();
}

Result<Summary> Run(const Options& options) {
  if (options.org.empty()) return InvalidArgument("org is required (the ingest key's organisation)");
  if (options.connections < 1 || options.batch < 1) return InvalidArgument("connections and batch >= 1");
  Shared s;
  s.options = &options;
  if (!options.acked_path.empty()) {
    s.acked = std::fopen(options.acked_path.c_str(), "w");
    if (s.acked == nullptr)
      return Unavailable("acked file " + options.acked_path + ": " + std::strerror(errno));
  }
  const auto t0 = Clock::now();
  s.deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_s));
  std::vector<std::thread> threads;
  for (int i = 0; i < options.connections; ++i) threads.emplace_back([&s, i] { Worker(s, i); });
  for (auto& t : threads) t.join();
  if (s.acked != nullptr) std::fclose(s.acked);
  Summary out = s.summary;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  if (out.first_send_unix_nanos != 0 && out.last_ack_unix_nanos != 0)
    out.elapsed_s = static_cast<double>(out.last_ack_unix_nanos - out.first_send_unix_nanos) / 1e9;
  out.latency_p50_ms = static_cast<double>(s.latency.Percentile(50)) / 1e6;
  out.latency_p90_ms = static_cast<double>(s.latency.Percentile(90)) / 1e6;
  out.latency_p99_ms = static_cast<double>(s.latency.Percentile(99)) / 1e6;
  out.latency_max_ms = static_cast<double>(s.latency.Percentile(100)) / 1e6;
  return out;
}

}  // namespace govern::telemetry::loadgen
