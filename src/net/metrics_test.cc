// MetricsRegistry: the Prometheus text format of counters, gauges, histograms and collectors.
#include "net/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace govern::net {
namespace {

TEST(Metrics, RendersPrometheusText) {
  MetricsRegistry m;
  m.AddCounter("jobs_total", "Jobs done", {{"kind", "a\"b"}}).Inc(3);
  m.AddGauge("queue_depth", "Items waiting").Set(-2);
  Histogram& h = m.AddHistogram("latency_seconds", "Latency", {0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  uint64_t id = m.AddCollector("custom_total", "Computed", "counter",
                               [](std::string& out) { out += "custom_total 7\n"; });
  std::string text = m.RenderText();
  EXPECT_NE(
      text.find("# HELP jobs_total Jobs done\n# TYPE jobs_total counter\njobs_total{kind=\"a\\\"b\"} 3\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE queue_depth gauge\nqueue_depth -2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_sum 5.55\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_count 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE custom_total counter\ncustom_total 7\n"), std::string::npos) << text;
  m.RemoveCollector(id);
  EXPECT_EQ(m.RenderText().find("custom_total 7"), std::string::npos);
}

TEST(Metrics, SameNameAndLabelsGiveTheSameMetric) {
  MetricsRegistry m;
  Counter& a = m.AddCounter("c", "help", {{"x", "1"}});
  Counter& b = m.AddCounter("c", "help", {{"x", "1"}});
  Counter& c = m.AddCounter("c", "help", {{"x", "2"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry m;
  Counter& c = m.AddCounter("n", "n");
  Histogram& h = m.AddHistogram("h", "h", {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        h.Observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), 40000u);
  EXPECT_EQ(h.Count(), 40000u);
}

}  // namespace
}  // namespace govern::net
