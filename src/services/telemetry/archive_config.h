// Configuration of the telemetry archive and its compactor: where files go (a local directory or an
// S3-compatible bucket) and when and how hours are compacted. Pure functions over config values.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "config/config.h"
#include "services/telemetry/compactor.h"
#include "storage/objstore/store.h"

namespace govern::telemetry {

// Declares telemetry.archive.dir, telemetry.archive.s3.{endpoint,bucket,region,addressing},
// telemetry.compaction.{age,interval,row_group_rows}.
void DeclareArchiveConfig(config::Schema& schema);

// The archive's store: S3Store when telemetry.archive.s3.endpoint is set (credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN; InvalidArgument naming what is
// missing), else a LocalStore at telemetry.archive.dir or, when that is empty,
// <data_dir>/telemetry/archive (stale temporary files from a crash are removed on open).
Result<std::unique_ptr<objstore::Store>> OpenArchiveStore(const config::Config& config,
                                                          const std::string& data_dir);

// CompactionOptions from telemetry.compaction.*; temp files go under <data_dir>/telemetry/tmp when
// data_dir is given (created if missing), else $TMPDIR.
CompactionOptions CompactionOptionsFromConfig(const config::Config& config, const std::string& data_dir = "");

}  // namespace govern::telemetry
