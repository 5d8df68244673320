/* An idempotent librdkafka producer for the streams e2e tests: produces COUNT records "PREFIX-i" to
 * TOPIC with acks=all and enable.idempotence=true, and prints "acked PARTITION OFFSET VALUE" for every
 * delivery report that succeeded (and "failed VALUE ERROR" otherwise). Exits 0 when every record was
 * acknowledged, 1 otherwise (including a fatal idempotence error). RATE, when given, paces production
 * to that many records a second, so that the records queued while the broker is down (and acknowledged
 * in a burst once it is back) stay a small part of COUNT; after a stall (a full queue) it does not
 * catch up by more than 50 ms worth of records.
 * Usage: idempotent_producer BROKERS TOPIC COUNT PREFIX [RATE] */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long acked = 0, failed = 0;

static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    failed++;
    printf("failed %.*s %s\n", (int)m->len, (const char*)m->payload, rd_kafka_err2str(m->err));
  } else {
    acked++;
    printf("acked %d %lld %.*s\n", (int)m->partition, (long long)m->offset, (int)m->len,
           (const char*)m->payload);
  }
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set(rd_kafka_conf_t* conf, const char* k, const char* v) {
  char err[256];
  if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s: %s\n", k, err);
    exit(2);
  }
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s BROKERS TOPIC COUNT PREFIX [RATE]\n", argv[0]);
    return 2;
  }
  long count = atol(argv[3]);
  double rate = 0;
  if (argc == 6) {
    char* end = NULL;
    rate = strtod(argv[5], &end);
    if (end == argv[5] || *end != '\0' || !(rate > 0)) {
      fprintf(stderr, "RATE must be a positive number of records a second, not '%s'\n", argv[5]);
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* the kill test watches progress */
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", argv[1]);
  set(conf, "enable.idempotence", "true");
  set(conf, "acks", "all");
  set(conf, "linger.ms", "2");
  set(conf, "message.timeout.ms", "60000");
  set(conf, "retry.backoff.ms", "50");
  set(conf, "reconnect.backoff.ms", "20");
  set(conf, "reconnect.backoff.max.ms", "200");
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "rd_kafka_new: %s\n", err);
    return 2;
  }
  char value[128];
  double start = now_seconds();
  for (long i = 0; i < count; i++) {
    while (rate > 0) {
      double due = start + (double)i / rate, now = now_seconds();
      if (now >= due) {
        if (now - due > 0.05) start += now - due - 0.05; /* a stall: forget all but 50 ms of it */
        break;
      }
      rd_kafka_poll(rk, 1);
    }
    int n = snprintf(value, sizeof value, "%s-%ld", argv[4], i);
    for (;;) {
      rd_kafka_resp_err_t e =
          rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(argv[2]), RD_KAFKA_V_VALUE(value, (size_t)n),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk, 10);
        continue;
      }
      if (e) {
        fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
        return 1;
      }
      break;
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 90000);
  rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(rk, err, sizeof err);
  if (fatal) fprintf(stderr, "fatal: %s\n", err);
  fprintf(stderr, "acked %ld failed %ld of %ld\n", acked, failed, count);
  fflush(stdout);
  rd_kafka_destroy(rk);
  return (acked == count && !fatal) ? 0 : 1;
}
