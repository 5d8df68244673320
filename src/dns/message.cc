#include "dns/message.h"

#include "dns/wire.h"

namespace govern::dns {

Result<size_t> ReadName(std::span<const uint8_t> msg, size_t pos, std::string* out, bool lower) {
  if (out) out->clear();
  size_t after = 0;  // where the name at `pos` ends in the message (set at the first pointer)
  size_t total = 0;
  int jumps = 0;
  size_t limit = pos;  // a pointer must point before the place it is read from
  for (;;) {
    if (pos >= msg.size()) return InvalidArgument("name runs past the message");
    uint8_t len = msg[pos];
    if ((len & 0xc0) == 0xc0) {
      if (pos + 1 >= msg.size()) return InvalidArgument("truncated compression pointer");
      size_t target = static_cast<size_t>(len & 0x3f) << 8 | msg[pos + 1];
      if (after == 0) after = pos + 2;
      if (target >= limit || ++jumps > 128) return InvalidArgument("bad compression pointer");
      limit = target;
      pos = target;
      continue;
    }
    if (len & 0xc0) return InvalidArgument("bad label type");
    if (pos + 1 + len > msg.size()) return InvalidArgument("label runs past the message");
    total += 1 + len;
    if (total > kMaxName) return InvalidArgument("name longer than 255 octets");
    if (out) {
      out->push_back(static_cast<char>(len));
      for (size_t i = 0; i < len; ++i) {
        char c = static_cast<char>(msg[pos + 1 + i]);
        if (lower && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        out->push_back(c);
      }
    }
    if (len == 0) {
      if (after == 0) after = pos + 1;
      return after;
    }
    pos += 1 + len;
  }
}

Result<Message> ParseMessage(std::span<const uint8_t> msg) {
  Message m;
  if (msg.size() < kHeaderSize) return InvalidArgument("shorter than a header");
  m.id = Get16(&msg[0]);
  m.flags = Get16(&msg[2]);
  m.opcode = (m.flags >> 11) & 0xf;
  m.rcode = m.flags & 0xf;
  uint16_t qd = Get16(&msg[4]), counts[3] = {Get16(&msg[6]), Get16(&msg[8]), Get16(&msg[10])};
  if (qd > 1) return InvalidArgument("more than one question");
  size_t pos = kHeaderSize;
  if (qd == 1) {
    GOVERN_ASSIGN_OR_RETURN(size_t next, ReadName(msg, pos, &m.qname));
    (void)ReadName(msg, pos, &m.qname_raw, false);
    if (next + 4 > msg.size()) return InvalidArgument("truncated question");
    m.qtype = Get16(&msg[next]);
    m.qclass = Get16(&msg[next + 2]);
    pos = next + 4;
    m.has_question = true;
  }
  m.question_end = pos;
  std::vector<MessageRecord>* sections[3] = {&m.answer, &m.authority, &m.additional};
  for (int s = 0; s < 3; ++s) {
    for (uint16_t i = 0; i < counts[s]; ++i) {
      MessageRecord r;
      r.start = pos;
      GOVERN_ASSIGN_OR_RETURN(size_t next, ReadName(msg, pos, &r.owner));
      if (next + 10 > msg.size()) return InvalidArgument("truncated record");
      r.type = Get16(&msg[next]);
      r.klass = Get16(&msg[next + 2]);
      r.ttl = Get32(&msg[next + 4]);
      r.rdlength = Get16(&msg[next + 8]);
      r.rdata_start = next + 10;
      if (r.rdata_start + r.rdlength > msg.size()) return InvalidArgument("RDATA runs past the message");
      r.end = r.rdata_start + r.rdlength;
      pos = r.end;
      sections[s]->push_back(std::move(r));
    }
  }
  if (pos != msg.size()) return InvalidArgument("trailing bytes after the last record");
  return m;
}

}  // namespace govern::dns
