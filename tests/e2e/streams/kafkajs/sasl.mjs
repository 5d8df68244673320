// kafkajs 2.2.4 over SASL_PLAINTEXT against a broker that requires SASL (argv[2]), with the ACLs of
// run.sh: PLAIN (alice creates a topic, produces, and consumes in a group; a wrong password and an unknown
// user are refused with kafkajs' SASL authentication error; bob may not write), and OAUTHBEARER with a
// real Govern access token (argv[3], carol: produces to "js-oauth"; an expired token, argv[4], is
// refused). Exits non-zero with the reason on the first failure.
import { readFileSync } from "node:fs";
import { Kafka, logLevel } from "kafkajs";

const [broker, goodTokenFile, expiredTokenFile] = process.argv.slice(2);
const fail = (msg) => {
  console.error("FAIL: " + msg);
  process.exit(1);
};
const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error("timeout: " + what)), ms).unref())]);
const client = (sasl, id) =>
  new Kafka({ clientId: id, brokers: [broker], logLevel: logLevel.NOTHING, sasl, retry: { retries: 2 } });
const plain = (username, password) => client({ mechanism: "plain", username, password }, "js-" + username);
const bearer = (file) =>
  client(
    { mechanism: "oauthbearer", oauthBearerProvider: async () => ({ value: readFileSync(file, "utf8").trim() }) },
    "js-oauth",
  );
// A refused authentication: kafkajs names it KafkaJSSASLAuthenticationError.
const refused = async (kafka, what) => {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
  } catch (e) {
    if (e.name !== "KafkaJSSASLAuthenticationError" && !/SASL/.test(String(e.message)))
      fail(`${what}: refused, but with ${e.name}: ${e.message}`);
    return;
  } finally {
    await admin.disconnect().catch(() => {});
  }
  fail(`${what}: authenticated`);
};

// PLAIN: alice.
const alice = plain("alice", "alice-pw");
const admin = alice.admin();
await admin.connect();
const topic = "js-sasl";
await admin.createTopics({ topics: [{ topic, numPartitions: 2 }, { topic: "js-oauth" }], waitForLeaders: true });
if (!(await admin.listTopics()).includes(topic)) fail("listTopics lacks " + topic);
const producer = alice.producer({ idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
const sent = Array.from({ length: 40 }, (_, i) => ({ key: `k${i % 5}`, value: `sasl-${i}` }));
for (const r of await producer.send({ topic, acks: -1, messages: sent }))
  if (r.errorCode !== 0) fail(`alice produce error ${r.errorCode}`);
await producer.disconnect();
const consumer = alice.consumer({ groupId: "js-sasl-group", sessionTimeout: 10000, heartbeatInterval: 500 });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
const got = new Set();
let done;
const all = new Promise((res) => (done = res));
await consumer.run({
  eachMessage: async ({ message }) => {
    const v = message.value.toString();
    if (got.has(v)) fail("consumed twice: " + v);
    got.add(v);
    if (got.size === sent.length) done();
  },
});
await withTimeout(all, 60000, `consumed ${got.size} of ${sent.length}`);
await consumer.disconnect();

await refused(plain("alice", "wrong"), "wrong password");
await refused(plain("mallory", "alice-pw"), "unknown user");

// bob may read "public" only: his produce to js-sasl is refused by the ACLs.
const bobProducer = plain("bob", "bob-pw").producer();
await bobProducer.connect();
try {
  await bobProducer.send({ topic, acks: -1, messages: [{ value: "nope" }] });
  fail("bob produced to " + topic);
} catch (e) {
  if (!/authoriz/i.test(`${e.type} ${e.message}`)) fail(`bob produce: ${e.name} ${e.type} ${e.message}`);
}
await bobProducer.disconnect();

// OAUTHBEARER: carol's token writes to js-oauth; an expired token is refused.
const carol = bearer(goodTokenFile).producer();
await carol.connect();
for (const r of await carol.send({ topic: "js-oauth", acks: -1, messages: [{ value: "from-carol" }] }))
  if (r.errorCode !== 0) fail(`carol produce error ${r.errorCode}`);
await carol.disconnect();
const ends = await admin.fetchTopicOffsets("js-oauth");
if (ends[0].offset !== "1") fail("js-oauth end offset " + ends[0].offset);
await refused(bearer(expiredTokenFile), "expired token");
await admin.disconnect();
console.log(`kafkajs SASL: PLAIN produced and consumed ${sent.length}, refusals seen, OAUTHBEARER produced`);
