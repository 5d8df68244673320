// Fuzz target for ParseExportLine: no input may crash it, and a line that parses formats back to a
// line that parses to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::audit;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto line = ParseExportLine(in);
  if (!line.ok()) return 0;
  std::string again;
  switch (line->kind) {
    case ExportLine::Kind::kHeader:
      again = FormatHeaderLine(line->header);
      break;
    case ExportLine::Kind::kEntry:
      again = FormatEntryLine(line->entry);
      break;
    case ExportLine::Kind::kCheckpoint:
      again = FormatCheckpointLine(line->checkpoint);
      break;
  }
  auto back = ParseExportLine(again);
  if (!back.ok() || back->kind != line->kind || back->header != line->header || back->entry != line->entry ||
      back->checkpoint != line->checkpoint) {
    std::abort();
  }
  return 0;
}
