// Durable whole-file writes: a new file written and fsync'd, or a file replaced so that a crash leaves
// either the old content or the new, complete, never a mix.
//
// Thread-safety: the functions are safe to call from many threads; two callers replacing the same
// path at once each leave a whole file (the last rename wins).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace govern {

// Creates `path` with `mode`, refusing to overwrite (AlreadyExists when it exists), writes `data` and
// fsyncs the file. A failure after the create leaves a partial file behind: callers that need
// all-or-nothing use ReplaceFileDurably.
Status WriteNewFile(const std::string& path, std::string_view data, mode_t mode);

// Replaces `path` with `data`: a temporary file beside it (`path.tmp.<pid>`), written and fsync'd,
// renamed over `path`, then the directory fsync'd so the rename itself survives a power cut. On
// failure `path` is unchanged and the temporary file removed.
Status ReplaceFileDurably(const std::string& path, std::string_view data, mode_t mode = 0644);

// fsyncs the directory `dir`, so the names created, renamed or removed in it survive a power cut (a
// file's own fsync does not cover its directory entry).
Status SyncDirectory(const std::string& dir);

}  // namespace govern
