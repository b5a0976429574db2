/* lease.h -- what this process holds of its own in-progress lists, and what
 * follows from it (reliable fetch only):
 *
 *  - the held-jobs registry: every job a fetch handed to this process, from
 *    the moment its fetch reply is read until the command that removed it
 *    from the list (ack, outcome, push back) has answered;
 *  - reconciliation: entries of this process's lists that no thread holds
 *    (a fetch ran in Redis but its reply was lost: killed connection,
 *    timeout, Redis paused) go back to their queues, one atomic script each;
 *  - the outage rule: peers are judged dead only after this process itself
 *    has beaten without interruption for a while (recovery.c asks);
 *  - lease loss: after a pause past the heartbeat TTL another process may
 *    have recovered and run our jobs; it is noticed, logged and counted, and
 *    the running handler is stopped or let finish (hh_lease_lost_policy);
 *  - the hiredhand:fetchers entry of this process, written again after Redis
 *    lost its data.
 * The design and why it never requeues a held job is explained in lease.c. */
#ifndef HH_LEASE_H
#define HH_LEASE_H

#include <stdatomic.h>
#include <stdint.h>
#include "buffer.h"
#include "context.h"
#include "hiredhand.h"
#include "job.h"
#include "keys.h"
#include "redis.h"
#include "util.h"
#include "worker.h"

struct hh__lease;

/* lease.c's env: the manager's context and its own state, filled by
 * manager.c (which keeps it alive as long as the lease). The buffer of fetched
 * jobs not started yet (buffer.h, below this file) is read directly. */
typedef struct hh__lease_env {
    const hh__ctx *ctx;      /* the manager's (context.h): queues, options, procs, counters */
    hh__buffer *buffer;      /* buffer.c: the fetched jobs not started yet */
    struct hh__lease *lease; /* the state: hh__lease_new's, set by manager.c */
} hh__lease_env;

/* Allocated by hh_manager_new into env->lease (NULL on out of memory), freed
 * by hh_manager_free. */
struct hh__lease *hh__lease_new(const hh__lease_env *env);
void hh__lease_free(struct hh__lease *l);

/* The registry key of a payload fetched from queue index q: a 64-bit hash
 * of the queue, the length and the bytes (the first and last 4 KiB of a
 * large payload). Never 0. A collision can only make an unheld entry look
 * held (it is pushed back later), never the reverse. */
uint64_t hh__lease_key(size_t q, const char *payload, size_t len);

/* How a fetch ended, for hh__lease_fetch_end: anything but OK means what it
 * moved may be stranded in our lists, and the reconciliation that pushes it
 * back names the cause in its log line. */
typedef enum {
    HH_FETCH_END_OK = 0,
    HH_FETCH_END_LOST,    /* no reply (timeout, closed connection) */
    HH_FETCH_END_ERROR,   /* an error reply: a script stops at its first
                             * failing command and keeps what it moved before */
    HH_FETCH_END_PARTIAL, /* a reply read up to an element of the wrong shape, or
                             * a job there was no memory to take */
} hh__fetch_end_how;

/* Fetch hooks (fetch.c). begin: before a command that may move jobs into
 * this process's lists is sent (blocking: a BLMOVE/BRPOPLPUSH that may be
 * ended with CLIENT UNBLOCK). end: once its reply was read (n jobs in out,
 * registered as held here, out[i].lease set) or the command failed (how is
 * not OK: whatever it moved is stranded, a reconciliation is asked). */
void hh__lease_fetch_begin(const hh__lease_env *env, hh__processor *p, int blocking);
void hh__lease_fetch_end(const hh__lease_env *env, hh__processor *p, hh__fetched *out, int n, hh__fetch_end_how how);

/* The job behind *lease is no longer held by this process: its removal from
 * the list has answered, or it is dropped (then a reconciliation pushes it
 * back). Call after the removal, never before. Sets *lease to 0; a 0 lease
 * is a no-op, so calling twice is harmless. */
void hh__lease_release(const hh__lease_env *env, uint64_t *lease);

/* The end of a job in this process, at every exit site: releases its lease
 * (as hh__lease_release, so call it after the job's removal from the list
 * has answered, or when it is dropped) and frees it. job may be NULL.
 * hh__lease_finish_fetched does the same for a fetched job not started
 * (frees its payload; *f stays, emptied). Here, below every caller, since
 * the lease is the one thing a job's end must give back. */
void hh__lease_finish(const hh__lease_env *env, hh_job *job);
void hh__lease_finish_fetched(const hh__lease_env *env, hh__fetched *f);

/* The same for n jobs at once (sent acks), under one lock. */
void hh__lease_release_jobs(const hh__lease_env *env, hh_job **jobs, size_t n);

/* A job's entry was gone from this process's list when its outcome or ack
 * came: if a recovery is recorded for its jid (another process took it
 * while this one was paused past its TTL), counts and logs a lease loss
 * and returns 1. With no record (Redis lost its data: FLUSHALL, a restart
 * without persistence) it is not a lease loss: logs that and returns 0, so
 * the caller writes the outcome anyway. Asks Redis on c; when Redis cannot
 * say, assumes a recovery (1), the side that never duplicates. Not for a
 * retried removal whose first attempt may have gone through (the empty
 * removal then means nothing). Thread-safe. */
int hh__lease_lost(const hh__lease_env *env, hh__conn *c, const hh_job *job);

/* Recovery-thread hook, every 100 ms: runs a reconciliation when one was
 * asked (failed fetch) or the periodic one (every recovery_interval) is due. */
void hh__lease_tick(const hh__lease_env *env, hh__conn *c);

/* One reconciliation (see lease.c). final: the stop's last pass, every worker
 * thread has left (pushes back everything not held, whatever quiet says).
 * Returns jobs pushed back, or -1 (Redis error, or fetches did not settle). */
int hh__lease_reconcile(const hh__lease_env *env, hh__conn *c, int final);

/* Heartbeat hook, after every beat: ok = Redis took the whole beat,
 * hash_expired = the process hash had expired (or was deleted) since the
 * last beat. Keeps the record the outage rule reads; after an expiry checks
 * every running and buffered job for lease loss and writes this process
 * back into hiredhand:fetchers. Uses c (the heartbeat connection). */
void hh__lease_beat(const hh__lease_env *env, hh__conn *c, int ok, int hash_expired);

/* Heartbeat hook: the process hash names a newer process with our identity
 * (`by` says which). Every running job loses its lease at once
 * (--lease-lost applies) and reconciliation stops touching our lists; the
 * caller (manager.c) drops the buffered jobs and stops without pushing back
 * or unregistering anything (the lists and the registry entry are the new
 * owner's). Returns 1 the first time (the caller must beat no more and
 * stop), 2 after that, 0 under basic fetch (no lists; nothing is done). */
int hh__lease_identity_lost(const hh__lease_env *env, const char *by);
int hh__lease_identity_is_lost(const hh__lease_env *env);

/* The outage rule: 1 when this process may judge other processes dead (an
 * expired heartbeat hash means a dead owner), 0 while its own beats have not
 * run without interruption for hh__lease_gate_seconds(). *left (may be NULL)
 * gets the seconds still to wait. Thread-safe. */
int hh__lease_peers_judgeable(const hh__lease_env *env, double *left);
double hh__lease_gate_seconds(const hh__lease_env *env);

#endif
