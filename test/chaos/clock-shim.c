/*
 * A wall-clock step for one process, for the chaos suite's clock-steps
 * scenario (test/chaos/faults.ts compiles it with gcc at test time and a
 * fleet member loads it with LD_PRELOAD). The file named by
 * SPLITFLEET_CHAOS_CLOCK_FILE holds an offset in milliseconds (signed); the
 * process's wall clock (CLOCK_REALTIME and its coarse variant,
 * gettimeofday, time) reads as the real one plus that offset, as after an
 * operator or a broken NTP daemon stepped it. Monotonic clocks are left
 * alone, as a real step leaves them: Node's performance.now and libuv's
 * timers do not move, Date.now and new Date() do.
 *
 * The file is read again at most every 20 ms (by the monotonic clock), with
 * open/read only (no malloc: these functions may be called from anywhere).
 * No file, or no number in it: offset 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);
static const char *control;
static volatile int64_t offset_ns;
static volatile int64_t next_read_ns;

static void init(void) {
  if (real_clock_gettime) return;
  real_gettimeofday = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
  control = getenv("SPLITFLEET_CHAOS_CLOCK_FILE");
  real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
}

static int64_t offset(void) {
  struct timespec m;
  init();
  if (!control) return 0;
  real_clock_gettime(CLOCK_MONOTONIC, &m);
  int64_t now = (int64_t)m.tv_sec * 1000000000LL + m.tv_nsec;
  if (now >= next_read_ns) {
    next_read_ns = now + 20000000LL;
    int fd = open(control, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char buf[32];
      ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n > 0) {
        buf[n] = 0;
        char *end;
        long long ms = strtoll(buf, &end, 10);
        if (end != buf) offset_ns = (int64_t)ms * 1000000LL;
      }
    }
  }
  return offset_ns;
}

static void shift(struct timespec *ts) {
  int64_t t = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset();
  ts->tv_sec = t / 1000000000LL;
  ts->tv_nsec = t % 1000000000LL;
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000LL;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  init();
  int r = real_clock_gettime(id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) shift(ts);
  return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
  init();
  int r = real_gettimeofday(tv, tz);
  if (r == 0) {
    struct timespec ts = { tv->tv_sec, tv->tv_usec * 1000 };
    shift(&ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return r;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
