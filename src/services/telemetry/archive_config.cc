// Declarations and readers of the telemetry.archive.* and telemetry.compaction.* keys.
#include "services/telemetry/archive_config.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "storage/objstore/local_store.h"
#include "storage/objstore/s3_store.h"

namespace govern::telemetry {

void DeclareArchiveConfig(config::Schema& s) {
  using config::Type;
  s.Add({.key = "telemetry.archive.dir",
         .type = Type::kString,
         .default_value = "",
         .help = "Directory of the Parquet archive when no S3 endpoint is set. Empty: "
                 "`<data_dir>/telemetry/archive`."});
  s.Add({.key = "telemetry.archive.s3.endpoint",
         .type = Type::kString,
         .default_value = "",
         .help =
             "S3-compatible endpoint (scheme and host, e.g. `https://s3.eu-west-1.amazonaws.com`). Empty: "
             "the archive is the local directory. Credentials come from AWS_ACCESS_KEY_ID, "
             "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.",
         .validate = [](std::string_view v) -> Status {
           if (v.empty() || v.starts_with("http://") || v.starts_with("https://")) return OkStatus();
           return InvalidArgument("must start with http:// or https://");
         }});
  s.Add({.key = "telemetry.archive.s3.bucket",
         .type = Type::kString,
         .default_value = "",
         .help = "Bucket of the archive (required with an endpoint)."});
  s.Add({.key = "telemetry.archive.s3.region",
         .type = Type::kString,
         .default_value = "us-east-1",
         .help = "Region the requests are signed for (SigV4)."});
  s.Add({.key = "telemetry.archive.s3.addressing",
         .type = Type::kEnum,
         .default_value = "path",
         .help = "`path` (http://host/bucket/key: MinIO, local servers) or `virtual` "
                 "(http://bucket.host/key: AWS).",
         .choices = {"path", "virtual"}});
  s.Add({.key = "telemetry.compaction.age",
         .type = Type::kDuration,
         .default_value = "1h",
         .help = "Hours of events that ended at least this long ago move from PostgreSQL to the archive.",
         .min = 0});
  s.Add({.key = "telemetry.compaction.interval",
         .type = Type::kDuration,
         .default_value = "1m",
         .help = "How often the compactor looks for hours to archive.",
         .min = 1});
  s.Add({.key = "telemetry.compaction.row_group_rows",
         .type = Type::kInt,
         .default_value = "16384",
         .help = "Rows per Parquet row group: smaller groups let queries skip more by time, larger ones "
                 "compress better.",
         .min = 1,
         .max = 64 << 20});
}

Result<std::unique_ptr<objstore::Store>> OpenArchiveStore(const config::Config& config,
                                                          const std::string& data_dir) {
  const std::string& endpoint = config.GetString("telemetry.archive.s3.endpoint");
  if (!endpoint.empty()) {
    objstore::S3Config s3;
    s3.endpoint = endpoint;
    s3.bucket = config.GetString("telemetry.archive.s3.bucket");
    s3.region = config.GetString("telemetry.archive.s3.region");
    s3.addressing = config.GetString("telemetry.archive.s3.addressing") == "virtual"
                        ? objstore::Addressing::kVirtualHosted
                        : objstore::Addressing::kPath;
    if (s3.bucket.empty()) {
      return InvalidArgument("telemetry.archive.s3.bucket must be set with telemetry.archive.s3.endpoint");
    }
    GOVERN_RETURN_IF_ERROR(
        objstore::LoadCredentialsFromEnv(s3, [](const char* n) { return std::getenv(n); }));
    auto store = objstore::S3Store::Create(std::move(s3));
    if (!store.ok()) return store.status();
    return std::unique_ptr<objstore::Store>(std::move(*store));
  }
  std::string dir = config.GetString("telemetry.archive.dir");
  if (dir.empty()) dir = (std::filesystem::path(data_dir) / "telemetry" / "archive").string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("creating the archive directory " + dir + ": " + ec.message());
  auto store = objstore::LocalStore::Open(dir);
  if (!store.ok()) return store.status();
  GOVERN_RETURN_IF_ERROR((*store)->RemoveStaleTempFiles());
  return std::unique_ptr<objstore::Store>(std::move(*store));
}

CompactionOptions CompactionOptionsFromConfig(const config::Config& config, const std::string& data_dir) {
  CompactionOptions o;
  o.age = config.GetDuration("telemetry.compaction.age");
  o.interval = config.GetDuration("telemetry.compaction.interval");
  o.row_group_rows = config.GetInt("telemetry.compaction.row_group_rows");
  if (!data_dir.empty()) {
    auto tmp = std::filesystem::path(data_dir) / "telemetry" / "tmp";
    std::error_code ec;
    std::filesystem::create_directories(tmp, ec);
    if (!ec) o.temp_dir = tmp.string();
  }
  return o;
}

}  // namespace govern::telemetry
