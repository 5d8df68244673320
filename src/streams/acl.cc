// Authorizer (see acl.h).
#include "streams/acl.h"

#include <fstream>
#include <sstream>

namespace govern::streams {

namespace {
constexpr std::string_view kOpNames[] = {"read",     "write", "create",           "delete",
                                         "describe", "alter", "idempotent_write", "all"};

// Operations that, when allowed, also allow `asked` (Kafka's implication rules).
bool Implies(AclOp granted, AclOp asked) {
  if (granted == asked || granted == AclOp::kAll) return true;
  if (asked == AclOp::kDescribe)
    return granted == AclOp::kRead || granted == AclOp::kWrite || granted == AclOp::kDelete ||
           granted == AclOp::kAlter;
  return false;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') j++;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}
}  // namespace

std::string_view AclOpName(AclOp op) { return kOpNames[static_cast<size_t>(op)]; }

Result<AclOp> ParseAclOp(std::string_view name) {
  for (size_t i = 0; i < std::size(kOpNames); i++)
    if (kOpNames[i] == name) return static_cast<AclOp>(i);
  return InvalidArgument("unknown ACL operation \"" + std::string(name) + "\"");
}

Authorizer::Authorizer(std::vector<AclRule> rules, std::vector<std::string> super_users)
    : rules_(std::move(rules)), super_users_(std::move(super_users)) {}

Result<std::shared_ptr<const Authorizer>> Authorizer::Parse(std::string_view text,
                                                            std::vector<std::string> super_users) {
  std::vector<AclRule> rules;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line_no++;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto f = Fields(line);
    if (f.empty()) continue;
    auto bad = [&](std::string why) {
      return InvalidArgument("acl line " + std::to_string(line_no) + ": " + why);
    };
    if (f.size() != 4) return bad("want: allow|deny <principal> <operation> <type>:<name>");
    AclRule r;
    if (f[0] == "allow") {
      r.allow = true;
    } else if (f[0] == "deny") {
      r.allow = false;
    } else {
      return bad("first word must be allow or deny");
    }
    if (!f[1].starts_with("User:") || f[1].size() == 5) return bad("principal must be User:<name> or User:*");
    r.principal = std::string(f[1]);
    auto op = ParseAclOp(f[2]);
    if (!op.ok()) return bad(op.status().message());
    r.op = *op;
    size_t colon = f[3].find(':');
    if (colon == std::string_view::npos)
      return bad("resource must be topic:<name>, group:<name> or cluster:*");
    std::string_view type = f[3].substr(0, colon), name = f[3].substr(colon + 1);
    if (type == "topic") {
      r.type = ResourceType::kTopic;
    } else if (type == "group") {
      r.type = ResourceType::kGroup;
    } else if (type == "cluster") {
      r.type = ResourceType::kCluster;
    } else {
      return bad("unknown resource type \"" + std::string(type) + "\"");
    }
    if (name.empty()) return bad("empty resource name (use * for every name)");
    if (name.back() == '*') {
      r.prefix = true;
      name.remove_suffix(1);
    }
    if (name.find('*') != std::string_view::npos) return bad("'*' only at the end of a name");
    r.name = std::string(name);
    rules.push_back(std::move(r));
  }
  return std::make_shared<const Authorizer>(std::move(rules), std::move(super_users));
}

Result<std::shared_ptr<const Authorizer>> Authorizer::LoadFile(const std::string& path,
                                                               std::vector<std::string> super_users) {
  std::ifstream in(path);
  if (!in) return NotFound("acl file " + path + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = Parse(ss.str(), std::move(super_users));
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

bool Authorizer::Matches(const AclRule& r, std::string_view principal, ResourceType type,
                         std::string_view name) const {
  if (r.type != type) return false;
  if (r.principal != "User:*" && r.principal != principal) return false;
  if (type == ResourceType::kCluster) return true;
  return r.prefix ? name.starts_with(r.name) : name == r.name;
}

bool Authorizer::Allowed(std::string_view principal, AclOp op, ResourceType type,
                         std::string_view name) const {
  for (const auto& s : super_users_)
    if (s == principal) return true;
  bool allowed = false;
  for (const AclRule& r : rules_) {
    // A deny rule denies exactly its operation (or all); an allow rule also allows what it implies.
    bool hit = Matches(r, principal, type, name) &&
               (r.allow ? Implies(r.op, op) : (r.op == op || r.op == AclOp::kAll));
    // IdempotentWrite on the cluster follows from Write on any topic.
    if (!hit && r.allow && op == AclOp::kIdempotentWrite && type == ResourceType::kCluster &&
        r.type == ResourceType::kTopic && (r.principal == "User:*" || r.principal == principal))
      hit = Implies(r.op, AclOp::kWrite);
    if (!hit) continue;
    if (!r.allow) return false;  // deny wins
    allowed = true;
  }
  return allowed;
}

}  // namespace govern::streams
