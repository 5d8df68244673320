// The container of a signed bundle: a strict, bounded POSIX ustar reader and writer (regular files
// only) and bounded gzip, so a bundle is an ordinary .tar.gz that `tar tzf` lists.
//
// The reader is for outside input. It accepts only what WriteTar writes in spirit: POSIX ustar headers
// ("ustar\0" "00") with valid checksums, regular files, names that pass ValidatePath (no prefix field),
// zero padding, the two-zero-block end marker and nothing but zeros after it. Anything else is refused
// with a Status whose code says the kind of problem:
//   kDataLoss           truncated or malformed (bad header, checksum, gzip stream, missing end marker)
//   kResourceExhausted  over a limit (entries, one entry's size, the unpacked total)
//   kInvalidArgument    a name that is not a safe relative path (absolute, "..", ".", empty parts)
//   kAlreadyExists      the same name twice
//   kUnimplemented      an entry that is not a regular file (directory, link, device, pax/GNU header)
// and a message naming the entry and byte offset. Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::bundle {

struct TarLimits {
  size_t max_entries = 1024;
  size_t max_entry_bytes = size_t{64} << 20;
  size_t max_total_bytes = size_t{128} << 20;  // sum of entry sizes
};

struct TarEntry {
  std::string name;
  std::string data;
};

// ok when `name` is a safe relative path: 1..100 bytes of printable ASCII without '\\', parts separated
// by single '/', no empty, "." or ".." part, no leading or trailing '/'. kInvalidArgument otherwise.
Status ValidatePath(std::string_view name);

// Writes the entries in the given order, each a regular file with mode 0644, owner 0/0 and `mtime`
// (seconds since the epoch), then the end marker. Refuses invalid or duplicate names.
Result<std::string> WriteTar(const std::vector<TarEntry>& entries, int64_t mtime);

// Reads an archive written as above (see the header comment for what is refused).
Result<std::vector<TarEntry>> ReadTar(std::string_view archive, const TarLimits& limits);

// True when `bytes` starts with the gzip magic (1f 8b).
bool IsGzip(std::string_view bytes);

// One gzip member, best compression, no name and mtime 0, so equal input gives equal output.
Result<std::string> Gzip(std::string_view data);

// Decompresses exactly one gzip member. More than `max_out` bytes of output is kResourceExhausted; a
// corrupt, truncated or trailing-garbage stream is kDataLoss.
Result<std::string> Gunzip(std::string_view gz, size_t max_out);

}  // namespace govern::bundle
