/* finish.h -- the one home of a fetched job's end when no outcome is
 * written for it (outcome.h writes those): the ack of a success (LREM of
 * its exact bytes, queued and batched with the next fetch or sent by the
 * chores thread), the push back of a job that will not run here (to the
 * tail of its queue: it runs next), and the report of a job that could not
 * be pushed back before the stop gave up (where it is). Every retried
 * write goes through outcome.c's hh_write_until_done, so acks and push
 * backs keep the rules of docs/reliability.md: retried whatever the error
 * until Redis takes them, until the stop gives up.
 *
 * Layering: below fetch.c and processor.c (which call it), above lease.c
 * (a job leaves the held-jobs registry once its removal has answered) and
 * outcome.c. Keys: queue:<q> (RPUSH back), hiredhand:inprogress:<identity>|<q>
 * (LREM on ack and push back): see finish.c. */
#ifndef HH_FINISH_H
#define HH_FINISH_H

#include <stdatomic.h>
#include <stddef.h>
#include "hiredhand.h"
#include "job.h"
#include "keys.h"
#include "lease.h"
#include "redis.h"
#include "util.h"

struct hh_acks;

/* All finish.c knows of its manager, filled by manager.c (which keeps it
 * alive as long as the worker threads) and pointing into it. */
typedef struct hh_finish_env {
    struct {
        hh_fetch_mode fetch;
    } opts;
    const hh_keys *keys;
    const hh_logger *log;
    const char *identity;
    size_t nqueues;
    char *const *queues;            /* names, configuration order */
    sds *queue_keys;                /* queue:<q>, namespaced, per queue */
    sds *inprog_keys;               /* this identity's in-progress list per queue */
    const atomic_int *giving_up;    /* the stop gave up on Redis: stop retrying */
    atomic_ullong *not_pushed_back; /* basic fetch's jobs gone from Redis (hh_finish_report_unreturned) */
    const hh_lease_env *lease;      /* lease.c: a job's end releases its lease */
    struct hh_acks *acks;           /* the queued acks: hh_acks_new's, set by manager.c */
} hh_finish_env;

/* The queue of acks not sent yet, shared by the worker threads. flush_at:
 * how many queued acks make the thread adding one send them all (the
 * manager passes concurrency + the largest fetch batch). NULL when out of
 * memory. hh_acks_free frees the acks still queued (their jobs stay in
 * progress: reconciliation or recovery pushes them back). */
struct hh_acks *hh_acks_new(size_t flush_at);
void hh_acks_free(struct hh_acks *a);

/* Queues the ack of a finished job (which it then owns and frees); sends
 * the queue with connection c when it is full, and that ack alone at once
 * when the queue cannot take it (out of memory). Thread-safe. */
void hh_finish_queue_ack(const hh_finish_env *m, hh_job *job, hh_conn *c);

/* Sends every queued ack (pipelined LREMs) with connection c, through
 * hh_write_until_done until done or the stop gave up. Thread-safe. */
void hh_finish_flush_acks(const hh_finish_env *m, hh_conn *c);
/* The same, one attempt: what fails stays queued (for the supervisor, which
 * must never block on an outage). */
void hh_finish_try_acks(const hh_finish_env *m, hh_conn *c);
/* Sends the n acks of jobs (a malloc'd array, taken over) until done, as
 * hh_finish_flush_acks does with the queued ones: for a fetch whose round
 * trip carried them and lost its connection. */
void hh_finish_send_acks(const hh_finish_env *m, hh_conn *c, hh_job **jobs, size_t n);

/* Takes every queued ack (the caller sends them, reads their replies with
 * hh_finish_acks_settle or frees them with hh_finish_acks_free). NULL and
 * *n 0 when none. */
hh_job **hh_finish_take_acks(const hh_finish_env *m, size_t *n);
/* Appends the ack (LREM of the exact payload) to a pipeline; nothing in
 * basic fetch. */
void hh_finish_ack_append(const hh_finish_env *m, hh_pipe *pipe, const hh_job *job);
/* Reads the replies r of n pipelined acks (taken over with jobs): refused
 * ones are queued again (their error in why when why is not NULL), the
 * others end (lease released, freed); an LREM that removed nothing on its
 * first attempt is a lease loss (lease.c). Returns how many were refused. */
size_t hh_finish_acks_settle(const hh_finish_env *m, hh_conn *c, hh_job **jobs, redisReply **r, size_t n, char *why,
                             size_t whylen);
/* Ends n taken acks without sending them (lease released, freed, and the
 * array): they stay in progress. */
void hh_finish_acks_free(const hh_finish_env *m, hh_job **jobs, size_t n);

/* Pushes a fetched job back to the tail of its queue (runs next), exact
 * bytes, once: LREM+RPUSH in one script for reliable fetch, an RPUSH script
 * for basic (both allowed over maxmemory: scripts.h).
 * Returns 1 pushed, 0 it was no longer in progress, -1 Redis error. */
int hh_finish_requeue(const hh_finish_env *m, hh_conn *c, const char *queue, const char *payload, size_t len);
/* Appends the push back of hh_finish_requeue to a pipeline (the script's
 * source, not its sha: one round trip even on a fresh connection). Its
 * reply: integer 1 pushed, 0 no longer in progress; anything else failed. */
void hh_finish_requeue_append(const hh_finish_env *m, hh_pipe *pipe, size_t queue, const char *payload, size_t len);
/* Pushes one fetched job back to its queue until Redis takes it or the
 * stop gives up (then says where it is). The job stays the caller's. */
void hh_finish_push_back(const hh_finish_env *m, hh_conn *conn, const hh_fetched *f);

/* Says loudly that a fetched job could not be pushed back before the stop
 * gave up, and where it is: still in this identity's in-progress list
 * (reliable fetch: WARN, recovered later), or nowhere in Redis (basic
 * fetch: ERROR with the full payload, to push again by hand). */
void hh_finish_report_unreturned(const hh_finish_env *m, size_t queue, const char *payload, size_t len,
                                 const char *why);

#endif
