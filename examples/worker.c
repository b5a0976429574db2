/* worker.c -- a worker embedded in your own program: handlers in C,
 * a middleware that times every job, stop on SIGINT/SIGTERM.
 * usage: example_worker [REDIS_URL] */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include "hiredhand.h"

static hh_manager *manager;

static void on_signal(int sig) {
    (void)sig;
    hh_manager_stop(manager); /* async-signal-safe */
}

static int hard_worker(hh_job *job, void *udata) {
    (void)udata;
    printf("HardWorker %s %s\n", hh_job_jid(job), hh_job_args(job));
    fflush(stdout);
    return 0;
}

static int timing(hh_job *job, hh_chain *chain, void *udata) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = hh_chain_next(chain, job);
    clock_gettime(CLOCK_MONOTONIC, &b);
    hh_manager_log((hh_manager *)udata, HH_LOG_INFO, "%s %s took %.3f ms", hh_job_class(job), hh_job_jid(job),
                   (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
    return rc;
}

int main(int argc, char **argv) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = argc > 1 ? argv[1] : NULL;
    o.concurrency = 5;
    int err;
    manager = hh_manager_new(&o, &err);
    if (!manager) {
        fprintf(stderr, "worker: %s\n", hh_strerror(err));
        return 2;
    }
    hh_manager_register(manager, "HardWorker", hard_worker, NULL);
    hh_manager_use(manager, timing, manager);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if ((err = hh_manager_start(manager)) != HH_OK) {
        fprintf(stderr, "start: %s\n", hh_strerror(err));
        hh_manager_free(manager);
        return 1;
    }
    hh_manager_wait(manager, -1);
    hh_manager_free(manager);
    return 0;
}
