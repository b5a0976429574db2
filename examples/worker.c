/* worker.c -- a worker embedded in your own program: handlers in C,
 * a middleware that times every job, stop on SIGINT/SIGTERM (jobs still
 * running finish or go back to their queue; the process leaves the Web
 * UI's Busy page). Every failing call is checked and reported with
 * hh_last_error(), which says what and why ("invalid Redis URL (must
 * start with redis://, ...)"), where hh_strerror() says only "invalid
 * argument".
 * usage: example_worker [REDIS_URL]   (default $REDIS_URL) */
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
        fprintf(stderr, "example_worker: %s\n", hh_last_error());
        return 2;
    }
    if (hh_manager_register(manager, "HardWorker", hard_worker, NULL) != HH_OK ||
        hh_manager_use(manager, timing, manager) != HH_OK) {
        fprintf(stderr, "example_worker: %s\n", hh_last_error());
        hh_manager_free(manager);
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (hh_manager_start(manager) != HH_OK) {
        fprintf(stderr, "example_worker: start: %s\n", hh_last_error());
        hh_manager_free(manager);
        return 1;
    }
    hh_manager_wait(manager, -1);
    hh_manager_free(manager);
    return 0;
}
