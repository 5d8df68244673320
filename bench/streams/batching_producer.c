/* A batching producer with single sends, for the streams benchmark: one librdkafka producer (acks=all,
 * linger.ms=5) hands records of SIZE bytes to rd_kafka_produce one at a time (no key: spread over the
 * topic's partitions) for SECONDS, and times each record from its produce call to its delivery report.
 * RATE 0 sends as fast as the producer's queue takes them (at most MAXQ records waiting: the latency
 * then includes that queue); RATE > 0 paces the sends to that many records/s, so the latency is the
 * broker's at that load. Prints records/s, MB/s and the delivery latency p50/p99/max.
 * BROKERS "mock" uses librdkafka's in-memory mock cluster (test.mock.num.brokers=1, no durability).
 * Environment: STREAMS_BENCH_TOKEN (a file holding an access token): SASL OAUTHBEARER with it.
 * Usage: batching_producer BROKERS TOPIC SIZE SECONDS RATE MAXQ */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double* lat;
static long nlat, cap, errors;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The produce time travels as the message opaque (nanoseconds fit a pointer on 64-bit). */
static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    errors++;
    return;
  }
  double sent = (double)(uintptr_t)m->_private / 1e9;
  if (nlat == cap) {
    cap = cap ? cap * 2 : 1 << 16;
    lat = realloc(lat, (size_t)cap * sizeof(double));
  }
  lat[nlat++] = now() - sent;
}

static void token_cb(rd_kafka_t* rk, const char* config, void* opaque) {
  (void)config;
  (void)opaque;
  char tok[8192] = {0}, err[512];
  FILE* f = fopen(getenv("STREAMS_BENCH_TOKEN"), "r");
  size_t n = f ? fread(tok, 1, sizeof tok - 1, f) : 0;
  if (f) fclose(f);
  while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == ' ')) tok[--n] = 0;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t lifetime_ms = (int64_t)ts.tv_sec * 1000 + 300000; /* only schedules librdkafka's refresh */
  if (rd_kafka_oauthbearer_set_token(rk, tok, lifetime_ms, "govern", NULL, 0, err, sizeof err))
    rd_kafka_oauthbearer_set_token_failure(rk, err);
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void set(rd_kafka_conf_t* conf, const char* k, const char* v) {
  char err[256];
  if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s=%s: %s\n", k, v, err);
    exit(2);
  }
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s BROKERS|mock TOPIC SIZE SECONDS RATE MAXQ\n", argv[0]);
    return 2;
  }
  const char* brokers = argv[1];
  const char* topic = argv[2];
  int size = atoi(argv[3]);
  double seconds = atof(argv[4]), rate = atof(argv[5]);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (strcmp(brokers, "mock") == 0) {
    set(conf, "test.mock.num.brokers", "1");
    set(conf, "log_level", "4"); /* not the mock's notice */
  } else {
    set(conf, "bootstrap.servers", brokers);
  }
  set(conf, "acks", "all");
  set(conf, "linger.ms", "5");
  set(conf, "queue.buffering.max.messages", argv[6]);
  if (getenv("STREAMS_BENCH_TOKEN")) {
    set(conf, "security.protocol", "SASL_PLAINTEXT");
    set(conf, "sasl.mechanisms", "OAUTHBEARER");
    rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, token_cb);
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  char err[256];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_handle_mock_cluster(rk);
  if (mock) rd_kafka_mock_topic_create(mock, topic, 8, 1); /* the broker's partition count */
  char* value = malloc((size_t)size);
  memset(value, 'v', (size_t)size);
  /* Warm up: token, metadata and connections; not counted. */
  for (int i = 0; i < 100; i++)
    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(value, (size_t)size),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  rd_kafka_flush(rk, 30000);
  nlat = 0;
  errors = 0;
  long sent = 0;
  double t0 = now(), end = t0 + seconds;
  for (;;) {
    double t = now();
    if (t >= end) break;
    if (rate > 0 && (double)sent >= (t - t0) * rate) {
      rd_kafka_poll(rk, 0);
      struct timespec pause = {0, 50000};
      nanosleep(&pause, NULL);
      continue;
    }
    rd_kafka_resp_err_t e =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(value, (size_t)size),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_OPAQUE((void*)(uintptr_t)(t * 1e9)), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(rk, 1);
      continue;
    }
    if (e) {
      fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
      return 1;
    }
    if (++sent % 64 == 0) rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 60000);
  double elapsed = now() - t0; /* to the last delivery */
  qsort(lat, (size_t)nlat, sizeof(double), cmp);
  double p50 = nlat ? lat[nlat / 2] : 0, p99 = nlat ? lat[(long)((double)nlat * 0.99)] : 0,
         max = nlat ? lat[nlat - 1] : 0;
  printf(
      "records/s %.0f  MB/s %.1f  delivery p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%ld records, %ld "
      "errors)\n",
      (double)nlat / elapsed, (double)nlat * size / elapsed / 1e6, p50 * 1e3, p99 * 1e3, max * 1e3, nlat,
      errors);
  rd_kafka_destroy(rk);
  free(value);
  return errors ? 1 : 0;
}
