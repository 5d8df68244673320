// Fuzz target: any bytes as a Parquet file. Open must return a clear error or a Reader, and reading
// every column of every row group must do the same, within the (small) limits set here.
#include <cstddef>
#include <cstdint>
#include <string>

#include "storage/parquet/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::parquet;
  ReaderOptions options;
  options.max_footer_bytes = 1 << 20;
  options.max_page_bytes = 1 << 20;
  options.max_row_group_rows = 1 << 16;
  options.max_column_bytes = 1 << 22;
  auto reader = Reader::Open(MemorySource(std::string(reinterpret_cast<const char*>(data), size)), options);
  if (!reader.ok()) return 0;
  const Reader& r = **reader;
  for (size_t g = 0; g < r.row_groups().size(); ++g) {
    for (size_t c = 0; c < r.schema().size(); ++c) {
      auto column = r.ReadColumn(g, c);
      if (column.ok() && column->size() != static_cast<size_t>(r.row_groups()[g].num_rows)) __builtin_trap();
    }
  }
  return 0;
}
