/* test_options.c -- the one check of hh_manager_options (options.c): the
 * defaults pass; every limit holds at its edge and fails one step past it
 * (concurrency, heartbeat interval, retries, recoveries, dead set size,
 * queue weights); 0 keeps meaning "the default" for the poll intervals
 * while a busy-loop interval and NaN are refused; the liveness age must
 * exceed a beat when HTTP is on; the enums and the job_metrics bit set
 * take only their values; try_bind 0 (hh_manager_new's check) only parses
 * the HTTP address. No Redis: the URL is parsed, never connected to. The
 * reasons every public call leaves in hh_last_error() are test_errors.c's. */
#include "unit_helpers.h"

#include <math.h>
#include "hiredhand.h"
#include "options.h"

static void base(hh_manager_options *o) {
    hh_manager_options_init(o);
    o->redis.url = "redis://127.0.0.1:6390/0"; /* parsed only */
}

/* o passes (errbuf cleared), or fails with `needle` in the reason. */
static void expect_ok(const hh_manager_options *o) {
    char buf[512] = "unset";
    int rc = hh__options_check(o, 0, buf, sizeof(buf));
    if (rc != HH_OK) fail_msg("refused: %s", buf);
    assert_string_equal(buf, "");
}

static void expect_no(const hh_manager_options *o, const char *needle) {
    char buf[512] = "";
    assert_int_equal(hh__options_check(o, 0, buf, sizeof(buf)), HH_ERR_INVALID);
    if (!strstr(buf, needle)) fail_msg("reason '%s', want '%s' in it", buf, needle);
    /* no errbuf: the same answer, nothing written */
    assert_int_equal(hh__options_check(o, 0, NULL, 0), HH_ERR_INVALID);
}

static void test_defaults_pass(void **s) {
    (void)s;
    hh_manager_options o;
    base(&o);
    expect_ok(&o);
    assert_int_equal(hh__options_check(NULL, 0, NULL, 0), HH_ERR_INVALID);
}

static void test_number_edges(void **s) {
    (void)s;
    hh_manager_options o;
    base(&o);
    o.concurrency = 1;
    expect_ok(&o);
    o.concurrency = HH_CONCURRENCY_LIMIT;
    expect_ok(&o);
    o.concurrency = 0;
    expect_no(&o, "concurrency 0");
    o.concurrency = HH_CONCURRENCY_LIMIT + 1;
    expect_no(&o, "concurrency 1001");

    base(&o);
    o.heartbeat_interval = HH_HEARTBEAT_INTERVAL_MIN;
    expect_ok(&o);
    o.heartbeat_interval = HH_HEARTBEAT_INTERVAL_MAX;
    expect_ok(&o);
    o.heartbeat_interval = 0.09;
    expect_no(&o, "heartbeat interval");
    o.heartbeat_interval = 30.5;
    expect_no(&o, "heartbeat interval");
    o.heartbeat_interval = NAN;
    expect_no(&o, "heartbeat interval");

    base(&o);
    o.shutdown_timeout = 0;
    expect_ok(&o);
    o.shutdown_timeout = INFINITY;
    expect_no(&o, "shutdown timeout");
    o.shutdown_timeout = NAN;
    expect_no(&o, "shutdown timeout");

    base(&o);
    o.max_retries = HH_RETRIES_LIMIT;
    expect_ok(&o);
    o.max_retries = HH_RETRIES_LIMIT + 1;
    expect_no(&o, "max retries");
    base(&o);
    o.max_recoveries = 0;
    expect_ok(&o);
    o.max_recoveries = HH_RETRIES_LIMIT;
    expect_ok(&o);
    o.max_recoveries = HH_RETRIES_LIMIT + 1;
    expect_no(&o, "max recoveries");
    o.max_recoveries = -1;
    expect_no(&o, "max recoveries -1");
    base(&o);
    o.dead_max_jobs = HH_DEAD_MAX_JOBS_LIMIT;
    expect_ok(&o);
    o.dead_max_jobs = HH_DEAD_MAX_JOBS_LIMIT + 1;
    expect_no(&o, "dead set limit");
}

/* 0 (and below, for the timeouts) means the default; NaN never does, and a
 * poll every few milliseconds is a busy loop on Redis. */
static void test_poll_intervals(void **s) {
    (void)s;
    hh_manager_options o;
    base(&o);
    o.poll_interval_average = 0;
    o.average_scheduled_poll_interval = 0;
    o.dead_timeout = 0;
    o.recovery_interval = 0;
    expect_ok(&o);
    o.poll_interval_average = 0.1;
    expect_ok(&o);
    o.poll_interval_average = 0.05;
    expect_no(&o, "poll interval 0.05");
    base(&o);
    o.average_scheduled_poll_interval = 1e-9;
    expect_no(&o, "poll interval 1e-09");
    base(&o);
    o.poll_interval_average = -1;
    expect_no(&o, "poll intervals not negative");
    base(&o);
    o.recovery_interval = NAN;
    expect_no(&o, "recovery interval");
    base(&o);
    o.dead_timeout = NAN;
    expect_no(&o, "dead timeout");
}

/* With --http, /healthz calls a worker dead once its last beat is older
 * than liveness_max_age: not above one beat, a healthy worker flaps. */
static void test_liveness_above_one_beat(void **s) {
    (void)s;
    hh_manager_options o;
    base(&o);
    o.http_bind = "127.0.0.1:1"; /* parsed only (try_bind 0) */
    o.heartbeat_interval = 5;
    o.liveness_max_age = 5;
    expect_no(&o, "liveness max age 5 s is not above the heartbeat interval 5 s");
    o.liveness_max_age = 5.5;
    expect_ok(&o);
    /* 0: the default 30 s, against a 30 s beat */
    o.liveness_max_age = 0;
    o.heartbeat_interval = 30;
    expect_no(&o, "liveness max age 30 s");
    /* without HTTP no probe reads it */
    o.http_bind = NULL;
    expect_ok(&o);
}

static void test_choices(void **s) {
    (void)s;
    hh_manager_options o;
    base(&o);
    o.fetch = HH_FETCH_BASIC;
    o.lease_lost = HH_LEASE_LOST_FINISH;
    o.batch_jobs = HH_BATCH_JOBS_SKIP;
    o.job_metrics = 0;
    expect_ok(&o);
    o.job_metrics = HH_JOB_METRICS_8;
    expect_ok(&o);
    o.job_metrics = HH_JOB_METRICS_7 | HH_JOB_METRICS_8 | 4;
    expect_no(&o, "job_metrics 7");
    base(&o);
    o.fetch = (hh_fetch_mode)9;
    expect_no(&o, "fetch mode 9");
    base(&o);
    o.batch_jobs = (hh_batch_jobs)5;
    expect_no(&o, "batch_jobs 5");
}

static void test_queues_and_names(void **s) {
    (void)s;
    hh_manager_options o;
    hh_queue_weight q[2] = {{"a", 0}, {"b", HH_WEIGHT_LIMIT}};
    base(&o);
    o.queues = q;
    o.nqueues = 2;
    expect_ok(&o);
    q[1].weight = HH_WEIGHT_LIMIT + 1;
    expect_no(&o, "queue b: weight 1000001");
    base(&o);
    o.queues = NULL;
    o.nqueues = 1;
    expect_no(&o, "queues is NULL");
    const char *labels[] = {"fine", "bad\nlabel", NULL};
    base(&o);
    o.labels = labels;
    expect_no(&o, "label");
    labels[1] = NULL;
    expect_ok(&o);
    /* an empty identity is "make one up", not a bad name */
    base(&o);
    o.identity = "";
    expect_ok(&o);
    base(&o);
    o.redis.url = "http://127.0.0.1/";
    char buf[256];
    assert_int_equal(hh__options_check(&o, 0, buf, sizeof(buf)), HH_ERR_INVALID);
    assert_true(buf[0] != '\0');
}

/* hh_manager_new's check (try_bind 0) parses http_bind but leaves the port
 * alone: a port held by another socket passes there, and fails with 1. */
static void test_try_bind(void **s) {
    (void)s;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 1), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(a.sin_port));
    hh_manager_options o;
    base(&o);
    o.http_bind = addr;
    assert_int_equal(hh__options_check(&o, 0, NULL, 0), HH_OK);
    char buf[512];
    assert_int_equal(hh__options_check(&o, 1, buf, sizeof(buf)), HH_ERR_INVALID);
    assert_non_null(strstr(buf, "http: "));
    close(fd);
    o.http_bind = "127.0.0.1:70000";
    assert_int_equal(hh__options_check(&o, 0, NULL, 0), HH_ERR_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_pass),  cmocka_unit_test(test_number_edges),
        cmocka_unit_test(test_poll_intervals), cmocka_unit_test(test_liveness_above_one_beat),
        cmocka_unit_test(test_choices),        cmocka_unit_test(test_queues_and_names),
        cmocka_unit_test(test_try_bind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
