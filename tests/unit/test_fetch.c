/* test_fetch.c -- src/fetch.c hh__queue_order (docs/protocol.md): strict order,
 * weighted orders that are permutations with the first queue drawn in
 * proportion to its weight, zero weights among weighted queues counted as 1;
 * and the manager's queue configuration that feeds it (modes, duplicates). */
#include "unit_helpers.h"

#include <math.h>
#include "fetch.h"
#include "manager.h"

#define DRAWS 100000

static void assert_permutation(const size_t *out, size_t got, size_t n) {
    assert_int_equal(got, n);
    int seen[HH_MAX_QUEUES] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i] < n);
        seen[out[i]]++;
    }
    for (size_t i = 0; i < n; i++)
        if (seen[i] != 1) fail_msg("queue %zu appears %d times", i, seen[i]);
}

static void test_strict_is_config_order(void **s) {
    (void)s;
    hh__rng rng;
    hh__rng_seed(&rng);
    int w[5] = {0, 0, 0, 0, 0};
    size_t out[5];
    for (int i = 0; i < 100; i++) {
        memset(out, 0xff, sizeof(out));
        assert_int_equal(hh__queue_order(w, 5, 0, &rng, out), 5);
        for (size_t k = 0; k < 5; k++) assert_int_equal(out[k], k);
    }
    /* weights are ignored in strict mode */
    int w2[3] = {1, 5, 9};
    assert_int_equal(hh__queue_order(w2, 3, 0, &rng, out), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 2);
    assert_int_equal(hh__queue_order(w2, 1, 1, &rng, out), 1);
    assert_int_equal(out[0], 0);
}

/* Draws DRAWS orders; first[i] = how often queue i came first. */
static void draw(const int *w, size_t n, double *first_frac, size_t *pos_hist /* n*n or NULL */) {
    hh__rng rng;
    hh__rng_seed(&rng);
    size_t out[HH_MAX_QUEUES];
    long first[HH_MAX_QUEUES] = {0};
    for (int d = 0; d < DRAWS; d++) {
        size_t got = hh__queue_order(w, n, 1, &rng, out);
        assert_permutation(out, got, n);
        first[out[0]]++;
        if (pos_hist)
            for (size_t p = 0; p < n; p++) pos_hist[out[p] * n + p]++;
    }
    for (size_t i = 0; i < n; i++) first_frac[i] = (double)first[i] / DRAWS;
}

static void test_weighted_3_to_1(void **s) {
    (void)s;
    int w[2] = {3, 1};
    double f[2];
    draw(w, 2, f, NULL);
    UH_ASSERT_DBL_IN(f[0], 0.73, 0.77);
    UH_ASSERT_DBL_IN(f[1], 0.23, 0.27);
}

static void test_weighted_all_ones_uniform(void **s) {
    (void)s;
    int w[3] = {1, 1, 1};
    double f[3];
    size_t hist[9] = {0};
    draw(w, 3, f, hist);
    for (int i = 0; i < 3; i++) UH_ASSERT_DBL_IN(f[i], 1.0 / 3 - 0.02, 1.0 / 3 + 0.02);
    /* equal weights: no starvation, every queue takes every position */
    for (int i = 0; i < 9; i++) UH_ASSERT_DBL_IN((double)hist[i] / DRAWS, 1.0 / 3 - 0.02, 1.0 / 3 + 0.02);
}

static void test_zero_weight_among_weighted_counts_one(void **s) {
    (void)s;
    int w[3] = {2, 0, 1}; /* 0 -> 1: repeated list a,a,b,c */
    double f[3];
    draw(w, 3, f, NULL);
    UH_ASSERT_DBL_IN(f[0], 0.48, 0.52);
    UH_ASSERT_DBL_IN(f[1], 0.23, 0.27);
    UH_ASSERT_DBL_IN(f[2], 0.23, 0.27);
}

static void test_weighted_large_weights(void **s) {
    (void)s;
    int w[3] = {300, 100, 0}; /* more than 256 repetitions */
    double f[3];
    draw(w, 3, f, NULL);
    UH_ASSERT_DBL_IN(f[0], 0.73, 0.77);
    UH_ASSERT_DBL_IN(f[1], 0.23, 0.27);
    UH_ASSERT_DBL_IN(f[2], 0.0, 0.01);
}

static void test_weighted_many_queues(void **s) {
    (void)s;
    int w[HH_MAX_QUEUES];
    for (int i = 0; i < HH_MAX_QUEUES; i++) w[i] = 1 + (i % 3);
    hh__rng rng;
    hh__rng_seed(&rng);
    size_t out[HH_MAX_QUEUES];
    for (int d = 0; d < 2000; d++)
        assert_permutation(out, hh__queue_order(w, HH_MAX_QUEUES, 1, &rng, out), HH_MAX_QUEUES);
}

/* Beyond the stack buffer hh__queue_order uses for up to 256 queues. */
static void test_weighted_thousands_of_queues(void **s) {
    (void)s;
    enum { N = 3000 };
    static int w[N];
    static size_t out[N];
    static unsigned char seen[N];
    for (int i = 0; i < N; i++) w[i] = 1 + (i % 3);
    hh__rng rng;
    hh__rng_seed(&rng);
    for (int d = 0; d < 20; d++) {
        assert_int_equal(hh__queue_order(w, N, 1, &rng, out), N);
        memset(seen, 0, sizeof(seen));
        for (size_t i = 0; i < N; i++) {
            assert_true(out[i] < N);
            assert_int_equal(seen[out[i]]++, 0);
        }
    }
}

/* ---------------------------------------- manager queue configuration */

static hh_manager *manager(const hh_queue_weight *q, size_t n, int *err) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = "redis://127.0.0.1:1/0"; /* never connected */
    o.queues = q;
    o.nqueues = n;
    o.concurrency = 2;
    o.log_level = HH_LOG_ERROR + 1;
    return hh_manager_new(&o, err);
}

static void test_manager_modes(void **s) {
    (void)s;
    int err;
    hh_queue_weight strict[] = {{"a", 0}, {"b", 0}, {"c", 0}};
    struct hh_manager *m = manager(strict, 3, &err);
    assert_non_null(m);
    assert_int_equal(m->nqueues, 3);
    assert_int_equal(m->weighted, 0);
    assert_string_equal(m->queues[2], "c");
    hh_manager_free(m);

    hh_queue_weight weighted[] = {{"a", 3}, {"b", 1}};
    m = manager(weighted, 2, &err);
    assert_int_equal(m->weighted, 1);
    assert_int_equal(m->weights[0], 3);
    assert_int_equal(m->weights[1], 1);
    hh_manager_free(m);

    hh_queue_weight mixed[] = {{"a", 2}, {"b", 0}};
    m = manager(mixed, 2, &err);
    assert_int_equal(m->weighted, 1);
    hh_manager_free(m);

    /* "-q a -q b -q a": duplicates removed, configuration order kept,
     * weights added as Sidekiq does */
    hh_queue_weight dup[] = {{"a", 2}, {"b", 1}, {"a", 3}};
    m = manager(dup, 3, &err);
    assert_int_equal(m->nqueues, 2);
    assert_string_equal(m->queues[0], "a");
    assert_string_equal(m->queues[1], "b");
    assert_int_equal(m->weights[0], 5);
    hh_manager_free(m);

    m = manager(NULL, 0, &err);
    assert_int_equal(m->nqueues, 1);
    assert_string_equal(m->queues[0], "default");
    hh_manager_free(m);

    hh_queue_weight bad[] = {{"a|b", 0}};
    assert_null(manager(bad, 1, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    hh_queue_weight neg[] = {{"a", -1}};
    assert_null(manager(neg, 1, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    hh_queue_weight empty[] = {{"", 0}};
    assert_null(manager(empty, 1, &err));
}

/* Any number of queues up to HH_QUEUES_LIMIT; more are refused. */
static void test_manager_queue_limit(void **s) {
    (void)s;
    size_t n = HH_QUEUES_LIMIT + 1;
    hh_queue_weight *q = calloc(n, sizeof(*q));
    char(*names)[16] = calloc(n, sizeof(*names));
    assert_non_null(q);
    assert_non_null(names);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "q%zu", i);
        q[i].name = names[i];
    }
    int err = 0;
    assert_null(manager(q, n, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    struct hh_manager *m = manager(q, n - 1, &err);
    assert_non_null(m);
    assert_int_equal(m->nqueues, HH_QUEUES_LIMIT);
    /* every queue counted; as many listed as the caller's array holds */
    hh_queue_stats *qs = calloc(HH_QUEUES_LIMIT + 1, sizeof(*qs));
    assert_non_null(qs);
    hh_manager_stats st = {.struct_size = sizeof(st), .queues = qs, .queues_cap = 3};
    assert_int_equal(hh_manager_get_stats(m, &st), HH_OK);
    assert_int_equal(st.nqueues, HH_QUEUES_LIMIT);
    assert_string_equal(qs[2].name, names[2]);
    assert_null(qs[3].name); /* past queues_cap: untouched */
    st.queues_cap = HH_QUEUES_LIMIT + 1;
    assert_int_equal(hh_manager_get_stats(m, &st), HH_OK);
    assert_string_equal(qs[HH_QUEUES_LIMIT - 1].name, names[HH_QUEUES_LIMIT - 1]);
    assert_null(qs[HH_QUEUES_LIMIT].name);
    free(qs);
    hh_manager_free(m);
    free(names);
    free(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strict_is_config_order),
        cmocka_unit_test(test_weighted_3_to_1),
        cmocka_unit_test(test_weighted_all_ones_uniform),
        cmocka_unit_test(test_zero_weight_among_weighted_counts_one),
        cmocka_unit_test(test_weighted_large_weights),
        cmocka_unit_test(test_weighted_many_queues),
        cmocka_unit_test(test_weighted_thousands_of_queues),
        cmocka_unit_test(test_manager_modes),
        cmocka_unit_test(test_manager_queue_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
