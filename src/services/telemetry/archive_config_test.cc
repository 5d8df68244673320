// Archive and compaction configuration: defaults, a local store, S3 settings checked before use.
#include "services/telemetry/archive_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "storage/objstore/local_store.h"

namespace govern::telemetry {
namespace {

Result<config::Config> Load(std::vector<std::pair<std::string, std::string>> flags) {
  static config::Schema schema = [] {
    config::Schema s;
    DeclareArchiveConfig(s);
    return s;
  }();
  config::LoadOptions o;
  o.flags = std::move(flags);
  return config::Config::Load(schema, o);
}

TEST(ArchiveConfig, Defaults) {
  auto c = Load({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto o = CompactionOptionsFromConfig(*c);
  EXPECT_EQ(o.age, std::chrono::hours(1));
  EXPECT_EQ(o.interval, std::chrono::minutes(1));
  EXPECT_EQ(o.row_group_rows, 16384);
}

TEST(ArchiveConfig, LocalStoreUnderDataDir) {
  auto dir = std::filesystem::temp_directory_path() / ("govern-arch-cfg-" + std::to_string(::getpid()));
  auto c = Load({});
  ASSERT_TRUE(c.ok());
  auto store = OpenArchiveStore(*c, dir.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("events/x", "1").ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "telemetry" / "archive" / "events" / "x"));
  auto o = CompactionOptionsFromConfig(*c, dir.string());
  EXPECT_EQ(o.temp_dir, (dir / "telemetry" / "tmp").string());
  EXPECT_TRUE(std::filesystem::is_directory(o.temp_dir));
  std::filesystem::remove_all(dir);
}

TEST(ArchiveConfig, S3NeedsBucketAndCredentials) {
  auto bad = Load({{"telemetry.archive.s3.endpoint", "ftp://x"}});
  EXPECT_FALSE(bad.ok());
  auto no_bucket = Load({{"telemetry.archive.s3.endpoint", "http://127.0.0.1:9"}});
  ASSERT_TRUE(no_bucket.ok());
  EXPECT_EQ(OpenArchiveStore(*no_bucket, "/tmp").status().code(), Code::kInvalidArgument);
  auto c = Load({{"telemetry.archive.s3.endpoint", "http://127.0.0.1:9"},
                 {"telemetry.archive.s3.bucket", "bkt"},
                 {"telemetry.archive.s3.addressing", "virtual"}});
  ASSERT_TRUE(c.ok());
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto missing = OpenArchiveStore(*c, "/tmp");
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  ::setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  auto ok = OpenArchiveStore(*c, "/tmp");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(dynamic_cast<objstore::LocalStore*>(ok->get()), nullptr);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
}

}  // namespace
}  // namespace govern::telemetry
