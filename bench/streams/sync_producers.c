/* Synchronous producers for the streams benchmark: THREADS threads, each with its own librdkafka
 * producer (acks=all) bound to partition (thread % PARTITIONS), send BATCH records of SIZE bytes, wait
 * until every one is acknowledged (rd_kafka_flush), and repeat for SECONDS. Prints records/s, MB/s and
 * the p50/p99 of one batch's round trip.
 * BROKERS "mock": each producer gets librdkafka's in-memory mock cluster (no durability), as a reference.
 * Environment: STREAMS_BENCH_TOKEN (a file holding an access token): SASL OAUTHBEARER with it.
 * Usage: sync_producers BROKERS|mock TOPIC PARTITIONS THREADS BATCH SIZE SECONDS */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *brokers, *topic;
static int partitions, batch, size;
static double seconds;
static long errors;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct worker {
  int id;
  long records;
  double* lat;
  long nlat, cap;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  (void)rk;
  (void)opaque;
  if (m->err) {
    pthread_mutex_lock(&mu);
    errors++;
    pthread_mutex_unlock(&mu);
  }
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
  long long lifetime_ms = (long long)ts.tv_sec * 1000 + 300000; /* only schedules librdkafka's refresh */
  if (rd_kafka_oauthbearer_set_token(rk, tok, lifetime_ms, "govern", NULL, 0, err, sizeof err))
    rd_kafka_oauthbearer_set_token_failure(rk, err);
}

static void* run(void* arg) {
  struct worker* w = arg;
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (strcmp(brokers, "mock") == 0) {
    rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "4", err, sizeof err); /* not the mock's notice per producer */
  } else {
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
  }
  if (getenv("STREAMS_BENCH_TOKEN")) {
    rd_kafka_conf_set(conf, "security.protocol", "SASL_PLAINTEXT", err, sizeof err);
    rd_kafka_conf_set(conf, "sasl.mechanisms", "OAUTHBEARER", err, sizeof err);
    rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, token_cb);
  }
  rd_kafka_conf_set(conf, "acks", "all", err, sizeof err);
  rd_kafka_conf_set(conf, "linger.ms", "1000", err, sizeof err); /* flush sends the batch at once */
  rd_kafka_conf_set(conf, "batch.num.messages", "100000", err, sizeof err);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "%s\n", err);
    exit(2);
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_handle_mock_cluster(rk);
  if (mock) rd_kafka_mock_topic_create(mock, topic, partitions, 1); /* the broker's partition count */
  char* value = malloc((size_t)size);
  memset(value, 'v', (size_t)size);
  int partition = w->id % partitions;
  /* Warm up: metadata and connection. */
  rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_VALUE(value, 1),
                    RD_KAFKA_V_END);
  rd_kafka_flush(rk, 30000);
  double end = now() + seconds;
  while (now() < end) {
    double t0 = now();
    for (int i = 0; i < batch; i++)
      rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_VALUE(value, (size_t)size), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_END);
    rd_kafka_flush(rk, 60000);
    if (w->nlat == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 1024;
      w->lat = realloc(w->lat, (size_t)w->cap * sizeof(double));
    }
    w->lat[w->nlat++] = now() - t0;
    w->records += batch;
  }
  rd_kafka_destroy(rk);
  free(value);
  return NULL;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: %s BROKERS TOPIC PARTITIONS THREADS BATCH SIZE SECONDS\n", argv[0]);
    return 2;
  }
  brokers = argv[1];
  topic = argv[2];
  partitions = atoi(argv[3]);
  int threads = atoi(argv[4]);
  batch = atoi(argv[5]);
  size = atoi(argv[6]);
  seconds = atof(argv[7]);
  struct worker* ws = calloc((size_t)threads, sizeof *ws);
  pthread_t* ts = calloc((size_t)threads, sizeof *ts);
  double t0 = now();
  for (int i = 0; i < threads; i++) {
    ws[i].id = i;
    pthread_create(&ts[i], NULL, run, &ws[i]);
  }
  long records = 0, n = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(ts[i], NULL);
    records += ws[i].records;
    n += ws[i].nlat;
  }
  double elapsed = now() - t0;
  double* all = malloc((size_t)(n ? n : 1) * sizeof(double));
  long k = 0;
  for (int i = 0; i < threads; i++)
    for (long j = 0; j < ws[i].nlat; j++) all[k++] = ws[i].lat[j];
  qsort(all, (size_t)n, sizeof(double), cmp);
  double p50 = n ? all[n / 2] : 0, p99 = n ? all[(long)((double)n * 0.99)] : 0;
  /* elapsed includes the warm-up connection of every producer; records/s is over the timed window. */
  (void)elapsed;
  printf(
      "records/s %.0f  MB/s %.1f  batch p50 %.1f ms  p99 %.1f ms  (%ld records, %ld batches, %ld errors)\n",
      (double)records / seconds, (double)records * size / seconds / 1e6, p50 * 1e3, p99 * 1e3, records, n,
      errors);
  return errors ? 1 : 0;
}
