// LocalCluster: real initdb, pg_ctl and postgres in directories of the test's own.
#include "db/local_cluster.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "db/connection.h"
#include "db/pool.h"

namespace govern::db {
namespace {
namespace fs = std::filesystem;

// A scratch directory that PostgreSQL's user can enter (mkdtemp makes 0700 ones).
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "govern_lc_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
    ::chmod(path_.c_str(), 0755);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

LocalClusterOptions TestOptions(const std::string& dir) {
  LocalClusterOptions o;
  o.data_dir = dir;
  o.fsync = false;  // each test makes a throwaway cluster
  o.shared_buffers = "16MB";
  o.max_connections = 20;
  return o;
}

// Stops the cluster even when an assertion ends the test early.
struct StopAtEnd {
  LocalCluster& c;
  ~StopAtEnd() { (void)c.Stop(); }
};

TEST(LocalClusterTest, StartStopRestartKeepsData) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/new/parents/data";
  LocalCluster cluster(TestOptions(dir));
  StopAtEnd stop{cluster};
  ASSERT_TRUE(cluster.Start().ok());
  EXPECT_TRUE(cluster.created());
  EXPECT_FALSE(cluster.reused());
  EXPECT_GT(cluster.port(), 0);
  EXPECT_TRUE(fs::exists(dir + "/PG_VERSION"));
  EXPECT_TRUE(fs::exists(cluster.log_file()));
  {
    auto c = Connection::Connect(cluster.ConnInfo());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE((*c)->Exec("CREATE TABLE kept (v text)").ok());
    ASSERT_TRUE((*c)->Exec("INSERT INTO kept VALUES ($1)", Params("survives restarts")).ok());
    auto enc = (*c)->Exec("SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = 'postgres'");
    ASSERT_TRUE(enc.ok());
    EXPECT_EQ(enc->Text(0, 0), "UTF8");
    // Over TCP with the generated password, too.
    auto tcp = cluster.TcpConnInfo();
    ASSERT_TRUE(tcp.ok());
    auto t = Connection::Connect(*tcp);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  ASSERT_TRUE(cluster.EnsureDatabase("govern \"app\"").ok());
  ASSERT_TRUE(cluster.EnsureDatabase("govern \"app\"").ok());  // exists: fine
  {
    auto app = Connection::Connect(cluster.ConnInfo("govern \"app\""));
    ASSERT_TRUE(app.ok()) << app.status().ToString();
  }
  int port = cluster.port();
  ASSERT_TRUE(cluster.Stop().ok());
  EXPECT_FALSE(cluster.IsRunning());
  EXPECT_FALSE(
      Connection::Connect(cluster.ConnInfo(), {.connect_timeout = std::chrono::milliseconds(1000)}).ok());
  EXPECT_TRUE(cluster.Stop().ok());  // stopping a stopped cluster is fine

  LocalCluster again(TestOptions(dir));
  StopAtEnd stop_again{again};
  Status s = again.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(again.created());
  EXPECT_FALSE(again.reused());
  EXPECT_EQ(again.port(), port);  // remembered, and still free
  auto c = Connection::Connect(again.ConnInfo());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto r = (*c)->Exec("SELECT v FROM kept");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Text(0, 0), "survives restarts");
}

TEST(LocalClusterTest, SecondStartOnRunningDirectoryReusesIt) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  LocalCluster first(TestOptions(dir));
  StopAtEnd stop{first};
  ASSERT_TRUE(first.Start().ok());
  auto c = Connection::Connect(first.ConnInfo());
  ASSERT_TRUE(c.ok());
  int backend_pid_before = (*c)->BackendPid();

  // What a second `govern up` does: its own LocalCluster on the same directory.
  LocalCluster second(TestOptions(dir));
  Status s = second.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(second.reused());
  EXPECT_EQ(second.port(), first.port());
  EXPECT_EQ(second.ConnInfo(), first.ConnInfo());
  // The first server was not restarted: the old session is still alive.
  auto r = (*c)->Exec("SELECT pg_backend_pid()");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r->Int64(0, 0), backend_pid_before);
  auto conninfo = LocalCluster::RunningConnInfo(dir);
  ASSERT_TRUE(conninfo.ok());
  EXPECT_EQ(*conninfo, first.ConnInfo());
}

TEST(LocalClusterTest, ConcurrentStartsOnAFreshDirectoryMakeOneCluster) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  constexpr int kStarters = 3;
  std::vector<std::unique_ptr<LocalCluster>> clusters;
  for (int i = 0; i < kStarters; ++i) clusters.push_back(std::make_unique<LocalCluster>(TestOptions(dir)));
  StopAtEnd stop{*clusters[0]};
  std::vector<Status> results(kStarters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStarters; ++i) {
    threads.emplace_back(
        [&, i] { results[static_cast<size_t>(i)] = clusters[static_cast<size_t>(i)]->Start(); });
  }
  for (auto& t : threads) t.join();
  int created = 0, reused = 0;
  for (int i = 0; i < kStarters; ++i) {
    EXPECT_TRUE(results[static_cast<size_t>(i)].ok()) << results[static_cast<size_t>(i)].ToString();
    created += clusters[static_cast<size_t>(i)]->created();
    reused += clusters[static_cast<size_t>(i)]->reused();
    EXPECT_EQ(clusters[static_cast<size_t>(i)]->port(), clusters[0]->port());
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(reused, kStarters - 1);
}

TEST(LocalClusterTest, TakenPortIsReplaced) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  LocalCluster cluster(TestOptions(dir));
  StopAtEnd stop{cluster};
  ASSERT_TRUE(cluster.Start().ok());
  ASSERT_TRUE(cluster.Stop().ok());
  // Someone else takes our remembered port (another cluster on a different directory listening there).
  LocalClusterOptions other_opts = TestOptions(scratch.path() + "/other");
  LocalCluster other(other_opts);
  StopAtEnd stop_other{other};
  ASSERT_TRUE(other.Start().ok());
  ASSERT_TRUE(other.Stop().ok());
  // Make the other cluster use our port by writing it as its remembered port, then start it.
  {
    std::ofstream f(scratch.path() + "/other/govern.port");
    f << cluster.port() << "\n";
  }
  ASSERT_TRUE(other.Start().ok());
  ASSERT_EQ(other.port(), cluster.port());
  Status s = cluster.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(cluster.port(), other.port());
}

TEST(LocalClusterTest, RecoversFromStalePostmasterPid) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  LocalCluster cluster(TestOptions(dir));
  StopAtEnd stop{cluster};
  ASSERT_TRUE(cluster.Start().ok());
  // Kill the postmaster hard: postmaster.pid stays behind, naming a dead process.
  std::ifstream pidfile(dir + "/postmaster.pid");
  int pid = 0;
  pidfile >> pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i) ::usleep(10000);
  ASSERT_TRUE(fs::exists(dir + "/postmaster.pid"));
  LocalCluster again(TestOptions(dir));
  StopAtEnd stop_again{again};
  Status s = again.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(again.reused());
  auto c = Connection::Connect(again.ConnInfo());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
}

TEST(LocalClusterTest, PoolReconnectsAcrossARestart) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  LocalCluster cluster(TestOptions(dir));
  StopAtEnd stop{cluster};
  ASSERT_TRUE(cluster.Start().ok());
  PoolOptions po;
  po.conninfo = cluster.ConnInfo();
  po.max_size = 3;
  auto pool = Pool::Create(po);
  ASSERT_TRUE(pool.ok());
  {
    std::vector<Pool::Lease> leases;
    for (int i = 0; i < 3; ++i) {
      auto l = (*pool)->Checkout();
      ASSERT_TRUE(l.ok());
      ASSERT_TRUE((*l)->Ping().ok());
      leases.push_back(std::move(l).value());
    }
  }
  ASSERT_TRUE(cluster.Stop().ok());
  ASSERT_TRUE(cluster.Start().ok());
  for (int i = 0; i < 3; ++i) {
    Status s = (*pool)->HealthCheck();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  std::vector<Pool::Lease> leases;
  for (int i = 0; i < 3; ++i) {
    auto l = (*pool)->Checkout();
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    EXPECT_TRUE((*l)->Ping().ok());
    leases.push_back(std::move(l).value());
  }
}

TEST(LocalClusterTest, NonEmptyForeignDirectoryIsRefused) {
  ScratchDir scratch;
  std::string dir = scratch.path() + "/data";
  fs::create_directories(dir);
  std::ofstream(dir + "/somebodys_file") << "x";
  LocalCluster cluster(TestOptions(dir));
  Status s = cluster.Start();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("neither empty nor"), std::string::npos) << s.ToString();
}

TEST(LocalClusterTest, MissingBinariesAreAClearError) {
  ScratchDir scratch;
  LocalClusterOptions o = TestOptions(scratch.path() + "/data");
  o.bin_dir = scratch.path();
  Status s = LocalCluster(o).Start();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("initdb"), std::string::npos) << s.ToString();
}

TEST(LocalClusterTest, AsRootUnreachableParentIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root switches to the postgres user";
  ScratchDir scratch;
  std::string locked = scratch.path() + "/locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);  // not ours to open up: LocalCluster did not create it
  LocalCluster cluster(TestOptions(locked + "/data"));
  Status s = cluster.Start();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find(locked), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("chmod o+x"), std::string::npos) << s.ToString();
}

TEST(LocalClusterTest, AsRootUnreachableParentIsRelocatedWhenAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root switches to the postgres user";
  ScratchDir scratch;
  std::string locked = scratch.path() + "/locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);
  LocalClusterOptions o = TestOptions(locked + "/data");
  o.relocate_root = scratch.path() + "/relocated";
  LocalCluster cluster(o);
  StopAtEnd stop{cluster};
  Status s = cluster.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(cluster.data_dir().starts_with(scratch.path() + "/relocated/data-")) << cluster.data_dir();
  EXPECT_TRUE(fs::is_symlink(locked + "/data"));
  auto c = Connection::Connect(cluster.ConnInfo());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Found again through the symlink, by a second starter and by RunningConnInfo.
  LocalCluster again(o);
  ASSERT_TRUE(again.Start().ok());
  EXPECT_TRUE(again.reused());
  EXPECT_EQ(again.data_dir(), cluster.data_dir());
  auto info = LocalCluster::RunningConnInfo(locked + "/data");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(*info, cluster.ConnInfo());
}

TEST(LocalClusterTest, AsRootCreatedParentsAreOpenedForPostgres) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root switches to the postgres user";
  ScratchDir scratch;
  mode_t old = ::umask(077);  // parents we create would be 0700 without the fix
  LocalCluster cluster(TestOptions(scratch.path() + "/a/b/data"));
  StopAtEnd stop{cluster};
  Status s = cluster.Start();
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat st {};
  ASSERT_EQ(::stat((scratch.path() + "/a/b/data").c_str(), &st), 0);
  EXPECT_NE(st.st_uid, 0u);  // handed to the postgres user
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
}  // namespace govern::db
