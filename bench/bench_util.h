/* bench_util.h -- the clocks and process readings both bench drivers
 * (bench.c, shapes_driver.c) take: monotonic time, sleeping, this process's
 * CPU time and its peak resident set. Header-only: shapes.sh builds its
 * driver with a bare cc. */
#ifndef HH_BENCH_UTIL_H
#define HH_BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static inline double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps s seconds (none when s <= 0), resumed after signals. */
static inline void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* User + system CPU seconds of this process so far. */
static inline double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
        (double)ru.ru_stime.tv_usec / 1e6;
}

/* VmHWM (peak resident set) of this process in KiB, 0 when unreadable. */
static inline long vm_hwm_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

#endif
