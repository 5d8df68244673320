// Shared by the telemetry decoder fuzz targets: whatever a decoder accepts must be well-formed —
// every attribute value and every JSON body parses as JSON, strings are valid UTF-8, ids are assignable.
#pragma once

#include <simdjson.h>

#include <cstdlib>

#include "services/telemetry/event.h"

namespace govern::telemetry::fuzz {

inline void CheckJson(simdjson::dom::parser& parser, const std::string& text) {
  simdjson::dom::element root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) std::abort();
}

inline void CheckUtf8(const std::string& s) {
  if (!simdjson::validate_utf8(s.data(), s.size())) std::abort();
}

inline void CheckBatch(Result<DecodedBatch>& r) {
  if (!r.ok()) {
    if (r.status().code() != Code::kInvalidArgument || r.status().message().empty()) std::abort();
    return;
  }
  simdjson::dom::parser parser;
  for (const Event& e : r->events) {
    for (const auto* attrs : {&e.attributes, &e.resource_attributes}) {
      for (const Attribute& a : *attrs) {
        CheckUtf8(a.key);
        CheckJson(parser, a.value_json);
      }
    }
    if (e.body_kind == BodyKind::kJson) CheckJson(parser, e.body);
    CheckUtf8(e.body);
    CheckUtf8(e.severity_text);
    CheckUtf8(e.type);
    if (e.time_unix_nanos < 0 || e.observed_unix_nanos < 0) std::abort();
  }
  AssignMissingIds(r->events);
  for (const Event& e : r->events) {
    if (e.id.empty()) std::abort();
  }
}

}  // namespace govern::telemetry::fuzz
