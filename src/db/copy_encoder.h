// CopyEncoder: writes rows in PostgreSQL's binary COPY format (COPY ... FROM STDIN (FORMAT binary)).
//
// The format: an 11-byte signature, int32 flags, int32 header-extension length; then per row an int16
// field count and per field an int32 length (-1 for NULL) followed by the value in the type's binary
// send format, all integers big-endian; then an int16 -1 trailer. Supported types: int2, int4, int8,
// float8, bool, text/varchar, bytea, timestamptz (int64 microseconds since 2000-01-01 UTC) and jsonb
// (a version byte 1, then the JSON text). The caller must write fields in the table's column order and
// with the column's exact type: binary COPY does no conversion.
//
// Mistakes (a NUL in text, a row with the wrong number of fields) are remembered in status() and
// the first one wins; the bytes are then not to be sent. Not synchronised; one writer per encoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::db {

class CopyEncoder {
 public:
  CopyEncoder();  // the buffer starts with the header

  // Starts a row of `fields` values; checks that the previous row got all of its fields.
  CopyEncoder& Row(int16_t fields);
  CopyEncoder& Null();
  CopyEncoder& Int16(int16_t v);
  CopyEncoder& Int32(int32_t v);
  CopyEncoder& Int64(int64_t v);
  CopyEncoder& Float8(double v);
  CopyEncoder& Bool(bool v);
  CopyEncoder& Text(std::string_view v);   // UTF-8, no NUL bytes
  CopyEncoder& Bytea(std::string_view v);  // any bytes
  CopyEncoder& TimestampUnixMicros(int64_t micros_since_1970);
  CopyEncoder& Jsonb(std::string_view json_text);

  // Ends the stream: checks the last row and appends the trailer.
  void Finish();

  // Encoded bytes not yet taken. Take() hands them over and keeps the buffer's capacity.
  const std::string& buffer() const { return buf_; }
  void Take(std::string* out);
  void ClearBuffer() { buf_.clear(); }

  int64_t rows() const { return rows_; }
  const Status& status() const { return status_; }

 private:
  bool Count();  // counts one field of the current row
  void Field(const void* data, size_t n);
  void Fixed(uint64_t v, int bytes);
  void BigEndian(uint64_t v, int bytes);
  void Fail(Status s);
  void CheckRowComplete();

  std::string buf_;
  int64_t rows_ = 0;
  int expected_ = 0;  // fields declared for the current row
  int written_ = 0;   // fields written in the current row
  bool finished_ = false;
  Status status_;
};

}  // namespace govern::db
