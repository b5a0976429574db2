/* test_buffer.c -- the shared buffer of fetched jobs not started yet
 * (src/buffer.c): fetch order through the ring and its wrap, the capacity a
 * push reports, take_all and drop handing jobs over, has/drop finding a job
 * by payload pointer and lease together, the sleepers' stack (the thread
 * that slept last is woken first) and the per-queue marks a write ends.
 * No Redis. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buffer.h"

/* A job whose payload is a malloc'd copy of s, as a fetch makes it. */
static hh__fetched job(const char *s, uint64_t lease) {
    hh__fetched f = {strdup(s), strlen(s), 0, lease};
    assert_non_null(f.payload);
    return f;
}

static size_t push1(hh__buffer *b, const char *s, uint64_t lease) {
    hh__fetched f = job(s, lease);
    pthread_mutex_lock(&b->mu);
    size_t n = hh__buffer_push_locked(b, &f, 1);
    pthread_mutex_unlock(&b->mu);
    if (!n) free(f.payload); /* did not fit: still ours */
    return n;
}

/* Pops the oldest job and checks it is `want`; frees it. */
static void expect_pop(hh__buffer *b, const char *want) {
    hh__fetched f;
    pthread_mutex_lock(&b->mu);
    int got = hh__buffer_pop_locked(b, &f);
    pthread_mutex_unlock(&b->mu);
    if (!got) fail_msg("buffer empty, want '%s'", want);
    assert_string_equal(f.payload, want);
    assert_int_equal(f.len, strlen(want));
    free(f.payload);
}

static void expect_empty(hh__buffer *b) {
    hh__fetched f;
    pthread_mutex_lock(&b->mu);
    assert_int_equal(hh__buffer_pop_locked(b, &f), 0);
    pthread_mutex_unlock(&b->mu);
}

/* Oldest first, also across the ring's wrap: a queue's FIFO order holds. */
static void test_fifo_across_wrap(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(3, 1);
    assert_non_null(b);
    expect_empty(b);
    assert_int_equal(push1(b, "a", 0), 1);
    assert_int_equal(push1(b, "b", 0), 1);
    expect_pop(b, "a");
    assert_int_equal(push1(b, "c", 0), 1);
    assert_int_equal(push1(b, "d", 0), 1); /* wraps to the ring's start */
    expect_pop(b, "b");
    assert_int_equal(push1(b, "e", 0), 1);
    expect_pop(b, "c");
    expect_pop(b, "d");
    expect_pop(b, "e");
    expect_empty(b);
    hh__buffer_free(b);
}

/* A push takes what fits in the free room, the first of the jobs given,
 * and says how many; the rest stay the caller's. */
static void test_push_reports_what_fits(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(3, 1);
    assert_non_null(b);
    assert_int_equal(hh__buffer_cap(b), 3);
    assert_int_equal(push1(b, "x", 0), 1);
    hh__fetched jobs[4] = {job("1", 0), job("2", 0), job("3", 0), job("4", 0)};
    pthread_mutex_lock(&b->mu);
    assert_int_equal(hh__buffer_push_locked(b, jobs, 4), 2);
    assert_int_equal(hh__buffer_push_locked(b, jobs + 2, 2), 0); /* full */
    pthread_mutex_unlock(&b->mu);
    free(jobs[2].payload), free(jobs[3].payload);
    expect_pop(b, "x");
    expect_pop(b, "1");
    expect_pop(b, "2");
    expect_empty(b);
    hh__buffer_free(b);
    /* a capacity of 0 still holds one job */
    b = hh__buffer_new(0, 0);
    assert_non_null(b);
    assert_int_equal(hh__buffer_cap(b), 1);
    assert_int_equal(push1(b, "only", 0), 1);
    assert_int_equal(push1(b, "more", 0), 0);
    hh__buffer_free(b); /* frees the job left (ASan's leak check) */
}

/* take_all hands every job over in fetch order and leaves none behind. */
static void test_take_all(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(4, 1);
    assert_non_null(b);
    hh__fetched *out = (hh__fetched *)b; /* not NULL: take_all must clear it */
    assert_int_equal(hh__buffer_take_all(b, &out), 0);
    assert_null(out);
    push1(b, "a", 1);
    push1(b, "b", 2);
    expect_pop(b, "a");
    push1(b, "c", 3);
    push1(b, "d", 4);
    push1(b, "e", 5); /* the ring has wrapped */
    assert_int_equal(hh__buffer_take_all(b, &out), 4);
    assert_non_null(out);
    const char *want[] = {"b", "c", "d", "e"};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(out[i].payload, want[i]);
        assert_int_equal(out[i].lease, i + 2);
        free(out[i].payload); /* the caller's now */
    }
    free(out);
    expect_empty(b);
    assert_int_equal(hh__buffer_take_all(b, &out), 0);
    hh__buffer_free(b);
}

static void collect(const hh__fetched *f, void *udata) {
    char *acc = udata;
    strcat(acc, f->payload);
}

/* each visits every buffered job, oldest first, and leaves them there. */
static void test_each_visits_all(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(3, 1);
    assert_non_null(b);
    char acc[16] = "";
    assert_int_equal(hh__buffer_each(b, collect, acc), 0);
    assert_string_equal(acc, "");
    push1(b, "a", 0);
    expect_pop(b, "a");
    push1(b, "b", 0);
    push1(b, "c", 0);
    push1(b, "d", 0); /* wrapped */
    assert_int_equal(hh__buffer_each(b, collect, acc), 3);
    assert_string_equal(acc, "bcd");
    expect_pop(b, "b"); /* still there */
    hh__buffer_free(b);
}

/* has and drop know a job by its payload pointer and its lease together:
 * the same bytes elsewhere, or the same pointer under another lease (a job
 * taken and fetched again), are another job. drop keeps the others' order. */
static void test_has_and_drop(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(4, 1);
    assert_non_null(b);
    hh__fetched jobs[3] = {job("p", 7), job("q", 8), job("r", 9)};
    pthread_mutex_lock(&b->mu);
    assert_int_equal(hh__buffer_push_locked(b, jobs, 3), 3);
    pthread_mutex_unlock(&b->mu);
    char same_bytes[] = "q";
    assert_true(hh__buffer_has(b, jobs[1].payload, 8));
    assert_false(hh__buffer_has(b, jobs[1].payload, 7));
    assert_false(hh__buffer_has(b, jobs[1].payload, 0));
    assert_false(hh__buffer_has(b, same_bytes, 8));
    hh__fetched out = {0};
    assert_int_equal(hh__buffer_drop(b, jobs[1].payload, 7, &out), 0);
    assert_int_equal(hh__buffer_drop(b, same_bytes, 8, &out), 0);
    assert_null(out.payload);
    assert_int_equal(hh__buffer_drop(b, jobs[1].payload, 8, &out), 1);
    assert_ptr_equal(out.payload, jobs[1].payload);
    assert_int_equal(out.lease, 8);
    free(out.payload); /* handed over */
    assert_false(hh__buffer_has(b, jobs[1].payload, 8));
    assert_true(hh__buffer_has(b, jobs[0].payload, 7));
    assert_true(hh__buffer_has(b, jobs[2].payload, 9));
    expect_pop(b, "p");
    expect_pop(b, "r");
    expect_empty(b);
    hh__buffer_free(b);
}

/* ------------------------------------------------------------ sleepers */

typedef struct sleeper_thread {
    hh__buffer *b;
    hh__sleeper s;
    pthread_t tid;
} sleeper_thread;

static void *sleep_main(void *arg) {
    sleeper_thread *t = arg;
    pthread_mutex_lock(&t->b->mu);
    hh__buffer_sleep_locked(t->b, &t->s);
    pthread_mutex_unlock(&t->b->mu);
    return NULL;
}

/* Starts a thread sleeping on b and waits until it is on the stack. */
static void start_sleeper(hh__buffer *b, sleeper_thread *t) {
    t->b = b;
    pthread_cond_init(&t->s.wake, NULL);
    pthread_mutex_lock(&b->mu);
    int before = b->sleeping;
    pthread_mutex_unlock(&b->mu);
    assert_int_equal(pthread_create(&t->tid, NULL, sleep_main, t), 0);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int on = b->sleeping > before;
        pthread_mutex_unlock(&b->mu);
        if (on) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 30) fail_msg("the thread never went to sleep on the buffer");
        sched_yield();
    }
}

static void join_sleeper(sleeper_thread *t) {
    assert_int_equal(pthread_join(t->tid, NULL), 0);
    pthread_cond_destroy(&t->s.wake);
}

/* The waker pops the sleeper that slept last (its caches are warm), marks
 * it woken, and the thread returns once signalled; then the one below. */
static void test_pop_sleeper_last_first(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(1, 1);
    assert_non_null(b);
    pthread_mutex_lock(&b->mu);
    assert_null(hh__buffer_pop_sleeper_locked(b));
    pthread_mutex_unlock(&b->mu);
    sleeper_thread t[3];
    for (int i = 0; i < 3; i++) start_sleeper(b, &t[i]);
    for (int i = 2; i >= 0; i--) {
        pthread_mutex_lock(&b->mu);
        assert_int_equal(b->sleeping, i + 1);
        hh__sleeper *w = hh__buffer_pop_sleeper_locked(b);
        assert_ptr_equal(w, &t[i].s);
        assert_int_equal(w->woken, 1);
        assert_int_equal(b->sleeping, i);
        pthread_mutex_unlock(&b->mu);
        pthread_cond_signal(&w->wake);
        join_sleeper(&t[i]);
    }
    pthread_mutex_lock(&b->mu);
    assert_null(hh__buffer_pop_sleeper_locked(b));
    pthread_mutex_unlock(&b->mu);
    hh__buffer_free(b);
}

/* wake_all wakes every sleeper: each thread returns, the stack is empty. */
static void test_wake_all(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(1, 1);
    assert_non_null(b);
    sleeper_thread t[4];
    for (int i = 0; i < 4; i++) start_sleeper(b, &t[i]);
    pthread_mutex_lock(&b->mu);
    hh__buffer_wake_all_locked(b);
    assert_int_equal(b->sleeping, 0);
    assert_null(b->sleepers);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < 4; i++) {
        join_sleeper(&t[i]); /* hangs (then times out) if one was missed */
        assert_int_equal(t[i].s.woken, 1);
    }
    pthread_mutex_lock(&b->mu);
    hh__buffer_wake_all_locked(b); /* none: a no-op */
    pthread_mutex_unlock(&b->mu);
    hh__buffer_free(b);
}

/* ------------------------------------------------------------ marks a write ends */

/* A write to a queue takes the next number on the one write sequence, so a
 * mark made before it (its seq read earlier) is ended by it; FLUSHALL
 * numbers every queue at once; out of range and NULL are no-ops. */
static void test_queue_written_numbers_writes(void **s) {
    (void)s;
    hh__buffer_queue_written(NULL, 0); /* no fetcher yet */
    hh__buffer_queues_written(NULL);
    hh__buffer_tracking(NULL, 1);
    hh__buffer *b = hh__buffer_new(1, 2);
    assert_non_null(b);
    unsigned long long seq0 = atomic_load(&b->wseq); /* what a fetch reads before it is sent */
    assert_true(seq0 > 0);                           /* 0 means "not marked" */
    assert_int_equal(atomic_load(&b->empty[0].written), 0);
    hh__buffer_queue_written(b, 1);
    unsigned long long w1 = atomic_load(&b->empty[1].written);
    assert_true(w1 > seq0);
    assert_int_equal(atomic_load(&b->empty[0].written), 0); /* only that queue */
    hh__buffer_queue_written(b, 0);
    assert_true(atomic_load(&b->empty[0].written) > w1);
    hh__buffer_queue_written(b, 2); /* no queue 2 */
    assert_true(atomic_load(&b->wseq) == atomic_load(&b->empty[0].written));
    assert_int_equal(atomic_load(&b->flushed), 0);
    hh__buffer_queues_written(b);
    assert_true(atomic_load(&b->flushed) > atomic_load(&b->empty[0].written));
    hh__buffer_free(b);
}

/* Tracking on numbers the moment on the same sequence (marks made from
 * then on are trusted); off clears it. */
static void test_tracking_on_off(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(1, 1);
    assert_non_null(b);
    assert_int_equal(atomic_load(&b->track_from), 0);
    unsigned long long before = atomic_load(&b->wseq);
    hh__buffer_tracking(b, 1);
    unsigned long long on = atomic_load(&b->track_from);
    assert_true(on > before);
    hh__buffer_queue_written(b, 0);
    assert_true(atomic_load(&b->empty[0].written) > on);
    assert_int_equal(atomic_load(&b->track_from), on); /* a write does not reset it */
    hh__buffer_tracking(b, 0);
    assert_int_equal(atomic_load(&b->track_from), 0);
    hh__buffer_tracking(b, 1);
    assert_true(atomic_load(&b->track_from) > on);
    hh__buffer_free(b);
}

/* A write to a wrong-typed queue makes its TYPE due now (until 1, "bad and
 * due"); a queue not marked bad stays unmarked; FLUSHALL makes every bad
 * queue's TYPE due. */
static void test_write_makes_bad_queue_due(void **s) {
    (void)s;
    hh__buffer *b = hh__buffer_new(1, 3);
    assert_non_null(b);
    atomic_store(&b->bad[0].until, 123456789LL);
    atomic_store(&b->bad[2].until, 987654321LL);
    atomic_store(&b->nbad, 2);
    hh__buffer_queue_written(b, 0);
    assert_int_equal(atomic_load(&b->bad[0].until), 1);
    assert_int_equal(atomic_load(&b->bad[2].until), 987654321LL); /* another queue */
    hh__buffer_queue_written(b, 1);
    assert_int_equal(atomic_load(&b->bad[1].until), 0); /* not bad: stays so */
    hh__buffer_queue_written(b, 0);
    assert_int_equal(atomic_load(&b->bad[0].until), 1); /* stays bad and due */
    hh__buffer_queues_written(b);
    assert_int_equal(atomic_load(&b->bad[2].until), 1);
    assert_int_equal(atomic_load(&b->bad[1].until), 0);
    hh__buffer_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_across_wrap), cmocka_unit_test(test_push_reports_what_fits),
        cmocka_unit_test(test_take_all),         cmocka_unit_test(test_each_visits_all),
        cmocka_unit_test(test_has_and_drop),     cmocka_unit_test(test_pop_sleeper_last_first),
        cmocka_unit_test(test_wake_all),         cmocka_unit_test(test_queue_written_numbers_writes),
        cmocka_unit_test(test_tracking_on_off),  cmocka_unit_test(test_write_makes_bad_queue_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
