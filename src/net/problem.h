// Error and JSON responses: RFC 9457 problem+json for every error, and a JSON response builder.
//
// Every error the HTTP layer itself produces (400, 404, 405, 408, 413, 431, 500, 503) goes through
// ProblemResponse, so clients see one error shape. Free functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "net/http.h"

namespace govern::net {

// The standard reason phrase for a status ("Not Found"); "Unknown" for codes it does not know.
std::string_view ReasonPhrase(int status);

struct Problem {
  int status = 500;
  std::string title;     // empty: the reason phrase of `status`
  std::string detail;    // human-readable, specific to this occurrence; never a secret
  std::string type;      // URI naming the problem type; empty: "about:blank"
  std::string instance;  // URI of this occurrence, usually the request path
};

// A response with Content-Type application/problem+json and the RFC 9457 members.
Response ProblemResponse(const Problem& problem);
inline Response ProblemResponse(int status, std::string detail, std::string instance = {}) {
  return ProblemResponse(Problem{status, {}, std::move(detail), {}, std::move(instance)});
}

// A response with Content-Type application/json and `json` (already serialized) as body.
inline Response JsonResponse(std::string json, int status = 200) {
  return Response(status, std::move(json), "application/json");
}

}  // namespace govern::net
