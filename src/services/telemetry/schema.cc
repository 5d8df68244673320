#include "services/telemetry/schema.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

#include "db/copy_encoder.h"
#include "services/telemetry/json_text.h"

namespace govern::telemetry {

std::vector<db::Migration> Migrations() {
  return {
      {1, "telemetry tables", R"sql(
CREATE TABLE telemetry_ingest_keys (
  key_id      text PRIMARY KEY,
  org         text NOT NULL,
  secret_hash bytea NOT NULL,
  scope       text NOT NULL CHECK (scope IN ('ingest', 'query')),
  name        text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX telemetry_ingest_keys_org ON telemetry_ingest_keys (org);

CREATE TABLE telemetry_events (
  org                 text NOT NULL,
  time_ns             bigint NOT NULL,
  id                  text COLLATE "C" NOT NULL,
  observed_ns         bigint NOT NULL,
  received_ns         bigint NOT NULL,
  type                text NOT NULL,
  severity_text       text NOT NULL,
  severity_number     integer NOT NULL,
  body_kind           smallint NOT NULL,
  body                text NOT NULL,
  attributes          json NOT NULL,
  resource_attributes json NOT NULL,
  service_name        text NOT NULL,
  scope_name          text NOT NULL,
  scope_version       text NOT NULL,
  trace_id            text NOT NULL,
  span_id             text NOT NULL,
  flags               bigint NOT NULL,
  dropped_attributes  bigint NOT NULL,
  PRIMARY KEY (org, time_ns, id)
) PARTITION BY RANGE (time_ns);
CREATE INDEX telemetry_events_org_type_time ON telemetry_events (org, type, time_ns);

CREATE TABLE telemetry_ingest_cursor (
  name     text PRIMARY KEY,
  next_seq bigint NOT NULL
);

CREATE TABLE telemetry_archive_files (
  org          text NOT NULL,
  hour_ns      bigint NOT NULL,
  seq          integer NOT NULL,
  object_key   text NOT NULL UNIQUE,
  rows         bigint NOT NULL,
  bytes        bigint NOT NULL,
  min_time_ns  bigint NOT NULL,
  max_time_ns  bigint NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org, hour_ns, seq)
);
)sql"},
      {2, "telemetry DLP policies", R"sql(
CREATE TABLE telemetry_dlp_policies (
  org        text PRIMARY KEY,
  policy     jsonb NOT NULL CHECK (jsonb_typeof(policy) = 'object'),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
)sql"},
  };
}

Partition PartitionFor(int64_t time_ns) {
  int64_t day = time_ns / kNanosPerDay;
  if (time_ns % kNanosPerDay < 0) --day;  // floor, not truncation
  Partition p;
  // The first day of the int64 range (1677-09-21) starts before INT64_MIN: saturate (MINVALUE).
  p.from_ns = day < INT64_MIN / kNanosPerDay ? INT64_MIN : day * kNanosPerDay;
  // The last day before 2262-04-11 ends past int64: saturate (the DDL then says MAXVALUE).
  p.to_ns = day >= INT64_MAX / kNanosPerDay ? INT64_MAX : (day + 1) * kNanosPerDay;
  std::time_t secs = static_cast<std::time_t>(day * 86400);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "telemetry_events_p%04d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday);
  p.name = buf;
  return p;
}

std::string PartitionDdl(const Partition& p) {
  std::string from = p.from_ns == INT64_MIN ? "MINVALUE" : std::to_string(p.from_ns);
  std::string to = p.to_ns == INT64_MAX ? "MAXVALUE" : std::to_string(p.to_ns);
  // The name is built from digits only (PartitionFor), so it needs no quoting.
  return "CREATE TABLE IF NOT EXISTS " + p.name + " PARTITION OF telemetry_events FOR VALUES FROM (" + from +
         ") TO (" + to + ")";
}

void AttributesObjectJson(const std::vector<Attribute>& attrs, std::string* out) {
  out->clear();
  out->push_back('{');
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (i) out->push_back(',');
    internal::AppendJsonString(*out, attrs[i].key);
    out->push_back(':');
    out->append(attrs[i].value_json.empty() ? std::string_view("null")
                                            : std::string_view(attrs[i].value_json));
  }
  out->push_back('}');
}

void AppendEventRow(db::CopyIn& copy, const Event& e, int64_t received_ns, std::string* attrs,
                    std::string* res) {
  AppendEventFields(copy.Row(kEventColumnCount), e, received_ns, attrs, res);
}

void AppendEventFields(db::CopyEncoder& row, const Event& e, int64_t received_ns, std::string* attrs,
                       std::string* res) {
  AttributesObjectJson(e.attributes, attrs);
  AttributesObjectJson(e.resource_attributes, res);
  row.Text(e.org)
      .Int64(e.time_unix_nanos)
      .Text(e.id)
      .Int64(e.observed_unix_nanos)
      .Int64(received_ns)
      .Text(e.type)
      .Text(e.severity_text)
      .Int32(e.severity_number)
      .Int16(static_cast<int16_t>(e.body_kind))
      .Text(e.body)
      .Text(*attrs)  // json, not jsonb: validated, not rebuilt (COPY
      .Text(*res)    // costs half as much PostgreSQL CPU), and kept as sent
      .Text(e.service_name)
      .Text(e.scope_name)
      .Text(e.scope_version)
      .Text(e.trace_id_hex)
      .Text(e.span_id_hex)
      .Int64(e.flags)
      .Int64(e.dropped_attributes_count);
}

}  // namespace govern::telemetry
