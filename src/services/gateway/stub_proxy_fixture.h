// The fixture the provider end-to-end tests share (Azure, Bedrock, Gemini: *_proxy_test.cc): the model
// stub on a free port, the proxy in front of it (ProxyFixture), a client posting with the test's key,
// and a stream's SSE events. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/sse.h"
#include "net/http_client.h"
#include "services/gateway/test_util.h"
#include "services/model_stub/server.h"

namespace govern::gateway::testing {

class StubProxyFixture : public ProxyFixture {
 protected:
  // `key`: the gateway key Post sends (the routes file's keys must hold it).
  explicit StubProxyFixture(std::string key) : key_(std::move(key)) {}

  // Starts the model stub (on a free port, whatever `o.port` says).
  void StartStub(model_stub::ServerOptions o = {}) {
    o.port = 0;
    auto s = model_stub::StubServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stub_ = std::move(*s);
  }
  void TearDown() override {
    StopProxy();
    if (stub_) stub_->Stop();
  }

  std::string StubUrl() const { return "http://127.0.0.1:" + std::to_string(stub_->port()); }

  // POSTs `body` to the proxy's `path` with the key and `headers`; a failed send fails the test.
  net::ClientResponse Post(std::string_view path, const nlohmann::json& body,
                           std::vector<std::pair<std::string, std::string>> headers = {}) {
    net::ClientRequest r;
    r.method = net::Method::kPost;
    r.url = url_ + std::string(path);
    r.headers.Set("Content-Type", "application/json");
    r.headers.Set("Authorization", "Bearer " + key_);
    for (const auto& [k, v] : headers) r.headers.Set(k, v);
    r.body = body.dump();
    auto resp = client_->Send(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().ToString();
    return resp.ok() ? *resp : net::ClientResponse{};
  }

  // The SSE events of a streamed answer, checked to parse (`whole`: and to end with a whole event).
  static std::vector<SseEvent> SseEvents(std::string_view body, bool whole = false) {
    SseParser p;
    std::vector<SseEvent> events;
    EXPECT_TRUE(p.Feed(body, events).ok());
    if (whole) {
      EXPECT_FALSE(p.HasPartial());
    }
    return events;
  }

  std::string key_;
  std::unique_ptr<model_stub::StubServer> stub_;
};

}  // namespace govern::gateway::testing
