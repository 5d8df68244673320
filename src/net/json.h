// JsonResponse from an nlohmann::json value, for handlers that build their answer as a JSON tree.
// Kept apart from problem.h so that headers which only need the string form do not pull in nlohmann.
#pragma once

#include <nlohmann/json.hpp>

#include "net/problem.h"

namespace govern::net {

inline Response JsonResponse(const nlohmann::json& value, int status = 200) {
  return JsonResponse(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), status);
}

}  // namespace govern::net
