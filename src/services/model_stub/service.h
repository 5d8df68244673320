// `govern serve model-stub`: a fake model provider speaking the OpenAI (chat, Responses, embeddings,
// models) and Anthropic Messages APIs, for tests and benchmarks of the gateway. Keys model_stub.*:
// listen (default 127.0.0.1:7760), tokens_per_second (0: at once), threads, models. Keeps no state and
// needs no database. What it answers: stub.h.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::model_stub {

std::unique_ptr<services::Service> NewModelStubService();

}  // namespace govern::model_stub
