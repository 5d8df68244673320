/* streams_oauth_client: a librdkafka client that authenticates with SASL/OAUTHBEARER using a real Govern
 * access token (kcat can only send librdkafka's unsecured "alg: none" JWT). The token comes from the
 * refresh callback, which reads it from the file named by argv[2] each time, so a test can swap it.
 *
 *   streams_oauth_client BROKER TOKEN_FILE produce TOPIC VALUE     exit 0 when delivered, else prints the
 * error streams_oauth_client BROKER TOKEN_FILE consume TOPIC COUNT     prints COUNT values from the beginning
 *
 * Errors are printed as "error: <librdkafka error name>" so the test can match them. */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char* token_file;
static char last_error[512];

static void refresh_cb(rd_kafka_t* rk, const char* config, void* opaque) {
  (void)config;
  (void)opaque;
  char tok[8192];
  FILE* f = fopen(token_file, "r");
  size_t n = f ? fread(tok, 1, sizeof tok - 1, f) : 0;
  if (f) fclose(f);
  while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r')) n--;
  tok[n] = 0;
  char err[256];
  /* librdkafka only uses the lifetime to schedule the next refresh; the broker decides validity. */
  int64_t lifetime_ms = (int64_t)time(NULL) * 1000 + 3600 * 1000;
  if (rd_kafka_oauthbearer_set_token(rk, tok, lifetime_ms, "govern", NULL, 0, err, sizeof err))
    rd_kafka_oauthbearer_set_token_failure(rk, err);
}

static void error_cb(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  (void)rk;
  (void)opaque;
  snprintf(last_error, sizeof last_error, "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static rd_kafka_conf_t* make_conf(const char* broker) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[256];
  const char* kv[][2] = {{"bootstrap.servers", broker},
                         {"security.protocol", "SASL_PLAINTEXT"},
                         {"sasl.mechanisms", "OAUTHBEARER"},
                         {"socket.timeout.ms", "5000"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], err, sizeof err) != RD_KAFKA_CONF_OK) {
      fprintf(stderr, "conf %s: %s\n", kv[i][0], err);
      exit(2);
    }
  rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, refresh_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  return conf;
}

static rd_kafka_resp_err_t delivered = RD_KAFKA_RESP_ERR__IN_PROGRESS;
static void dr_cb(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  (void)rk;
  (void)opaque;
  delivered = m->err;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s BROKER TOKEN_FILE produce|consume TOPIC VALUE|COUNT\n", argv[0]);
    return 2;
  }
  token_file = argv[2];
  char err[256];
  if (strcmp(argv[3], "produce") == 0) {
    rd_kafka_conf_t* conf = make_conf(argv[1]);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    if (rd_kafka_conf_set(conf, "message.timeout.ms", "4000", err, sizeof err) != RD_KAFKA_CONF_OK) return 2;
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) return fprintf(stderr, "%s\n", err), 2;
    rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(argv[4]), RD_KAFKA_V_PARTITION(0),
                                              RD_KAFKA_V_VALUE(argv[5], strlen(argv[5])), RD_KAFKA_V_END);
    if (e) return printf("error: %s\n", rd_kafka_err2name(e)), 1;
    rd_kafka_flush(rk, 10000);
    int rc = 0;
    if (delivered != RD_KAFKA_RESP_ERR_NO_ERROR) {
      printf("error: %s\n", rd_kafka_err2name(delivered));
      if (last_error[0]) printf("last: %s\n", last_error);
      rc = 1;
    }
    rd_kafka_destroy(rk);
    return rc;
  }
  rd_kafka_conf_t* conf = make_conf(argv[1]);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) return fprintf(stderr, "%s\n", err), 2;
  /* The simple (group-less) consumer API: no coordinator needed. */
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, argv[4], NULL);
  rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING);
  int want = atoi(argv[5]), got = 0, rc = 0;
  for (int i = 0; i < 100 && got < want; i++) {
    rd_kafka_poll(rk, 0); /* serves the token refresh callback */
    rd_kafka_message_t* m = rd_kafka_consume(rkt, 0, 100);
    if (!m) continue;
    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      printf("error: %s\n", rd_kafka_err2name(m->err));
      rd_kafka_message_destroy(m);
      rc = 1;
      break;
    }
    if (!m->err) {
      printf("%.*s\n", (int)m->len, (const char*)m->payload);
      got++;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consume_stop(rkt, 0);
  rd_kafka_topic_destroy(rkt);
  if (got < want && rc == 0) {
    printf("error: got %d of %d\n", got, want);
    if (last_error[0]) printf("last: %s\n", last_error);
    rc = 1;
  }
  rd_kafka_destroy(rk);
  return rc;
}
