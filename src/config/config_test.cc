#include "config/config.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace govern::config {
namespace {

Schema TestSchema() {
  Schema s;
  s.Add({.key = "log.level", .type = Type::kEnum, .default_value = "info", .help = "minimum level",
         .choices = {"debug", "info", "warn", "error"}});
  s.Add({.key = "http.workers", .type = Type::kInt, .default_value = "0", .help = "event loops", .min = 0,
         .max = 256});
  s.Add({.key = "http.max_body_bytes", .type = Type::kBytes, .default_value = "8MiB", .help = "body limit"});
  s.Add({.key = "http.idle_timeout", .type = Type::kDuration, .default_value = "60s", .help = "idle"});
  s.Add({.key = "limits.enabled", .type = Type::kBool, .default_value = "true", .help = "shedding"});
  s.Add({.key = "data_dir", .type = Type::kString, .default_value = "./var", .help = "state"});
  s.Add({.key = "up.services", .type = Type::kStringList, .default_value = "admin", .help = "services"});
  s.Add({.key = "database.url", .type = Type::kString, .default_value = "", .help = "url", .secret = true});
  return s;
}

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/govern-config-XXXXXX";
    int fd = mkstemp(tmpl);
    path_ = tmpl;
    ::close(fd);
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigTest, DefaultsApply) {
  Schema s = TestSchema();
  auto cfg = Config::Load(s, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->GetString("log.level"), "info");
  EXPECT_EQ(cfg->GetBytes("http.max_body_bytes"), 8 << 20);
  EXPECT_EQ(cfg->GetDuration("http.idle_timeout"), std::chrono::seconds(60));
  EXPECT_TRUE(cfg->GetBool("limits.enabled"));
  EXPECT_EQ(cfg->GetStringList("up.services"), std::vector<std::string>{"admin"});
}

TEST(ConfigTest, PrecedenceFlagOverEnvOverFile) {
  Schema s = TestSchema();
  TempFile f("[log]\nlevel = \"warn\"\n[http]\nworkers = 3\nmax_body_bytes = \"1MiB\"\n");
  LoadOptions o{.file = f.path(), .file_required = true};
  auto cfg = Config::Load(s, o);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->GetString("log.level"), "warn");
  EXPECT_EQ(cfg->GetInt("http.workers"), 3);
  EXPECT_EQ(cfg->OriginOf("http.workers").where, f.path() + ":4");

  o.env = {{"GOVERN_LOG_LEVEL", "error"}, {"GOVERN_HTTP_WORKERS", "5"}};
  cfg = Config::Load(s, o);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->GetString("log.level"), "error");
  EXPECT_EQ(cfg->GetInt("http.workers"), 5);

  o.flags = {{"log.level", "debug"}};
  cfg = Config::Load(s, o);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->GetString("log.level"), "debug");
  EXPECT_EQ(cfg->GetInt("http.workers"), 5);
}

TEST(ConfigTest, UnknownKeyNamesFileAndLine) {
  Schema s = TestSchema();
  TempFile f("data_dir = \"/srv\"\n\n[log]\nlevl = \"warn\"\n");
  auto cfg = Config::Load(s, {.file = f.path()});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), f.path() + ":4: unknown key 'log.levl' (did you mean log.level?)");
}

TEST(ConfigTest, BadValuesNameTheReason) {
  Schema s = TestSchema();
  struct Case {
    std::string toml;
    std::string expect;
  } cases[] = {
      {"[log]\nlevel = \"loud\"\n", ":2: log.level: 'loud' must be one of debug, info, warn, error"},
      {"[http]\nworkers = \"4\"\n", ":2: http.workers: expected integer, got a string (remove the quotes)"},
      {"[http]\nworkers = 999\n", ":2: http.workers: value 999 is out of range [0, 256]"},
      {"[http]\nidle_timeout = \"5 parsecs\"\n", ":2: http.idle_timeout: '5 parsecs' has an unknown duration unit"},
      {"[http]\nmax_body_bytes = \"lots\"\n", ":2: http.max_body_bytes: 'lots' is not a size"},
      {"[limits]\nenabled = 1\n", ":2: limits.enabled: expected boolean, got an integer"},
      {"[log\nlevel = 1\n", ":1: "},
  };
  for (const Case& c : cases) {
    TempFile f(c.toml);
    auto cfg = Config::Load(s, {.file = f.path()});
    ASSERT_FALSE(cfg.ok()) << c.toml;
    EXPECT_EQ(cfg.status().code(), Code::kInvalidArgument);
    EXPECT_NE(cfg.status().message().find(f.path() + c.expect), std::string::npos)
        << cfg.status().message() << " vs " << c.expect;
  }
}

TEST(ConfigTest, BadEnvAndFlagNameTheirSource) {
  Schema s = TestSchema();
  auto cfg = Config::Load(s, {.env = {{"GOVERN_HTTP_WORKERS", "many"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "GOVERN_HTTP_WORKERS: http.workers: 'many' is not an integer");
  cfg = Config::Load(s, {.flags = {{"http.worker", "2"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "--set: unknown key 'http.worker' (did you mean http.workers?)");
}

TEST(ConfigTest, EnvTyposAreRefusedAndOtherVariablesReported) {
  Schema s = TestSchema();
  auto cfg = Config::Load(s, {.env = {{"GOVERN_LOG_LEVL", "debug"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "GOVERN_LOG_LEVL: unknown configuration variable (did you mean GOVERN_LOG_LEVEL?)");
  cfg = Config::Load(s, {.env = {{"GOVERN_TEST_JOBS", "2"}}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->unknown_env(), std::vector<std::string>{"GOVERN_TEST_JOBS"});
}

TEST(ConfigTest, ValidatorsAndDurationBounds) {
  Schema s = TestSchema();
  s.Add({.key = "admin.listen", .type = Type::kString, .default_value = "127.0.0.1:1", .help = "addr",
         .validate = [](std::string_view v) {
           return v.find(':') == std::string_view::npos ? InvalidArgument("'" + std::string(v) + "' is not host:port")
                                                        : OkStatus();
         }});
  auto cfg = Config::Load(s, {.flags = {{"admin.listen", "nonsense"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "--set admin.listen: admin.listen: 'nonsense' is not host:port");
  cfg = Config::Load(s, {.flags = {{"http.idle_timeout", "99999999h"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("is too long"), std::string::npos);
  cfg = Config::Load(s, {.env = {{"GOVERN_HTTP_IDLE_TIMEOUT", "60"}}});
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("needs a unit"), std::string::npos);
}

TEST(ConfigTest, MissingNamedFileIsAnError) {
  Schema s = TestSchema();
  auto cfg = Config::Load(s, {.file = "/nonexistent/govern.toml", .file_required = true});
  EXPECT_EQ(cfg.status().code(), Code::kNotFound);
  EXPECT_TRUE(Config::Load(s, {.file = "/nonexistent/govern.toml"}).ok());
}

TEST(ConfigTest, SecretsAreMasked) {
  Schema s = TestSchema();
  auto cfg = Config::Load(s, {.flags = {{"database.url", "postgres://u:hunter2@db/x"}}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->Describe().find("hunter2"), std::string::npos);
  EXPECT_NE(cfg->Describe().find("database.url = ********"), std::string::npos);
}

TEST(ConfigTest, ListsFromTomlArrayAndText) {
  Schema s = TestSchema();
  TempFile f("[up]\nservices = [\"admin\", \"dns\"]\n");
  auto cfg = Config::Load(s, {.file = f.path()});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->GetStringList("up.services"), (std::vector<std::string>{"admin", "dns"}));
  cfg = Config::Load(s, {.env = {{"GOVERN_UP_SERVICES", "dns, telemetry"}}});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->GetStringList("up.services"), (std::vector<std::string>{"dns", "telemetry"}));
}

TEST(ConfigTest, DurationsAndSizes) {
  EXPECT_EQ(*ParseDuration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*ParseDuration("2m"), std::chrono::minutes(2));
  EXPECT_EQ(ParseDuration("1500").status().message(), "'1500' needs a unit (1500ms, 1500s, 1500m or 1500h)");
  EXPECT_EQ(*ParseDuration("0"), std::chrono::milliseconds(0));
  EXPECT_FALSE(ParseDuration("-1s").ok());
  EXPECT_EQ(*ParseBytes("16KiB"), 16384);
  EXPECT_EQ(*ParseBytes("10MB"), 10'000'000);
  EXPECT_FALSE(ParseBytes("99999999999999999999").ok());
}

TEST(ConfigTest, MarkdownListsEveryKey) {
  std::string md = TestSchema().Markdown();
  EXPECT_NE(md.find("| `log.level` | `GOVERN_LOG_LEVEL` | one of debug, info, warn, error | `info` |"),
            std::string::npos);
}

}  // namespace
}  // namespace govern::config
