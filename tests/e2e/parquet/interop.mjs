// DuckDB reads every file govern's writer produced and must return exactly the rows that went in,
// with the row groups, statistics, compression and key-value metadata govern wrote. Then DuckDB writes
// files (zstd, snappy, uncompressed) and govern's reader must return exactly what DuckDB reads back.
import { DuckDBInstance } from '@duckdb/node-api';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [tool, dir] = process.argv.slice(2);
let checks = 0;
const failures = [];
function check(ok, what) {
  checks++;
  if (!ok) failures.push(what);
}

const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
async function rows(sql) {
  const reader = await con.runAndReadAll(sql);
  return reader.getRows();
}
const q = (s) => `'${s.replaceAll("'", "''")}'`;
const ident = (s) => `"${s.replaceAll('"', '""')}"`;

const duckType = {
  boolean: 'BOOLEAN',
  int32: 'INTEGER',
  int64: 'BIGINT',
  double: 'DOUBLE',
  string: 'VARCHAR',
  timestamp_us: 'TIMESTAMP WITH TIME ZONE',
};

// Renders each column so that JS compares it exactly: 64-bit integers and timestamps as decimal
// strings (as parquet_tool writes them), doubles as numbers.
function selectList(columns) {
  return columns
    .map((c) => {
      const n = ident(c.name);
      if (c.type === 'int64') return `CAST(${n} AS VARCHAR)`;
      if (c.type === 'timestamp_us') return `CAST(epoch_us(${n}) AS VARCHAR)`;
      return n;
    })
    .join(', ');
}

function sameCell(got, want) {
  if (want === null) return got === null;
  if (want === 'NaN') return Number.isNaN(got);
  if (want === 'Infinity') return got === Infinity;
  if (want === '-Infinity') return got === -Infinity;
  if (typeof want === 'number') return typeof got === 'number' && Object.is(got, want);
  return got === want;
}

function compareRows(got, want, what) {
  check(got.length === want.length, `${what}: ${got.length} rows, want ${want.length}`);
  let bad = 0;
  for (let i = 0; i < Math.min(got.length, want.length); i++) {
    for (let c = 0; c < want[i].length; c++) {
      if (!sameCell(got[i][c], want[i][c])) {
        if (bad++ < 5) failures.push(`${what}: row ${i} column ${c}: got ${JSON.stringify(got[i][c])}, want ${JSON.stringify(want[i][c])}`);
      }
    }
  }
  checks++;
}

// Plain-encoded minimum/maximum as DuckDB's parquet_metadata() renders them, for the columns whose
// rendering is unambiguous.
function statOf(values, type, pick) {
  const present = values.filter((v) => v !== null);
  if (present.length === 0) return null;
  if (type === 'int32') return String(pick === 'min' ? Math.min(...present) : Math.max(...present));
  if (type === 'int64') {
    const big = present.map(BigInt);
    return String(big.reduce((a, b) => ((pick === 'min' ? b < a : b > a) ? b : a)));
  }
  if (type === 'string') {
    const bytes = present.map((s) => Buffer.from(s, 'utf8'));
    return bytes.reduce((a, b) => ((pick === 'min' ? Buffer.compare(b, a) < 0 : Buffer.compare(b, a) > 0) ? b : a)).toString('utf8');
  }
  return undefined;
}

// ---- Part 1: DuckDB reads govern's files.
for (const name of ['zstd', 'plain_uncompressed', 'snappy_one_group', 'delta_zstd', 'empty']) {
  const file = path.join(dir, `${name}.parquet`);
  const expected = JSON.parse(readFileSync(path.join(dir, `${name}.expected.json`), 'utf8'));
  const cols = expected.columns;

  const described = await rows(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`);
  check(described.length === cols.length, `${name}: DuckDB sees ${described.length} columns`);
  cols.forEach((c, i) => {
    check(described[i]?.[0] === c.name, `${name}: column ${i} is named ${described[i]?.[0]}, want ${c.name}`);
    check(described[i]?.[1] === duckType[c.type], `${name}: column ${c.name} is ${described[i]?.[1]}, want ${duckType[c.type]}`);
  });

  const got = await rows(
    `SELECT ${selectList(cols)} FROM read_parquet(${q(file)}, file_row_number = true) ORDER BY file_row_number`,
  );
  compareRows(got, expected.rows, `${name}: rows`);

  const meta = await rows(
    `SELECT row_group_id, row_group_num_rows, column_id, num_values, stats_null_count,
            stats_min_value, stats_max_value, compression, encodings, path_in_schema
       FROM parquet_metadata(${q(file)}) ORDER BY row_group_id, column_id`,
  );
  const groups = [...new Set(meta.map((m) => Number(m[0])))];
  check(groups.length === expected.row_groups, `${name}: DuckDB sees ${groups.length} row groups, want ${expected.row_groups}`);
  let offset = 0;
  for (const g of groups) {
    const chunks = meta.filter((m) => Number(m[0]) === g);
    const n = Number(chunks[0][1]);
    if (expected.row_groups > 1) {
      check(n <= expected.row_group_rows, `${name}: row group ${g} has ${n} rows`);
    }
    for (const m of chunks) {
      const c = Number(m[2]);
      const col = cols[c];
      const values = expected.rows.slice(offset, offset + n).map((r) => r[c]);
      const nulls = values.filter((v) => v === null).length;
      check(Number(m[3]) === n, `${name}: rg ${g} ${col.name}: num_values ${m[3]}, want ${n}`);
      check(Number(m[4]) === nulls, `${name}: rg ${g} ${col.name}: null_count ${m[4]}, want ${nulls}`);
      check(m[7] === expected.compression, `${name}: rg ${g} ${col.name}: compression ${m[7]}`);
      const lo = statOf(values, col.type, 'min');
      const hi = statOf(values, col.type, 'max');
      if (lo !== undefined) {
        check(m[5] === lo, `${name}: rg ${g} ${col.name}: min ${JSON.stringify(m[5])}, want ${JSON.stringify(lo)}`);
        check(m[6] === hi, `${name}: rg ${g} ${col.name}: max ${JSON.stringify(m[6])}, want ${JSON.stringify(hi)}`);
      }
      if (col.name === 'service') {
        const dict = String(m[8]).includes('RLE_DICTIONARY');
        check(dict === expected.dictionary, `${name}: rg ${g} service encodings ${m[8]}`);
      }
      if (expected.delta && (col.name === 'small' || col.name === 'time')) {
        check(String(m[8]).includes('DELTA_BINARY_PACKED'), `${name}: rg ${g} ${col.name} encodings ${m[8]}`);
      }
      if (expected.delta && col.name === 'trace') {
        check(String(m[8]).includes('DELTA_LENGTH_BYTE_ARRAY'), `${name}: rg ${g} trace encodings ${m[8]}`);
      }
    }
    offset += n;
  }
  check(offset === expected.rows.length, `${name}: row groups hold ${offset} rows`);

  // A filter on time: DuckDB prunes row groups by our statistics and must still count exactly.
  const timeCol = cols.findIndex((c) => c.type === 'timestamp_us');
  if (expected.rows.length > 0) {
    const cut = expected.rows[Math.floor(expected.rows.length * 0.6)][timeCol];
    const want = expected.rows.filter((r) => BigInt(r[timeCol]) >= BigInt(cut)).length;
    const [[count]] = await rows(
      `SELECT count(*) FROM read_parquet(${q(file)}) WHERE epoch_us(${ident(cols[timeCol].name)}) >= ${cut}`,
    );
    check(Number(count) === want, `${name}: time filter counts ${count}, want ${want}`);
  }

  const kv = await rows(`SELECT decode(key), decode(value) FROM parquet_kv_metadata(${q(file)}) ORDER BY 1`);
  const wantKv = Object.entries(expected.metadata).sort(([a], [b]) => (a < b ? -1 : 1));
  check(JSON.stringify(kv) === JSON.stringify(wantKv), `${name}: key-value metadata ${JSON.stringify(kv)}`);
}

// ---- Part 2: govern reads DuckDB's files.
await con.run(`CREATE TABLE t AS
  SELECT i::INTEGER AS i32,
         (i * 1000003 - 123456789)::BIGINT AS i64,
         CASE WHEN i % 5 = 0 THEN NULL ELSE i / 7.0 END::DOUBLE AS d,
         CASE WHEN i % 3 = 0 THEN NULL ELSE 'svc-' || (i % 10) || CASE WHEN i % 20 = 1 THEN ' ünï' ELSE '' END END AS s,
         'unique message ' || i || ' ✓' AS msg,
         (i % 2 = 0) AS b,
         CASE WHEN i % 4 = 0 THEN NULL ELSE TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND END AS t,
         CASE WHEN i % 7 = 0 THEN NULL ELSE '' END AS empty,
         CASE WHEN i % 6 = 0 THEN NULL ELSE i % 2 = 1 END AS maybe_b
    FROM range(5000) r(i)`);
const govType = { INTEGER: 'int32', BIGINT: 'int64', DOUBLE: 'double', VARCHAR: 'string', BOOLEAN: 'boolean', 'TIMESTAMP WITH TIME ZONE': 'timestamp_us' };
for (const [name, options] of [
  ['duck_zstd', 'COMPRESSION zstd, ROW_GROUP_SIZE 1024'],
  ['duck_snappy', 'COMPRESSION snappy'],
  ['duck_uncompressed', 'COMPRESSION uncompressed, ROW_GROUP_SIZE 2048'],
]) {
  const file = path.join(dir, `${name}.parquet`);
  await con.run(`COPY t TO ${q(file)} (FORMAT parquet, ${options})`);
  let dump;
  try {
    dump = JSON.parse(execFileSync(tool, ['dump', file], { maxBuffer: 1 << 28, encoding: 'utf8' }));
  } catch (e) {
    check(false, `${name}: parquet_tool dump failed: ${e.stderr || e.message}`);
    continue;
  }
  const described = await rows(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`);
  const cols = described.map((d) => ({ name: d[0], type: govType[d[1]] }));
  check(JSON.stringify(dump.columns.map((c) => [c.name, c.type])) === JSON.stringify(cols.map((c) => [c.name, c.type])),
    `${name}: govern sees columns ${JSON.stringify(dump.columns)}`);
  const want = await rows(
    `SELECT ${selectList(cols)} FROM read_parquet(${q(file)}, file_row_number = true) ORDER BY file_row_number`,
  );
  check(dump.num_rows === want.length, `${name}: govern sees ${dump.num_rows} rows, want ${want.length}`);
  compareRows(dump.rows, want.map((r) => r.map((v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))), `${name}: govern rows`);
  const meta = await rows(
    `SELECT row_group_id, column_id, stats_null_count FROM parquet_metadata(${q(file)}) ORDER BY row_group_id, column_id`,
  );
  const groups = new Set(meta.map((m) => Number(m[0])));
  check(dump.row_groups.length === groups.size, `${name}: govern sees ${dump.row_groups.length} row groups, DuckDB ${groups.size}`);
  for (const m of meta) {
    const g = dump.row_groups[Number(m[0])];
    const nc = g?.columns[Number(m[1])]?.null_count;
    if (m[2] !== null) check(nc === Number(m[2]), `${name}: rg ${m[0]} column ${m[1]}: govern null_count ${nc}, DuckDB ${m[2]}`);
  }
}

console.log(`${checks - failures.length} of ${checks} checks passed`);
if (failures.length > 0) {
  for (const f of failures.slice(0, 40)) console.log(`FAIL: ${f}`);
  process.exit(1);
}
