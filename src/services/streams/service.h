// `govern serve streams`: the Kafka-compatible broker (streams::Broker) as a Govern service.
//
// Keeps its logs under streams.data_dir (default <data_dir>/streams/), listens on streams.listen and
// needs no database. Start opens and recovers every partition before it accepts connections; Stop
// closes connections, waits for pending syncs and closes the logs.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::streams_service {

std::unique_ptr<services::Service> NewStreamsService();

}  // namespace govern::streams_service
