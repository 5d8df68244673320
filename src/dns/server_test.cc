// The server over real sockets: UDP answers, TCP with pipelined queries in one write, and a ZoneSet
// swapped under a running server.
#include "dns/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns/testing.h"

namespace govern::dns {
namespace {

std::shared_ptr<const ZoneSet> Zones(const std::string& address) {
  auto recs = ParseZoneFile(
      "$TTL 300\n@ SOA ns1 hm 1 3600 900 604800 60\n@ NS ns1\nns1 A 127.0.0.1\nwww A " + address + "\n",
      "srv.test.");
  EXPECT_TRUE(recs.ok());
  auto z = Zone::Build("srv.test.", std::move(*recs));
  EXPECT_TRUE(z.ok());
  return std::make_shared<const ZoneSet>(std::vector<std::shared_ptr<const Zone>>{*z});
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

std::vector<uint8_t> Udp(uint16_t port, const std::vector<uint8_t>& q) {
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  auto a = Loopback(port);
  ::sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
  pollfd p{fd, POLLIN, 0};
  std::vector<uint8_t> out(4096);
  if (::poll(&p, 1, 5000) != 1) {
    ::close(fd);
    return {};
  }
  ssize_t n = ::recv(fd, out.data(), out.size(), 0);
  ::close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::string FirstAnswer(const std::vector<uint8_t>& m) {
  auto msg = testing::ReadMessage(m);
  if (!msg.ok || msg.sections[0].empty()) return "";
  return PrintRecord(msg.sections[0][0]);
}

TEST(ServerTest, AnswersOverUdpAndSwapsZones) {
  auto holder = std::make_shared<ZoneSetHolder>(Zones("192.0.2.1"));
  auto server = Server::Start(ServerOptions{.address = "127.0.0.1", .port = 0, .udp_threads = 2}, holder);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  uint16_t port = (*server)->port();
  auto q = testing::MakeQuery("www.srv.test.", kA, true);
  EXPECT_EQ(FirstAnswer(Udp(port, q)), "www.srv.test. 300 IN A 192.0.2.1");
  holder->Store(Zones("192.0.2.2"));
  EXPECT_EQ(FirstAnswer(Udp(port, q)), "www.srv.test. 300 IN A 192.0.2.2");
  // Garbage gets FORMERR or nothing, and the server keeps answering.
  std::vector<uint8_t> junk = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  Udp(port, junk);
  EXPECT_EQ(FirstAnswer(Udp(port, q)), "www.srv.test. 300 IN A 192.0.2.2");
  (*server)->Stop();
}

TEST(ServerTest, TcpAnswersPipelinedQueriesInOrder) {
  auto holder = std::make_shared<ZoneSetHolder>(Zones("192.0.2.7"));
  auto server = Server::Start(ServerOptions{.address = "127.0.0.1", .port = 0}, holder);
  ASSERT_TRUE(server.ok());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  auto a = Loopback((*server)->port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::vector<uint8_t> all;
  for (uint16_t id = 1; id <= 3; ++id) {
    auto q = testing::MakeQuery(id == 2 ? "nx.srv.test." : "www.srv.test.", kA, false, false, id);
    all.push_back(static_cast<uint8_t>(q.size() >> 8));
    all.push_back(static_cast<uint8_t>(q.size()));
    all.insert(all.end(), q.begin(), q.end());
  }
  // One write, split mid-message, to exercise reassembly.
  ASSERT_EQ(::send(fd, all.data(), 20, 0), 20);
  ::usleep(20000);
  ASSERT_EQ(::send(fd, all.data() + 20, all.size() - 20, 0), static_cast<ssize_t>(all.size() - 20));
  std::vector<uint8_t> in;
  uint8_t buf[4096];
  int answers = 0;
  std::vector<uint16_t> ids;
  while (answers < 3) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    in.insert(in.end(), buf, buf + n);
    while (in.size() >= 2 && in.size() >= 2u + Get16(in.data())) {
      size_t len = Get16(in.data());
      std::vector<uint8_t> msg(in.begin() + 2, in.begin() + 2 + static_cast<long>(len));
      ids.push_back(Get16(msg.data()));
      if (ids.back() == 2)
        EXPECT_EQ(msg[3] & 0xf, kNXDomain);
      else
        EXPECT_EQ(FirstAnswer(msg), "www.srv.test. 300 IN A 192.0.2.7");
      in.erase(in.begin(), in.begin() + 2 + static_cast<long>(len));
      ++answers;
    }
  }
  EXPECT_EQ(ids, (std::vector<uint16_t>{1, 2, 3}));
  ::close(fd);
  (*server)->Stop();
  EXPECT_GE((*server)->tcp_queries(), 3u);
}

}  // namespace
}  // namespace govern::dns
