// Decode speed of the three intake formats for ~550-byte events (the size BENCHMARKS.md's telemetry
// targets use), in batches of 1000 like an OTLP exporter or an NDJSON client sends. items/s is events/s
// on one core. Event ids (SHA-256 per event) are measured separately. Run:
//   bash scripts/build release telemetry_decode_benchmark &&
//   build/release/src/services/telemetry/telemetry_decode_benchmark
#include <benchmark/benchmark.h>

#include <string>

#include "services/telemetry/ndjson.h"
#include "services/telemetry/otlp_json.h"
#include "services/telemetry/otlp_proto.h"
#include "services/telemetry/proto_writer.h"
#include "services/telemetry/record.h"
#include "services/telemetry/record_rows.h"
#include "services/telemetry/schema.h"

namespace govern::telemetry {
namespace {

constexpr int kBatch = 1000;
constexpr size_t kTargetBytes = 550;

// Realistic log content: repeating routes and methods, varying ids and numbers, a sentence of text.
struct Fields {
  std::string route, method, user, trace, span, text;
  int status, duration_ms;
};
Fields Make(int i, size_t text_len) {
  static const char* kRoutes[] = {"/v1/chat/completions", "/v1/embeddings", "/api/orders/{id}", "/healthz"};
  static const char* kMethods[] = {"POST", "GET", "PUT"};
  Fields f;
  f.route = kRoutes[i % 4];
  f.method = kMethods[i % 3];
  f.user = "user-" + std::to_string(100000 + i * 7919 % 90000);
  char hex[33];
  snprintf(hex, sizeof hex, "%016llx%016llx", 0x5b8efff798038103ULL + i, 0xd269b633813fc60cULL * (i + 1));
  f.trace = hex;
  f.span = f.trace.substr(8, 16);
  f.status = i % 17 == 0 ? 500 : 200;
  f.duration_ms = 3 + i * 37 % 900;
  std::string words = "request completed for tenant workspace after upstream call with cached prompt tokens ";
  while (f.text.size() < text_len) f.text += words;
  f.text.resize(text_len);
  return f;
}

std::string Proto(size_t text_len) {
  using namespace protowire;  // NOLINT(google-build-using-namespace)
  std::string records;
  for (int i = 0; i < kBatch; ++i) {
    Fields f = Make(i, text_len);
    std::string trace, span;
    for (size_t j = 0; j < 32; j += 2)
      trace.push_back(static_cast<char>(std::stoi(f.trace.substr(j, 2), nullptr, 16)));
    span = trace.substr(4, 8);
    records += LenField(2, Fixed64Field(1, 1795986592185000000ULL + i) +
                               Fixed64Field(11, 1795986592185000000ULL + i) + VarintField(2, 9) +
                               LenField(3, "INFO") + LenField(5, StringValue(f.text)) +
                               LenField(6, KeyValue("http.route", StringValue(f.route))) +
                               LenField(6, KeyValue("http.method", StringValue(f.method))) +
                               LenField(6, KeyValue("http.status_code", VarintField(3, f.status))) +
                               LenField(6, KeyValue("duration_ms", VarintField(3, f.duration_ms))) +
                               LenField(6, KeyValue("user.id", StringValue(f.user))) + Fixed32Field(8, 1) +
                               LenField(9, trace) + LenField(10, span));
  }
  return OneScopeRequest("gateway", records);
}

std::string Json(size_t text_len) {
  std::string out =
      R"({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"gateway"}}]},)"
      R"("scopeLogs":[{"scope":{"name":"scope"},"logRecords":[)";
  for (int i = 0; i < kBatch; ++i) {
    Fields f = Make(i, text_len);
    const std::string t = std::to_string(1795986592185000000LL + i);
    if (i > 0) out += ",";
    out += R"({"timeUnixNano":")" + t + R"(","observedTimeUnixNano":")" + t +
           R"(","severityNumber":9,"severityText":"INFO","body":{"stringValue":")" + f.text +
           R"("},"attributes":[{"key":"http.route","value":{"stringValue":")" + f.route +
           R"("}},{"key":"http.method","value":{"stringValue":")" + f.method +
           R"("}},{"key":"http.status_code","value":{"intValue":")" + std::to_string(f.status) +
           R"("}},{"key":"duration_ms","value":{"intValue":")" + std::to_string(f.duration_ms) +
           R"("}},{"key":"user.id","value":{"stringValue":")" + f.user +
           R"("}}],"droppedAttributesCount":0,"flags":1,"traceId":")" + f.trace + R"(","spanId":")" + f.span +
           R"("})";
  }
  return out + "]}]}]}";
}

std::string Ndjson(size_t text_len) {
  std::string out;
  for (int i = 0; i < kBatch; ++i) {
    Fields f = Make(i, text_len);
    out += R"({"time":)" + std::to_string(1795986592185000000LL + i) +
           R"(,"type":"gateway.request","severity":"info","body":")" + f.text +
           R"(","attributes":{"http.route":")" + f.route + R"(","http.method":")" + f.method +
           R"(","http.status_code":)" + std::to_string(f.status) + R"(,"duration_ms":)" +
           std::to_string(f.duration_ms) + R"(,"user.id":")" + f.user + R"(","trace_id":")" + f.trace +
           R"(","span_id":")" + f.span + "\"}}\n";
  }
  return out;
}

// Picks the body text length that makes the average encoded event kTargetBytes in this format.
std::string Sized(std::string (*make)(size_t)) {
  const size_t base = make(0).size();
  const size_t per_char = make(100).size() - base;  // bytes added by 100 characters of text
  const size_t want = kTargetBytes * kBatch;
  const size_t len = want > base ? (want - base) * 100 / per_char : 0;
  return make(len);
}

template <typename Decode>
void Run(benchmark::State& state, const std::string& body, Decode decode) {
  for (auto _ : state) {
    auto r = decode(body);
    if (!r.ok() || r->events.size() != kBatch) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body.size()));
  state.counters["bytes_per_event"] = static_cast<double>(body.size()) / kBatch;
}

void BM_OtlpProto(benchmark::State& state) {
  static const std::string body = Sized(Proto);
  Run(state, body, [](std::string_view b) { return DecodeOtlpLogsProto(b, "org"); });
}
void BM_OtlpJson(benchmark::State& state) {
  static const std::string body = Sized(Json);
  Run(state, body, [](std::string_view b) { return DecodeOtlpLogsJson(b, "org"); });
}
void BM_Ndjson(benchmark::State& state) {
  static const std::string body = Sized(Ndjson);
  Run(state, body, [](std::string_view b) { return DecodeNdjson(b, "org"); });
}
void BM_AssignIds(benchmark::State& state) {
  static const auto events = DecodeOtlpLogsProto(Sized(Proto), "org").value().events;
  for (auto _ : state) {
    state.PauseTiming();
    auto copy = events;
    state.ResumeTiming();
    AssignMissingIds(copy);
    benchmark::DoNotOptimize(copy);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// Ingest's own work per stored event, from a WAL record of 1,000 events to binary COPY bytes (no
// database): the way ingest did it (DecodeRecord into Events, UnstorableReason, AppendEventFields) and
// the way it does now (CheckRecord when read, AppendRecordRows from the bytes when stored).
const std::string& IngestRecord() {
  static const std::string rec = [] {
    auto events = DecodeNdjson(Sized(Ndjson), "org").value().events;
    AssignMissingIds(events);
    std::string out;
    EncodeRecord(events, 1795986592185000000LL, &out);
    return out;
  }();
  return rec;
}
void BM_IngestRowsViaEvents(benchmark::State& state) {
  const std::string& rec = IngestRecord();
  db::CopyEncoder enc;
  std::string attrs, res, sink;
  for (auto _ : state) {
    auto batch = DecodeRecord(rec);
    if (!batch.ok()) state.SkipWithError("decode failed");
    for (const Event& e : batch->events) {
      if (e.id.empty() || !UnstorableReason(e).empty()) state.SkipWithError("unstorable");
    }
    for (const Event& e : batch->events)
      AppendEventFields(enc.Row(kEventColumnCount), e, batch->received_unix_nanos, &attrs, &res);
    enc.Take(&sink);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
void BM_IngestRowsFromBytes(benchmark::State& state) {
  const std::string& rec = IngestRecord();
  db::CopyEncoder enc;
  RowScratch scratch;
  RecordInfo info;
  std::string sink;
  for (auto _ : state) {
    if (!CheckRecord(rec, &info).ok()) state.SkipWithError("check failed");
    std::string kept(rec);  // ingest keeps a copy of each record until it is stored
    AppendRecordRows(kept, &scratch, [&]() -> db::CopyEncoder& { return enc.Row(kEventColumnCount); });
    enc.Take(&sink);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

BENCHMARK(BM_OtlpProto);
BENCHMARK(BM_OtlpJson);
BENCHMARK(BM_Ndjson);
BENCHMARK(BM_AssignIds);
BENCHMARK(BM_IngestRowsViaEvents);
BENCHMARK(BM_IngestRowsFromBytes);

}  // namespace
}  // namespace govern::telemetry

BENCHMARK_MAIN();
