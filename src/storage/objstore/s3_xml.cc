// The bounded XML reader and the S3 response shapes built on it.
#include "storage/objstore/s3_xml.h"

#include <charconv>

namespace govern::objstore::xml {
namespace {

constexpr size_t kMaxDocBytes = 32u << 20;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxElements = 1'000'000;

bool IsNameChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-' || c == '.' || c == ':';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view doc) : s_(doc) {}

  Result<Element> Document() {
    if (s_.size() > kMaxDocBytes) return Error("document larger than 32 MiB");
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    GOVERN_RETURN_IF_ERROR(Misc());
    if (pos_ >= s_.size() || s_[pos_] != '<') return Error("expected the root element");
    Element root;
    GOVERN_RETURN_IF_ERROR(ParseElement(root, 0));
    GOVERN_RETURN_IF_ERROR(Misc());
    if (pos_ != s_.size()) return Error("content after the root element");
    return root;
  }

 private:
  Status Error(std::string_view what) const {
    return DataLoss("xml: " + std::string(what) + " at byte " + std::to_string(pos_));
  }

  bool StartsWith(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }

  // Whitespace, comments and the XML declaration, outside or between elements.
  Status Misc() {
    for (;;) {
      SkipSpace();
      if (StartsWith("<?xml")) {
        const size_t end = s_.find("?>", pos_);
        if (end == std::string_view::npos) return Error("unterminated XML declaration");
        pos_ = end + 2;
      } else if (StartsWith("<!--")) {
        GOVERN_RETURN_IF_ERROR(Comment());
      } else if (StartsWith("<!")) {
        return Error("DOCTYPE and other declarations are not accepted");
      } else if (StartsWith("<?")) {
        return Error("processing instructions are not accepted");
      } else {
        return OkStatus();
      }
    }
  }

  Status Comment() {
    const size_t end = s_.find("-->", pos_ + 4);
    if (end == std::string_view::npos) return Error("unterminated comment");
    pos_ = end + 3;
    return OkStatus();
  }

  Result<std::string> Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    if (pos_ == start) return Error("expected a name");
    std::string_view name = s_.substr(start, pos_ - start);
    const size_t colon = name.rfind(':');
    if (colon != std::string_view::npos) name = name.substr(colon + 1);
    return std::string(name);
  }

  // Decodes character data up to the next '<' into `out`.
  Status Text(std::string& out) {
    while (pos_ < s_.size() && s_[pos_] != '<') {
      const char c = s_[pos_];
      if (c != '&') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      const size_t semi = s_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 12) return Error("bad entity reference");
      const std::string_view ent = s_.substr(pos_ + 1, semi - pos_ - 1);
      if (ent == "lt") {
        out.push_back('<');
      } else if (ent == "gt") {
        out.push_back('>');
      } else if (ent == "amp") {
        out.push_back('&');
      } else if (ent == "quot") {
        out.push_back('"');
      } else if (ent == "apos") {
        out.push_back('\'');
      } else if (ent.size() >= 2 && ent[0] == '#') {
        const bool hex = ent[1] == 'x';
        const std::string_view digits = ent.substr(hex ? 2 : 1);
        uint32_t cp = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
        if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || cp == 0 ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Error("bad character reference");
        }
        AppendUtf8(out, cp);
      } else {
        return Error("unknown entity &" + std::string(ent) + ";");
      }
      pos_ = semi + 1;
    }
    return OkStatus();
  }

  // Skips attributes up to '>' or '/>'; returns true when the tag closed itself.
  Result<bool> Attributes() {
    for (;;) {
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unterminated tag");
      if (s_[pos_] == '>') {
        ++pos_;
        return false;
      }
      if (StartsWith("/>")) {
        pos_ += 2;
        return true;
      }
      GOVERN_ASSIGN_OR_RETURN(std::string ignored, Name());
      (void)ignored;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '=') return Error("expected '=' in an attribute");
      ++pos_;
      SkipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return Error("expected a quoted value");
      const size_t end = s_.find(s_[pos_], pos_ + 1);
      if (end == std::string_view::npos) return Error("unterminated attribute value");
      pos_ = end + 1;
    }
  }

  Status ParseElement(Element& el, int depth) {
    if (depth >= kMaxDepth) return Error("elements nested deeper than 32");
    if (++elements_ > kMaxElements) return Error("more than 1,000,000 elements");
    ++pos_;  // '<'
    GOVERN_ASSIGN_OR_RETURN(el.name, Name());
    GOVERN_ASSIGN_OR_RETURN(bool closed, Attributes());
    if (closed) return OkStatus();
    for (;;) {
      GOVERN_RETURN_IF_ERROR(Text(el.text));
      if (pos_ >= s_.size()) return Error("unterminated element <" + el.name + ">");
      if (StartsWith("</")) {
        pos_ += 2;
        GOVERN_ASSIGN_OR_RETURN(std::string end_name, Name());
        if (end_name != el.name) return Error("</" + end_name + "> closes <" + el.name + ">");
        SkipSpace();
        if (pos_ >= s_.size() || s_[pos_] != '>') return Error("expected '>'");
        ++pos_;
        return OkStatus();
      }
      if (StartsWith("<!--")) {
        GOVERN_RETURN_IF_ERROR(Comment());
      } else if (StartsWith("<!") || StartsWith("<?")) {
        return Error("CDATA, declarations and processing instructions are not accepted");
      } else {
        el.children.emplace_back();
        GOVERN_RETURN_IF_ERROR(ParseElement(el.children.back(), depth + 1));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t elements_ = 0;
};

std::string Unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  // Some servers send the quotes escaped as &quot; (already decoded) or not at all: both end here.
  return std::string(etag);
}

Result<Element> ParseRoot(std::string_view doc, std::string_view want) {
  GOVERN_ASSIGN_OR_RETURN(Element root, Parse(doc));
  if (root.name != want) {
    return DataLoss("s3 xml: expected <" + std::string(want) + ">, got <" + root.name + ">");
  }
  return root;
}

}  // namespace

const Element* Element::Child(std::string_view child_name) const {
  for (const Element& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

std::optional<std::string_view> Element::ChildText(std::string_view child_name) const {
  const Element* c = Child(child_name);
  if (c == nullptr) return std::nullopt;
  return std::string_view(c->text);
}

Result<Element> Parse(std::string_view doc) { return Parser(doc).Document(); }

Result<S3Error> ParseError(std::string_view doc) {
  GOVERN_ASSIGN_OR_RETURN(Element root, ParseRoot(doc, "Error"));
  S3Error e;
  e.code = std::string(root.ChildText("Code").value_or(""));
  e.message = std::string(root.ChildText("Message").value_or(""));
  e.resource = std::string(root.ChildText("Resource").value_or(""));
  e.request_id = std::string(root.ChildText("RequestId").value_or(""));
  if (e.code.empty()) return DataLoss("s3 xml: <Error> without <Code>");
  return e;
}

Result<ListPage> ParseListObjectsV2(std::string_view doc) {
  GOVERN_ASSIGN_OR_RETURN(Element root, ParseRoot(doc, "ListBucketResult"));
  ListPage page;
  for (const Element& c : root.children) {
    if (c.name != "Contents") continue;
    ObjectInfo info;
    const auto key = c.ChildText("Key");
    if (!key) return DataLoss("s3 xml: <Contents> without <Key>");
    info.key = std::string(*key);
    const auto size = c.ChildText("Size");
    if (!size) return DataLoss("s3 xml: <Contents> for \"" + info.key + "\" without <Size>");
    auto [p, ec] = std::from_chars(size->data(), size->data() + size->size(), info.size);
    if (size->empty() || ec != std::errc() || p != size->data() + size->size()) {
      return DataLoss("s3 xml: bad <Size> \"" + std::string(*size) + "\" for \"" + info.key + "\"");
    }
    info.etag = Unquote(c.ChildText("ETag").value_or(""));
    page.objects.push_back(std::move(info));
  }
  const auto truncated = root.ChildText("IsTruncated");
  page.is_truncated = truncated && *truncated == "true";
  if (page.is_truncated) {
    const auto token = root.ChildText("NextContinuationToken");
    if (!token || token->empty())
      return DataLoss("s3 xml: truncated listing without <NextContinuationToken>");
    page.next_continuation_token = std::string(*token);
  }
  return page;
}

Result<std::string> ParseInitiateMultipartUpload(std::string_view doc) {
  GOVERN_ASSIGN_OR_RETURN(Element root, ParseRoot(doc, "InitiateMultipartUploadResult"));
  const auto id = root.ChildText("UploadId");
  if (!id || id->empty()) return DataLoss("s3 xml: <InitiateMultipartUploadResult> without <UploadId>");
  return std::string(*id);
}

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string CompleteMultipartUploadBody(const std::vector<std::string>& etags) {
  std::string out = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    out += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + Escape(etags[i]) +
           "</ETag></Part>";
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

}  // namespace govern::objstore::xml
