// The values Govern's Parquet writer takes and its reader returns: a flat Schema of typed columns and
// ColumnVector, one column's values for a run of rows with their nulls. A ColumnVector is a plain value
// (movable, copyable, not synchronised).
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace govern::parquet {

// Column types and how each is stored in the file:
//   kBoolean          BOOLEAN
//   kInt32            INT32
//   kInt64            INT64
//   kDouble           DOUBLE
//   kString           BYTE_ARRAY, logical type STRING (converted type UTF8)
//   kTimestampMicros  INT64, logical type TIMESTAMP(isAdjustedToUTC=true, unit=MICROS): microseconds
//                     since the Unix epoch, UTC
enum class Type { kBoolean, kInt32, kInt64, kDouble, kString, kTimestampMicros };

std::string_view TypeName(Type type);

struct Column {
  std::string name;
  Type type = Type::kInt64;
  bool optional = false;  // OPTIONAL (may hold nulls) or REQUIRED
};

// Top-level columns only: Govern writes and reads flat schemas.
using Schema = std::vector<Column>;

struct KeyValue {
  std::string key;
  std::string value;
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};

// One decoded statistic bound: bool, int32, int64 (also timestamps), double or string.
using Scalar = std::variant<bool, int32_t, int64_t, double, std::string>;

// One column's values, row by row. A null row still occupies a slot (holding a zero value), so row i
// of every column of a batch is the same row. Appending a value of the wrong type is a programming
// error (asserted); the Writer checks types against its schema.
class ColumnVector {
 public:
  explicit ColumnVector(Type type = Type::kInt64) : type_(type) {
    if (type_ == Type::kString) offsets_.push_back(0);
  }

  Type type() const { return type_; }
  size_t size() const { return size_; }
  int64_t null_count() const { return null_count_; }
  // Bytes of string data held (0 for other types).
  size_t string_bytes() const { return bytes_.size(); }

  void Reserve(size_t rows);
  void Clear();

  void AppendNull();
  void AppendBool(bool v);
  void AppendInt32(int32_t v);
  void AppendInt64(int64_t v);  // kInt64 and kTimestampMicros
  void AppendDouble(double v);
  void AppendString(std::string_view v);

  bool IsNull(size_t i) const { return !nulls_.empty() && nulls_[i] != 0; }
  bool GetBool(size_t i) const { return bools_[i] != 0; }
  int32_t GetInt32(size_t i) const { return i32_[i]; }
  int64_t GetInt64(size_t i) const { return i64_[i]; }
  double GetDouble(size_t i) const { return f64_[i]; }
  std::string_view GetString(size_t i) const {
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }

  // Raw storage for encoders: one element per row (zero for nulls).
  const uint8_t* bool_data() const { return bools_.data(); }
  const int32_t* int32_data() const { return i32_.data(); }
  const int64_t* int64_data() const { return i64_.data(); }
  const double* double_data() const { return f64_.data(); }

  friend bool operator==(const ColumnVector& a, const ColumnVector& b);

 private:
  void MarkValid();

  Type type_;
  size_t size_ = 0;
  int64_t null_count_ = 0;
  std::vector<uint8_t> nulls_;  // empty until the first null, then one byte per row (1 = null)
  std::vector<uint8_t> bools_;
  std::vector<int32_t> i32_;
  std::vector<int64_t> i64_;
  std::vector<double> f64_;
  std::vector<uint64_t> offsets_;  // strings: row i is bytes_[offsets_[i], offsets_[i+1])
  std::string bytes_;
};

}  // namespace govern::parquet
