/* test_error.c -- src/error.c, the reason behind the last failing call:
 * hh__fail records the formatted reason and returns the code it was given;
 * the reason is per thread (a failure on another thread, a worker's own
 * threads included, never overwrites the caller's); a reason longer than
 * the buffer is cut, not overflowed; hh__fail_plain falls back on
 * hh_strerror's fixed text, which has one for every code and a default.
 * That every public call leaves a reason is test_errors.c's. */
#include "unit_helpers.h"

#include <pthread.h>
#include "error.h"
#include "hiredhand.h"

static void test_fail_records_and_returns(void **s) {
    (void)s;
    assert_int_equal(hh__fail(HH_ERR_STATE, "queue %s: %d jobs, %.1f s", "q", 3, 0.5), HH_ERR_STATE);
    assert_string_equal(hh_last_error(), "queue q: 3 jobs, 0.5 s");
    /* a later failure replaces it */
    assert_int_equal(hh__fail(HH_ERR_IO, "second"), HH_ERR_IO);
    assert_string_equal(hh_last_error(), "second");
}

static void *other_thread(void *arg) {
    (void)arg;
    static char seen[64];
    /* a fresh thread starts with no reason, whatever the caller's */
    snprintf(seen, sizeof(seen), "%s", hh_last_error());
    hh__fail(HH_ERR_REDIS, "from the other thread");
    return seen;
}

static void test_per_thread(void **s) {
    (void)s;
    hh__fail(HH_ERR_INVALID, "mine");
    pthread_t t;
    void *seen = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &seen), 0);
    assert_string_equal((const char *)seen, "");
    assert_string_equal(hh_last_error(), "mine");
}

static void test_long_reason_cut(void **s) {
    (void)s;
    char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    hh__fail(HH_ERR_INVALID, "%s", big);
    size_t n = strlen(hh_last_error());
    assert_true(n > 500 && n < sizeof(big) - 1);
    assert_int_equal(hh_last_error()[0], 'x');
}

static void test_plain_and_strerror(void **s) {
    (void)s;
    const int codes[] = {HH_OK,        HH_ERR_INVALID, HH_ERR_REDIS,    HH_ERR_NOMEM,  HH_ERR_IO,
                         HH_ERR_STATE, HH_ERR_EXISTS,  HH_ERR_NOTFOUND, HH_ERR_REFUSED};
    const char *unknown = hh_strerror(12345);
    assert_string_equal(unknown, "unknown error");
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *t = hh_strerror(codes[i]);
        assert_non_null(t);
        if (strcmp(t, unknown) == 0) fail_msg("code %d has no text of its own", codes[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(t, hh_strerror(codes[j])) == 0) fail_msg("codes %d and %d say the same", codes[i], codes[j]);
        assert_int_equal(hh__fail_plain(codes[i]), codes[i]);
        assert_string_equal(hh_last_error(), t);
    }
    assert_string_equal(hh_strerror(HH_ERR_NOMEM), "out of memory");
    assert_non_null(strstr(hh_strerror(HH_ERR_REFUSED), "password"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_records_and_returns),
        cmocka_unit_test(test_per_thread),
        cmocka_unit_test(test_long_reason_cut),
        cmocka_unit_test(test_plain_and_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
