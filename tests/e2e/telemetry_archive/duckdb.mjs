// DuckDB reads every Parquet file the telemetry compactor wrote and must return exactly the rows that
// went in (expected.json from `archive_e2e_tool write`), in file order, every column as text; and each
// file must carry what the archive layout promises: ZSTD, time_ns statistics, valid JSON attributes.
// Usage: node duckdb.mjs DIR   (prints "N passed, M failed")
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8'));
const con = await (await DuckDBInstance.create(':memory:')).connect();
const q = (s) => `'${s.replaceAll("'", "''")}'`;
let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) passed++;
  else {
    failed++;
    console.error('FAIL', what);
  }
}
async function rows(sql) {
  return (await con.runAndReadAll(sql)).getRowObjectsJson();
}

const columns = ['org', 'time_ns', 'id', 'observed_ns', 'received_ns', 'type', 'severity_text', 'severity_number',
  'body_kind', 'body', 'attributes', 'resource_attributes', 'service_name', 'scope_name', 'scope_version',
  'trace_id', 'span_id', 'flags', 'dropped_attributes'];
const select = columns.map((c) => `CAST("${c}" AS VARCHAR) AS "${c}"`).join(', ');

let total = 0;
let idDelta = 0;
let timeDelta = 0;
for (const file of expected.files) {
  const name = path.basename(path.dirname(file.path)) + '/' + path.basename(file.path);
  const got = await rows(`SELECT ${select} FROM read_parquet(${q(file.path)}, file_row_number = true) ORDER BY file_row_number`);
  check(got.length === file.rows.length, `${name}: ${got.length} rows, want ${file.rows.length}`);
  let bad = 0;
  for (let i = 0; i < Math.min(got.length, file.rows.length); i++) {
    for (const c of columns) {
      if (got[i][c] !== file.rows[i][c]) {
        if (bad++ < 5) console.error(`${name} row ${i} ${c}: got ${JSON.stringify(got[i][c])} want ${JSON.stringify(file.rows[i][c])}`);
      }
    }
  }
  check(bad === 0, `${name}: ${bad} cells differ`);
  total += got.length;

  const schema = await rows(`SELECT name, type, logical_type FROM parquet_schema(${q(file.path)})`);
  const types = Object.fromEntries(schema.map((s) => [s.name, s.type]));
  check(types.time_ns === 'INT64' && types.org === 'BYTE_ARRAY' && types.severity_number === 'INT32',
    `${name}: physical types ${JSON.stringify(types)}`);
  const meta = await rows(`SELECT row_group_id, path_in_schema, compression, stats_min_value, stats_max_value,
    encodings FROM parquet_metadata(${q(file.path)})`);
  check(meta.length > 0 && meta.every((m) => m.compression === 'ZSTD'), `${name}: every chunk ZSTD`);
  const times = meta.filter((m) => m.path_in_schema === 'time_ns');
  check(times.length > 1, `${name}: several row groups (${times.length})`);
  check(times.every((m) => m.stats_min_value !== null && m.stats_max_value !== null &&
    BigInt(m.stats_min_value) <= BigInt(m.stats_max_value)), `${name}: time_ns min/max statistics`);
  for (let g = 1; g < times.length; g++) {
    check(BigInt(times[g - 1].stats_max_value) <= BigInt(times[g].stats_min_value), `${name}: row groups in time order`);
  }
  // The encodings of distinct values: DELTA_LENGTH_BYTE_ARRAY ids, DELTA_BINARY_PACKED times (the rows
  // above were read through them).
  idDelta += meta.filter((m) => m.path_in_schema === 'id' && String(m.encodings).includes('DELTA_LENGTH_BYTE_ARRAY')).length;
  timeDelta += times.filter((m) => String(m.encodings).includes('DELTA_BINARY_PACKED')).length;
  const org = meta.filter((m) => m.path_in_schema === 'org');
  check(org.every((m) => String(m.encodings).includes('RLE_DICTIONARY')), `${name}: org dictionary-encoded`);
  const json = await rows(`SELECT count(*) FILTER (WHERE NOT json_valid(attributes) OR NOT json_valid(resource_attributes)) AS bad,
    count(*) FILTER (WHERE json_type(attributes) <> 'OBJECT') AS not_object FROM read_parquet(${q(file.path)})`);
  check(Number(json[0].bad) === 0 && Number(json[0].not_object) === 0, `${name}: attributes are JSON objects`);
  const kv = await rows(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${q(file.path)})`);
  check(kv.some((r) => r.k === 'govern.telemetry.org' && r.v === file.rows[0]?.org), `${name}: org in key-value metadata`);
}
check(idDelta > 0, `id chunks in DELTA_LENGTH_BYTE_ARRAY: ${idDelta}`);
check(timeDelta > 0, `time_ns chunks in DELTA_BINARY_PACKED: ${timeDelta}`);
check(total === expected.rows, `${total} rows read in all, ${expected.rows} compacted`);
// A query across every file, as a user would write it.
const all = expected.files.map((f) => q(f.path)).join(', ');
const byOrg = await rows(`SELECT org, count(*) AS n, count(DISTINCT id) AS ids FROM read_parquet([${all}]) GROUP BY org ORDER BY org`);
const wantByOrg = {};
for (const f of expected.files) for (const r of f.rows) wantByOrg[r.org] = (wantByOrg[r.org] ?? 0) + 1;
check(byOrg.length === Object.keys(wantByOrg).length &&
  byOrg.every((r) => Number(r.n) === wantByOrg[r.org] && Number(r.ids) === Number(r.n)), `per-organisation counts ${JSON.stringify(byOrg)}`);
const model = await rows(`SELECT count(*) AS n FROM read_parquet([${all}]) WHERE attributes->>'$.model' = 'gpt-4o'`);
let wantModel = 0;
for (const f of expected.files) for (const r of f.rows) if (JSON.parse(r.attributes).model === 'gpt-4o') wantModel++;
check(Number(model[0].n) === wantModel, `attribute query: ${model[0].n}, want ${wantModel}`);

console.log(`${expected.files.length} files, ${total} rows checked`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
