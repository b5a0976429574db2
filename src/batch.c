/* batch.c -- jobs of Sidekiq Pro batches (see batch.h). Touches no Redis
 * key: a skipped job's move into `schedule` is the processor's, through
 * outcome.c. */
#include "batch.h"

#include <string.h>

void hh__batch_init(hh__batch *b, hh_batch_jobs mode, const hh__logger *log) {
    memset(b, 0, sizeof(*b));
    b->mode = mode;
    b->log = log;
    atomic_init(&b->jobs, 0);
    pthread_mutex_init(&b->mu, NULL);
}

void hh__batch_destroy(hh__batch *b) { pthread_mutex_destroy(&b->mu); }

const char *hh__batch_id(const json_t *item) {
    const char *bid = json_string_value(json_object_get(item, "bid"));
    return bid && *bid ? bid : NULL;
}

/* FNV-1a, never 0 (0 marks an empty slot). */
static uint64_t bid_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

/* 1 when bid was not seen before (and now is), 0 otherwise. Open
 * addressing; past three quarters full nothing new is recorded. */
static int first_time(hh__batch *b, const char *bid) {
    uint64_t h = bid_hash(bid);
    int fresh = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0, at = (size_t)(h % HH_BATCH_SEEN_SLOTS); i < HH_BATCH_SEEN_SLOTS; i++) {
        size_t slot = (at + i) % HH_BATCH_SEEN_SLOTS;
        if (b->seen[slot] == h) break;
        if (b->seen[slot] == 0) {
            if (b->nseen < HH_BATCH_SEEN_SLOTS / 4 * 3) {
                b->seen[slot] = h;
                b->nseen++;
                fresh = 1;
            }
            break;
        }
    }
    pthread_mutex_unlock(&b->mu);
    return fresh;
}

int hh__batch_check(hh__batch *b, const hh_job *job) {
    const char *bid = b && job && job->item ? hh__batch_id(job->item) : NULL;
    if (!bid) return 0;
    atomic_fetch_add(&b->jobs, 1);
    if (first_time(b, bid))
        hh__log(b->log, HH_LOG_WARN,
                "class=%s jid=%s: job of Sidekiq Pro batch %s: %s; its batch's books (pending counts, callbacks) "
                "are kept by Sidekiq Pro only (logged once per batch)",
                job->klass, job->jid, bid,
                b->mode == HH_BATCH_JOBS_SKIP ? "left to Ruby processes (--batch-jobs skip)"
                                              : "run (--batch-jobs run)");
    return b->mode == HH_BATCH_JOBS_SKIP ? 2 : 1;
}
