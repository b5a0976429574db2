/* test_job_metrics.c -- src/job_metrics.c and its keys (src/keys.c): what
 * Sidekiq 7.x/8.x's Metrics tab reads. Pins the 26 histogram bucket edges,
 * each generation's key names for a UTC minute (8.x's ten-minute rollup
 * included), the commands of a flush (BITFIELD ... OVERFLOW SAT INCRBY u16,
 * HINCRBY <Class>|p|f|ms, the TTLs), which runs count (the wrapped class,
 * failures untimed, a class without a handler not at all), and, against a
 * private redis-server, the written values, the saturation at 65535 and a
 * flush refused over maxmemory: dropped, nothing half written. */
#include "unit_helpers.h"

#include "job_metrics.h"
#include "keys.h"
#include "redis.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

/* 2026-02-05 08:03:59 UTC */
static time_t at_0803(void) {
    struct tm tm = {.tm_year = 126, .tm_mon = 1, .tm_mday = 5, .tm_hour = 8, .tm_min = 3, .tm_sec = 59};
    return timegm(&tm);
}

static void test_bucket_edges(void **s) {
    (void)s;
    /* Sidekiq's Histogram::BUCKET_INTERVALS, the last ("Slow") unbounded */
    static const uint64_t sidekiq[25] = {20,    30,    45,    65,     100,    150,    225,   335,   500,
                                         750,   1100,  1700,  2500,   3800,   5750,   8500,  13000, 20000,
                                         30000, 45000, 65000, 100000, 150000, 225000, 335000};
    assert_int_equal(HH_JM_BUCKETS, 26);
    for (int i = 0; i < 25; i++) {
        assert_int_equal(hh__job_metrics_edge(i), sidekiq[i]);
        /* `ms < edge` picks the bucket: the edge itself is the next one's */
        assert_int_equal(hh__job_metrics_bucket(sidekiq[i] - 1), i);
        assert_int_equal(hh__job_metrics_bucket(sidekiq[i]), i + 1);
    }
    assert_true(hh__job_metrics_edge(25) == UINT64_MAX);
    assert_int_equal(hh__job_metrics_bucket(0), 0);
    assert_int_equal(hh__job_metrics_bucket(UINT64_MAX), 25);
}

static void assert_key(sds got, const char *want, size_t wantlen) {
    assert_non_null(got);
    assert_int_equal(sdslen(got), wantlen);
    assert_memory_equal(got, want, wantlen);
    sdsfree(got);
}
#define KEY(got, want) assert_key(got, want, sizeof(want) - 1)

static void test_key_names(void **s) {
    (void)s;
    hh__keys k, ns;
    hh__keys_init(&k, NULL);
    hh__keys_init(&ns, "ns");
    time_t t = at_0803();
    /* 7.x: strftime("%Y%m%d|%-H:%-M") and "%d-%H:%-M" */
    KEY(hh__key_jm_counts7(&k, t), "j|20260205|8:3");
    KEY(hh__key_jm_hist7(&k, "PyJob", 5, t), "PyJob-05-08:3");
    /* 8.x: "%y%m%d|%-H:%M", the same without its last digit, "%-d-%-H:%-M" */
    KEY(hh__key_jm_counts8(&k, t), "j|260205|8:03");
    KEY(hh__key_jm_rollup8(&k, t), "j|260205|8:0");
    KEY(hh__key_jm_hist8(&k, "PyJob", 5, t), "h|PyJob-5-8:3");
    /* namespaced once, like every key; a class holding NUL kept whole */
    KEY(hh__key_jm_counts7(&ns, t), "ns:j|20260205|8:3");
    KEY(hh__key_jm_rollup8(&ns, t), "ns:j|260205|8:0");
    KEY(hh__key_jm_hist7(&ns, "T\0Evil", 6, t), "ns:T\0Evil-05-08:3");
    KEY(hh__key_jm_hist8(&ns, "T\0Evil", 6, t), "ns:h|T\0Evil-5-8:3");
    /* minute rounding: down to the minute, the rollup down to ten, in UTC */
    time_t late = t + 20 * 3600 + 43 * 60; /* 2026-02-06 04:46:59 */
    KEY(hh__key_jm_counts7(&k, late), "j|20260206|4:46");
    KEY(hh__key_jm_counts8(&k, late), "j|260206|4:46");
    KEY(hh__key_jm_rollup8(&k, late), "j|260206|4:4");
    KEY(hh__key_jm_hist7(&k, "A", 1, late), "A-06-04:46");
    KEY(hh__key_jm_hist8(&k, "A", 1, late), "h|A-6-4:46");
    time_t next = t - 3 * 60 - 59 + 10 * 60; /* 08:10:00 starts the next rollup */
    KEY(hh__key_jm_rollup8(&k, next - 1), "j|260205|8:0");
    KEY(hh__key_jm_rollup8(&k, next), "j|260205|8:1");
    KEY(hh__key_jm_counts7(&k, next), "j|20260205|8:10");
    KEY(hh__key_jm_counts8(&k, next - 1), "j|260205|8:09");
    /* 7.x's eight-digit date and 8.x's six never name the same hash */
    hh__keys_free(&k);
    hh__keys_free(&ns);
}

/* The command as one line, arguments joined by spaces. */
static char *line(const hh__jm_cmd *c) {
    static char buf[2048];
    size_t n = 0;
    for (int i = 0; i < c->argc; i++) n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", c->argv[i]);
    return buf;
}

static void test_flush_commands(void **s) {
    (void)s;
    hh__keys k;
    hh__keys_init(&k, NULL);
    hh__logger log = {.level = HH_LOG_ERROR + 1};
    hh__job_metrics *jm = hh__job_metrics_new(&k, &log, HH_JOB_METRICS_7 | HH_JOB_METRICS_8);
    hh__job_metrics_record(jm, "A", 1, 10, 0);
    hh__job_metrics_record(jm, "A", 1, 25, 0);
    hh__job_metrics_record(jm, "A", 1, 500, 1); /* a failure: counted, never timed */
    hh__job_metrics_record(jm, "B", 1, 40, 1);
    hh__job_metrics_record(jm, "A", 1, 400000, 0);
    int n = 0;
    hh__jm_cmd *v = hh__job_metrics_take(jm, (double)at_0803() + 0.5, &n);
    static const char *const want[] = {
        "BITFIELD A-05-08:3 OVERFLOW SAT INCRBY u16 #0 1 INCRBY u16 #1 1 INCRBY u16 #25 1",
        "EXPIRE A-05-08:3 28800",
        "BITFIELD h|A-5-8:3 OVERFLOW SAT INCRBY u16 #0 1 INCRBY u16 #1 1 INCRBY u16 #25 1",
        "EXPIRE h|A-5-8:3 28800",
        /* B never succeeded: no histogram, no ms field */
        "HINCRBY j|20260205|8:3 A|p 4",
        "HINCRBY j|20260205|8:3 A|f 1",
        "HINCRBY j|20260205|8:3 A|ms 400035",
        "HINCRBY j|20260205|8:3 B|p 1",
        "HINCRBY j|20260205|8:3 B|f 1",
        "EXPIRE j|20260205|8:3 28800",
        "HINCRBY j|260205|8:0 A|p 4",
        "HINCRBY j|260205|8:0 A|f 1",
        "HINCRBY j|260205|8:0 A|ms 400035",
        "HINCRBY j|260205|8:0 B|p 1",
        "HINCRBY j|260205|8:0 B|f 1",
        "EXPIRE j|260205|8:0 259200",
        "HINCRBY j|260205|8:03 A|p 4",
        "HINCRBY j|260205|8:03 A|f 1",
        "HINCRBY j|260205|8:03 A|ms 400035",
        "HINCRBY j|260205|8:03 B|p 1",
        "HINCRBY j|260205|8:03 B|f 1",
        "EXPIRE j|260205|8:03 28800",
    };
    assert_int_equal(n, sizeof(want) / sizeof(*want));
    for (int i = 0; i < n; i++) assert_string_equal(line(&v[i]), want[i]);
    hh__jm_cmds_free(v, n);
    /* taken: the next flush starts afresh */
    assert_null(hh__job_metrics_take(jm, (double)at_0803(), &n));
    assert_int_equal(n, 0);
    hh__job_metrics_free(jm);
    hh__keys_free(&k);
}

static void test_layouts_and_zero_ms(void **s) {
    (void)s;
    hh__keys k;
    hh__keys_init(&k, NULL);
    hh__logger log = {.level = HH_LOG_ERROR + 1};
    int n;
    /* 7.x alone */
    hh__job_metrics *jm = hh__job_metrics_new(&k, &log, HH_JOB_METRICS_7);
    hh__job_metrics_record(jm, "A", 1, 0, 0); /* 0 ms still writes A|ms, as Sidekiq's Hash.new(0) += 0 */
    hh__jm_cmd *v = hh__job_metrics_take(jm, (double)at_0803(), &n);
    assert_int_equal(n, 5);
    assert_string_equal(line(&v[0]), "BITFIELD A-05-08:3 OVERFLOW SAT INCRBY u16 #0 1");
    assert_string_equal(line(&v[2]), "HINCRBY j|20260205|8:3 A|p 1");
    assert_string_equal(line(&v[3]), "HINCRBY j|20260205|8:3 A|ms 0");
    hh__jm_cmds_free(v, n);
    hh__job_metrics_free(jm);
    /* 8.x alone */
    jm = hh__job_metrics_new(&k, &log, HH_JOB_METRICS_8);
    hh__job_metrics_record(jm, "A", 1, 5, 1);
    v = hh__job_metrics_take(jm, (double)at_0803(), &n);
    assert_int_equal(n, 6);
    assert_string_equal(line(&v[0]), "HINCRBY j|260205|8:0 A|p 1");
    assert_string_equal(line(&v[3]), "HINCRBY j|260205|8:03 A|p 1");
    hh__jm_cmds_free(v, n);
    hh__job_metrics_free(jm);
    hh__keys_free(&k);
}

static hh_job *job(const char *json) {
    char why[128];
    hh_job *j = hh__job_new(json, strlen(json), "default", why, sizeof(why));
    assert_non_null(j);
    assert_non_null(j->item);
    return j;
}

static void test_what_counts(void **s) {
    (void)s;
    hh__keys k;
    hh__keys_init(&k, NULL);
    hh__logger log = {.level = HH_LOG_ERROR + 1};
    hh__job_metrics *jm = hh__job_metrics_new(&k, &log, HH_JOB_METRICS_7);
    hh_job *plain = job("{\"class\":\"Plain\",\"args\":[],\"jid\":\"1\"}");
    hh_job *aj = job("{\"class\":\"Sidekiq::ActiveJob::Wrapper\",\"wrapped\":\"MyJob\",\"args\":[{}],\"jid\":\"2\"}");
    hh_job *other = job("{\"class\":\"Custom\",\"wrapped\":\"Inner\",\"args\":[],\"jid\":\"3\"}");
    hh__job_metrics_ran(jm, plain, 1, 0.0199, 0); /* 19.9 ms: 19, bucket 0 */
    hh__job_metrics_ran(jm, plain, 0, 1.0, 1);    /* no handler: Sidekiq's NameError, before its middleware */
    hh__job_metrics_ran(jm, aj, 0, 1.0, 1);       /* the wrapper ran and failed inside: counted */
    hh__job_metrics_ran(jm, other, 1, 0.002, 0);  /* "wrapped" of any class names it */
    hh__job_metrics_ran(NULL, plain, 1, 1, 0);    /* off */
    int n;
    hh__jm_cmd *v = hh__job_metrics_take(jm, (double)at_0803(), &n);
    static const char *const want[] = {
        "BITFIELD Plain-05-08:3 OVERFLOW SAT INCRBY u16 #0 1",
        "EXPIRE Plain-05-08:3 28800",
        "BITFIELD Inner-05-08:3 OVERFLOW SAT INCRBY u16 #0 1",
        "EXPIRE Inner-05-08:3 28800",
        "HINCRBY j|20260205|8:3 Plain|p 1",
        "HINCRBY j|20260205|8:3 Plain|ms 19",
        "HINCRBY j|20260205|8:3 MyJob|p 1",
        "HINCRBY j|20260205|8:3 MyJob|f 1",
        "HINCRBY j|20260205|8:3 Inner|p 1",
        "HINCRBY j|20260205|8:3 Inner|ms 2",
        "EXPIRE j|20260205|8:3 28800",
    };
    assert_int_equal(n, sizeof(want) / sizeof(*want));
    for (int i = 0; i < n; i++) assert_string_equal(line(&v[i]), want[i]);
    hh__jm_cmds_free(v, n);
    hh__job_free(plain);
    hh__job_free(aj);
    hh__job_free(other);
    hh__job_metrics_free(jm);
    hh__keys_free(&k);
}

typedef uh_conn_fixture fixture;

static int setup(void **s) {
    fixture *f = calloc(1, sizeof(*f));
    if (uh_conn_fixture_open(f, srv.url, "ns") != 0) return -1;
    uh_flushall(&srv);
    freeReplyObject(uh_cmd(&srv, "CONFIG SET maxmemory 0"));
    *s = f;
    return 0;
}

static int teardown(void **s) {
    fixture *f = *s;
    freeReplyObject(uh_cmd(&srv, "CONFIG SET maxmemory 0"));
    uh_conn_fixture_close(f);
    free(f);
    return 0;
}

static void test_written_and_saturated(void **s) {
    fixture *f = *s;
    hh__job_metrics *jm = hh__job_metrics_new(&f->keys, &f->log, HH_JOB_METRICS_7 | HH_JOB_METRICS_8);
    double now = (double)at_0803();
    for (int i = 0; i < 70000; i++) hh__job_metrics_record(jm, "A", 1, 1, 0);
    hh__job_metrics_record(jm, "A", 1, 30, 1);
    assert_int_equal(hh__job_metrics_flush(jm, &f->conn, now), 0);
    /* a Ruby process's flush of the same minute adds into the same fields */
    freeReplyObject(uh_cmd(&srv, "HINCRBY ns:j|20260205|8:3 A|p 5"));
    assert_int_equal(uh_int(&srv, "HGET ns:j|20260205|8:3 A|p"), 70006);
    assert_int_equal(uh_int(&srv, "HGET ns:j|260205|8:03 A|p"), 70001);
    assert_int_equal(uh_int(&srv, "HGET ns:j|260205|8:0 A|f"), 1);
    assert_int_equal(uh_int(&srv, "HGET ns:j|260205|8:03 A|ms"), 70000);
    /* u16 counters saturate at 65535, they do not wrap */
    redisReply *r = uh_cmd(&srv, "BITFIELD_RO ns:A-05-08:3 GET u16 #0 GET u16 #1");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 65535);
    assert_int_equal(r->element[1]->integer, 0);
    freeReplyObject(r);
    r = uh_cmd(&srv, "BITFIELD_RO ns:h|A-5-8:3 GET u16 #0");
    assert_int_equal(r->element[0]->integer, 65535);
    freeReplyObject(r);
    long long ttl = uh_int(&srv, "TTL ns:A-05-08:3");
    assert_true(ttl > 28790 && ttl <= 28800);
    ttl = uh_int(&srv, "TTL ns:j|260205|8:0");
    assert_true(ttl > 259190 && ttl <= 259200);
    ttl = uh_int(&srv, "TTL ns:j|20260205|8:3");
    assert_true(ttl > 28790 && ttl <= 28800);
    /* nothing recorded since: nothing sent */
    assert_int_equal(hh__job_metrics_flush(jm, &f->conn, now), 0);
    hh__job_metrics_free(jm);
}

static void test_refused_is_dropped(void **s) {
    fixture *f = *s;
    hh__job_metrics *jm = hh__job_metrics_new(&f->keys, &f->log, HH_JOB_METRICS_7 | HH_JOB_METRICS_8);
    double now = (double)at_0803();
    hh__job_metrics_record(jm, "A", 1, 3, 0);
    freeReplyObject(uh_cmd(&srv, "CONFIG SET maxmemory 1"));
    assert_int_equal(hh__job_metrics_flush(jm, &f->conn, now), -1);
    freeReplyObject(uh_cmd(&srv, "CONFIG SET maxmemory 0"));
    /* the transaction wrote nothing, and the counts are gone (Sidekiq's rule) */
    assert_int_equal(uh_int(&srv, "DBSIZE"), 0);
    assert_int_equal(hh__job_metrics_flush(jm, &f->conn, now), 0);
    assert_int_equal(uh_int(&srv, "DBSIZE"), 0);
    /* recording goes on meanwhile, and the next flush goes in */
    hh__job_metrics_record(jm, "A", 1, 3, 0);
    assert_int_equal(hh__job_metrics_flush(jm, &f->conn, now), 0);
    assert_int_equal(uh_int(&srv, "HGET ns:j|20260205|8:3 A|p"), 1);
    hh__job_metrics_free(jm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_edges),
        cmocka_unit_test(test_key_names),
        cmocka_unit_test(test_flush_commands),
        cmocka_unit_test(test_layouts_and_zero_ms),
        cmocka_unit_test(test_what_counts),
        cmocka_unit_test_setup_teardown(test_written_and_saturated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_is_dropped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
