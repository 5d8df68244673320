// Sends logs to Govern's telemetry intake with the OpenTelemetry JS SDK and both OTLP/HTTP log
// exporters (JSON, and protobuf with gzip), checks every export succeeded and that bad keys get 401,
// and prints what it sent (JSON) for verify.mjs.
// Usage: node send.mjs BASE_URL KEY REVOKED_KEY
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';

const [base, key, revokedKey] = process.argv.slice(2);
if (!base || !key || !revokedKey) {
  console.error('usage: node send.mjs BASE_URL KEY REVOKED_KEY');
  process.exit(2);
}

// What each exporter sends: the same shapes, told apart by service name and marker.
function records(flavour) {
  return [
    {
      severityNumber: SeverityNumber.INFO, severityText: 'INFO', body: `user signed in (${flavour})`,
      attributes: { 'marker': `${flavour}-1`, 'user.id': 'u-42', 'http.status': 200, 'ok': true, 'ratio': 0.25,
                    'tags': ['a', 'b'] },
    },
    {
      severityNumber: SeverityNumber.WARN, severityText: 'WARN', body: `tool call slow (${flavour}) \u00e9\u4e2d`,
      attributes: { 'marker': `${flavour}-2`, 'tool': 'search', 'latency_ms': 1234 },
    },
    {
      severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: { action: 'deny', rule: 7 },
      attributes: { 'marker': `${flavour}-3` },
    },
  ];
}

async function send(flavour, exporter) {
  const results = [];
  const exportOnce = exporter.export.bind(exporter);
  exporter.export = (logs, done) => exportOnce(logs, (r) => { results.push(r); done(r); });
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': `e2e-${flavour}`, 'deployment.environment': 'test' }),
    processors: [new BatchLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('e2e-scope', '1.2.3');
  const sent = records(flavour);
  for (const r of sent) logger.emit(r);
  await provider.forceFlush();
  await provider.shutdown();
  if (results.length === 0 || results.some((r) => r.code !== 0)) {
    throw new Error(`${flavour} exporter failed: ${JSON.stringify(results.map((r) => ({ code: r.code, error: String(r.error) })))}`);
  }
  return sent.map((r) => ({ ...r, service: `e2e-${flavour}` }));
}

const headers = { Authorization: `Bearer ${key}` };
const sent = [
  ...(await send('json', new JsonExporter({ url: `${base}/v1/logs`, headers }))),
  ...(await send('proto', new ProtoExporter({ url: `${base}/v1/logs`, headers, compression: 'gzip' }))),
];

// Keys that must not work: none, a revoked one, a made-up one.
for (const [what, auth] of [['no key', null], ['revoked key', `Bearer ${revokedKey}`],
                            ['made-up key', `Bearer gvk_aaaaaaaaaaaa_${'0'.repeat(64)}`]]) {
  const h = { 'Content-Type': 'application/json' };
  if (auth) h.Authorization = auth;
  const res = await fetch(`${base}/v1/logs`, { method: 'POST', headers: h, body: '{"resourceLogs":[]}' });
  if (res.status !== 401) throw new Error(`${what}: status ${res.status}, want 401`);
}
console.log(JSON.stringify(sent));
