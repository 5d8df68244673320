// Authorizer: per-resource access control lists for the broker, in Kafka's model. A rule allows or denies
// one principal ("User:alice", or "User:*" for everyone) one operation on a topic, a consumer group or
// the cluster, named literally or by prefix ("orders-*") or "*" for every name.
//
// Decisions follow Kafka's AclAuthorizer: a matching deny rule wins over any allow; with no matching
// allow the answer is no (there is no "allow everyone when no ACL is found"); All matches every
// operation; Describe is implied by Read, Write, Delete and Alter; IdempotentWrite on the cluster is
// implied by Write on any topic (as since Kafka 2.8). Super users are allowed everything.
//
// Rules come from text, one per line (a '#' starts a comment):
//   allow|deny <principal> <operation> <resource-type>:<name>
//   e.g.  allow User:alice write topic:orders
//         allow User:* read topic:public-*
//         deny  User:bob describe topic:*
//         allow User:admin all cluster:*
//         allow User:alice read group:app-*
// Operations: read write create delete describe alter idempotent_write all.
//
// Immutable after construction: thread-safe, share by shared_ptr.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::streams {

enum class AclOp : uint8_t { kRead, kWrite, kCreate, kDelete, kDescribe, kAlter, kIdempotentWrite, kAll };
enum class ResourceType : uint8_t { kTopic, kGroup, kCluster };

std::string_view AclOpName(AclOp op);
Result<AclOp> ParseAclOp(std::string_view name);

struct AclRule {
  bool allow = true;
  std::string principal;  // "User:alice" or "User:*"
  AclOp op = AclOp::kRead;
  ResourceType type = ResourceType::kTopic;
  std::string name;     // the literal name or prefix (without '*'); empty with prefix: every name
  bool prefix = false;  // name ended in '*'
};

class Authorizer {
 public:
  Authorizer(std::vector<AclRule> rules, std::vector<std::string> super_users);
  // Parses the text format above; InvalidArgument naming the line of the first bad rule.
  static Result<std::shared_ptr<const Authorizer>> Parse(std::string_view text,
                                                         std::vector<std::string> super_users = {});
  static Result<std::shared_ptr<const Authorizer>> LoadFile(const std::string& path,
                                                            std::vector<std::string> super_users = {});

  // Whether `principal` ("User:<name>") may do `op` on the resource. For the cluster the name is
  // ignored. This is the call the request handlers (produce, fetch, groups, admin) make.
  bool Allowed(std::string_view principal, AclOp op, ResourceType type, std::string_view name) const;

  size_t size() const { return rules_.size(); }

 private:
  bool Matches(const AclRule& r, std::string_view principal, ResourceType type, std::string_view name) const;
  std::vector<AclRule> rules_;
  std::vector<std::string> super_users_;
};

}  // namespace govern::streams
