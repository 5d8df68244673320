// A blocking Kafka admin client and a segment dumper for `govern streams` (see admin_client.h).
#include "streams/admin_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "streams/batch.h"
#include "streams/group_api.h"
#include "streams/messages.h"
#include "streams/wire.h"

namespace govern::streams {

namespace {

Status Io(std::string_view what) { return Unavailable(std::string(what) + ": " + std::strerror(errno)); }

bool WaitFd(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

// The consumer protocol's assignment: version i16, [topic string, [partition i32]], user data bytes.
std::vector<std::pair<std::string, int32_t>> DecodeAssignment(std::string_view bytes) {
  std::vector<std::pair<std::string, int32_t>> out;
  if (bytes.empty()) return out;
  Reader r(bytes);
  r.Int16();
  int32_t nt = r.ArrayCount(6);
  for (int32_t i = 0; i < nt && r.ok(); i++) {
    std::string topic(r.String());
    int32_t np = r.ArrayCount(4);
    for (int32_t j = 0; j < np && r.ok(); j++) out.emplace_back(topic, r.Int32());
  }
  if (!r.ok()) out.clear();
  return out;
}

}  // namespace

Result<std::unique_ptr<AdminClient>> AdminClient::Connect(std::string_view address, int timeout_ms) {
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgument("broker address needs host:port");
  std::string host(address.substr(0, colon)), port(address.substr(colon + 1));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Unavailable("resolve " + std::string(address) + ": " + ::gai_strerror(rc));
  Status last = Unavailable("no address for " + std::string(address));
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
        (errno == EINPROGRESS && WaitFd(fd, POLLOUT, timeout_ms))) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) {
        ::freeaddrinfo(res);
        return std::unique_ptr<AdminClient>(new AdminClient(fd, timeout_ms));
      }
      errno = err;
    }
    last = Io("connect " + std::string(address));
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return last;
}

AdminClient::~AdminClient() { ::close(fd_); }

Result<std::string> AdminClient::Call(int16_t key, int16_t version, std::string_view body) {
  int32_t corr = next_correlation_++;
  Writer w;
  w.Int32(0);
  w.Int16(key);
  w.Int16(version);
  w.Int32(corr);
  w.NullableString("govern-cli");
  w.Raw(body);
  w.PatchInt32(0, static_cast<int32_t>(w.size() - 4));
  const std::string& out = w.str();
  for (size_t off = 0; off < out.size();) {
    if (!WaitFd(fd_, POLLOUT, timeout_ms_)) return DeadlineExceeded("write to broker timed out");
    ssize_t n = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Io("write to broker");
    off += static_cast<size_t>(n);
  }
  auto read_exact = [&](char* p, size_t len) -> Status {
    while (len > 0) {
      if (!WaitFd(fd_, POLLIN, timeout_ms_)) return DeadlineExceeded("broker did not answer in time");
      ssize_t n = ::recv(fd_, p, len, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n == 0) return Unavailable("broker closed the connection");
      if (n < 0) return Io("read from broker");
      p += n;
      len -= static_cast<size_t>(n);
    }
    return OkStatus();
  };
  char size[4];
  GOVERN_RETURN_IF_ERROR(read_exact(size, 4));
  uint32_t n = LoadBe32(size);
  if (n < 4 || n > (256u << 20)) return DataLoss("bad response size " + std::to_string(n));
  std::string frame(n, '\0');
  GOVERN_RETURN_IF_ERROR(read_exact(frame.data(), n));
  if (static_cast<int32_t>(LoadBe32(frame.data())) != corr) return DataLoss("response out of order");
  return frame.substr(4);
}

Result<std::vector<PartitionOffsets>> AdminClient::Offsets(const std::string& topic,
                                                           const std::vector<int32_t>& parts) {
  std::map<int32_t, PartitionOffsets> out;
  for (int64_t which : {int64_t{-2}, int64_t{-1}}) {  // earliest, latest
    Writer w;
    w.Int32(-1);
    w.ArrayCount(1);
    w.String(topic);
    w.ArrayCount(static_cast<int32_t>(parts.size()));
    for (int32_t p : parts) {
      w.Int32(p);
      w.Int64(which);
    }
    GOVERN_ASSIGN_OR_RETURN(std::string body, Call(api::kListOffsets, 1, w.str()));
    Reader r(body);
    int32_t nt = r.ArrayCount(6);
    for (int32_t i = 0; i < nt && r.ok(); i++) {
      r.String();
      int32_t np = r.ArrayCount(22);
      for (int32_t j = 0; j < np && r.ok(); j++) {
        int32_t p = r.Int32();
        int16_t err = r.Int16();
        r.Int64();
        int64_t off = r.Int64();
        out[p].partition = p;
        if (err != 0) off = -1;
        (which == -2 ? out[p].log_start : out[p].high_watermark) = off;
      }
    }
    if (!r.ok()) return DataLoss("malformed ListOffsets response");
  }
  std::vector<PartitionOffsets> v;
  for (auto& [p, o] : out) v.push_back(o);
  return v;
}

Result<std::vector<TopicInfo>> AdminClient::Topics() {
  Writer w;
  w.ArrayCount(-1);  // every topic
  GOVERN_ASSIGN_OR_RETURN(std::string body, Call(api::kMetadata, 1, w.str()));
  Reader r(body);
  int32_t nb = r.ArrayCount(14);
  for (int32_t i = 0; i < nb && r.ok(); i++) {
    r.Int32();
    r.String();
    r.Int32();
    r.NullableString();
  }
  r.Int32();  // controller
  std::vector<std::pair<std::string, std::vector<int32_t>>> names;
  int32_t nt = r.ArrayCount(7);
  for (int32_t i = 0; i < nt && r.ok(); i++) {
    r.Int16();
    std::string name(r.String());
    r.Bool();
    std::vector<int32_t> parts;
    int32_t np = r.ArrayCount(18);
    for (int32_t j = 0; j < np && r.ok(); j++) {
      r.Int16();
      parts.push_back(r.Int32());
      r.Int32();
      for (int k = 0; k < 2; k++) {
        int32_t n = r.ArrayCount(4);
        for (int32_t x = 0; x < n && r.ok(); x++) r.Int32();
      }
    }
    names.emplace_back(std::move(name), std::move(parts));
  }
  if (!r.ok()) return DataLoss("malformed Metadata response");
  std::sort(names.begin(), names.end());
  std::vector<TopicInfo> out;
  for (auto& [name, parts] : names) {
    TopicInfo t;
    t.name = name;
    if (!parts.empty()) {
      GOVERN_ASSIGN_OR_RETURN(t.partitions, Offsets(name, parts));
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<ListedGroupInfo>> AdminClient::ListGroups() {
  GOVERN_ASSIGN_OR_RETURN(std::string body, Call(api::kListGroups, 2, ""));
  Reader r(body);
  r.Int32();
  int16_t err = r.Int16();
  std::vector<ListedGroupInfo> out;
  int32_t n = r.ArrayCount(4);
  for (int32_t i = 0; i < n && r.ok(); i++) {
    ListedGroupInfo g;
    g.group_id = std::string(r.String());
    g.protocol_type = std::string(r.String());
    out.push_back(std::move(g));
  }
  if (!r.ok()) return DataLoss("malformed ListGroups response");
  if (err != 0) return Unavailable("ListGroups: Kafka error " + std::to_string(err));
  return out;
}

Result<GroupInfo> AdminClient::DescribeGroup(const std::string& group) {
  GroupInfo g;
  {
    Writer w;
    w.ArrayCount(1);
    w.String(group);
    w.Bool(false);
    GOVERN_ASSIGN_OR_RETURN(std::string body, Call(api::kDescribeGroups, 4, w.str()));
    Reader r(body);
    r.Int32();
    if (r.ArrayCount(20) != 1) return DataLoss("malformed DescribeGroups response");
    g.error = r.Int16();
    g.group_id = std::string(r.String());
    g.state = std::string(r.String());
    g.protocol_type = std::string(r.String());
    g.protocol = std::string(r.String());
    int32_t nm = r.ArrayCount(18);
    for (int32_t i = 0; i < nm && r.ok(); i++) {
      GroupMemberInfo m;
      m.member_id = std::string(r.String());
      r.NullableString();
      m.client_id = std::string(r.String());
      m.client_host = std::string(r.String());
      r.NullableBytes();
      auto assignment = r.NullableBytes();
      if (g.protocol_type == "consumer" && assignment) m.assigned = DecodeAssignment(*assignment);
      g.members.push_back(std::move(m));
    }
    r.Int32();
    if (!r.ok()) return DataLoss("malformed DescribeGroups response");
  }
  {
    Writer w;
    w.String(group);
    w.ArrayCount(-1);  // every committed offset
    GOVERN_ASSIGN_OR_RETURN(std::string body, Call(api::kOffsetFetch, 5, w.str()));
    Reader r(body);
    r.Int32();
    int32_t nt = r.ArrayCount(6);
    for (int32_t i = 0; i < nt && r.ok(); i++) {
      std::string topic(r.String());
      int32_t np = r.ArrayCount(20);
      for (int32_t j = 0; j < np && r.ok(); j++) {
        GroupPartitionLag l;
        l.topic = topic;
        l.partition = r.Int32();
        l.committed = r.Int64();
        r.Int32();
        r.NullableString();
        r.Int16();
        g.offsets.push_back(std::move(l));
      }
    }
    int16_t err = r.Int16();
    if (!r.ok()) return DataLoss("malformed OffsetFetch response");
    if (err != 0 && g.error == 0) g.error = err;
  }
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (auto& l : g.offsets) by_topic[l.topic].push_back(l.partition);
  for (auto& [topic, parts] : by_topic) {
    GOVERN_ASSIGN_OR_RETURN(auto ends, Offsets(topic, parts));
    for (auto& l : g.offsets) {
      if (l.topic != topic) continue;
      for (auto& e : ends)
        if (e.partition == l.partition) l.end = e.high_watermark;
      l.lag = l.end >= 0 && l.committed >= 0 ? std::max<int64_t>(0, l.end - l.committed) : -1;
    }
  }
  std::sort(g.offsets.begin(), g.offsets.end(), [](const auto& a, const auto& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  return g;
}

Result<SegmentSummary> DumpSegment(const std::string& path, std::ostream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path + ": " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Internal("read " + path);
  static const char* kCodecs[] = {"none", "gzip", "snappy", "lz4", "zstd", "codec5", "codec6", "codec7"};
  SegmentSummary s;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t left = data.size() - pos;
    if (left < kBatchHeaderSize) {
      s.torn_bytes = static_cast<int64_t>(left);
      break;
    }
    BatchHeader h = PeekHeader(std::string_view(data).substr(pos));
    if (h.batch_length < static_cast<int32_t>(kBatchHeaderSize - kBatchLogOverhead) ||
        h.total_size() > left) {
      s.torn_bytes = static_cast<int64_t>(left);
      break;
    }
    auto parsed = ParseBatch(std::string_view(data).substr(pos, h.total_size()));
    std::string crc = parsed.ok() ? "ok" : parsed.status().code() == Code::kDataLoss ? "BAD" : "malformed";
    if (!parsed.ok()) s.bad_crc++;
    out << "offset " << h.base_offset << ".." << h.last_offset() << " position " << pos << " bytes "
        << h.total_size() << " records " << h.records_count << " epoch " << h.leader_epoch << " producer "
        << h.producer_id << "/" << h.producer_epoch << " seq " << h.base_sequence << " codec "
        << kCodecs[h.codec()] << " max_ts " << h.max_timestamp << " crc " << crc;
    if (!parsed.ok()) out << " (" << parsed.status().message() << ")";
    out << "\n";
    s.batches++;
    s.records += h.records_count;
    pos += h.total_size();
  }
  if (s.torn_bytes > 0)
    out << "torn tail: " << s.torn_bytes << " bytes at position " << pos << " (cut off at recovery)\n";
  out << s.batches << " batches, " << s.records << " records, " << s.bad_crc << " failing CRC\n";
  return s;
}

}  // namespace govern::streams
