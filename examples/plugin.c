/* plugin.c -- a `hiredhand work --require build/example_plugin.so` plug-in:
 * registers C handlers into the running worker.
 *   HardWorker  args [name, count]: logs and succeeds
 *   NoopJob     does nothing (used by the benchmark and tests)
 *   FailingJob  always fails with ArgumentError */
#include <stdlib.h>
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

int hh_plugin_init(hh_manager *m) {
    if (hh_manager_register(m, "HardWorker", hard_worker, m) != HH_OK) return -1;
    if (hh_manager_register(m, "NoopJob", noop, NULL) != HH_OK) return -1;
    if (hh_manager_register(m, "FailingJob", failing, NULL) != HH_OK) return -1;
    return 0;
}
