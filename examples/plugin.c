/* plugin.c -- a `hiredhand work --require build/example_plugin.so` plug-in:
 * registers C handlers into the running worker.
 *   HardWorker  args [name, count]: logs and succeeds
 *   NoopJob     does nothing (used by the benchmark and tests)
 *   FailingJob  always fails with ArgumentError
 *   CancellableJob args [seconds]: works that long, in short slices, and
 *               returns early once the stop cancels it (hh_job_cancelled) */
#include <stdlib.h>
#include <time.h>
#include "hiredhand.h"

static int hard_worker(hh_job *job, void *udata) {
    hh_manager_log((hh_manager *)udata, HH_LOG_INFO, "HardWorker jid=%s args=%s", hh_job_jid(job), hh_job_args(job));
    return 0;
}

static int noop(hh_job *job, void *udata) {
    (void)job, (void)udata;
    return 0;
}

static int failing(hh_job *job, void *udata) {
    (void)udata;
    hh_job_fail(job, "ArgumentError", "FailingJob always fails (args %s)", hh_job_args(job));
    return -1;
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A long job that stops when asked: the worker cannot kill a C handler, so
 * it polls hh_job_cancelled() between slices of work. */
static int slow(hh_job *job, void *udata) {
    double seconds = atof(hh_job_args(job) + 1), t0 = mono();
    while (mono() - t0 < seconds) {
        if (hh_job_cancelled(job)) {
            hh_manager_log((hh_manager *)udata, HH_LOG_WARN, "CancellableJob jid=%s: cancelled after %.1f s",
                           hh_job_jid(job), mono() - t0);
            hh_job_fail(job, "Interrupted", "cancelled by the stop");
            return -1;
        }
        struct timespec slice = {0, 20 * 1000000L};
        nanosleep(&slice, NULL);
    }
    return 0;
}

/* The entry point the worker looks up by name (HH_PLUGIN_INIT_SYMBOL); its
 * type is hh_plugin_init_fn, declared here so the definition has a prototype. */
int hh_plugin_init(hh_manager *m);

int hh_plugin_init(hh_manager *m) {
    if (hh_manager_register(m, "HardWorker", hard_worker, m) != HH_OK) return -1;
    if (hh_manager_register(m, "NoopJob", noop, NULL) != HH_OK) return -1;
    if (hh_manager_register(m, "FailingJob", failing, NULL) != HH_OK) return -1;
    if (hh_manager_register(m, "CancellableJob", slow, m) != HH_OK) return -1;
    return 0;
}
