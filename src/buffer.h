/* buffer.h -- what the worker threads of one process share between
 * fetches, below the fetcher (fetch.c), the held-jobs registry (lease.c)
 * and the waker (pickup.c), which all call it directly:
 *
 *  - the buffer of fetched jobs not started yet, taken in fetch order
 *    (a queue's FIFO order holds, and each ack's LREM finds its entry near
 *    the oldest end of its list);
 *  - the stack of threads sleeping until the buffer or a fetch in flight
 *    brings them a job (the one that slept last is woken first);
 *  - the per-queue marks a write to a queue ends: a queue known to be
 *    empty, a queue found wrong-typed (pickup.c reports writes here).
 *
 * It owns no policy: when to fetch, how much and whom to wake are
 * fetch.c's, under this buffer's mutex. Touches no Redis key. */
#ifndef HH_BUFFER_H
#define HH_BUFFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One job a fetch took, not started yet. Defined here, below fetch.c and
 * lease.c: the buffer holds them, and the held-jobs registry keys them
 * (lease). */
typedef struct hh__fetched {
    char *payload; /* malloc'd, NUL-terminated */
    size_t len;
    size_t queue;   /* index into the manager's queues */
    uint64_t lease; /* key in the held-jobs registry, 0 when not held (lease.c) */
} hh__fetched;

/* A thread waiting for the buffer or a fetch in flight: its own condition,
 * so the thread woken is the one that slept last. */
typedef struct hh__sleeper {
    pthread_cond_t wake;
    int woken;                /* set by the waker, under hh__buffer.mu */
    struct hh__sleeper *next; /* below it on the stack */
} hh__sleeper;

/* Known-empty queues: a queue a fetch found empty is left out of the next
 * fetches until it may hold a job again. Writes count on one sequence,
 * `wseq`: a write to the queue seen by pickup.c takes the next number
 * (`written`; a write to every key, FLUSHALL, sets `flushed`), and a mark
 * keeps the number read before its fetch was sent (`seq`), so a write the
 * fetch may not have seen, even one whose notice comes after the reply,
 * ends the mark. Such notices come only while tracking is on: a mark whose
 * fetch was sent with tracking on, still on since (`track_from`), is
 * trusted, HH_FETCH_EMPTY_TRUST_US (fetch.c) at most; any other holds only
 * HH_FETCH_EMPTY_RECHECK_US. A fetch that leaves out a queue whose mark is
 * not trusted and finds nothing tries again with every queue, so "nothing
 * fetched" always means every queue was empty, or had a trusted mark: a
 * write after the fetch's pickup ticket that this fetch did not see then
 * wakes the thread (pickup.h), as when every queue was tried. */
typedef struct hh__empty_mark {
    atomic_ullong seq;        /* wseq before the fetch that found it empty; 0: not marked */
    atomic_ullong written;    /* wseq of the last write to it pickup.c saw */
    atomic_llong until;       /* not trusted: hh__mono() in microseconds until which it holds */
    atomic_llong trust_until; /* trusted: hh__mono() in microseconds until which it holds */
} hh__empty_mark;

/* Wrong-typed queues: a queue whose key (or in-progress list) is not a
 * list makes every fetch that names it fail with WRONGTYPE, all queues with
 * it (a script or BRPOP fails as a whole). So a WRONGTYPE reply makes the
 * fetcher ask TYPE of every queue's keys once, and a queue found wrong is
 * left out of every fetch, logged at ERROR once a minute, and asked again
 * every HH_FETCH_BAD_RECHECK_US (fetch.c) until it is a list (or gone) again, and at
 * once after a write to it (hh__buffer_queue_written). */
typedef struct hh__bad_mark {
    atomic_llong until;  /* hh__mono() in microseconds of the next TYPE; 0: not bad */
    atomic_llong logged; /* when its ERROR was last logged */
} hh__bad_mark;

typedef struct hh__buffer {
    /* Guards the ring and the sleepers, and fetch.c's counters of fetches
     * in flight and idle threads, which it reads with them. */
    pthread_mutex_t mu;
    /* ring[head .. head+npending) modulo cap */
    hh__fetched *ring;
    size_t head, npending, cap;
    hh__sleeper *sleepers; /* the stack; see hh__buffer_sleep_locked */
    int sleeping;          /* threads on it */
    /* see hh__empty_mark: the write sequence, its value at the last write to
     * every key, and the value tracking came on at (0: off) */
    size_t nqueues;
    atomic_ullong wseq, flushed, track_from;
    hh__empty_mark *empty; /* per queue */
    hh__bad_mark *bad;     /* per queue */
    atomic_int nbad;       /* queues marked bad: the checks cost nothing while 0 */
} hh__buffer;

/* A buffer of cap jobs over nqueues queues; NULL when out of memory.
 * Created and freed by manager.c; hh__buffer_free frees the jobs left. */
hh__buffer *hh__buffer_new(size_t cap, size_t nqueues);
void hh__buffer_free(hh__buffer *b);

/* Call with b->mu held: takes the oldest job (0 when there is none);
 * appends jobs in fetch order (returns how many fit: a fetch asks for no
 * more than the free room). */
int hh__buffer_pop_locked(hh__buffer *b, hh__fetched *out);
size_t hh__buffer_push_locked(hh__buffer *b, hh__fetched *jobs, size_t n);

/* Call with b->mu held: sleeps s on the stack until a waker pops it;
 * pops the sleeper on top (marked woken; the caller signals s->wake after
 * unlocking, so it does not wake into a held mutex; NULL when none);
 * wakes every sleeper. */
void hh__buffer_sleep_locked(hh__buffer *b, hh__sleeper *s);
hh__sleeper *hh__buffer_pop_sleeper_locked(hh__buffer *b);
void hh__buffer_wake_all_locked(hh__buffer *b);

/* Locking: takes every buffered job in fetch order (*out malloc'd, the
 * caller's; 0 and NULL when none or out of memory); calls fn on every
 * buffered job under the lock; whether a job (payload pointer and lease)
 * is still buffered; takes it out (1) or says it is gone (0), the others
 * keeping their order; the capacity. */
size_t hh__buffer_take_all(hh__buffer *b, hh__fetched **out);
size_t hh__buffer_each(hh__buffer *b, void (*fn)(const hh__fetched *, void *), void *udata);
int hh__buffer_has(hh__buffer *b, const char *payload, uint64_t lease);
int hh__buffer_drop(hh__buffer *b, const char *payload, uint64_t lease, hh__fetched *out);
size_t hh__buffer_cap(const hh__buffer *b);

/* pickup.c saw a write to queue q (or to every key: FLUSHALL): a queue
 * known to be empty is tried again, a wrong-typed one's TYPE is due.
 * Tracking on (its notices of writes flow from now on) or off (or lost):
 * while it stays on, a queue found empty is left out of fetches until a
 * write to it is seen, not only for 0.1 s. Call on before the first write
 * it covers can be missed, off before (or as soon as) notices may stop.
 * Lock-free; b may be NULL (no fetcher yet). */
void hh__buffer_queue_written(hh__buffer *b, size_t q);
void hh__buffer_queues_written(hh__buffer *b);
void hh__buffer_tracking(hh__buffer *b, int on);

#endif
