// LocalStore: objects as files under one directory (key "a/b.parquet" is <root>/a/b.parquet).
//
// Put writes a temporary file (".govern-tmp-*") beside the target, fsyncs it, renames it over the
// target and fsyncs the directory, creating (and fsyncing) missing parent directories first: after an
// ok return the object survives power loss, and a crash at any point leaves the old object or the new
// one, never a torn file. A crash can leave a temporary file behind; List() never shows them and
// RemoveStaleTempFiles() deletes them.
//
// Thread-safe: concurrent Puts of the same key end with one of the values, whole. Another process
// writing the same directory is not coordinated with (Govern runs one compactor per archive).
#pragma once

#include <memory>
#include <string>

#include "storage/objstore/store.h"

namespace govern::objstore {

class LocalStore final : public Store {
 public:
  // Opens (creating it if needed) the directory `root`.
  static Result<std::unique_ptr<LocalStore>> Open(std::string root);

  Status Put(std::string_view key, std::string_view bytes) override;
  Status PutFile(std::string_view key, const std::string& path) override;
  Result<std::string> Get(std::string_view key) override;
  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Result<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  Status Delete(std::string_view key) override;

  // Deletes temporary files a crashed Put left behind. Call at startup, before any Put.
  Status RemoveStaleTempFiles();

  const std::string& root() const { return root_; }

 private:
  explicit LocalStore(std::string root) : root_(std::move(root)) {}
  // Writes a temp file through `fill` (which writes to the fd), then fsync, rename, fsync dir.
  template <typename Fill>
  Status PutWith(std::string_view key, Fill&& fill);

  std::string root_;
};

}  // namespace govern::objstore
