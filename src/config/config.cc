// Loading and validating configuration from defaults, a TOML file, the environment and flags.
#include "config/config.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

extern char** environ;

namespace govern::config {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string TypeName(const KeySpec& spec) {
  switch (spec.type) {
    case Type::kString: return "string";
    case Type::kInt: return "integer";
    case Type::kBool: return "boolean";
    case Type::kDuration: return "duration";
    case Type::kBytes: return "size";
    case Type::kEnum: {
      std::string s = "one of ";
      for (size_t i = 0; i < spec.choices.size(); ++i) {
        if (i) s += ", ";
        s += spec.choices[i];
      }
      return s;
    }
    case Type::kStringList: return "list of strings";
  }
  return "value";
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string item = Trim(text.substr(start, comma - start));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string EnvName(std::string_view key) {
  std::string out = "GOVERN_";
  for (char c : key) {
    out += (c == '.' || c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

void Schema::Add(KeySpec spec) {
  [[maybe_unused]] bool inserted = index_.emplace(spec.key, keys_.size()).second;
  assert(inserted && "configuration key declared twice");
  keys_.push_back(std::move(spec));
}

const KeySpec* Schema::Find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &keys_[it->second];
}

std::string Schema::Markdown() const {
  std::vector<const KeySpec*> sorted;
  for (const KeySpec& k : keys_) sorted.push_back(&k);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->key < b->key; });
  std::string out = "| key | environment | type | default | meaning |\n|---|---|---|---|---|\n";
  for (const KeySpec* k : sorted) {
    out += "| `" + k->key + "` | `" + EnvName(k->key) + "` | " + TypeName(*k) + " | " +
           (k->default_value.empty() ? "(empty)" : "`" + k->default_value + "`") + " | " + k->help + " |\n";
  }
  return out;
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  std::string t = Trim(text);
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  int64_t n = 0;
  if (i == 0 || !ParseInt64(std::string_view(t).substr(0, i), &n)) {
    return InvalidArgument("'" + t + "' is not a duration (examples: 250ms, 5s, 2m, 1h)");
  }
  std::string unit = t.substr(i);
  int64_t mult = 0;
  if (unit.empty() && n != 0) {
    return InvalidArgument("'" + t + "' needs a unit (" + t + "ms, " + t + "s, " + t + "m or " + t + "h)");
  }
  if (unit.empty() || unit == "ms") mult = 1;
  else if (unit == "s") mult = 1000;
  else if (unit == "m") mult = 60'000;
  else if (unit == "h") mult = 3'600'000;
  else return InvalidArgument("'" + t + "' has an unknown duration unit (use ms, s, m or h)");
  if (n > INT64_MAX / mult) return InvalidArgument("'" + t + "' is too long a duration");
  return std::chrono::milliseconds(n * mult);
}

Result<int64_t> ParseBytes(std::string_view text) {
  std::string t = Trim(text);
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  int64_t n = 0;
  if (i == 0 || !ParseInt64(std::string_view(t).substr(0, i), &n)) {
    return InvalidArgument("'" + t + "' is not a size (examples: 512, 16KiB, 8MiB, 1GiB)");
  }
  std::string unit = Trim(std::string_view(t).substr(i));
  int64_t mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB") mult = int64_t{1} << 10;
  else if (unit == "MiB") mult = int64_t{1} << 20;
  else if (unit == "GiB") mult = int64_t{1} << 30;
  else if (unit == "TiB") mult = int64_t{1} << 40;
  else if (unit == "KB" || unit == "kB") mult = 1000;
  else if (unit == "MB") mult = 1000 * 1000;
  else if (unit == "GB") mult = 1000 * 1000 * 1000;
  else return InvalidArgument("'" + t + "' has an unknown size unit (use B, KiB, MiB, GiB, KB, MB, GB)");
  if (n > INT64_MAX / mult) return InvalidArgument("'" + t + "' is too large a size");
  return n * mult;
}

namespace {

// Validates `text` against `spec` and fills the typed fields of a value.
template <typename V>
Status ParseValue(const KeySpec& spec, std::string_view text, V* v) {
  v->text = std::string(text);
  auto bounds = [&](int64_t n, std::string_view what) -> Status {
    if (n < spec.min || n > spec.max) {
      return InvalidArgument(std::string(what) + " " + std::string(text) + " is out of range [" +
                             std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]");
    }
    return OkStatus();
  };
  switch (spec.type) {
    case Type::kString:
      return OkStatus();
    case Type::kStringList:
      v->list = SplitList(text);
      return OkStatus();
    case Type::kInt: {
      int64_t n = 0;
      if (!ParseInt64(Trim(text), &n)) return InvalidArgument("'" + std::string(text) + "' is not an integer");
      v->number = n;
      return bounds(n, "value");
    }
    case Type::kBool: {
      std::string t = Trim(text);
      if (t == "true" || t == "1" || t == "yes" || t == "on") v->number = 1;
      else if (t == "false" || t == "0" || t == "no" || t == "off") v->number = 0;
      else return InvalidArgument("'" + t + "' is not a boolean (true or false)");
      v->text = v->number ? "true" : "false";
      return OkStatus();
    }
    case Type::kDuration: {
      auto d = ParseDuration(text);
      if (!d.ok()) return d.status();
      v->number = d->count();
      // No duration key means more than 30 days; larger values would overflow deadline arithmetic.
      constexpr int64_t kMaxMillis = int64_t{30} * 24 * 3600 * 1000;
      if (v->number > std::min(spec.max, kMaxMillis)) {
        return InvalidArgument("duration " + std::string(text) + " is too long (at most " +
                               std::to_string(std::min(spec.max, kMaxMillis) / 1000) + "s)");
      }
      return bounds(v->number, "duration (ms)");
    }
    case Type::kBytes: {
      auto b = ParseBytes(text);
      if (!b.ok()) return b.status();
      v->number = *b;
      return bounds(v->number, "size");
    }
    case Type::kEnum: {
      std::string t = Trim(text);
      if (std::find(spec.choices.begin(), spec.choices.end(), t) == spec.choices.end()) {
        return InvalidArgument("'" + t + "' must be " + TypeName(spec));
      }
      v->text = t;
      return OkStatus();
    }
  }
  return Internal("unhandled type");
}

std::string Suggest(const Schema& schema, std::string_view key) {
  const KeySpec* best = nullptr;
  size_t best_d = 4;
  for (const KeySpec& k : schema.keys()) {
    size_t d = EditDistance(key, k.key);
    if (d < best_d) {
      best_d = d;
      best = &k;
    }
  }
  return best ? " (did you mean " + best->key + "?)" : "";
}

// Converts a TOML leaf into the text form, checking the TOML type fits the key's type.
Result<std::string> TomlLeafText(const KeySpec& spec, const toml::node& node) {
  if (spec.type == Type::kStringList) {
    const toml::array* arr = node.as_array();
    if (!arr) {
      if (auto s = node.value<std::string>()) return *s;
      return InvalidArgument("expected a list of strings");
    }
    std::string joined;
    for (const toml::node& item : *arr) {
      auto s = item.value<std::string>();
      if (!s || !item.is_string()) return InvalidArgument("expected a list of strings");
      if (s->find(',') != std::string::npos) return InvalidArgument("list items may not contain ','");
      if (!joined.empty()) joined += ',';
      joined += *s;
    }
    return joined;
  }
  if (node.is_string()) {
    if (spec.type == Type::kInt || spec.type == Type::kBool) {
      return InvalidArgument("expected " + TypeName(spec) + ", got a string (remove the quotes)");
    }
    return *node.value<std::string>();
  }
  if (node.is_integer()) {
    if (spec.type == Type::kInt || spec.type == Type::kBytes || spec.type == Type::kDuration) {
      return std::to_string(*node.value<int64_t>());
    }
    return InvalidArgument("expected " + TypeName(spec) + ", got an integer");
  }
  if (node.is_boolean()) {
    if (spec.type == Type::kBool) return std::string(*node.value<bool>() ? "true" : "false");
    return InvalidArgument("expected " + TypeName(spec) + ", got a boolean");
  }
  return InvalidArgument("expected " + TypeName(spec) + ", got a " + std::string(toml::impl::node_type_friendly_names[static_cast<int>(node.type())]));
}

template <typename Fn>
Status WalkToml(const Schema& schema, const toml::table& table, const std::string& prefix,
                const std::string& file, Fn&& set) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    std::string where = file + ":" + std::to_string(node.source().begin.line);
    const KeySpec* spec = schema.Find(key);
    if (spec == nullptr) {
      if (const toml::table* sub = node.as_table()) {
        GOVERN_RETURN_IF_ERROR(WalkToml(schema, *sub, key, file, set));
        continue;
      }
      return InvalidArgument(where + ": unknown key '" + key + "'" + Suggest(schema, key));
    }
    auto text = TomlLeafText(*spec, node);
    if (!text.ok()) return InvalidArgument(where + ": " + key + ": " + text.status().message());
    GOVERN_RETURN_IF_ERROR(set(*spec, *text, Origin{Origin::Kind::kFile, where}));
  }
  return OkStatus();
}

}  // namespace

Result<Config> Config::Load(const Schema& schema, const LoadOptions& options) {
  Config cfg;
  for (const KeySpec& spec : schema.keys()) {
    Value v;
    v.spec = &spec;
    Status s = ParseValue(spec, spec.default_value, &v);
    if (!s.ok()) return Internal("default of " + spec.key + " is invalid: " + s.message());
    cfg.values_[spec.key] = std::move(v);
  }
  auto set = [&](const KeySpec& spec, std::string_view text, Origin origin) -> Status {
    Value v;
    v.spec = &spec;
    Status s = ParseValue(spec, text, &v);
    if (s.ok() && spec.validate) s = spec.validate(text);
    if (!s.ok()) return InvalidArgument(origin.where + ": " + spec.key + ": " + s.message());
    v.origin = std::move(origin);
    cfg.values_[spec.key] = std::move(v);
    return OkStatus();
  };

  if (!options.file.empty()) {
    std::ifstream probe(options.file);
    if (!probe) {
      if (options.file_required) return NotFound("cannot read configuration file " + options.file);
    } else {
      toml::table table;
      try {
        table = toml::parse_file(options.file);
      } catch (const toml::parse_error& e) {
        return InvalidArgument(options.file + ":" + std::to_string(e.source().begin.line) + ": " +
                               std::string(e.description()));
      }
      GOVERN_RETURN_IF_ERROR(WalkToml(schema, table, "", options.file, set));
    }
  }

  for (const auto& [name, text] : options.env) {
    bool known = false;
    std::string closest;
    size_t closest_d = 3;
    for (const KeySpec& spec : schema.keys()) {
      std::string env = EnvName(spec.key);
      if (env == name) {
        known = true;
        GOVERN_RETURN_IF_ERROR(set(spec, text, Origin{Origin::Kind::kEnv, name}));
        continue;
      }
      size_t d = EditDistance(env, name);
      if (d < closest_d) {
        closest_d = d;
        closest = env;
      }
    }
    if (known) continue;
    if (!closest.empty()) {
      return InvalidArgument(name + ": unknown configuration variable (did you mean " + closest + "?)");
    }
    cfg.unknown_env_.push_back(name);
  }

  for (const auto& [key, text] : options.flags) {
    const KeySpec* spec = schema.Find(key);
    if (spec == nullptr) return InvalidArgument("--set: unknown key '" + key + "'" + Suggest(schema, key));
    GOVERN_RETURN_IF_ERROR(set(*spec, text, Origin{Origin::Kind::kFlag, "--set " + key}));
  }
  return cfg;
}

const Config::Value& Config::Get(std::string_view key, Type type) const {
  auto it = values_.find(key);
  assert(it != values_.end() && "undeclared configuration key");
  assert((it->second.spec->type == type || (type == Type::kString && it->second.spec->type == Type::kEnum)) &&
         "configuration key read as the wrong type");
  (void)type;
  return it->second;
}

const std::string& Config::GetString(std::string_view key) const { return Get(key, Type::kString).text; }
int64_t Config::GetInt(std::string_view key) const { return Get(key, Type::kInt).number; }
bool Config::GetBool(std::string_view key) const { return Get(key, Type::kBool).number != 0; }
std::chrono::milliseconds Config::GetDuration(std::string_view key) const {
  return std::chrono::milliseconds(Get(key, Type::kDuration).number);
}
int64_t Config::GetBytes(std::string_view key) const { return Get(key, Type::kBytes).number; }
std::vector<std::string> Config::GetStringList(std::string_view key) const {
  return Get(key, Type::kStringList).list;
}
const Origin& Config::OriginOf(std::string_view key) const {
  auto it = values_.find(key);
  assert(it != values_.end());
  return it->second.origin;
}

std::string Config::Describe() const {
  std::string out;
  for (const auto& [key, v] : values_) {
    out += key + " = ";
    out += v.spec->secret && !v.text.empty() ? "********" : "\"" + v.text + "\"";
    switch (v.origin.kind) {
      case Origin::Kind::kDefault: out += "  # default"; break;
      default: out += "  # " + v.origin.where; break;
    }
    out += '\n';
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ProcessEnv() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.substr(0, 7) != "GOVERN_") continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace_back(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return out;
}

}  // namespace govern::config
