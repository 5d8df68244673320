// A small, bounded XML reader for the few S3 response shapes Govern reads, and the one body it writes.
//
// The reader handles elements, attributes (skipped), character data with the five predefined
// entities and numeric character references, comments and the XML declaration. It refuses DOCTYPE
// (so no entity definitions or external entities can exist), CDATA, processing instructions other than
// the declaration, inputs over 32 MiB, nesting deeper than 32 and more than 1,000,000 elements, each
// with a kInvalidArgument/kDataLoss naming the byte offset. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/objstore/store.h"

namespace govern::objstore::xml {

struct Element {
  std::string name;  // local name, any namespace prefix removed
  std::string text;  // decoded character data directly inside this element
  std::vector<Element> children;

  // The first child called `name`, or nullptr.
  const Element* Child(std::string_view child_name) const;
  // The text of the first child called `name`, or nullopt.
  std::optional<std::string_view> ChildText(std::string_view child_name) const;
};

// Parses a whole document into its root element.
Result<Element> Parse(std::string_view doc);

// <Error><Code>NoSuchKey</Code><Message>...</Message></Error>
struct S3Error {
  std::string code;
  std::string message;
  std::string resource;
  std::string request_id;
};
// Reads an S3 error body. kDataLoss if it is not an <Error> document.
Result<S3Error> ParseError(std::string_view doc);

// ListObjectsV2 result page.
struct ListPage {
  std::vector<ObjectInfo> objects;  // etag without quotes
  bool is_truncated = false;
  std::string next_continuation_token;  // set when is_truncated
};
Result<ListPage> ParseListObjectsV2(std::string_view doc);

// <InitiateMultipartUploadResult>...<UploadId>id</UploadId>: the upload id.
Result<std::string> ParseInitiateMultipartUpload(std::string_view doc);

// The CompleteMultipartUpload request body. `etags` are as the server returned them (quotes kept).
std::string CompleteMultipartUploadBody(const std::vector<std::string>& etags);

// Escapes &, <, >, " and ' for character data.
std::string Escape(std::string_view s);

}  // namespace govern::objstore::xml
