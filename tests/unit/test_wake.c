/* test_wake.c -- src/wake.c: the supervisor's relay wait. Its callers pass
 * what is left until a deadline, which may come out negative when the clock
 * passes the deadline between their check and the call: that must not wait
 * (it once meant "no limit", and a stop's grace period then waited for a
 * 30 s handler to finish). And a wait must not end before the time asked,
 * which sends a caller waiting for a deadline round again. */
#include "unit_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "util.h"
#include "wake.h"

/* Pokes after a delay: without the fix the relay would wait for this
 * (rather than forever), so the test fails instead of hanging. */
struct late_poke {
    hh__wake *w;
    double after;
    atomic_int done; /* the relay returned: no poke needed */
};

static void *late_poke_main(void *arg) {
    struct late_poke *lp = arg;
    double until = hh__mono() + lp->after;
    while (!atomic_load(&lp->done) && hh__mono() < until) hh__sleep(0.01);
    if (!atomic_load(&lp->done)) hh__wake_poke(lp->w);
    return NULL;
}

static void test_relay_nothing_left_does_not_wait(void **s) {
    (void)s;
    hh__wake w;
    assert_int_equal(hh__wake_init(&w), 0);
    assert_true(w.pipe[0] >= 0);
    const double lefts[] = {-0.000001, -0.5, 0};
    for (size_t i = 0; i < sizeof(lefts) / sizeof(lefts[0]); i++) {
        struct late_poke lp = {&w, 3.0, 0};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, late_poke_main, &lp), 0);
        double t0 = hh__mono();
        int poked = hh__wake_relay(&w, lefts[i]);
        double took = hh__mono() - t0;
        atomic_store(&lp.done, 1);
        pthread_join(t, NULL);
        hh__wake_relay(&w, 0); /* drain the late poke */
        if (took >= 1.0) fail_msg("relay(%g) waited %.3f s for a poke: nothing was left to wait", lefts[i], took);
        assert_int_equal(poked, 0);
    }
    hh__wake_destroy(&w);
}

static void test_relay_waits_the_whole_time(void **s) {
    (void)s;
    hh__wake w;
    assert_int_equal(hh__wake_init(&w), 0);
    /* fractions of a millisecond under .5, which rounding to the nearest
     * millisecond cut short */
    const double secs[] = {0.0204, 0.0501, 0.1003};
    for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
        double t0 = hh__mono();
        assert_int_equal(hh__wake_relay(&w, secs[i]), 0);
        double took = hh__mono() - t0;
        if (took < secs[i]) fail_msg("relay(%.4f) returned after %.6f s, before its time", secs[i], took);
    }
    hh__wake_destroy(&w);
}

static void test_relay_poke_ends_wait(void **s) {
    (void)s;
    hh__wake w;
    assert_int_equal(hh__wake_init(&w), 0);
    hh__wake_poke(&w);
    double t0 = hh__mono();
    assert_int_equal(hh__wake_relay(&w, 30.0), 1);
    UH_ASSERT_DBL_IN(hh__mono() - t0, 0, 5.0);
    assert_int_equal(hh__wake_relay(&w, 0), 0); /* drained */
    hh__wake_destroy(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relay_nothing_left_does_not_wait),
        cmocka_unit_test(test_relay_waits_the_whole_time),
        cmocka_unit_test(test_relay_poke_ends_wait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
