// Fuzz target: every S3 response reader on arbitrary bytes must return a value or an error, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/objstore/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view doc(reinterpret_cast<const char*>(data), size);
  using namespace govern::objstore::xml;
  (void)Parse(doc);
  (void)ParseError(doc);
  (void)ParseListObjectsV2(doc);
  (void)ParseInitiateMultipartUpload(doc);
  return 0;
}
