// Fuzz target: the request header and every request body decoder the broker uses, at every version.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streams/group_api.h"
#include "streams/messages.h"

using namespace govern::streams;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view frame(reinterpret_cast<const char*>(data), size);
  auto peek = PeekRequestHeader(frame);
  if (!peek.ok()) return 0;
  auto h = ParseRequestHeader(frame, peek->api_key == api::kApiVersions && peek->api_version >= 3);
  if (!h.ok()) return 0;
  int16_t v = static_cast<int16_t>(h->api_version & 15);
  switch (h->api_key) {
    case api::kProduce:
      (void)ParseProduceRequest(h->body, v);
      break;
    case api::kFetch:
      (void)ParseFetchRequest(h->body, v);
      break;
    case api::kListOffsets:
      (void)ParseListOffsetsRequest(h->body, v);
      break;
    case api::kMetadata:
      (void)ParseMetadataRequest(h->body, v);
      break;
    case api::kApiVersions:
      (void)ParseApiVersionsRequest(h->body, v);
      break;
    case api::kCreateTopics:
      (void)ParseCreateTopicsRequest(h->body, v);
      break;
    case api::kDeleteTopics:
      (void)ParseDeleteTopicsRequest(h->body, v);
      break;
    case api::kInitProducerId:
      (void)ParseInitProducerIdRequest(h->body, v);
      break;
    case api::kFindCoordinator:
      (void)groupwire::DecodeFindCoordinator(h->body, v);
      break;
    case api::kJoinGroup:
      (void)groupwire::DecodeJoinGroup(h->body, v);
      break;
    case api::kSyncGroup:
      (void)groupwire::DecodeSyncGroup(h->body, v);
      break;
    case api::kHeartbeat:
      (void)groupwire::DecodeHeartbeat(h->body, v);
      break;
    case api::kLeaveGroup:
      (void)groupwire::DecodeLeaveGroup(h->body, v);
      break;
    case api::kOffsetCommit:
      (void)groupwire::DecodeOffsetCommit(h->body, v);
      break;
    case api::kOffsetFetch:
      (void)groupwire::DecodeOffsetFetch(h->body, v);
      break;
    case api::kDescribeGroups:
      (void)groupwire::DecodeDescribeGroups(h->body, v);
      break;
    case api::kListGroups:
      (void)groupwire::DecodeListGroups(h->body, v);
      break;
    default:
      break;
  }
  return 0;
}
