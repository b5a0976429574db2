/* test_pickup.c -- src/pickup.c against a private redis-server: an idle
 * thread (hh__pickup_wait) turns CLIENT TRACKING on and is woken by a write
 * to one of its queues, whoever makes it (a bare LPUSH here), long before
 * its poll interval; the write is reported for that queue only, and a
 * write to a key that is no queue of ours (one of the same length among
 * them) reports nothing; FLUSHALL reports every queue. The fallback when
 * Redis refuses tracking is tests/integration/pickup/test_pickup_fallback.sh's. */
#include "unit_helpers.h"

#include <pthread.h>
#include "buffer.h"
#include "keys.h"
#include "pickup.h"
#include "redis.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

#define NQ 3
static const char *names[NQ] = {"queue:a", "queue:bb", "queue:c"};

typedef struct fx {
    uh_conn_fixture c;
    hh__pickup_env env;
    hh__ctx ctx;
    hh__flags flags;
    sds keys[NQ];
    hh__buffer *buf; /* where pickup.c reports writes and tracking */
} fx;

/* What pickup.c told the buffer: the sequence number of the last write to
 * queue q (0: none seen), of the last FLUSHALL, whether tracking is on. */
static unsigned long long written(fx *f, size_t q) { return atomic_load(&f->buf->empty[q].written); }
static unsigned long long all_written(fx *f) { return atomic_load(&f->buf->flushed); }
static int tracking_on(fx *f) { return atomic_load(&f->buf->track_from) != 0; }

static int setup(void **s) {
    fx *f = calloc(1, sizeof(*f));
    if (!f || uh_conn_fixture_open(&f->c, srv.url, NULL) != 0) return -1;
    uh_flushall(&srv);
    for (int i = 0; i < NQ; i++) f->keys[i] = sdsnew(names[i]);
    f->ctx = (hh__ctx){.keys = &f->c.keys,
                       .cfg = &f->c.cfg,
                       .log = &f->c.log,
                       .nqueues = NQ,
                       .queue_keys = f->keys,
                       .flags = &f->flags};
    hh__pickup_env *e = &f->env;
    e->ctx = &f->ctx;
    if (!(f->buf = hh__buffer_new(4, NQ))) return -1;
    e->buffer = f->buf;
    if (hh__pickup_start(e) != 0) return -1;
    *s = f;
    return 0;
}

static int teardown(void **s) {
    fx *f = *s;
    atomic_store(&f->flags.quiet, 1);
    hh__pickup_poke(&f->env);
    hh__pickup_free(&f->env);
    hh__buffer_free(f->buf);
    for (int i = 0; i < NQ; i++) sdsfree(f->keys[i]);
    uh_conn_fixture_close(&f->c);
    free(f);
    return 0;
}

/* What the helper thread writes once tracking is on: an LPUSH to each
 * key, or a FLUSHALL. */
typedef struct writer {
    fx *f;
    const char *keys[3];
    int flushall;
    _Atomic double at; /* hh__mono() once written */
} writer;

static void *write_when_tracked(void *arg) {
    writer *w = arg;
    for (double until = uh_mono() + 10; !tracking_on(w->f) && uh_mono() < until;) uh_sleep(0.01);
    uh_sleep(0.05); /* the waiter is in its wait by now, or sees gen moved */
    for (int i = 0; i < 3 && w->keys[i]; i++) freeReplyObject(uh_cmd(&srv, "LPUSH %s j", w->keys[i]));
    if (w->flushall) uh_flushall(&srv);
    atomic_store(&w->at, uh_mono());
    return NULL;
}

/* Idle waits while the helper writes, until one reports a write: the
 * seconds from the helper's last write to that wake-up. */
static double idle_wait(fx *f, writer *w) {
    pthread_t t;
    w->f = f;
    assert_int_equal(pthread_create(&t, NULL, write_when_tracked, w), 0);
    hh__pickup_ticket tk;
    double t0 = uh_mono();
    int woken = 0;
    /* the first waits may end at the fetch pace while tracking comes on */
    while (uh_mono() - t0 < 8) {
        hh__pickup_ticket_take(&f->env, &tk);
        assert_int_equal(hh__pickup_wait(&f->env, &tk, 8), 1);
        if (written(f, 0) || written(f, 1) || written(f, 2) || all_written(f)) {
            woken = 1;
            break;
        }
    }
    double woke = uh_mono();
    pthread_join(t, NULL);
    assert_true(woken);
    return woke - atomic_load(&w->at);
}

static void test_write_wakes_its_queue_only(void **s) {
    fx *f = *s;
    /* "queue:xx" has the length of "queue:bb", "queue:" + "a" that of
     * queue:a's prefix: neither is ours */
    writer w = {NULL, {"queue:xx", "queue:", "queue:bb"}, 0, 0};
    /* woken by the write, not by its 8 s cap nor the 10 s poll */
    UH_ASSERT_DBL_IN(idle_wait(f, &w), -1.0, 2.0);
    uh_sleep(0.2); /* every message of the three writes is in */
    assert_true(written(f, 1) > 0);
    assert_true(written(f, 0) == 0);
    assert_true(written(f, 2) == 0);
    assert_true(all_written(f) == 0);
}

static void test_flushall_writes_every_queue(void **s) {
    fx *f = *s;
    writer w = {NULL, {NULL, NULL, NULL}, 1, 0};
    idle_wait(f, &w);
    assert_true(all_written(f) > 0);
    assert_true(written(f, 0) == 0 && written(f, 1) == 0 && written(f, 2) == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_wakes_its_queue_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flushall_writes_every_queue, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
