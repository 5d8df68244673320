// The Kafka protocol error codes this broker answers with (the numbers are the protocol's).
#pragma once

#include <cstdint>

namespace govern::streams::kerr {

inline constexpr int16_t kNone = 0;
inline constexpr int16_t kOffsetOutOfRange = 1;
inline constexpr int16_t kCorruptMessage = 2;
inline constexpr int16_t kUnknownTopicOrPartition = 3;
inline constexpr int16_t kInvalidFetchSize = 4;
inline constexpr int16_t kLeaderNotAvailable = 5;
inline constexpr int16_t kNotLeaderOrFollower = 6;
inline constexpr int16_t kRequestTimedOut = 7;
inline constexpr int16_t kMessageTooLarge = 10;
inline constexpr int16_t kInvalidTopic = 17;
inline constexpr int16_t kRecordListTooLarge = 18;
inline constexpr int16_t kInvalidRequiredAcks = 21;
inline constexpr int16_t kUnsupportedForMessageFormat = 43;
inline constexpr int16_t kUnsupportedVersion = 35;
inline constexpr int16_t kTopicAlreadyExists = 36;
inline constexpr int16_t kInvalidPartitions = 37;
inline constexpr int16_t kInvalidReplicationFactor = 38;
inline constexpr int16_t kInvalidRequest = 42;
inline constexpr int16_t kOutOfOrderSequenceNumber = 45;
inline constexpr int16_t kInvalidProducerEpoch = 47;
inline constexpr int16_t kKafkaStorageError = 56;
inline constexpr int16_t kUnknownProducerId = 59;
inline constexpr int16_t kTransactionalIdAuthorizationFailed = 53;
inline constexpr int16_t kUnknownServerError = -1;

}  // namespace govern::streams::kerr
