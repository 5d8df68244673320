// Fuzz target for the recovery and reader paths: the input is one segment file. It is scanned as
// bytes, then written into a fresh log directory that Log::Open recovers and a Reader reads to the end.
// Nothing may crash; recovery either refuses with an error or yields records that all read back.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "base/log.h"
#include "storage/wal.h"
#include "storage/wal_format.h"

namespace {

// Syncs are pointless for a throwaway directory and would make fuzzing crawl.
class NoSyncFs : public govern::wal::Fs {
 public:
  govern::Status Fdatasync(int) override { return govern::OkStatus(); }
  govern::Status Fsync(int) override { return govern::OkStatus(); }
  govern::Status SyncDir(const std::string&) override { return govern::OkStatus(); }
};

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    govern::log::Configure(govern::log::Level::kError, govern::log::Format::kText);
    return true;
  }();
  (void)quiet;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto scan = govern::wal::ScanSegment(bytes);
  if (scan.ok()) Check(scan->valid_end <= size);

  static NoSyncFs fs;
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("wal-fuzz-" + std::to_string(::getpid()));
    return d.string();
  }();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  uint64_t first = scan.ok() ? scan->first_seq : 1;
  {
    std::ofstream out(dir + "/" + govern::wal::SegmentFileName(first == 0 ? 1 : first), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  govern::wal::Options opt;
  opt.fs = &fs;
  opt.preallocate = false;
  opt.segment_size = 1 << 16;
  auto log = govern::wal::Log::Open(dir, opt);
  if (!log.ok()) {
    Check(!scan.ok());  // recovery refuses only what the scanner refuses
    return 0;
  }
  Check(scan.ok() && (*log)->DurableSequence() == scan->first_seq + scan->count - 1);
  auto reader = (*log)->NewReader((*log)->FirstSequence());
  Check(reader.ok());
  uint64_t n = 0;
  for (;;) {
    auto r = (*reader)->Next();
    Check(r.ok());
    if (!r->has_value()) break;
    ++n;
  }
  Check(n == scan->count);
  // The recovered log must take appends.
  auto seq = (*log)->Append("fuzz");
  Check(seq.ok() && *seq == scan->first_seq + scan->count);
  return 0;
}
