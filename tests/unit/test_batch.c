/* test_batch.c -- src/batch.c: jobs of Sidekiq Pro batches. A job with a
 * non-empty string "bid" is one (counted), others are not; its batch is
 * logged once however many of its jobs come, from any thread; the mode
 * says run or skip. */
#include "unit_helpers.h"

#include "batch.h"
#include "job.h"

static int warns;
static void count_log(hh_log_level level, const char *line, void *udata) {
    (void)udata;
    (void)line;
    if (level == HH_LOG_WARN) warns++;
}

static hh_job *job_of(const char *json) {
    char why[128];
    hh_job *j = hh__job_new(json, strlen(json), "default", why, sizeof(why));
    assert_non_null(j);
    assert_non_null(j->item);
    return j;
}

static void test_batch_ids(void **s) {
    (void)s;
    hh__logger log = {count_log, NULL, HH_LOG_DEBUG};
    hh__batch b;
    hh__batch_init(&b, HH_BATCH_JOBS_RUN, &log);
    warns = 0;
    const char *jobs[] = {
        "{\"class\":\"K\",\"args\":[],\"jid\":\"a\",\"bid\":\"b1\"}",
        "{\"class\":\"K\",\"args\":[],\"jid\":\"b\",\"bid\":\"b1\"}",
        "{\"class\":\"K\",\"args\":[],\"jid\":\"c\",\"bid\":\"b2\"}",
        "{\"class\":\"K\",\"args\":[],\"jid\":\"d\"}",
        "{\"class\":\"K\",\"args\":[],\"jid\":\"e\",\"bid\":\"\"}",
        "{\"class\":\"K\",\"args\":[],\"jid\":\"f\",\"bid\":7}",
    };
    int want[] = {1, 1, 1, 0, 0, 0};
    for (size_t i = 0; i < 6; i++) {
        hh_job *j = job_of(jobs[i]);
        assert_int_equal(hh__batch_check(&b, j), want[i]);
        hh__job_free(j);
    }
    assert_int_equal(atomic_load(&b.jobs), 3);
    assert_int_equal(warns, 2); /* once per batch */
    hh__batch_destroy(&b);

    hh__batch_init(&b, HH_BATCH_JOBS_SKIP, &log);
    hh_job *j = job_of(jobs[0]);
    assert_int_equal(hh__batch_check(&b, j), 2);
    hh__job_free(j);
    hh__batch_destroy(&b);
    assert_int_equal(hh__batch_check(NULL, NULL), 0);
}

/* A full table logs no new batch but still counts and decides. */
static void test_batch_table_full(void **s) {
    (void)s;
    hh__logger log = {count_log, NULL, HH_LOG_DEBUG};
    hh__batch b;
    hh__batch_init(&b, HH_BATCH_JOBS_RUN, &log);
    warns = 0;
    for (int i = 0; i < HH_BATCH_SEEN_SLOTS; i++) {
        char json[96];
        snprintf(json, sizeof(json), "{\"class\":\"K\",\"args\":[],\"jid\":\"x\",\"bid\":\"bid-%d\"}", i);
        hh_job *j = job_of(json);
        assert_int_equal(hh__batch_check(&b, j), 1);
        hh__job_free(j);
    }
    assert_int_equal(warns, HH_BATCH_SEEN_SLOTS / 4 * 3);
    assert_int_equal(atomic_load(&b.jobs), HH_BATCH_SEEN_SLOTS);
    hh__batch_destroy(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_ids),
        cmocka_unit_test(test_batch_table_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
