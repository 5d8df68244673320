// Status names and errno mapping.
#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace govern {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kCancelled: return "cancelled";
    case Code::kUnknown: return "unknown";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kDeadlineExceeded: return "deadline_exceeded";
    case Code::kNotFound: return "not_found";
    case Code::kAlreadyExists: return "already_exists";
    case Code::kPermissionDenied: return "permission_denied";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kFailedPrecondition: return "failed_precondition";
    case Code::kAborted: return "aborted";
    case Code::kOutOfRange: return "out_of_range";
    case Code::kUnimplemented: return "unimplemented";
    case Code::kInternal: return "internal";
    case Code::kUnavailable: return "unavailable";
    case Code::kDataLoss: return "data_loss";
    case Code::kUnauthenticated: return "unauthenticated";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

Status ErrnoStatus(int err, std::string_view what) {
  char buf[256];
  // GNU strerror_r returns the message pointer (which may not be buf).
  const char* text = strerror_r(err, buf, sizeof buf);
  std::string msg(what);
  msg += ": ";
  msg += text;
  Code code = Code::kInternal;
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      code = Code::kResourceExhausted;
      break;
    case ENOENT: code = Code::kNotFound; break;
    case EEXIST: code = Code::kAlreadyExists; break;
    case EACCES:
    case EPERM:
    case EROFS:
      code = Code::kPermissionDenied;
      break;
    case EINVAL:
    case ENAMETOOLONG:
      code = Code::kInvalidArgument;
      break;
    case EAGAIN:
    case EINTR:
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
      code = Code::kUnavailable;
      break;
    case ETIMEDOUT: code = Code::kDeadlineExceeded; break;
    case EIO: code = Code::kDataLoss; break;
    default: break;
  }
  return Status(code, std::move(msg));
}

}  // namespace govern
