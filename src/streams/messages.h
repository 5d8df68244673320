// Kafka request decoding for the APIs the broker implements: the request header and one parser per API,
// each taking every version the broker advertises (low versions parse too, so the broker can answer them
// with UNSUPPORTED_VERSION in their own format). Parsers return views into the frame: the frame must
// outlive the parsed request. InvalidArgument on a malformed or truncated body. Pure: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::streams {

namespace api {
inline constexpr int16_t kProduce = 0;
inline constexpr int16_t kFetch = 1;
inline constexpr int16_t kListOffsets = 2;
inline constexpr int16_t kMetadata = 3;
inline constexpr int16_t kApiVersions = 18;
inline constexpr int16_t kCreateTopics = 19;
inline constexpr int16_t kDeleteTopics = 20;
inline constexpr int16_t kInitProducerId = 22;
}  // namespace api

struct RequestHeader {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string_view> client_id;
  std::string_view body;  // the rest of the frame after the header
};

// Parses header v1 (key, version, correlation id, nullable client id) and, when `flexible` (header v2),
// the tagged fields after it. A frame too short for the fixed part is InvalidArgument.
Result<RequestHeader> ParseRequestHeader(std::string_view frame, bool flexible);
// Only the fixed part (key, version, correlation id), for answering requests the broker cannot parse.
Result<RequestHeader> PeekRequestHeader(std::string_view frame);

struct ProduceRequest {
  std::optional<std::string_view> transactional_id;
  int16_t acks = 0;
  int32_t timeout_ms = 0;
  struct Partition {
    int32_t index = 0;
    std::optional<std::string_view> records;
  };
  struct Topic {
    std::string_view name;
    std::vector<Partition> partitions;
  };
  std::vector<Topic> topics;
};
Result<ProduceRequest> ParseProduceRequest(std::string_view body, int16_t version);

struct FetchRequest {
  int32_t replica_id = -1;
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = INT32_MAX;
  int8_t isolation_level = 0;
  int32_t session_id = 0;
  int32_t session_epoch = -1;
  struct Partition {
    int32_t index = 0;
    int32_t current_leader_epoch = -1;
    int64_t fetch_offset = 0;
    int64_t log_start_offset = -1;
    int32_t max_bytes = 0;
  };
  struct Topic {
    std::string_view name;
    std::vector<Partition> partitions;
  };
  std::vector<Topic> topics;
};
Result<FetchRequest> ParseFetchRequest(std::string_view body, int16_t version);

struct ListOffsetsRequest {
  int32_t replica_id = -1;
  int8_t isolation_level = 0;
  struct Partition {
    int32_t index = 0;
    int64_t timestamp = 0;
  };
  struct Topic {
    std::string_view name;
    std::vector<Partition> partitions;
  };
  std::vector<Topic> topics;
};
Result<ListOffsetsRequest> ParseListOffsetsRequest(std::string_view body, int16_t version);

struct MetadataRequest {
  std::optional<std::vector<std::string_view>> topics;  // nullopt: every topic
  bool allow_auto_topic_creation = true;
};
Result<MetadataRequest> ParseMetadataRequest(std::string_view body, int16_t version);

struct CreateTopicsRequest {
  struct Topic {
    std::string_view name;
    int32_t num_partitions = -1;
    int16_t replication_factor = -1;
    bool has_assignments = false;
    std::vector<std::pair<std::string_view, std::optional<std::string_view>>> configs;
  };
  std::vector<Topic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;
};
Result<CreateTopicsRequest> ParseCreateTopicsRequest(std::string_view body, int16_t version);

struct DeleteTopicsRequest {
  std::vector<std::string_view> names;
  int32_t timeout_ms = 0;
};
Result<DeleteTopicsRequest> ParseDeleteTopicsRequest(std::string_view body, int16_t version);

struct InitProducerIdRequest {
  std::optional<std::string_view> transactional_id;
  int32_t transaction_timeout_ms = 0;
};
Result<InitProducerIdRequest> ParseInitProducerIdRequest(std::string_view body, int16_t version);

// ApiVersions v3+ carries the client's software name and version; lower versions have an empty body.
struct ApiVersionsRequest {
  std::string_view client_software_name;
  std::string_view client_software_version;
};
Result<ApiVersionsRequest> ParseApiVersionsRequest(std::string_view body, int16_t version);

}  // namespace govern::streams
