// Fuzz target: raw bytes through the server's own parsing path (RequestReader, routing, request
// conversion, response serialization), without sockets. The input is fed in pieces whose sizes come
// from the first byte, so splits inside the header, the chunk framing and the body are all explored.
#include <cstddef>
#include <cstdint>
#include <string>

#include "net/http_wire.h"
#include "net/problem.h"
#include "net/router.h"

namespace {

using namespace govern::net;

const Router& TheRouter() {
  static const Router* r = [] {
    auto* router = new Router();
    router->AddSync(Method::kGet, "/v1/orgs/{org}/events", [](Request& req) {
      return Response(200, std::string(req.Param("org")) + req.QueryParam("q").value_or(""));
    });
    router->AddSync(Method::kPost, "/v1/orgs/{org}/events",
                    [](Request& req) { return Response(202, req.body); }, {RequestClass::kBulk, 4096, ""});
    router->AddSync(Method::kGet, "/files/{path...}", [](Request& req) { return Response(200, req.target); });
    router->AddSync(Method::kGet, "/healthz", [](Request&) { return Response(200, "ok"); });
    return router;
  }();
  return *r;
}

class Capture : public ResponseSink {
 public:
  void Deliver(uint64_t, Response&& r) override { last = std::move(r); }
  Response last;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t step = size ? (data[0] % 64) + 1 : 1;
  const char* bytes = reinterpret_cast<const char*>(data);
  internal::RequestReader reader(2048);
  reader.Start();
  std::string buffer;
  std::string head;
  size_t fed = 0;
  int messages = 0;
  while (messages < 16) {
    size_t consumed = 0;
    auto p = reader.Feed(buffer.data(), buffer.size(), &consumed);
    buffer.erase(0, consumed);
    if (p == internal::RequestReader::Progress::kNeedMore) {
      if (fed >= size) break;
      size_t n = std::min(step, size - fed);
      buffer.append(bytes + fed, n);
      fed += n;
      continue;
    }
    if (p == internal::RequestReader::Progress::kError) {
      Response r = ProblemResponse(reader.error_status(), reader.error_detail());
      head.clear();
      internal::AppendResponseHead(head, r, r.body.size(), true, false, "Sun, 06 Nov 1994 08:49:37 GMT");
      break;
    }
    if (p == internal::RequestReader::Progress::kHeaderDone) {
      std::string_view target = reader.target();
      std::string_view path = target.substr(0, target.find('?'));
      std::vector<std::pair<std::string, std::string>> params;
      auto m = TheRouter().Find(reader.method(), path, &params);
      size_t limit = m.route && m.route->options.max_body_bytes ? m.route->options.max_body_bytes : 65536;
      if (!reader.SetBodyLimit(limit)) break;
      (void)reader.expects_continue();
      (void)reader.keep_alive();
      continue;
    }
    // kDone: convert, route and run the handler as the server would.
    Request req;
    reader.TakeRequest(&req);
    auto m = TheRouter().Find(req.method, req.path, &req.params);
    auto sink = std::make_shared<Capture>();
    if (m.route)
      m.route->handler(std::move(req), Responder(sink, 1));
    else
      sink->last = ProblemResponse(m.path_known ? 405 : 404, "no route", req.path);
    head.clear();
    internal::AppendResponseHead(head, sink->last, sink->last.body.size(), false, false, "");
    (void)req.QueryParams();
    ++messages;
    reader.Start();
  }
  return 0;
}
