/* A consumer group of three librdkafka consumers (one thread each, classic "range" assignment) for the
 * streams e2e tests. Each consumes TOPIC in group GROUP, prints "PARTITION OFFSET VALUE" for every record
 * and commits it synchronously before taking the next, so a partition that moves to another member
 * resumes exactly after the last record printed. Member 2 leaves the group (rd_kafka_consumer_close, a
 * LeaveGroup) after LEAVE_AFTER records; the others must be given its partitions by a rebalance. Stops
 * when TOTAL records were printed; prints "assignments N" (rebalance callbacks with an assignment after
 * the leave) to stderr. Exits 0 on success, 1 on an error or after 90 s without finishing.
 * Usage: group_consumer BROKERS TOPIC GROUP TOTAL LEAVE_AFTER */
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *brokers, *topic, *group;
static long total, leave_after;
static atomic_long printed = 0;
static atomic_int left = 0, assigns_after_leave = 0, errors = 0;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void set(rd_kafka_conf_t* conf, const char* k, const char* v) {
  char err[256];
  if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s: %s\n", k, err);
    exit(2);
  }
}

static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                         void* opaque) {
  int member = (int)(long)opaque;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    fprintf(stderr, "member %d assigned %d partitions\n", member, parts->cnt);
    if (atomic_load(&left)) atomic_fetch_add(&assigns_after_leave, 1);
    rd_kafka_assign(rk, parts);
  } else {
    fprintf(stderr, "member %d revoked %d partitions\n", member, parts->cnt);
    rd_kafka_assign(rk, NULL);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void* run(void* arg) {
  int member = (int)(long)arg;
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", brokers);
  set(conf, "group.id", group);
  set(conf, "enable.auto.commit", "false");
  set(conf, "auto.offset.reset", "earliest");
  set(conf, "session.timeout.ms", "6000");
  set(conf, "heartbeat.interval.ms", "300");
  set(conf, "check.crcs", "true");
  set(conf, "partition.assignment.strategy", "range");
  rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
  rd_kafka_conf_set_opaque(conf, (void*)(long)member);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "member %d: %s\n", member, err);
    atomic_fetch_add(&errors, 1);
    return NULL;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, sub);
  rd_kafka_topic_partition_list_destroy(sub);
  long mine = 0;
  double deadline = now_s() + 90;
  while (atomic_load(&printed) < total && now_s() < deadline) {
    if (member == 2 && mine >= leave_after) break;
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (m->err) {
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        fprintf(stderr, "member %d: %s\n", member, rd_kafka_message_errstr(m));
        if (m->err != RD_KAFKA_RESP_ERR__TRANSPORT) atomic_fetch_add(&errors, 1);
      }
      rd_kafka_message_destroy(m);
      continue;
    }
    pthread_mutex_lock(&out_mu);
    printf("%d %lld %.*s\n", (int)m->partition, (long long)m->offset, (int)m->len, (const char*)m->payload);
    pthread_mutex_unlock(&out_mu);
    rd_kafka_resp_err_t cerr = rd_kafka_commit_message(rk, m, 0);
    if (cerr) {
      fprintf(stderr, "member %d: commit: %s\n", member, rd_kafka_err2str(cerr));
      atomic_fetch_add(&errors, 1);
    }
    rd_kafka_message_destroy(m);
    mine++;
    atomic_fetch_add(&printed, 1);
  }
  rd_kafka_consumer_close(rk);
  if (member == 2) {
    fprintf(stderr, "member 2 left after %ld records\n", mine);
    atomic_store(&left, 1);
  }
  rd_kafka_destroy(rk);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s BROKERS TOPIC GROUP TOTAL LEAVE_AFTER\n", argv[0]);
    return 2;
  }
  brokers = argv[1];
  topic = argv[2];
  group = argv[3];
  total = atol(argv[4]);
  leave_after = atol(argv[5]);
  pthread_t t[3];
  for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, run, (void*)(i + 1));
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  fflush(stdout);
  fprintf(stderr, "printed %ld assignments %d errors %d\n", atomic_load(&printed),
          atomic_load(&assigns_after_leave), atomic_load(&errors));
  return atomic_load(&printed) == total && atomic_load(&errors) == 0 ? 0 : 1;
}
