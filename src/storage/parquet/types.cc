// ColumnVector and the type names.
#include "storage/parquet/types.h"

#include <cstring>

namespace govern::parquet {

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kBoolean:
      return "boolean";
    case Type::kInt32:
      return "int32";
    case Type::kInt64:
      return "int64";
    case Type::kDouble:
      return "double";
    case Type::kString:
      return "string";
    case Type::kTimestampMicros:
      return "timestamp_us";
  }
  return "unknown";
}

void ColumnVector::Reserve(size_t rows) {
  switch (type_) {
    case Type::kBoolean:
      bools_.reserve(rows);
      break;
    case Type::kInt32:
      i32_.reserve(rows);
      break;
    case Type::kInt64:
    case Type::kTimestampMicros:
      i64_.reserve(rows);
      break;
    case Type::kDouble:
      f64_.reserve(rows);
      break;
    case Type::kString:
      offsets_.reserve(rows + 1);
      break;
  }
}

void ColumnVector::Clear() {
  size_ = 0;
  null_count_ = 0;
  nulls_.clear();
  bools_.clear();
  i32_.clear();
  i64_.clear();
  f64_.clear();
  offsets_.clear();
  bytes_.clear();
  if (type_ == Type::kString) offsets_.push_back(0);
}

void ColumnVector::MarkValid() {
  if (!nulls_.empty()) nulls_.push_back(0);
  ++size_;
}

void ColumnVector::AppendNull() {
  if (nulls_.empty()) nulls_.assign(size_, 0);
  nulls_.push_back(1);
  ++null_count_;
  ++size_;
  switch (type_) {
    case Type::kBoolean:
      bools_.push_back(0);
      break;
    case Type::kInt32:
      i32_.push_back(0);
      break;
    case Type::kInt64:
    case Type::kTimestampMicros:
      i64_.push_back(0);
      break;
    case Type::kDouble:
      f64_.push_back(0);
      break;
    case Type::kString:
      offsets_.push_back(bytes_.size());
      break;
  }
}

void ColumnVector::AppendBool(bool v) {
  assert(type_ == Type::kBoolean);
  bools_.push_back(v ? 1 : 0);
  MarkValid();
}

void ColumnVector::AppendInt32(int32_t v) {
  assert(type_ == Type::kInt32);
  i32_.push_back(v);
  MarkValid();
}

void ColumnVector::AppendInt64(int64_t v) {
  assert(type_ == Type::kInt64 || type_ == Type::kTimestampMicros);
  i64_.push_back(v);
  MarkValid();
}

void ColumnVector::AppendDouble(double v) {
  assert(type_ == Type::kDouble);
  f64_.push_back(v);
  MarkValid();
}

void ColumnVector::AppendString(std::string_view v) {
  assert(type_ == Type::kString);
  bytes_.append(v);
  offsets_.push_back(bytes_.size());
  MarkValid();
}

bool operator==(const ColumnVector& a, const ColumnVector& b) {
  if (a.type_ != b.type_ || a.size_ != b.size_ || a.null_count_ != b.null_count_) return false;
  for (size_t i = 0; i < a.size_; ++i) {
    if (a.IsNull(i) != b.IsNull(i)) return false;
    if (a.IsNull(i)) continue;
    switch (a.type_) {
      case Type::kBoolean:
        if (a.GetBool(i) != b.GetBool(i)) return false;
        break;
      case Type::kInt32:
        if (a.GetInt32(i) != b.GetInt32(i)) return false;
        break;
      case Type::kInt64:
      case Type::kTimestampMicros:
        if (a.GetInt64(i) != b.GetInt64(i)) return false;
        break;
      case Type::kDouble: {
        double x = a.GetDouble(i), y = b.GetDouble(i);
        if (std::memcmp(&x, &y, sizeof x) != 0) return false;  // bit-exact, so NaN == NaN
        break;
      }
      case Type::kString:
        if (a.GetString(i) != b.GetString(i)) return false;
        break;
    }
  }
  return true;
}

}  // namespace govern::parquet
