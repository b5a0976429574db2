/* shutdown.c -- how a manager stops: quiet, stop and dump (flags safe in a
 * signal handler), the chores thread (acks left over, unblocking idle
 * fetches once quiet) and the supervisor that runs the stop: quiet, the
 * grace period for running jobs, then the hard shutdown that cancels the
 * handlers and pushes back in one pipeline what is still running or
 * buffered, sends the queued acks and leaves Redis, within one command
 * timeout (docs/design.md, "Quiet and stop"). hh_manager_wait waits for
 * its end. Keys: through finish.c (HH_LUA_REQUEUE/HH_LUA_PUSH_BACK on
 * queue:<q> and hiredhand:inprogress:<identity>|<q>, LREM acks), lease.c
 * (the last reconciliation) and heartbeat.c (leaving processes and the
 * process hash). */
#include "manager.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "finish.h"
#include "heartbeat.h"
#include "http.h"
#include "lease.h"
#include "pickup.h"
#include "processor.h"

/* The Redis work after the grace period (push back, acks, leaving the Busy
 * page) gets one command timeout, at most this long: with -t 25 a stop ends
 * within Kubernetes' default 30 s grace whatever Redis does. */
#define HH_STOP_BUDGET_MAX 3.0

/* These three may run in a signal handler: flag, then poke (wake.h). */
void hh_manager_quiet(hh_manager *m) {
    atomic_store(&m->flags.quiet, 1);
    hh__wake_poke(&m->wake);
}

void hh_manager_stop(hh_manager *m) {
    atomic_store(&m->flags.quiet, 1);
    atomic_store(&m->flags.stopping, 1);
    hh__wake_poke(&m->wake);
}

void hh_manager_dump(hh_manager *m) {
    atomic_store(&m->flags.dump_requested, 1);
    hh__wake_poke(&m->wake);
}

/* The Redis chores of a running manager, off the supervisor so that it never
 * waits on Redis: acks left by idle or busy threads, and once quiet, ending
 * the idle threads' blocking fetches: woken a few times at first, then every
 * 250 ms any thread still inside a blocking call is unblocked again, for as
 * long as one is (a thread descheduled just before its BRPOP, or reconnecting
 * after an outage, blocks late, and would hold up a stop by its 2 s).
 * Ends when the stop gives up on Redis. */
static void *chores_main(void *arg) {
    hh_manager *m = arg;
    int wakes = 0;
    double next_unblock = 0;
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "acks", &m->flags.giving_up);
    while (!atomic_load(&m->flags.giving_up)) {
        if (atomic_load(&m->flags.quiet) && wakes < 5) {
            hh__fetch_wake(&m->fetch_env, &c);
            wakes++;
        } else if (atomic_load(&m->flags.quiet) && hh__mono() >= next_unblock) {
            hh__fetch_unblock(&m->fetch_env, &c);
            next_unblock = hh__mono() + 0.25;
        }
        hh__finish_try_acks(&m->finish_env, &c);
        hh__sleep(0.05);
    }
    hh__conn_close(&c);
    return NULL;
}

/* Idle threads sleeping in the process see quiet at once (no Redis). */
static void wake_sleepers(hh_manager *m) { hh__fetch_wake_sleepers(&m->fetch_env); }

/* Joins t by the monotonic deadline, or detaches it: a thread still inside
 * a handler or a Redis call must not hold up the exit (the process may end
 * under it; the manager is then never freed). Returns 1 when joined. */
static int join_by(hh_manager *m, pthread_t t, double deadline) {
    if (hh__join_by(t, deadline)) return 1;
    atomic_fetch_add(&m->detached, 1);
    return 0;
}

/* Pushes back, in one pipeline on c (whose deadline bounds the wait), the
 * jobs still running at the end of the grace period (the first nrun of u)
 * and those fetched but not started, together with the queued acks. What
 * Redis did not confirm stays where it is: in this identity's in-progress
 * list with reliable fetch, recovered later; with basic fetch the job is
 * no longer in Redis, so its payload goes to the log for a manual push. */
static void push_back(hh_manager *m, hh__conn *c, hh__unfinished *u, size_t n, size_t nrun, hh_job **acks,
                      size_t nacks) {
    hh__pipe pipe;
    hh__pipe_begin(&pipe, c);
    for (size_t i = 0; i < n; i++) hh__finish_requeue_append(&m->finish_env, &pipe, u[i].queue, u[i].payload, u[i].len);
    for (size_t i = 0; i < nacks; i++) hh__finish_ack_append(&m->finish_env, &pipe, acks[i]);
    redisReply **r = hh__pipe_exec(&pipe);
    int pushed = 0, pend_pushed = 0, left = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *x = r ? r[i] : NULL;
        json_t *item = json_loadb(u[i].payload, u[i].len, JSON_ALLOW_NUL, NULL);
        const char *jid = json_string_value(json_object_get(item, "jid"));
        const char *klass = json_string_value(json_object_get(item, "class"));
        const char *queue = m->queues[u[i].queue];
        char why[300];
        snprintf(why, sizeof(why), "%s",
                 !x                                 ? hh__conn_error_or(c, "Redis unreachable")
                     : x->type == REDIS_REPLY_ERROR ? x->str
                                                    : "unexpected reply");
        if (x && x->type == REDIS_REPLY_INTEGER && x->integer > 0) {
            if (i < nrun) {
                hh__log(&m->log, HH_LOG_WARN,
                        "class=%s jid=%s: still running at the shutdown timeout; pushed back to queue %s",
                        klass ? klass : "?", jid ? jid : "?", queue);
                pushed++;
            } else {
                pend_pushed++;
            }
        } else if (x && x->type == REDIS_REPLY_INTEGER) {
            hh__log(&m->log, HH_LOG_WARN, "class=%s jid=%s: no longer in %s at the stop: not pushed back",
                    klass ? klass : "?", jid ? jid : "?", m->inprog_keys[u[i].queue]);
        } else {
            left++;
            hh__finish_report_unreturned(&m->finish_env, u[i].queue, u[i].payload, u[i].len, why);
        }
        json_decref(item);
    }
    if (pushed) hh__log(&m->log, HH_LOG_WARN, "pushed %d unfinished jobs back to their queues", pushed);
    if (pend_pushed)
        hh__log(&m->log, HH_LOG_INFO, "pushed %d fetched jobs that had not started back to their queues", pend_pushed);
    if (left && m->opts.fetch == HH_FETCH_RELIABLE)
        hh__log(&m->log, HH_LOG_WARN, "%d jobs left in this process's in-progress lists for recovery", left);
    if (nacks && !r)
        hh__log(&m->log, HH_LOG_WARN,
                "%zu finished jobs not acknowledged (%s): they stay in progress and run again after recovery", nacks,
                hh__conn_error_or(c, "Redis unreachable"));
    hh__replies_free(r, pipe.n);
}

/* Until the stop request: a refusal of Redis at start stops the manager;
 * the first quiet is announced and wakes the idle threads. Returns whether
 * quiet was announced. */
static int wait_for_stop(hh_manager *m) {
    int announced_quiet = 0;
    while (!atomic_load(&m->flags.stopping)) {
        if (hh__redis_refused(&m->cfg)) { /* Redis was down at start, then refused us */
            atomic_store(&m->flags.start_error, HH_ERR_REFUSED);
            hh_manager_stop(m);
            break;
        }
        if (!announced_quiet && atomic_load(&m->flags.quiet)) {
            announced_quiet = 1;
            hh__log(&m->log, HH_LOG_INFO, "quiet: no new jobs will be fetched");
            wake_sleepers(m);
        }
        /* Until a first connection works Redis may still refuse us for
         * good, which only a look every 20 ms sees; after that a refusal is
         * never reported (hh__redis_refused), and the supervisor sleeps until
         * a stop, quiet or dump pokes it (1 s: a late look for a refusal
         * decided just as the first connection worked). */
        hh__wake_relay(&m->wake, atomic_load(&m->cfg.ever_ready) ? 1.0 : 0.02);
    }
    return announced_quiet;
}

/* The grace period: a thread leaves once its job's outcome is written
 * (retried through an outage until the grace period ends) and its fetched
 * jobs are back. Returns at grace_end or when every worker left. */
static void wait_grace(hh_manager *m, double grace_end) {
    int started = 0;
    for (int i = 0; i < m->opts.concurrency; i++) started += m->procs[i].thread_started != 0;
    for (;;) {
        int running = 0;
        for (int i = 0; i < m->opts.concurrency; i++) {
            hh__processor *p = &m->procs[i];
            if (!p->thread_started) continue;
            if (pthread_tryjoin_np(p->thread, NULL) == 0) p->thread_started = 0;
            else running++;
        }
        if (running && atomic_load(&m->counters.workers_done) >= started) {
            /* Every worker poked on its way out and is returning: a join
             * waits only for that return. */
            for (int i = 0; i < m->opts.concurrency; i++) {
                hh__processor *p = &m->procs[i];
                if (p->thread_started) pthread_join(p->thread, NULL);
                p->thread_started = 0;
            }
            running = 0;
        }
        /* One look at the clock: with two, it may pass grace_end between
         * them (a loaded machine) and the wait below get nothing left. */
        double left = grace_end - hh__mono();
        if (!running || left <= 0) break;
        /* Each worker pokes as it leaves; dumps asked meanwhile are relayed. */
        hh__wake_relay(&m->wake, left);
    }
}

/* Until every cancelled handler returned (its run of the job is over) or
 * `until`. A job pushed back while its handler still runs can start in a
 * peer next to it: an --exec handler that ignores SIGTERM runs on until
 * its SIGKILL, 2 s later. */
static void wait_cancelled(hh_manager *m, const unsigned long *runs, double until) {
    for (;;) {
        int running = 0;
        for (int i = 0; i < m->opts.concurrency; i++) {
            hh__processor *p = &m->procs[i];
            if (!runs[i]) continue;
            pthread_mutex_lock(&p->mu);
            if (p->job && p->runs == runs[i]) running++;
            pthread_mutex_unlock(&p->mu);
        }
        if (!running || hh__mono() >= until) return;
        hh__sleep(0.01);
    }
}

/* The hard shutdown's first part: cancels every running handler before
 * any Redis I/O, waits (until wait_until) for them to return, then pushes
 * back on c what ran and what was fetched but not started, with the queued
 * acks, in one pipeline. */
static void cancel_and_push_back(hh_manager *m, hh__conn *c, double wait_until) {
    size_t cap = (size_t)m->opts.concurrency, n = 0, nrun = 0;
    hh__unfinished *u = calloc(cap, sizeof(*u));
    unsigned long *runs = calloc(cap, sizeof(*runs)); /* of the cancelled runs; 0: none */
    for (int i = 0; u && i < m->opts.concurrency; i++)
        if (hh__processor_abandon(&m->procs[i], &u[n]) == 1) {
            n++;
            if (runs) {
                pthread_mutex_lock(&m->procs[i].mu);
                runs[i] = m->procs[i].job ? m->procs[i].runs : 0;
                pthread_mutex_unlock(&m->procs[i].mu);
            }
        }
    if (!u) /* out of memory: still cancel them; their jobs stay in progress */
        for (int i = 0; i < m->opts.concurrency; i++) atomic_store(&m->procs[i].cancelled, 1);
    if (n && runs) wait_cancelled(m, runs, wait_until);
    free(runs);
    nrun = n;
    hh__unfinished *pend = NULL;
    size_t npend = hh__processor_take_pending(&m->fetch_env, &pend);
    if (npend && u) {
        hh__unfinished *all = realloc(u, (n + npend) * sizeof(*u));
        if (all) {
            u = all;
            memcpy(u + n, pend, npend * sizeof(*pend));
            n += npend;
            free(pend);
            pend = NULL, npend = 0;
        }
    }
    size_t nacks = 0;
    hh_job **acks = hh__finish_take_acks(&m->finish_env, &nacks);
    if (n || nacks) push_back(m, c, u, n, nrun, acks, nacks);
    for (size_t i = 0; i < n; i++) hh__unfinished_free(&u[i]);
    for (size_t i = 0; i < npend; i++) hh__unfinished_free(&pend[i]); /* not taken: stay in progress */
    free(u);
    free(pend);
    hh__finish_acks_free(&m->finish_env, acks, nacks);
}

/* The hard shutdown's second part, by `end`: the heartbeat off, leftovers
 * of our lists back, the process unregistered, every thread joined or left
 * behind. */
static void leave_redis(hh_manager *m, hh__conn *c, pthread_t chores, int chores_started, double end) {
    /* The heartbeat must be off before leaving the process set. */
    int beats_joined = !m->heartbeat_started || join_by(m, m->heartbeat_thread, end);
    /* What our lists still hold that no thread has (lost fetch replies) goes
     * back now, not when this identity next starts. Skipped when Redis just
     * failed us or our last beat (a hung Redis costs no extra time), and when
     * the identity was never checked (its lists may be a live process's). */
    pthread_mutex_lock(&m->board.mu);
    int beats_failing = m->board.last_error[0] != '\0';
    pthread_mutex_unlock(&m->board.mu);
    if (atomic_load(&m->flags.booted) && !beats_failing && (hh__conn_connected(c) || !hh__conn_last_error(c)[0]) &&
        m->opts.fetch == HH_FETCH_RELIABLE)
        hh__lease_reconcile(&m->lease_env, c, 1);
    /* Never booted, or taken over: the identity is another process's; leave it. */
    int lost = hh__lease_identity_is_lost(&m->lease_env);
    if (lost) {
        hh__log(&m->log, HH_LOG_WARN, "identity %s taken over: not unregistering (the entry is the new owner's)",
                m->identity);
    } else if (atomic_load(&m->flags.booted) && hh__heartbeat_unregister(&m->heartbeat_env, c) != 0)
        hh__log(&m->log, HH_LOG_WARN, "could not unregister from Redis (%s): the process hash expires in 60 s",
                hh__conn_error_or(c, "Redis unreachable"));
    else if (!beats_joined)
        hh__log(&m->log, HH_LOG_WARN, "heartbeat stuck in a Redis call: a late beat may show this process for 60 s");
    int stuck = 0;
    for (int i = 0; i < m->opts.concurrency; i++) {
        hh__processor *p = &m->procs[i];
        if (p->thread_started && !join_by(m, p->thread, end)) stuck++;
        p->thread_started = 0;
    }
    if (stuck)
        hh__log(&m->log, HH_LOG_WARN,
                "%d worker threads still in a handler or a Redis call at the deadline: left behind", stuck);
    /* The runs since the last beat, the cancelled ones included, as
     * Sidekiq 8 flushes at its exit; one try within the stop's budget. */
    hh__job_metrics_flush(m->job_metrics, c, hh__now());
    if (!hh__pickup_stop_by(&m->pickup_env, end)) atomic_fetch_add(&m->detached, 1);
    if (m->scheduler_started) join_by(m, m->scheduler_thread, end);
    if (m->cron_started) join_by(m, m->cron_thread, end);
    if (m->recovery_started) join_by(m, m->recovery_thread, end);
    if (chores_started) join_by(m, chores, end);
    m->scheduler_started = m->recovery_started = m->heartbeat_started = m->cron_started = 0;
    hh__finish_flush_acks(&m->finish_env, c); /* left by threads that ended late; one try within the budget */
}

/* Waits for the stop request, then up to the grace period for the worker
 * threads to finish their jobs and leave; then the hard shutdown: running
 * handlers are cancelled at once, and the Redis work left (push back, acks,
 * leaving the Busy page) shares one bounded budget, so the stop ends by
 * grace + budget whatever Redis does (docs/running-workers.md, Signals; docs/design.md).
 * The supervisor itself never waits on Redis before that point. */
void *hh__manager_supervisor_main(void *arg) {
    hh_manager *m = arg;
    pthread_t chores;
    int chores_started = pthread_create(&chores, NULL, chores_main, m) == 0;
    if (!chores_started) hh__log(&m->log, HH_LOG_WARN, "cannot create the acks thread: acks ride with fetches only");
    int announced_quiet = wait_for_stop(m);
    double grace_end = hh__mono() + m->opts.shutdown_timeout;
    if (!announced_quiet) hh__log(&m->log, HH_LOG_INFO, "quiet: no new jobs will be fetched");
    hh__log(&m->log, HH_LOG_INFO, "stopping: waiting up to %.0f s for %d running jobs", m->opts.shutdown_timeout,
            atomic_load(&m->counters.busy));
    wake_sleepers(m);
    wait_grace(m, grace_end);

    /* Hard shutdown. From here writes that fail are tried once, not retried:
     * those jobs stay in their in-progress lists for recovery. */
    atomic_store(&m->flags.giving_up, 1);
    atomic_store(&m->flags.beats_off, 1);
    hh__wake_all(&m->wake);
    double budget = m->cfg.command_timeout < HH_STOP_BUDGET_MAX ? m->cfg.command_timeout : HH_STOP_BUDGET_MAX;
    double end = hh__mono() + budget;
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "shutdown", NULL);
    hh__conn_set_deadline(&c, end);
    /* the cancelled handlers may take most of the budget to end (an --exec
     * handler's SIGKILL comes 2 s after its SIGTERM); what Redis needs on a
     * healthy day, a few round trips, gets the rest */
    cancel_and_push_back(m, &c, end - (budget / 6 < 0.5 ? budget / 6 : 0.5));
    leave_redis(m, &c, chores, chores_started, end);
    hh__conn_close(&c);
    hh__log(&m->log, HH_LOG_INFO, "stopped: processed=%llu failed=%llu",
            (unsigned long long)atomic_load(&m->counters.processed),
            (unsigned long long)atomic_load(&m->counters.failed));
    hh__http_stop(m->http);
    m->http = NULL;
    atomic_store(&m->flags.done, 1);
    hh__wake_all(&m->wake);
    return NULL;
}

static int is_done(const void *arg) { return atomic_load(&((const hh_manager *)arg)->flags.done); }

int hh_manager_wait(hh_manager *m, double timeout) {
    if (!m) return hh__fail(HH_ERR_INVALID, "wait: the manager is missing");
    if (!atomic_load(&m->started)) return HH_OK;
    if (!hh__wake_wait(&m->wake, timeout >= 0 ? hh__mono() + timeout : -1, is_done, m))
        return hh__fail(HH_ERR_STATE, "still running after %g s", timeout);
    if (m->supervisor_started) {
        pthread_join(m->supervisor_thread, NULL);
        m->supervisor_started = 0;
    }
    int e = atomic_load(&m->flags.start_error);
    if (e == HH_ERR_EXISTS && atomic_load(&m->flags.taken_over))
        hh__fail(e, "identity %s was taken over by a newer process: stopped", m->identity);
    else if (e == HH_ERR_EXISTS)
        hh__fail(e, "identity %s is live in another process (found once Redis answered): stopped", m->identity);
    else if (e == HH_ERR_REFUSED)
        hh__fail(e, "redis %s refused the connection settings (password, user, db or Sentinel master name): stopped",
                 m->cfg.display);
    return e;
}
