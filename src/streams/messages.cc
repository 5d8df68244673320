// Kafka request decoding (see messages.h).
#include "streams/messages.h"

#include "streams/wire.h"

namespace govern::streams {

namespace {

Status Malformed(const char* what) { return InvalidArgument(std::string("malformed ") + what + " request"); }

// Reads an int32-counted array of topics, each a name and an int32-counted array of partitions read by
// `part`. Smallest encodings bound the counts: a topic is at least 6 bytes, a partition `min_part`.
template <typename Topic, typename ReadPart>
bool ReadTopics(Reader& r, std::vector<Topic>& out, size_t min_part, ReadPart part) {
  int32_t n = r.ArrayCount(6);
  for (int32_t i = 0; r.ok() && i < n; i++) {
    Topic t;
    t.name = r.String();
    int32_t np = r.ArrayCount(min_part);
    for (int32_t j = 0; r.ok() && j < np; j++) t.partitions.push_back(part(r));
    out.push_back(std::move(t));
  }
  return r.ok();
}

}  // namespace

Result<RequestHeader> PeekRequestHeader(std::string_view frame) {
  Reader r(frame);
  RequestHeader h;
  h.api_key = r.Int16();
  h.api_version = r.Int16();
  h.correlation_id = r.Int32();
  if (!r.ok()) return InvalidArgument("request shorter than its header");
  return h;
}

Result<RequestHeader> ParseRequestHeader(std::string_view frame, bool flexible) {
  Reader r(frame);
  RequestHeader h;
  h.api_key = r.Int16();
  h.api_version = r.Int16();
  h.correlation_id = r.Int32();
  h.client_id = r.NullableString();
  if (flexible) r.SkipTaggedFields();
  if (!r.ok()) return InvalidArgument("malformed request header");
  h.body = frame.substr(r.position());
  return h;
}

Result<ProduceRequest> ParseProduceRequest(std::string_view body, int16_t version) {
  Reader r(body);
  ProduceRequest req;
  if (version >= 3) req.transactional_id = r.NullableString();
  req.acks = r.Int16();
  req.timeout_ms = r.Int32();
  ReadTopics(r, req.topics, 8, [](Reader& rr) {
    ProduceRequest::Partition p;
    p.index = rr.Int32();
    p.records = rr.NullableBytes();
    return p;
  });
  if (!r.ok() || r.remaining() != 0) return Malformed("produce");
  return req;
}

Result<FetchRequest> ParseFetchRequest(std::string_view body, int16_t version) {
  Reader r(body);
  FetchRequest req;
  req.replica_id = r.Int32();
  req.max_wait_ms = r.Int32();
  req.min_bytes = r.Int32();
  if (version >= 3) req.max_bytes = r.Int32();
  if (version >= 4) req.isolation_level = r.Int8();
  if (version >= 7) {
    req.session_id = r.Int32();
    req.session_epoch = r.Int32();
  }
  ReadTopics(r, req.topics, 16, [version](Reader& rr) {
    FetchRequest::Partition p;
    p.index = rr.Int32();
    if (version >= 9) p.current_leader_epoch = rr.Int32();
    p.fetch_offset = rr.Int64();
    if (version >= 5) p.log_start_offset = rr.Int64();
    p.max_bytes = rr.Int32();
    return p;
  });
  if (version >= 7) {  // forgotten topics: only meaningful with fetch sessions, which are not kept
    int32_t n = r.ArrayCount(6);
    for (int32_t i = 0; r.ok() && i < n; i++) {
      r.String();
      int32_t np = r.ArrayCount(4);
      for (int32_t j = 0; r.ok() && j < np; j++) r.Int32();
    }
  }
  if (version >= 11) r.String();  // rack id
  if (!r.ok() || r.remaining() != 0) return Malformed("fetch");
  return req;
}

Result<ListOffsetsRequest> ParseListOffsetsRequest(std::string_view body, int16_t version) {
  Reader r(body);
  ListOffsetsRequest req;
  req.replica_id = r.Int32();
  if (version >= 2) req.isolation_level = r.Int8();
  ReadTopics(r, req.topics, 12, [version](Reader& rr) {
    ListOffsetsRequest::Partition p;
    p.index = rr.Int32();
    p.timestamp = rr.Int64();
    if (version == 0) rr.Int32();  // max_num_offsets
    return p;
  });
  if (!r.ok() || r.remaining() != 0) return Malformed("list offsets");
  return req;
}

Result<MetadataRequest> ParseMetadataRequest(std::string_view body, int16_t version) {
  Reader r(body);
  MetadataRequest req;
  int32_t n = r.ArrayCount(2);
  if (n >= 0 && !(version == 0 && n == 0)) {
    req.topics.emplace();
    for (int32_t i = 0; r.ok() && i < n; i++) req.topics->push_back(r.String());
  }
  if (version >= 4) req.allow_auto_topic_creation = r.Bool();
  if (!r.ok() || r.remaining() != 0) return Malformed("metadata");
  return req;
}

Result<CreateTopicsRequest> ParseCreateTopicsRequest(std::string_view body, int16_t version) {
  Reader r(body);
  CreateTopicsRequest req;
  int32_t n = r.ArrayCount(14);
  for (int32_t i = 0; r.ok() && i < n; i++) {
    CreateTopicsRequest::Topic t;
    t.name = r.String();
    t.num_partitions = r.Int32();
    t.replication_factor = r.Int16();
    int32_t na = r.ArrayCount(8);
    t.has_assignments = na > 0;
    for (int32_t j = 0; r.ok() && j < na; j++) {
      r.Int32();
      int32_t nb = r.ArrayCount(4);
      for (int32_t k = 0; r.ok() && k < nb; k++) r.Int32();
    }
    int32_t nc = r.ArrayCount(4);
    for (int32_t j = 0; r.ok() && j < nc; j++) {
      std::string_view key = r.String();
      t.configs.emplace_back(key, r.NullableString());
    }
    req.topics.push_back(std::move(t));
  }
  req.timeout_ms = r.Int32();
  if (version >= 1) req.validate_only = r.Bool();
  if (!r.ok() || r.remaining() != 0) return Malformed("create topics");
  return req;
}

Result<DeleteTopicsRequest> ParseDeleteTopicsRequest(std::string_view body, int16_t) {
  Reader r(body);
  DeleteTopicsRequest req;
  int32_t n = r.ArrayCount(2);
  for (int32_t i = 0; r.ok() && i < n; i++) req.names.push_back(r.String());
  req.timeout_ms = r.Int32();
  if (!r.ok() || r.remaining() != 0) return Malformed("delete topics");
  return req;
}

Result<InitProducerIdRequest> ParseInitProducerIdRequest(std::string_view body, int16_t) {
  Reader r(body);
  InitProducerIdRequest req;
  req.transactional_id = r.NullableString();
  req.transaction_timeout_ms = r.Int32();
  if (!r.ok() || r.remaining() != 0) return Malformed("init producer id");
  return req;
}

Result<ApiVersionsRequest> ParseApiVersionsRequest(std::string_view body, int16_t version) {
  ApiVersionsRequest req;
  if (version < 3) return req;  // empty body (extra bytes from a newer client are ignored)
  Reader r(body);
  req.client_software_name = r.CompactString();
  req.client_software_version = r.CompactString();
  r.SkipTaggedFields();
  if (!r.ok()) return Malformed("api versions");
  return req;
}

}  // namespace govern::streams
