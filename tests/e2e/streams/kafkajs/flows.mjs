// kafkajs 2.2.4 against the broker at argv[2]: admin creates a topic, an idempotent producer sends 600
// keyed records, a consumer group reads every record exactly once (in order per partition,
// byte-identical) and commits, a second consumer in the same group finds nothing left, admin describes
// and lists the group, then deletes the topic, whose committed offsets go with it (a topic created again
// under the name has none). Exits non-zero with the reason on the first failure.
import { Kafka, logLevel } from "kafkajs";

const broker = process.argv[2];
const kafka = new Kafka({ clientId: "govern-e2e", brokers: [broker], logLevel: logLevel.ERROR, retry: { retries: 8 } });
const topic = "js-flows";
const group = "js-group";
const fail = (msg) => {
  console.error("FAIL: " + msg);
  process.exit(1);
};
const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error("timeout: " + what)), ms).unref())]);

const admin = kafka.admin();
await admin.connect();
if (!(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true })))
  fail("createTopics returned false");
if (!(await admin.listTopics()).includes(topic)) fail("listTopics lacks the new topic");

// Values with every byte value that survives UTF-8 as a string, and binary keys.
const sent = [];
for (let i = 0; i < 600; i++) {
  const bytes = Buffer.alloc(1 + (i % 97));
  for (let j = 0; j < bytes.length; j++) bytes[j] = (i * 31 + j * 7) & 0xff;
  sent.push({ key: Buffer.from(`k${i % 17}`), value: Buffer.concat([Buffer.from(`${i}:`), bytes]) });
}
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
for (let i = 0; i < sent.length; i += 50) {
  const res = await producer.send({ topic, acks: -1, messages: sent.slice(i, i + 50) });
  for (const r of res) if (r.errorCode !== 0) fail(`produce error ${r.errorCode}`);
}
await producer.disconnect();

const received = new Map(); // partition -> [{offset, value}]
let count = 0;
const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500 });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
let done;
const all = new Promise((res) => (done = res));
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    if (!received.has(partition)) received.set(partition, []);
    received.get(partition).push({ offset: Number(message.offset), key: message.key, value: message.value });
    if (++count === sent.length) done();
  },
});
await withTimeout(all, 60000, `consumed ${count} of ${sent.length}`);

const described = await admin.describeGroups([group]);
const g = described.groups[0];
if (g.groupId !== group || g.state !== "Stable" || g.members.length !== 1 || g.protocolType !== "consumer")
  fail("describeGroups: " + JSON.stringify({ state: g.state, members: g.members.length, type: g.protocolType }));
const listed = await admin.listGroups();
if (!listed.groups.some((x) => x.groupId === group && x.protocolType === "consumer"))
  fail("listGroups lacks the group: " + JSON.stringify(listed.groups));
await consumer.disconnect(); // commits, then LeaveGroup

// Exactly once, in order per partition, byte-identical.
const byValue = new Map(sent.map((m, i) => [m.value.toString("latin1"), i]));
const seen = new Set();
for (const [p, recs] of received) {
  let last = -1;
  recs.forEach((r, i) => {
    if (r.offset !== i) fail(`partition ${p}: offset ${r.offset} at position ${i}`);
    const idx = byValue.get(r.value.toString("latin1"));
    if (idx === undefined) fail(`partition ${p}: unknown record at offset ${r.offset}`);
    if (!sent[idx].key.equals(r.key)) fail(`partition ${p}: key differs at offset ${r.offset}`);
    if (idx <= last) fail(`partition ${p}: out of order at offset ${r.offset}`);
    if (seen.has(idx)) fail(`record ${idx} consumed twice`);
    seen.add(idx);
    last = idx;
  });
}
if (seen.size !== sent.length) fail(`consumed ${seen.size} distinct records of ${sent.length}`);

// The group's committed offsets cover everything: the group's offsets equal the partitions' ends.
const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
const ends = await admin.fetchTopicOffsets(topic);
for (const p of offsets[0].partitions) {
  const end = ends.find((e) => e.partition === p.partition).offset;
  if (p.offset !== end) fail(`partition ${p.partition}: committed ${p.offset}, end ${end}`);
}
const after = await admin.describeGroups([group]);
if (after.groups[0].state !== "Empty") fail("after disconnect the group is " + after.groups[0].state);

await admin.deleteTopics({ topics: [topic] });
if ((await admin.listTopics()).includes(topic)) fail("deleteTopics left the topic");
if (!(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true })))
  fail("createTopics again returned false");
const again = await admin.fetchOffsets({ groupId: group, topics: [topic] });
for (const p of again[0].partitions)
  if (p.offset !== "-1") fail(`after deleteTopics, partition ${p.partition} still has committed ${p.offset}`);
await admin.deleteTopics({ topics: [topic] });
await admin.disconnect();
console.log(`kafkajs: produced ${sent.length}, consumed ${count} once each, group described and listed`);
