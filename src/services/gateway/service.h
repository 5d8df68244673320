// `govern serve gateway`: the AI gateway's request path (proxy.h) on its own HTTP server. Keys gateway.*:
// listen (default 127.0.0.1:7770), routes_file (JSON: routes, virtual keys, prices; see
// ParseProxyConfig), usage_dir (the usage record WAL; default <data_dir>/gateway/usage),
// usage_durable_before_response, upstream_* (the provider client: timeouts, pool, threads, CA). Needs no
// database. This slice reads routes and keys from the file at start; bundles come later (issue 9).
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::gateway {

std::unique_ptr<services::Service> NewGatewayService();

}  // namespace govern::gateway
