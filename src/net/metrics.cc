// Metrics registry and the Prometheus text rendering.
#include "net/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace govern::net {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

uint64_t Histogram::Count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) n += BucketCount(i);
  return n;
}

std::vector<double> Histogram::LatencySeconds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

struct MetricsRegistry::Family {
  std::string name;
  std::string help;
  std::string type;
  struct Child {
    std::string labels;  // rendered "{...}" or ""
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  std::vector<Child> children;
  std::vector<std::pair<uint64_t, std::function<void(std::string&)>>> collectors;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

namespace {

void AppendEscapedLabel(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

void AppendEscapedHelp(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

// Labels with one more pair appended (for histogram "le").
std::string WithLe(const std::string& labels, std::string_view le) {
  std::string out;
  if (labels.empty()) {
    out = "{le=\"";
  } else {
    out.assign(labels, 0, labels.size() - 1);
    out += ",le=\"";
  }
  out += le;
  out += "\"}";
  return out;
}

}  // namespace

std::string MetricsRegistry::FormatLabels(const Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first;
    out += "=\"";
    AppendEscapedLabel(out, labels[i].second);
    out += '"';
  }
  out += '}';
  return out;
}

void MetricsRegistry::AppendValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    out += std::to_string(static_cast<int64_t>(v));
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    out += buf;
  }
}

MetricsRegistry::Family& MetricsRegistry::FamilyFor(std::string_view name, std::string_view help,
                                                    std::string_view type) {
  for (auto& f : families_) {
    if (f->name == name) return *f;
  }
  auto f = std::make_unique<Family>();
  f->name = name;
  f->help = help;
  f->type = type;
  families_.push_back(std::move(f));
  return *families_.back();
}

Counter& MetricsRegistry::AddCounter(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = FamilyFor(name, help, "counter");
  std::string l = FormatLabels(labels);
  for (auto& c : f.children) {
    if (c.labels == l && c.counter) return *c.counter;
  }
  f.children.push_back({l, std::make_unique<Counter>(), nullptr, nullptr});
  return *f.children.back().counter;
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = FamilyFor(name, help, "gauge");
  std::string l = FormatLabels(labels);
  for (auto& c : f.children) {
    if (c.labels == l && c.gauge) return *c.gauge;
  }
  f.children.push_back({l, nullptr, std::make_unique<Gauge>(), nullptr});
  return *f.children.back().gauge;
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> bounds, const Labels& labels) {
  std::lock_guard lock(mu_);
  Family& f = FamilyFor(name, help, "histogram");
  std::string l = FormatLabels(labels);
  for (auto& c : f.children) {
    if (c.labels == l && c.histogram) return *c.histogram;
  }
  f.children.push_back({l, nullptr, nullptr, std::make_unique<Histogram>(std::move(bounds))});
  return *f.children.back().histogram;
}

uint64_t MetricsRegistry::AddCollector(std::string_view name, std::string_view help, std::string_view type,
                                       std::function<void(std::string&)> write) {
  std::lock_guard lock(mu_);
  uint64_t id = next_collector_id_++;
  FamilyFor(name, help, type).collectors.emplace_back(id, std::move(write));
  return id;
}

void MetricsRegistry::RemoveCollector(uint64_t id) {
  std::lock_guard lock(mu_);
  for (auto& f : families_) {
    auto& c = f->collectors;
    c.erase(std::remove_if(c.begin(), c.end(), [id](const auto& e) { return e.first == id; }), c.end());
  }
}

std::string MetricsRegistry::RenderText() const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(4096);
  for (const auto& f : families_) {
    out += "# HELP ";
    out += f->name;
    out += ' ';
    AppendEscapedHelp(out, f->help);
    out += "\n# TYPE ";
    out += f->name;
    out += ' ';
    out += f->type;
    out += '\n';
    for (const auto& c : f->children) {
      if (c.counter || c.gauge) {
        out += f->name;
        out += c.labels;
        out += ' ';
        if (c.counter)
          out += std::to_string(c.counter->Value());
        else
          out += std::to_string(c.gauge->Value());
        out += '\n';
        continue;
      }
      const Histogram& h = *c.histogram;
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds().size(); ++i) {
        cumulative += h.BucketCount(i);
        std::string le;
        if (i == h.bounds().size())
          le = "+Inf";
        else
          AppendValue(le, h.bounds()[i]);
        out += f->name;
        out += "_bucket";
        out += WithLe(c.labels, le);
        out += ' ';
        out += std::to_string(cumulative);
        out += '\n';
      }
      out += f->name;
      out += "_sum";
      out += c.labels;
      out += ' ';
      AppendValue(out, h.Sum());
      out += '\n';
      out += f->name;
      out += "_count";
      out += c.labels;
      out += ' ';
      out += std::to_string(cumulative);
      out += '\n';
    }
    for (const auto& [id, write] : f->collectors) write(out);
  }
  return out;
}

}  // namespace govern::net
