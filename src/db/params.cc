// Params: building the libpq parameter arrays.
#include "db/params.h"

#include <charconv>
#include <cstring>

namespace govern::db {

Params& Params::AddTyped(std::string value, unsigned int type) {
  values_.push_back(std::move(value));
  null_.push_back(false);
  types_.push_back(type);
  return *this;
}

Params& Params::Add(std::string_view v) {
  if (v.find('\0') != std::string_view::npos && error_.ok()) {
    error_ = InvalidArgument("parameter $" + std::to_string(values_.size() + 1) +
                             " contains a NUL byte, which PostgreSQL text cannot hold (use bytea)");
  }
  return AddTyped(std::string(v), kUntyped);
}

Params& Params::Add(bool v) { return AddTyped(v ? "t" : "f", kBool); }

Params& Params::Add(double v) {
  char buf[32];
  // Shortest representation that reads back to the same double.
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return AddTyped(std::string(buf, r.ptr), kFloat8);
}

Params& Params::Add(std::nullopt_t) {
  values_.emplace_back();
  null_.push_back(true);
  types_.push_back(kUntyped);
  return *this;
}

Params& Params::Add(Bytea v) { return AddTyped(std::string(v.data), kBytea); }

Params::Raw Params::raw() const {
  Raw r;
  size_t n = values_.size();
  r.values.resize(n);
  r.lengths.resize(n);
  r.formats.resize(n);
  r.types = types_;
  for (size_t i = 0; i < n; ++i) {
    r.values[i] = null_[i] ? nullptr : values_[i].c_str();
    r.lengths[i] = static_cast<int>(values_[i].size());
    r.formats[i] = types_[i] == kBytea ? 1 : 0;
  }
  return r;
}

}  // namespace govern::db
