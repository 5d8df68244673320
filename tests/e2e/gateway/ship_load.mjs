// The usage-shipping e2e's client (ship_kill.sh), with no npm dependency (Node's own fetch).
//   node ship_load.mjs load PORT OUT STOPFILE
//     8 concurrent callers POST chat completions (a third of them streamed) to the gateway until STOPFILE
//     exists; the x-request-id of every answer seen complete (200, whole body, a stream up to its end)
//     is appended to OUT. Failures (the gateway killed mid-call, not yet back) are counted and retried.
//   node ship_load.mjs verify ENDPOINT QUERY_KEY OUT TIMEOUT_S
//     Reads telemetry's query API (type gateway.usage) until every id in OUT is there or TIMEOUT_S
//     passes; exit 0 when each completed request has exactly one usage event and no event is there twice.
import fs from 'node:fs';

const [mode, ...args] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function load(port, out, stop) {
  const fd = fs.openSync(out, 'a');
  let completed = 0;
  let failed = 0;
  let n = 0;
  async function caller() {
    while (!fs.existsSync(stop)) {
      const stream = n++ % 3 === 0;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer gvg_ship_e2e' },
          body: JSON.stringify({ model: 'gpt-stub', stream, messages: [{ role: 'user', content: 'one two three' }] }),
          signal: AbortSignal.timeout(10000),
        });
        const text = await res.text(); // resolves only for a complete body (a cut chunked body throws)
        const id = res.headers.get('x-request-id');
        if (res.status === 200 && id && (!stream || text.includes('[DONE]'))) {
          fs.writeSync(fd, id + '\n');
          completed++;
        } else {
          failed++;
        }
      } catch {
        failed++;
        await sleep(20);
      }
    }
  }
  await Promise.all(Array.from({ length: 8 }, caller));
  fs.closeSync(fd);
  console.log(`completed ${completed} failed ${failed}`);
}

async function verify(endpoint, key, out, timeoutS) {
  // Counted by the request id in the attributes, so that a record stored twice under two event ids would
  // show; the event id must be the request id with '_' as '-' (services/gateway/usage_ship.h).
  const want = new Set(fs.readFileSync(out, 'utf8').split('\n').filter(Boolean));
  const deadline = Date.now() + timeoutS * 1000;
  let seen;
  for (;;) {
    seen = new Map();
    let cursor = '';
    for (;;) {
      let url = `${endpoint}/v1/query/events?from=0&order=oldest&limit=1000&type=gateway.usage`;
      if (cursor) url += `&cursor=${encodeURIComponent(cursor)}`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`query: ${res.status} ${await res.text()}`);
      const page = await res.json();
      for (const e of page.events) {
        const rid = e.attributes.request_id;
        if (e.attributes.organisation !== 'acme' || !rid || e.id !== rid.replace(/_/g, '-')) {
          throw new Error(`event without its attributes or id: ${JSON.stringify(e)}`);
        }
        seen.set(rid, (seen.get(rid) || 0) + 1);
      }
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    let missing = 0;
    for (const id of want) if (!seen.has(id)) missing++;
    if (missing === 0 || Date.now() > deadline) break;
    await sleep(250);
  }
  let missing = 0;
  let twice = 0;
  let extra = 0;
  for (const id of want) if (!seen.has(id)) missing++;
  for (const [id, n] of seen) {
    if (n > 1) twice++;
    if (!want.has(id)) extra++;
  }
  console.log(
    `telemetry: ${seen.size} usage events; ${want.size} requests completed: ${missing} missing, ` +
      `${twice} stored twice; ${extra} events for requests the client saw fail (in flight at a kill)`,
  );
  if (want.size < 100) throw new Error(`only ${want.size} requests completed: the load did not run`);
  if (missing > 0 || twice > 0) process.exit(1);
}

if (mode === 'load') {
  await load(args[0], args[1], args[2]);
} else if (mode === 'verify') {
  await verify(args[0], args[1], args[2], Number(args[3]));
} else {
  console.error('usage: ship_load.mjs load PORT OUT STOPFILE | verify ENDPOINT QUERY_KEY OUT TIMEOUT_S');
  process.exit(2);
}
