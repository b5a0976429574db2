/* finish.h -- the one home of a fetched job's end when no outcome is
 * written for it (outcome.h writes those): the ack of a success (LREM of
 * its exact bytes, queued and batched with the next fetch or sent by the
 * chores thread), the push back of a job that will not run here (to the
 * tail of its queue: it runs next), and the report of a job that could not
 * be pushed back before the stop gave up (where it is). Every retried
 * write goes through outcome.c's hh__write_until_done, so acks and push
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
#include "context.h"
#include "hiredhand.h"
#include "job.h"
#include "keys.h"
#include "lease.h"
#include "redis.h"
#include "util.h"

struct hh__acks;

/* finish.c's env: the manager's context, the lease and its own queued
 * acks, filled by manager.c (which keeps it alive as long as the worker
 * threads). */
typedef struct hh__finish_env {
    const hh__ctx *ctx;         /* the manager's (context.h): queues, giving_up, not_pushed_back */
    const hh__lease_env *lease; /* lease.c: a job's end releases its lease */
    struct hh__acks *acks;      /* the queued acks: hh__acks_new's, set by manager.c */
} hh__finish_env;

/* The queue of acks not sent yet, shared by the worker threads. flush_at:
 * how many queued acks make the thread adding one send them all (the
 * manager passes concurrency + the largest fetch batch). NULL when out of
 * memory. hh__acks_free frees the acks still queued (their jobs stay in
 * progress: reconciliation or recovery pushes them back). */
struct hh__acks *hh__acks_new(size_t flush_at);
void hh__acks_free(struct hh__acks *a);

/* Queues the ack of a finished job (which it then owns and frees); sends
 * the queue with connection c when it is full, and that ack alone at once
 * when the queue cannot take it (out of memory). Thread-safe. */
void hh__finish_queue_ack(const hh__finish_env *env, hh_job *job, hh__conn *c);

/* Sends every queued ack (pipelined LREMs) with connection c, through
 * hh__write_until_done until done or the stop gave up. Thread-safe. */
void hh__finish_flush_acks(const hh__finish_env *env, hh__conn *c);
/* The same, one attempt: what fails stays queued (for the supervisor, which
 * must never block on an outage). */
void hh__finish_try_acks(const hh__finish_env *env, hh__conn *c);
/* Sends the n acks of jobs (a malloc'd array, taken over) until done, as
 * hh__finish_flush_acks does with the queued ones: for a fetch whose round
 * trip carried them and lost its connection. */
void hh__finish_send_acks(const hh__finish_env *env, hh__conn *c, hh_job **jobs, size_t n);

/* Takes every queued ack (the caller sends them, reads their replies with
 * hh__finish_acks_settle or frees them with hh__finish_acks_free). NULL and
 * *n 0 when none. */
hh_job **hh__finish_take_acks(const hh__finish_env *env, size_t *n);
/* Appends the ack (LREM of the exact payload) to a pipeline; nothing in
 * basic fetch. */
void hh__finish_ack_append(const hh__finish_env *env, hh__pipe *pipe, const hh_job *job);
/* Reads the replies r of n pipelined acks (taken over with jobs): refused
 * ones are queued again (their error in why when why is not NULL), the
 * others end (lease released, freed); an LREM that removed nothing on its
 * first attempt is a lease loss (lease.c). Returns how many were refused. */
size_t hh__finish_acks_settle(const hh__finish_env *env, hh__conn *c, hh_job **jobs, redisReply **r, size_t n,
                              char *why, size_t whylen);
/* Ends n taken acks without sending them (lease released, freed, and the
 * array): they stay in progress. */
void hh__finish_acks_free(const hh__finish_env *env, hh_job **jobs, size_t n);

/* Pushes a fetched job back to the tail of its queue (runs next), exact
 * bytes, once: LREM+RPUSH in one script for reliable fetch, an RPUSH script
 * for basic (both allowed over maxmemory: scripts.h).
 * Returns 1 pushed, 0 it was no longer in progress, -1 Redis error, with
 * Redis' own message (or the connection's error) in why. */
int hh__finish_requeue(const hh__finish_env *env, hh__conn *c, const char *queue, const char *payload, size_t len,
                       char *why, size_t whylen);
/* Appends the push back of hh__finish_requeue to a pipeline (the script's
 * source, not its sha: one round trip even on a fresh connection). Its
 * reply: integer 1 pushed, 0 no longer in progress; anything else failed. */
void hh__finish_requeue_append(const hh__finish_env *env, hh__pipe *pipe, size_t queue, const char *payload,
                               size_t len);
/* Pushes one fetched job back to its queue until Redis takes it or the
 * stop gives up (then says where it is). The job stays the caller's. */
void hh__finish_push_back(const hh__finish_env *env, hh__conn *conn, const hh__fetched *f);

/* Says loudly that a fetched job could not be pushed back before the stop
 * gave up, and where it is: still in this identity's in-progress list
 * (reliable fetch: WARN, recovered later), or nowhere in Redis (basic
 * fetch: ERROR with the full payload, to push again by hand). */
void hh__finish_report_unreturned(const hh__finish_env *env, size_t queue, const char *payload, size_t len,
                                  const char *why);

#endif
