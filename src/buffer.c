/* buffer.c -- the shared buffer of fetched jobs, its sleepers and the
 * per-queue marks a write ends (see buffer.h). Touches no Redis key. */
#include "buffer.h"

#include <stdlib.h>

hh__buffer *hh__buffer_new(size_t cap, size_t nqueues) {
    hh__buffer *b = calloc(1, sizeof(*b));
    if (!b) return NULL;
    pthread_mutex_init(&b->mu, NULL);
    atomic_init(&b->wseq, 1); /* a mark's seq is never 0 */
    b->cap = cap ? cap : 1;
    b->nqueues = nqueues;
    b->ring = calloc(b->cap, sizeof(*b->ring));
    b->empty = calloc(nqueues ? nqueues : 1, sizeof(*b->empty));
    b->bad = calloc(nqueues ? nqueues : 1, sizeof(*b->bad));
    if (!b->ring || !b->empty || !b->bad) {
        hh__buffer_free(b);
        return NULL;
    }
    return b;
}

void hh__buffer_free(hh__buffer *b) {
    if (!b) return;
    for (size_t k = 0; b->ring && k < b->npending; k++) free(b->ring[(b->head + k) % b->cap].payload);
    free(b->ring), free(b->empty), free(b->bad);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* ------------------------------------------------------------ the ring */

int hh__buffer_pop_locked(hh__buffer *b, hh__fetched *out) {
    if (!b->npending) return 0;
    *out = b->ring[b->head];
    b->head = (b->head + 1) % b->cap;
    b->npending--;
    return 1;
}

size_t hh__buffer_push_locked(hh__buffer *b, hh__fetched *jobs, size_t n) {
    size_t k = 0;
    for (; k < n && b->npending < b->cap; k++, b->npending++) b->ring[(b->head + b->npending) % b->cap] = jobs[k];
    return k;
}

size_t hh__buffer_take_all(hh__buffer *b, hh__fetched **out) {
    *out = NULL;
    pthread_mutex_lock(&b->mu);
    size_t n = b->npending;
    if (n && (*out = malloc(n * sizeof(**out)))) {
        for (size_t i = 0; i < n; i++) hh__buffer_pop_locked(b, &(*out)[i]);
    } else {
        n = 0; /* out of memory: the threads push them back as they leave */
    }
    pthread_mutex_unlock(&b->mu);
    return n;
}

size_t hh__buffer_each(hh__buffer *b, void (*fn)(const hh__fetched *, void *), void *udata) {
    pthread_mutex_lock(&b->mu);
    size_t n = b->npending;
    for (size_t k = 0; k < n; k++) fn(&b->ring[(b->head + k) % b->cap], udata);
    pthread_mutex_unlock(&b->mu);
    return n;
}

size_t hh__buffer_cap(const hh__buffer *b) { return b->cap; }

/* Finds the buffered job (payload pointer and lease) at index k of the
 * ring's live part; -1 when it is gone. Call with b->mu. */
static long find_locked(hh__buffer *b, const char *payload, uint64_t lease) {
    for (size_t k = 0; k < b->npending; k++) {
        const hh__fetched *x = &b->ring[(b->head + k) % b->cap];
        if (x->payload == payload && x->lease == lease) return (long)k;
    }
    return -1;
}

int hh__buffer_has(hh__buffer *b, const char *payload, uint64_t lease) {
    pthread_mutex_lock(&b->mu);
    int has = find_locked(b, payload, lease) >= 0;
    pthread_mutex_unlock(&b->mu);
    return has;
}

int hh__buffer_drop(hh__buffer *b, const char *payload, uint64_t lease, hh__fetched *out) {
    pthread_mutex_lock(&b->mu);
    long k = find_locked(b, payload, lease);
    if (k >= 0) {
        *out = b->ring[(b->head + (size_t)k) % b->cap];
        for (size_t j = (size_t)k; j + 1 < b->npending; j++) /* keep the others in order */
            b->ring[(b->head + j) % b->cap] = b->ring[(b->head + j + 1) % b->cap];
        b->npending--;
    }
    pthread_mutex_unlock(&b->mu);
    return k >= 0;
}

/* ------------------------------------------------------------ sleepers */

/* Threads waiting for the buffer or a fetch in flight form a stack, and a
 * wake-up goes to the thread on top: the one that slept last, whose stack,
 * heap arena and payloads are still in the CPU's caches. With hundreds of
 * threads and fast jobs the same few threads keep running, as with a few
 * threads; the others sleep on (a shared condition variable would wake
 * them in turn, each one cold). */
void hh__buffer_sleep_locked(hh__buffer *b, hh__sleeper *s) {
    s->woken = 0;
    s->next = b->sleepers;
    b->sleepers = s;
    b->sleeping++;
    while (!s->woken) pthread_cond_wait(&s->wake, &b->mu);
}

hh__sleeper *hh__buffer_pop_sleeper_locked(hh__buffer *b) {
    hh__sleeper *s = b->sleepers;
    if (!s) return NULL;
    b->sleepers = s->next;
    b->sleeping--;
    s->woken = 1;
    return s;
}

void hh__buffer_wake_all_locked(hh__buffer *b) {
    hh__sleeper *s;
    while ((s = hh__buffer_pop_sleeper_locked(b))) pthread_cond_signal(&s->wake);
}

/* ------------------------------------------------------------ marks a write ends */

/* A write to a wrong-typed queue (the DEL or the push of a fix by hand):
 * its TYPE is due at the woken thread's fetch, not at the recheck period's
 * end, which an idle worker meets only at its next safety poll (up to
 * HH_PICKUP_POLL_SECONDS later still). 1 stays "bad" and is always due. */
static void bad_due(hh__buffer *b, size_t q) {
    long long until = atomic_load(&b->bad[q].until);
    if (until > 1) atomic_compare_exchange_strong(&b->bad[q].until, &until, 1);
}

void hh__buffer_queues_written(hh__buffer *b) {
    if (!b) return;
    atomic_store(&b->flushed, atomic_fetch_add(&b->wseq, 1) + 1);
    if (atomic_load(&b->nbad) > 0)
        for (size_t q = 0; q < b->nqueues; q++) bad_due(b, q);
}

void hh__buffer_queue_written(hh__buffer *b, size_t q) {
    if (!b || q >= b->nqueues) return;
    atomic_store(&b->empty[q].written, atomic_fetch_add(&b->wseq, 1) + 1);
    if (atomic_load(&b->nbad) > 0) bad_due(b, q);
}

void hh__buffer_tracking(hh__buffer *b, int on) {
    if (!b) return;
    atomic_store(&b->track_from, on ? atomic_fetch_add(&b->wseq, 1) + 1 : 0);
}
