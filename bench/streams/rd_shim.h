/* The few definitions rdkafka_performance.c takes from librdkafka's unshipped src/rd.h and rdtime.h. */
#pragma once
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
typedef int64_t rd_ts_t;
static __inline rd_ts_t rd_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (rd_ts_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
#define rd_snprintf snprintf
#define RD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RD_UNUSED __attribute__((unused))
