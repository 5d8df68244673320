// `govern audit ...`: API keys, export, verification, checkpoints and retention.
#include "cli/audit_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "audit/export.h"
#include "cli/database.h"
#include "db/connection.h"
#include "db/migrator.h"
#include "net/http_client.h"
#include "services/audit/files.h"
#include "services/audit/schema.h"
#include "services/audit/store.h"
#include "services/keys/keys.h"

namespace govern::cli {
namespace {

namespace as = audit_service;

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  return 1;
}

// A connection to the database `govern serve` uses, with the audit tables in place.
class AuditStore : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) { return ServiceDatabase::Open(cfg, "audit", as::Migrations()); }
};

// --key: the verifier key text itself, or a file holding it (checkpoint.pub).
Result<std::vector<audit::VerifierKey>> LoadVerifierKeys(const std::string& arg) {
  std::string text = arg;
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    std::ifstream in(arg);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  GOVERN_ASSIGN_OR_RETURN(audit::VerifierKey key, audit::ParseVerifierKey(text));
  std::vector<audit::VerifierKey> keys;
  keys.push_back(std::move(key));
  return keys;
}

int PrintReport(const audit::Report& r, const std::string& what) {
  if (r.ok()) {
    std::printf(
        "ok: %s: %llu entries verified up to seq %llu, %llu checkpoints matched (%llu older than the "
        "entries kept)\n",
        what.c_str(), static_cast<unsigned long long>(r.entries_verified),
        static_cast<unsigned long long>(r.last_seq), static_cast<unsigned long long>(r.checkpoints_matched),
        static_cast<unsigned long long>(r.checkpoints_before_range));
    return 0;
  }
  std::printf("FAILED: %s: %s: first bad entry %llu", what.c_str(),
              std::string(audit::FailureName(r.failure)).c_str(),
              static_cast<unsigned long long>(r.first_bad_seq));
  if (r.last_bad_seq != r.first_bad_seq) {
    std::printf(" (entries %llu..%llu are suspect)", static_cast<unsigned long long>(r.first_bad_seq),
                static_cast<unsigned long long>(r.last_bad_seq));
  }
  std::printf("\n  %s\n  %llu entries verified before it\n", r.reason.c_str(),
              static_cast<unsigned long long>(r.entries_verified));
  return 1;
}

// An export file, with the checkpoint files of its organisation from `checkpoint_dir` when given.
Result<audit::Report> VerifyFile(const std::string& path, const std::vector<audit::VerifierKey>& keys,
                                 const std::string& checkpoint_dir) {
  std::vector<std::string> notes;
  if (!checkpoint_dir.empty()) {
    std::ifstream in(path);
    if (!in) return ErrnoStatus(errno, "read " + path);
    std::string line;
    if (!std::getline(in, line)) return InvalidArgument(path + " is empty");
    GOVERN_ASSIGN_OR_RETURN(audit::ExportLine header, audit::ParseExportLine(line));
    if (header.kind != audit::ExportLine::Kind::kHeader)
      return InvalidArgument(path + ": the first line is no header");
    GOVERN_ASSIGN_OR_RETURN(notes, as::ReadCheckpointFiles(checkpoint_dir, header.header.org));
  }
  return audit::VerifyExportFile(path, keys, notes);
}

}  // namespace

AuditCommand::AuditCommand(CLI::App& app) {
  audit_ = app.add_subcommand("audit", "Audit log: API keys, export, verify, checkpoints, retention");
  audit_->require_subcommand(1);
  keys_.emplace(*audit_, ServiceKeysCommand::Options{
                             .service = "audit",
                             .migrations = as::Migrations,
                             .table = &as::AuditKeyTable(),
                             .keys_help = "API keys (gva_): one organisation and scope each, stored hashed",
                             .org_help = "Organisation the key appends or reads as",
                             .scope_help = "append (write entries, make checkpoints) or read",
                             .scope = "append",
                             .revoke_help = "Revoke a key (by its id, from `keys list`)",
                             .key_id_help = "The key's id"});

  export_ = audit_->add_subcommand("export", "Write an organisation's chain as a verifiable NDJSON export");
  export_->add_option("--org", org_, "Organisation")->required();
  export_->add_flag("--from-db", from_db_, "Read PostgreSQL directly (the default when --url is not given)");
  export_->add_option("--url", url_, "Ask a running service instead: its base URL (http://127.0.0.1:7730)");
  export_->add_option("--key", key_, "A read key of the organisation (with --url)");
  export_->add_option("--out", out_, "Write here instead of stdout");

  verify_ =
      audit_->add_subcommand("verify", "Verify an export file offline, or a chain straight from PostgreSQL");
  verify_->add_option("file", file_, "An export file (from `govern audit export`)");
  verify_->add_option("--key", key_, "The checkpoint verifier key (GET /v1/audit/checkpoint-key), or a file");
  verify_->add_option("--checkpoints", checkpoints_,
                      "A directory of checkpoint files (<dir>/<org>/*.checkpoint)");
  verify_->add_option("--org", org_, "Verify this organisation's chain in PostgreSQL");

  checkpoint_ = audit_->add_subcommand("checkpoint", "Sign a checkpoint of an organisation's chain now");
  checkpoint_->add_option("--org", org_, "Organisation")->required();

  retention_ = audit_->add_subcommand("retention", "Set how long an organisation's entries are kept");
  retention_->add_option("--org", org_, "Organisation")->required();
  retention_->add_option("--keep", keep_, "90d, 12h, ..., forever, or default (audit.retention)")->required();
  retention_->add_flag("--apply", apply_, "Remove what is older now, instead of at the service's next pass");
}

bool AuditCommand::parsed() const { return audit_->parsed(); }

int AuditCommand::Run(const config::Config& cfg) {
  if (keys_->parsed()) return keys_->Run(cfg);
  if (export_->parsed()) return Export(cfg);
  if (verify_->parsed()) return Verify(cfg);
  if (checkpoint_->parsed()) return Checkpoint(cfg);
  if (retention_->parsed()) return Retention(cfg);
  return 2;
}

int AuditCommand::Export(const config::Config& cfg) {
  if (Status s = service_keys::ValidateOrg(org_); !s.ok()) return Fail(s);
  std::FILE* out = stdout;
  if (!out_.empty()) {
    out = std::fopen(out_.c_str(), "wb");
    if (out == nullptr) return Fail(ErrnoStatus(errno, "open " + out_));
  }
  auto finish = [&](Status s) {
    if (s.ok() && std::fflush(out) != 0) s = ErrnoStatus(errno, "write export");
    if (out != stdout) std::fclose(out);
    return s.ok() ? 0 : Fail(s);
  };
  if (!url_.empty()) {
    if (from_db_) return Fail(InvalidArgument("give --from-db or --url, not both"));
    net::HttpClient client(net::ClientOptions{.request_timeout = std::chrono::minutes(30),
                                              .max_response_bytes = size_t{16} << 30});
    net::ClientRequest req;
    std::string base = url_;
    while (!base.empty() && base.back() == '/') base.pop_back();
    req.url = base + "/v1/audit/" + org_ + "/export";
    if (!key_.empty()) req.headers.Set("Authorization", "Bearer " + key_);
    auto r = client.Send(std::move(req));
    if (!r.ok()) return finish(r.status().WithContext("GET " + base));
    if (r->status != 200) {
      return finish(Unavailable("the service answered " + std::to_string(r->status) + ": " + r->body));
    }
    if (std::fwrite(r->body.data(), 1, r->body.size(), out) != r->body.size()) {
      return finish(ErrnoStatus(errno, "write export"));
    }
    return finish(OkStatus());
  }
  AuditStore store;
  if (Status s = store.Open(cfg); !s.ok()) return finish(s);
  return finish(as::Export(store.conn(), org_, [&](std::string_view line) -> Status {
    if (std::fwrite(line.data(), 1, line.size(), out) != line.size() || std::fputc('\n', out) == EOF) {
      return ErrnoStatus(errno, "write export");
    }
    return OkStatus();
  }));
}

int AuditCommand::Verify(const config::Config& cfg) {
  if (!file_.empty() == !org_.empty()) {
    std::fprintf(stderr, "govern: give an export FILE (with --key) or --org, not both\n");
    return 2;
  }
  if (!file_.empty()) {
    if (key_.empty()) {
      std::fprintf(stderr, "govern: --key is required to check the export's signed checkpoints\n");
      return 2;
    }
    auto keys = LoadVerifierKeys(key_);
    if (!keys.ok()) return Fail(keys.status().WithContext("--key"));
    auto report = VerifyFile(file_, *keys, checkpoints_);
    if (!report.ok()) return Fail(report.status());
    return PrintReport(*report, file_);
  }
  AuditStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  std::vector<audit::VerifierKey> keys;
  if (!key_.empty()) {
    auto k = LoadVerifierKeys(key_);
    if (!k.ok()) return Fail(k.status().WithContext("--key"));
    keys = std::move(*k);
  } else {
    auto signer = as::LoadCheckpointSigner(cfg.GetString("audit.checkpoint_key"), store.data_dir());
    if (!signer.ok()) return Fail(signer.status().WithContext("checkpoint key"));
    keys = signer->verifier_keys();
  }
  std::string dir = checkpoints_.empty()
                        ? as::CheckpointDir(cfg.GetString("audit.checkpoint_dir"), store.data_dir())
                        : checkpoints_;
  auto notes = as::ReadCheckpointFiles(dir, org_);
  if (!notes.ok()) return Fail(notes.status());
  auto report = as::VerifyFromDatabase(store.conn(), org_, keys, *notes);
  if (!report.ok()) return Fail(report.status());
  return PrintReport(*report, "organisation " + org_ + " (" + std::to_string(notes->size()) +
                                  " checkpoint files in " + dir + ")");
}

int AuditCommand::Checkpoint(const config::Config& cfg) {
  AuditStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  auto signer = as::LoadCheckpointSigner(cfg.GetString("audit.checkpoint_key"), store.data_dir());
  if (!signer.ok()) return Fail(signer.status().WithContext("checkpoint key"));
  auto cp = as::MakeCheckpoint(store.conn(), org_, *signer, Clock::Real().UnixMicros());
  if (!cp.ok()) return Fail(cp.status());
  std::string dir = as::CheckpointDir(cfg.GetString("audit.checkpoint_dir"), store.data_dir());
  if (Status s = as::WriteCheckpointFile(dir, org_, cp->checkpoint.size, cp->note); !s.ok()) return Fail(s);
  std::fputs(cp->note.c_str(), stdout);
  std::fprintf(stderr, "%s checkpoint of %s at size %llu (also in %s)\n", cp->created ? "signed" : "existing",
               org_.c_str(), static_cast<unsigned long long>(cp->checkpoint.size), dir.c_str());
  return 0;
}

int AuditCommand::Retention(const config::Config& cfg) {
  if (Status s = service_keys::ValidateOrg(org_); !s.ok()) return Fail(s);
  AuditStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  std::optional<int64_t> keep;
  if (keep_ == "default") {
    if (Status s = as::ClearRetention(store.conn(), org_); !s.ok()) return Fail(s);
    auto d = as::ParseRetentionSeconds(cfg.GetString("audit.retention"));
    if (!d.ok()) return Fail(d.status());
    keep = *d;
    std::printf("%s: retention back to the default (audit.retention = %s)\n", org_.c_str(),
                cfg.GetString("audit.retention").c_str());
  } else {
    auto parsed = as::ParseRetentionSeconds(keep_);
    if (!parsed.ok()) return Fail(parsed.status());
    keep = *parsed;
    if (Status s = as::SetRetention(store.conn(), org_, keep); !s.ok()) return Fail(s);
    std::printf("%s: entries kept %s\n", org_.c_str(), keep ? ("for " + keep_).c_str() : "forever");
  }
  if (apply_ && keep) {
    auto removed = as::ApplyRetention(store.conn(), org_, Clock::Real().UnixMicros() - *keep * 1000000);
    if (!removed.ok()) return Fail(removed.status());
    std::printf("%s: removed %lld entries (up to the newest signed checkpoint, in runs of 16)\n",
                org_.c_str(), static_cast<long long>(*removed));
  }
  return 0;
}

}  // namespace govern::cli
