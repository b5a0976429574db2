/* pickup.c -- the waker thread and the idle threads' wait (see pickup.h).
 * Keys: none written. Its tracking connection watches every key under
 * <ns>queue: (CLIENT TRACKING ... BCAST PREFIX); its subscriber connection
 * reads __redis__:invalidate. Note that `queues` (the set) is not under
 * the prefix: only the lists are. */
#include "pickup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PK_OFF, PK_ON, PK_UNSUPPORTED };

typedef struct hh__pickup {
    hh__pickup_env *env;
    /* Guarded by mu: */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* idle threads wait here */
    unsigned long gen; /* bumped by every event after which a fetch may find a job */
    int mode;          /* PK_* */
    int waiting;       /* threads inside hh__pickup_wait */
    int fetching;      /* threads between their ticket and its outcome */
    int poller;        /* one of them holds the timed safety poll */
    int requested;     /* a waiter asked the waker to switch tracking on */
    double last_idle;  /* monotonic time a thread last left a wait */
    /* The waker thread's own: */
    int pipe[2]; /* self-pipe: poke() ends the waker's poll() at once */
    pthread_t thread;
    int started;
    sds prefix;         /* <ns>queue: */
    sds *const *sorted; /* pointers into the context's queue_keys, sorted by key for bsearch
                         * (the pointer's offset is the queue's index) */
    size_t nsorted;
    hh__conn sub, ctl; /* subscriber and tracking connections */
    int subscribed;
    int leaked; /* the waker was left behind by a stop's deadline */
} hh__pickup;

/* ------------------------------------------------------------ the idle side */

/* Bumps gen and wakes up to n waiters (n < 0: all). Call with mu held. */
static void wake_locked(hh__pickup *pk, long n) {
    pk->gen++;
    if (n < 0 || n >= pk->waiting) pthread_cond_broadcast(&pk->cv);
    else
        for (long i = 0; i < n; i++) pthread_cond_signal(&pk->cv);
}

void hh__pickup_ticket_take(hh__pickup_env *env, hh__pickup_ticket *t) {
    hh__pickup *pk = env->pickup;
    t->gen = 0;
    t->wakes = 0;
    if (!pk) return;
    pthread_mutex_lock(&pk->mu);
    t->gen = pk->gen;
    t->wakes = pk->mode != PK_UNSUPPORTED;
    pk->fetching++;
    pthread_mutex_unlock(&pk->mu);
}

static void poke_pipe(hh__pickup *pk) {
    ssize_t w = write(pk->pipe[1], "x", 1);
    (void)w; /* full pipe: the waker has a wake-up pending already */
}

int hh__pickup_wait(hh__pickup_env *env, const hh__pickup_ticket *t, double cap) {
    hh__pickup *pk = env->pickup;
    if (!pk) return 0;
    pthread_mutex_lock(&pk->mu);
    pk->fetching--;
    if (pk->mode == PK_UNSUPPORTED) {
        pthread_mutex_unlock(&pk->mu);
        return 0;
    }
    pk->waiting++;
    int poke = 0, poller = 0;
    if (pk->mode == PK_OFF && !pk->requested) pk->requested = poke = 1;
    if (pk->mode == PK_ON && !pk->poller) pk->poller = poller = 1;
    /* Tracking not on yet (starting, or Redis unreachable): poll at
     * Sidekiq's BRPOP pace until it is. On: the poller polls rarely, the
     * others wait for a wake-up only. Every mode change bumps gen, so a
     * deadline never outlives the mode it was chosen for. */
    double secs = pk->mode == PK_OFF ? HH_FETCH_BLOCK_SECONDS : poller ? HH_PICKUP_POLL_SECONDS : 0;
    if (cap > 0 && (secs <= 0 || cap < secs)) secs = cap;
    if (poke) {
        pthread_mutex_unlock(&pk->mu);
        poke_pipe(pk);
        pthread_mutex_lock(&pk->mu);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)((secs - (double)(time_t)secs) * 1e9);
    until.tv_sec += (time_t)secs + (time_t)(ns / 1000000000);
    until.tv_nsec = (long)(ns % 1000000000);
    while (!atomic_load(&env->ctx->flags->quiet) && pk->gen == t->gen && pk->mode != PK_UNSUPPORTED) {
        if (secs <= 0) {
            pthread_cond_wait(&pk->cv, &pk->mu);
        } else if (pthread_cond_timedwait(&pk->cv, &pk->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    if (poller) pk->poller = 0;
    pk->waiting--;
    pk->last_idle = hh__mono();
    int fallback = pk->mode == PK_UNSUPPORTED && pk->gen == t->gen;
    pthread_mutex_unlock(&pk->mu);
    return !fallback;
}

void hh__pickup_done(hh__pickup_env *env, const hh__pickup_ticket *t, int got) {
    hh__pickup *pk = env->pickup;
    if (!pk) return;
    pthread_mutex_lock(&pk->mu);
    pk->fetching--;
    if (pk->waiting > 0) {
        if (got > 1) wake_locked(pk, got - 1);          /* the batch's other jobs, shared in the process */
        else if (pk->gen != t->gen) wake_locked(pk, 1); /* wake-ups left to this thread: hand them on */
    }
    pthread_mutex_unlock(&pk->mu);
}

void hh__pickup_wake(hh__pickup_env *env, long n) {
    hh__pickup *pk = env->pickup;
    if (!pk || n <= 0) return;
    pthread_mutex_lock(&pk->mu);
    if (pk->waiting > 0) wake_locked(pk, n);
    pthread_mutex_unlock(&pk->mu);
}

void hh__pickup_poke(hh__pickup_env *env) {
    hh__pickup *pk = env->pickup;
    if (!pk) return;
    pthread_mutex_lock(&pk->mu);
    pthread_cond_broadcast(&pk->cv);
    pthread_mutex_unlock(&pk->mu);
    poke_pipe(pk);
}

/* ------------------------------------------------------------ the waker */

static void set_mode(hh__pickup *pk, int mode) {
    /* before the waiters wake: their fetches then know whether a queue
     * found empty stays so until a write to it comes here */
    hh__buffer_tracking(pk->env->buffer, mode == PK_ON);
    pthread_mutex_lock(&pk->mu);
    pk->mode = mode;
    pk->requested = 0;
    wake_locked(pk, -1); /* every waiter re-fetches once under the new mode */
    pthread_mutex_unlock(&pk->mu);
}

/* Both connections go: closing the tracking one switches tracking off. */
static void drop(hh__pickup *pk, const char *why) {
    if (hh__conn_connected(&pk->sub)) hh__conn_fail(&pk->sub, why);
    hh__conn_close(&pk->ctl);
    pk->subscribed = 0;
    set_mode(pk, PK_OFF);
}

static void unsupported(hh__pickup *pk, const char *why) {
    hh__log(pk->env->ctx->log, HH_LOG_WARN,
            "pickup: no CLIENT TRACKING (%s): idle threads wait on one queue each and poll the others "
            "every %.0f s instead of waking at once",
            why, HH_FETCH_BLOCK_SECONDS);
    hh__conn_close(&pk->ctl);
    hh__conn_close(&pk->sub);
    pk->subscribed = 0;
    set_mode(pk, PK_UNSUPPORTED);
}

static int key_cmp(const void *a, const void *b) {
    sds x = **(sds *const *)a, y = **(sds *const *)b;
    size_t lx = sdslen(x), ly = sdslen(y);
    if (lx != ly) return lx < ly ? -1 : 1;
    return memcmp(x, y, lx);
}

/* The index of the queue whose key this is, or -1 when not ours. */
static long is_ours(hh__pickup *pk, const char *key, size_t len) {
    /* bsearch on (length, bytes), the order key_cmp sorted by */
    size_t lo = 0, hi = pk->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        sds k = *pk->sorted[mid];
        int c = sdslen(k) != len ? (sdslen(k) < len ? -1 : 1) : memcmp(k, key, len);
        if (c == 0) return (long)(pk->sorted[mid] - pk->env->ctx->queue_keys);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* One pushed message: ["message", "__redis__:invalidate", [key...] | nil].
 * nil means every key (FLUSHALL, FLUSHDB). */
static void on_message(hh__pickup *pk, const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "message") != 0)
        return; /* the subscribe confirmation */
    const redisReply *keys = r->element[2];
    long n = 0;
    if (keys->type == REDIS_REPLY_NIL) {
        n = -1;
    } else if (keys->type == REDIS_REPLY_STRING) {
        long q = is_ours(pk, keys->str, keys->len);
        if (q >= 0) n = 1, hh__buffer_queue_written(pk->env->buffer, (size_t)q);
    } else if (keys->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < keys->elements; i++) {
            long q = keys->element[i]->type == REDIS_REPLY_STRING
                ? is_ours(pk, keys->element[i]->str, keys->element[i]->len)
                : -1;
            if (q >= 0) n++, hh__buffer_queue_written(pk->env->buffer, (size_t)q); /* it may hold jobs again */
        }
    }
    if (n < 0) hh__buffer_queues_written(pk->env->buffer); /* every key */
    if (n == 0) return;
    /* gen moves even with nobody waiting: a thread between its ticket and
     * its wait must see that a queue changed. Threads fetching now see it
     * too (they fetch again, or hand it on: hh__pickup_done), so only the
     * wake-ups beyond them go to waiting threads: a job's own pop, which
     * comes back here as a write, then costs no extra fetch most times. */
    pthread_mutex_lock(&pk->mu);
    if (n > 0) n = n > pk->fetching ? n - pk->fetching : 0;
    if (n != 0) wake_locked(pk, n);
    else pk->gen++;
    pthread_mutex_unlock(&pk->mu);
}

/* Reads what the subscriber socket has (read says whether to read the
 * socket first, or only what hiredis buffered already). */
static void read_sub(hh__pickup *pk, int read) {
    if (read && hh__conn_read_some(&pk->sub) != REDIS_OK) {
        drop(pk, hh__conn_io_error(&pk->sub, "subscriber connection lost"));
        return;
    }
    for (;;) {
        void *rep = NULL;
        if (hh__conn_buffered_reply(&pk->sub, &rep) != REDIS_OK) {
            drop(pk, hh__conn_io_error(&pk->sub, "bad reply on the subscriber connection"));
            return;
        }
        if (!rep) return;
        on_message(pk, rep);
        freeReplyObject(rep);
    }
}

static int subscribe(hh__pickup *pk) {
    if (pk->subscribed && hh__conn_connected(&pk->sub)) return 0;
    if (hh__conn_ready(&pk->sub) != 0) return -1;
    redisReply *r = hh__conn_cmd(&pk->sub, "SUBSCRIBE __redis__:invalidate");
    if (!r) return -1;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[0]->str, "subscribe") == 0;
    if (!ok && r->type == REDIS_REPLY_ERROR) {
        char why[300];
        snprintf(why, sizeof(why), "SUBSCRIBE refused: %s", r->str);
        freeReplyObject(r);
        unsupported(pk, why);
        return -1;
    }
    freeReplyObject(r);
    if (!ok) {
        hh__conn_fail(&pk->sub, "unexpected reply to SUBSCRIBE");
        return -1;
    }
    pk->subscribed = 1;
    return 0;
}

static void tracking_on(hh__pickup *pk) {
    if (subscribe(pk) != 0 || hh__conn_ready(&pk->ctl) != 0) return;
    int version = hh__conn_version(&pk->sub) < hh__conn_version(&pk->ctl) ? hh__conn_version(&pk->sub)
                                                                          : hh__conn_version(&pk->ctl);
    long long id = hh__conn_client_id(&pk->sub);
    if (version && version < 600) {
        char why[64];
        snprintf(why, sizeof(why), "Redis %d.%d is older than 6.0", version / 100, version % 100);
        unsupported(pk, why);
        return;
    }
    if (!id) {
        unsupported(pk, "CLIENT ID not available");
        return;
    }
    /* One prefix only: Redis refuses overlapping ones, and `queue:` covers
     * every queue list (`queues`, the set, does not match it). */
    redisReply *r = hh__conn_cmd(&pk->ctl, "CLIENT TRACKING on REDIRECT %lld BCAST PREFIX %s NOLOOP", id, pk->prefix);
    if (!r) {
        drop(pk, "tracking connection lost");
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        char why[300];
        snprintf(why, sizeof(why), "CLIENT TRACKING refused: %s", r->str);
        freeReplyObject(r);
        unsupported(pk, why);
        return;
    }
    freeReplyObject(r);
    hh__log(pk->env->ctx->log, HH_LOG_DEBUG, "pickup: tracking on (threads idle)");
    set_mode(pk, PK_ON);
}

static void tracking_off(hh__pickup *pk) {
    hh__buffer_tracking(pk->env->buffer, 0); /* writes go unseen from the reply on */
    redisReply *r = hh__conn_cmd(&pk->ctl, "CLIENT TRACKING off");
    if (r && r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        r = NULL;
        hh__conn_close(&pk->ctl); /* closing it switches tracking off too */
    }
    if (r) freeReplyObject(r);
    hh__log(pk->env->ctx->log, HH_LOG_DEBUG, "pickup: tracking off (every thread busy)");
    set_mode(pk, PK_OFF);
}

static void *waker_main(void *arg) {
    hh__pickup *pk = arg;
    hh__pickup_env *env = pk->env;
    while (!atomic_load(&env->ctx->flags->quiet)) {
        pthread_mutex_lock(&pk->mu);
        int mode = pk->mode;
        int want = pk->waiting > 0 || (mode == PK_ON && hh__mono() - pk->last_idle < HH_PICKUP_OFF_AFTER);
        pthread_mutex_unlock(&pk->mu);
        if (mode == PK_UNSUPPORTED) break;
        if (want && mode == PK_OFF) tracking_on(pk);
        else if (!want && mode == PK_ON) tracking_off(pk);
        if (pk->subscribed && hh__conn_connected(&pk->sub)) read_sub(pk, 0); /* replies hiredis buffered already */

        struct pollfd fds[3];
        int nfds = 0, isub = -1, ictl = -1;
        fds[nfds++] = (struct pollfd){pk->pipe[0], POLLIN, 0};
        if (pk->subscribed && hh__conn_connected(&pk->sub))
            isub = nfds, fds[nfds++] = (struct pollfd){hh__conn_fd(&pk->sub), POLLIN, 0};
        if (hh__conn_connected(&pk->ctl)) ictl = nfds, fds[nfds++] = (struct pollfd){hh__conn_fd(&pk->ctl), POLLIN, 0};
        int timeout = 1000;
        pthread_mutex_lock(&pk->mu);
        if (pk->mode == PK_OFF && pk->waiting > 0) timeout = 100; /* turning on failed: try again soon */
        if (pk->mode == PK_ON && pk->waiting == 0) {              /* be back when it is time to switch off */
            double left = HH_PICKUP_OFF_AFTER - (hh__mono() - pk->last_idle);
            timeout = left < 0.01 ? 10 : (int)(left * 1000) + 1;
        }
        pthread_mutex_unlock(&pk->mu);
        int n = poll(fds, (nfds_t)nfds, timeout);
        if (n <= 0) continue;
        if (fds[0].revents) {
            char buf[64];
            while (read(pk->pipe[0], buf, sizeof(buf)) > 0) {}
        }
        if (isub >= 0 && fds[isub].revents && hh__conn_connected(&pk->sub)) read_sub(pk, 1);
        /* The tracking connection never gets data: readable means closed. */
        if (ictl >= 0 && fds[ictl].revents && hh__conn_connected(&pk->ctl)) drop(pk, "tracking connection closed");
    }
    hh__conn_close(&pk->sub);
    hh__conn_close(&pk->ctl);
    return NULL;
}

int hh__pickup_start(hh__pickup_env *env) {
    hh__pickup *pk = calloc(1, sizeof(*pk));
    if (!pk) return -1;
    pk->env = env;
    pk->pipe[0] = pk->pipe[1] = -1;
    pthread_mutex_init(&pk->mu, NULL);
    pthread_cond_init(&pk->cv, NULL);
    pk->prefix = sdscat(sdsdup(env->ctx->keys->ns), HH_K_QUEUE_PREFIX);
    sds **sorted = malloc(env->ctx->nqueues * sizeof(*sorted));
    pk->sorted = (sds *const *)sorted;
    if (!pk->prefix || !pk->sorted || pipe2(pk->pipe, O_CLOEXEC | O_NONBLOCK) != 0) goto fail;
    for (size_t i = 0; i < env->ctx->nqueues; i++) sorted[i] = &env->ctx->queue_keys[i];
    pk->nsorted = env->ctx->nqueues;
    qsort(sorted, pk->nsorted, sizeof(*sorted), key_cmp);
    hh__conn_init(&pk->sub, env->ctx->cfg, env->ctx->log, "pickup", &env->ctx->flags->quiet);
    hh__conn_init(&pk->ctl, env->ctx->cfg, env->ctx->log, "pickup", &env->ctx->flags->quiet);
    env->pickup = pk;
    if (pthread_create(&pk->thread, NULL, waker_main, pk) != 0) {
        env->pickup = NULL;
        goto fail;
    }
    pk->started = 1;
    return 0;
fail:
    hh__log(env->ctx->log, HH_LOG_WARN, "pickup: cannot start the waker: idle threads wait on one queue each");
    if (pk->pipe[0] >= 0) close(pk->pipe[0]), close(pk->pipe[1]);
    sdsfree(pk->prefix);
    free((void *)pk->sorted);
    pthread_mutex_destroy(&pk->mu);
    pthread_cond_destroy(&pk->cv);
    free(pk);
    return -1;
}

void hh__pickup_stop(hh__pickup_env *env) {
    hh__pickup *pk = env->pickup;
    if (!pk || !pk->started) return;
    hh__pickup_poke(env); /* the waker leaves on quiet, set by every stop */
    pthread_join(pk->thread, NULL);
    pk->started = 0;
}

int hh__pickup_stop_by(hh__pickup_env *env, double deadline) {
    hh__pickup *pk = env->pickup;
    if (!pk || !pk->started) return 1;
    hh__pickup_poke(env);
    pk->started = 0;
    if (hh__join_by(pk->thread, deadline)) return 1;
    pk->leaked = 1; /* still in a Redis call: its state must outlive us */
    return 0;
}

void hh__pickup_free(hh__pickup_env *env) {
    hh__pickup *pk = env->pickup;
    if (!pk) return;
    hh__pickup_stop(env);
    env->pickup = NULL;
    if (pk->leaked) return;
    close(pk->pipe[0]);
    close(pk->pipe[1]);
    sdsfree(pk->prefix);
    free((void *)pk->sorted);
    pthread_mutex_destroy(&pk->mu);
    pthread_cond_destroy(&pk->cv);
    free(pk);
}
