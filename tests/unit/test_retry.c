/* test_retry.c -- src/retry.c: the failure decision (docs/protocol.md) and
 * the retry option in all its forms (retry true/false/0/N/absent, dead: false, retry_queue),
 * the fields written and where (new keys appended, existing keys in place,
 * unknown keys kept), both timestamp encodings, error_backtrace, the
 * backoff (docs/protocol.md), and the dead-set payload of a malformed job. */
#include "unit_helpers.h"

#include <float.h>
#include <math.h>
#include <zlib.h>
#include "job.h"
#include "outcome.h"
#include "retry.h"
#include "util.h"

#define NOW 1795962147.2214

static hh__retry_config cfg_default(void) {
    hh__retry_config c;
    c.max_retries = 25;
    c.timestamps = HH_TS_FLOAT;
    c.class_known = 1;
    return c;
}

static hh_job *failed_job(const char *payload, const char *queue) {
    char why[256];
    hh_job *j = hh__job_new(payload, strlen(payload), queue, why, sizeof(why));
    assert_non_null(j);
    if (!j->item) fail_msg("test payload malformed: %s", why);
    hh_job_fail(j, "ArgumentError", "boom f1");
    return j;
}

/* Plans a failure and parses the new payload (NULL for discard). */
static json_t *plan(const char *payload, const char *queue, const hh__retry_config *cfg, hh__failure_plan *out,
                    char **text) {
    hh_job *j = failed_job(payload, queue);
    hh__rng rng;
    hh__rng_seed(&rng);
    assert_int_equal(hh__retry_plan(j, cfg, NOW, &rng, out), 0);
    hh__job_free(j);
    if (text) *text = out->payload;
    if (!out->payload) return NULL;
    json_t *v = json_loads(out->payload, 0, NULL);
    assert_non_null(v);
    return v;
}

static long long ival(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) fail_msg("\"%s\" is not an integer", k);
    return (long long)json_integer_value(v);
}

static const char *sval(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("\"%s\" is not a string", k);
    return json_string_value(v);
}

static void test_retry_true_first_failure(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    const char *in = "{\"retry\":true,\"queue\":\"default\",\"class\":\"FailWorker\","
                     "\"args\":[\"f1\"],\"custom_key\":{\"x\":[1,2.0]},\"tags\":[\"t1\"],"
                     "\"jid\":\"ef7ca11055ffe52f71c8b6e3\",\"created_at\":1795962147.0172818,"
                     "\"enqueued_at\":1795962147.0173023}";
    char *text;
    json_t *o = plan(in, "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_non_null(o);
    assert_string_equal(uh_keys_csv(text),
                        "retry,queue,class,args,custom_key,tags,jid,created_at,enqueued_at,"
                        "error_message,error_class,failed_at,retry_count");
    assert_int_equal(ival(o, "retry_count"), 0);
    assert_string_equal(sval(o, "error_message"), "boom f1");
    assert_string_equal(sval(o, "error_class"), "ArgumentError");
    assert_true(json_is_real(json_object_get(o, "failed_at")));
    assert_true(json_real_value(json_object_get(o, "failed_at")) == NOW);
    assert_null(json_object_get(o, "retried_at"));
    assert_null(json_object_get(o, "error_backtrace"));
    assert_true(json_is_true(json_object_get(o, "retry")));
    /* unknown keys kept as they were */
    assert_non_null(strstr(text, "\"custom_key\":{\"x\":[1,2.0]},\"tags\":[\"t1\"]"));
    assert_non_null(strstr(text, "\"created_at\":1795962147.0172818"));
    /* score = now + 0^4 + 15 + rand(10) * 1 */
    UH_ASSERT_DBL_IN(p.score, NOW + 15, NOW + 24);
    json_decref(o);
    free(p.payload);
}

/* The whole payload of a "member of retry after the first
 * failure", byte for byte (error_backtrace aside). */
static void test_retry_payload_matches_spec_example(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    const char *in = "{\"retry\":1,\"queue\":\"default\",\"backtrace\":3,\"args\":[\"f1\"],"
                     "\"class\":\"FailWorker\",\"jid\":\"ef7ca11055ffe52f71c8b6e3\","
                     "\"created_at\":1795962147.0172818,\"enqueued_at\":1795962147.0173023}";
    char *text;
    json_t *o = plan(in, "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY); /* retry 1, count 0: 0 < 1 */
    json_decref(o);
    /* no backtrace lines were set: the key may be absent; cut it off */
    char *bt = strstr(text, ",\"error_backtrace\"");
    if (bt) strcpy(bt, "}");
    assert_string_equal(text,
                        "{\"retry\":1,\"queue\":\"default\",\"backtrace\":3,\"args\":[\"f1\"],"
                        "\"class\":\"FailWorker\",\"jid\":\"ef7ca11055ffe52f71c8b6e3\","
                        "\"created_at\":1795962147.0172818,\"enqueued_at\":1795962147.0173023,"
                        "\"error_message\":\"boom f1\",\"error_class\":\"ArgumentError\","
                        "\"failed_at\":1795962147.2214,\"retry_count\":0}");
    free(p.payload);
}

static void test_retry_false_discards(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    assert_null(plan("{\"retry\":false,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    assert_null(p.payload);
    assert_non_null(p.reason);
    /* also with retry_count present and with an unknown class */
    cfg.class_known = 0;
    assert_null(plan("{\"retry\":false,\"class\":\"K\",\"args\":[],\"retry_count\":3}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
}

static void test_retry_zero_goes_dead(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    json_t *o =
        plan("{\"retry\":0,\"queue\":\"default\",\"class\":\"DieWorker\",\"args\":[]}", "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_true(p.score == NOW);
    assert_int_equal(ival(o, "retry_count"), 0);
    assert_string_equal(sval(o, "error_class"), "ArgumentError");
    assert_string_equal(sval(o, "error_message"), "boom f1");
    assert_true(json_is_real(json_object_get(o, "failed_at")));
    assert_int_equal(ival(o, "retry"), 0); /* still the integer 0, not false */
    json_decref(o);
    free(p.payload);

    /* retry 0 + dead false: in neither set */
    assert_null(plan("{\"retry\":0,\"dead\":false,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
}

/* "retry": 2 gives 3 executions: count 0 retry, count 1 retry, count 2 dead. */
static void test_retry_n_counts(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    const char *base = "{\"retry\":2,\"queue\":\"default\",\"class\":\"K\",\"args\":[]";
    char in[512];
    struct {
        const char *extra;
        hh__failure_kind kind;
        int count;
    } steps[] = {
        {"", HH_FAIL_RETRY, 0},
        {",\"retry_count\":0,\"failed_at\":1795962000.5", HH_FAIL_RETRY, 1},
        {",\"retry_count\":1,\"failed_at\":1795962000.5", HH_FAIL_DEAD, 2},
    };
    for (size_t i = 0; i < 3; i++) {
        snprintf(in, sizeof(in), "%s%s}", base, steps[i].extra);
        json_t *o = plan(in, "default", &cfg, &p, NULL);
        if (p.kind != steps[i].kind) fail_msg("retry 2, step %zu: kind %d, want %d", i, p.kind, steps[i].kind);
        assert_int_equal(ival(o, "retry_count"), steps[i].count);
        if (p.kind == HH_FAIL_RETRY) {
            double c = steps[i].count;
            UH_ASSERT_DBL_IN(p.score, NOW + c * c * c * c + 15, NOW + c * c * c * c + 15 + 9 * (c + 1));
        } else {
            assert_true(p.score == NOW);
        }
        json_decref(o);
        free(p.payload);
    }
}

static void test_retry_true_limit_25_and_configured(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    json_t *o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":23}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY); /* 24 < 25 */
    assert_int_equal(ival(o, "retry_count"), 24);
    json_decref(o);
    free(p.payload);
    o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":24}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD); /* 25th retry failed: 26 executions */
    assert_int_equal(ival(o, "retry_count"), 25);
    json_decref(o);
    free(p.payload);
    cfg.max_retries = 3;
    o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":2}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    json_decref(o);
    free(p.payload);
    /* an integer retry overrides the global maximum */
    o = plan("{\"retry\":5,\"class\":\"K\",\"args\":[],\"retry_count\":2}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    /* any other type of retry is treated like true (docs/protocol.md) */
    cfg.max_retries = 25;
    o = plan("{\"retry\":\"yes\",\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
}

static void test_retry_absent(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    cfg.class_known = 1; /* a registered handler: the class default, true */
    json_t *o = plan("{\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_int_equal(ival(o, "retry_count"), 0);
    assert_null(json_object_get(o, "retry")); /* nothing invented */
    json_decref(o);
    free(p.payload);
    o = plan("{\"retry\":null,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    cfg.class_known = 0; /* unknown class, no retry key: discarded, as Sidekiq does */
    assert_null(plan("{\"class\":\"Nope::Missing\",\"args\":[]}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    assert_null(plan("{\"retry\":null,\"class\":\"Nope::Missing\",\"args\":[]}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    /* unknown class with retry true: the normal path */
    o = plan("{\"retry\":true,\"class\":\"Nope::Missing\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
}

static void test_dead_false_on_exhaustion(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    assert_null(
        plan("{\"retry\":1,\"dead\":false,\"class\":\"K\",\"args\":[],\"retry_count\":0}", "default", &cfg, &p, NULL));
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    /* not exhausted: dead false changes nothing */
    json_t *o = plan("{\"retry\":2,\"dead\":false,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    /* dead true / absent: dead set */
    o = plan("{\"retry\":0,\"dead\":true,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    json_decref(o);
    free(p.payload);
}

static void test_queue_and_retry_queue(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    /* queue <- the queue it was fetched from */
    json_t *o = plan("{\"queue\":\"default\",\"class\":\"K\",\"args\":[]}", "critical", &cfg, &p, &text);
    assert_string_equal(sval(o, "queue"), "critical");
    assert_string_equal(uh_keys_csv(text), "queue,class,args,error_message,error_class,failed_at,retry_count");
    json_decref(o);
    free(p.payload);
    /* retry_queue wins */
    o = plan("{\"queue\":\"default\",\"retry_queue\":\"slow\",\"class\":\"K\",\"args\":[]}", "default", &cfg, &p,
             &text);
    assert_string_equal(sval(o, "queue"), "slow");
    assert_string_equal(sval(o, "retry_queue"), "slow");
    json_decref(o);
    free(p.payload);
    /* no queue key at all: appended */
    o = plan("{\"class\":\"K\",\"args\":[]}", "low", &cfg, &p, &text);
    assert_string_equal(sval(o, "queue"), "low");
    json_decref(o);
    free(p.payload);
}

static void test_second_failure(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    const char *in = "{\"retry\":3,\"queue\":\"default\",\"class\":\"FailWorker\",\"args\":[\"f1\"],"
                     "\"jid\":\"ef7ca11055ffe52f71c8b6e3\",\"created_at\":1795962147.0172818,"
                     "\"enqueued_at\":1795962157.0566924,\"error_message\":\"old\","
                     "\"error_class\":\"OldError\",\"failed_at\":1795962147.0204237,"
                     "\"retry_count\":0}";
    json_t *o = plan(in, "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_string_equal(uh_keys_csv(text),
                        "retry,queue,class,args,jid,created_at,enqueued_at,error_message,"
                        "error_class,failed_at,retry_count,retried_at");
    assert_int_equal(ival(o, "retry_count"), 1);
    assert_string_equal(sval(o, "error_message"), "boom f1");
    assert_string_equal(sval(o, "error_class"), "ArgumentError");
    /* failed_at unchanged (same token), retried_at = now */
    assert_string_equal(uh_token(text, "failed_at"), "1795962147.0204237");
    assert_true(json_is_real(json_object_get(o, "retried_at")));
    assert_true(json_real_value(json_object_get(o, "retried_at")) == NOW);
    UH_ASSERT_DBL_IN(p.score, NOW + 16, NOW + 16 + 18);
    json_decref(o);
    free(p.payload);
}

/* The stored timestamps written by Ruby come back as the same token. */
static void test_timestamps_kept_as_tokens(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    const char *in = "{\"retry\":3,\"queue\":\"default\",\"class\":\"K\",\"args\":[],"
                     "\"created_at\":1795962157.061338,\"enqueued_at\":1795962544.396041,"
                     "\"failed_at\":1795962147.2214,\"retry_count\":0}";
    json_t *o = plan(in, "default", &cfg, &p, &text);
    json_decref(o);
    const char *keys[] = {"created_at", "enqueued_at", "failed_at"};
    const char *want[] = {"1795962157.061338", "1795962544.396041", "1795962147.2214"};
    int bad = 0;
    for (int i = 0; i < 3; i++)
        if (strcmp(uh_token(text, keys[i]), want[i]) != 0) {
            print_error("%s %s re-serialised as %s\n", keys[i], want[i], uh_token(text, keys[i]));
            bad++;
        }
    free(p.payload);
    assert_int_equal(bad, 0);
}

static void test_millisecond_timestamps(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    cfg.timestamps = HH_TS_MILLIS;
    hh__failure_plan p;
    char *text;
    json_t *o =
        plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"created_at\":1795962547349}", "default", &cfg, &p, &text);
    assert_int_equal(ival(o, "failed_at"), (long long)llround(NOW * 1000));
    assert_string_equal(uh_token(text, "created_at"), "1795962547349");
    json_decref(o);
    free(p.payload);
    o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":0,"
             "\"failed_at\":1795962547349}",
             "default", &cfg, &p, &text);
    assert_int_equal(ival(o, "retried_at"), (long long)llround(NOW * 1000));
    assert_int_equal(ival(o, "failed_at"), 1795962547349LL);
    /* the score stays float seconds; 8.x's jitter is rand(10 * (count + 1)),
     * 0..19 for count 1, so the delay is 16..35 */
    UH_ASSERT_DBL_IN(p.score, NOW + 16, NOW + 16 + 19);
    json_decref(o);
    free(p.payload);
}

/* A job holding an integer beyond 64 bits (read with every integer as a
 * real) is retried as Sidekiq retries it: its numbers are read from their
 * stored text (retry_count 2 is 2, not 2.0) and its new payload is its
 * stored text with only the members the plan changes rewritten, every
 * digit kept. */
static char *lossy_plan(const char *payload, hh__failure_plan *out) {
    hh__retry_config cfg = cfg_default();
    hh_job *j = failed_job(payload, "default");
    assert_int_equal(j->lossy, 1);
    hh__rng rng;
    hh__rng_seed(&rng);
    assert_int_equal(hh__retry_plan(j, &cfg, NOW, &rng, out), 0);
    hh__job_free(j);
    return out->payload;
}

static void test_bignum_job_retried(void **s) {
    (void)s;
    hh__failure_plan p;
    char *t =
        lossy_plan("{\"retry\":true,\"queue\":\"default\",\"class\":\"K\",\"args\":[100000000000000000000,-1],"
                   "\"jid\":\"b1\",\"created_at\":1795962147.5,\"retry_count\":2,\"wei\":123456789012345678901234}",
                   &p);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_non_null(t);
    assert_non_null(strstr(t, "\"args\":[100000000000000000000,-1]"));
    assert_string_equal(uh_token(t, "wei"), "123456789012345678901234");
    assert_string_equal(uh_token(t, "retry_count"), "3"); /* an integer, not 3.0 */
    assert_string_equal(uh_token(t, "created_at"), "1795962147.5");
    assert_string_equal(uh_token(t, "error_class"), "\"ArgumentError\"");
    assert_string_equal(uh_token(t, "error_message"), "\"boom f1\"");
    assert_true(strlen(uh_token(t, "retried_at")) > 0);
    UH_ASSERT_DBL_IN(p.score, NOW + 96, NOW + 132); /* 3^4 + 15 + rand(10) * 4: count 3's delay */
    free(p.payload);

    /* first failure: failed_at and retry_count 0 appended */
    t = lossy_plan("{\"class\":\"K\",\"args\":[18446744073709551616],\"retry\":true}", &p);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_non_null(strstr(t, "\"args\":[18446744073709551616]"));
    assert_string_equal(uh_token(t, "retry_count"), "0");
    assert_true(strlen(uh_token(t, "failed_at")) > 0);
    free(p.payload);

    /* "retry": 3 read from its text: the fourth failure is the last */
    t = lossy_plan("{\"class\":\"K\",\"args\":[18446744073709551616],\"retry\":3,\"retry_count\":2}", &p);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_string_equal(uh_token(t, "retry_count"), "3");
    assert_non_null(strstr(t, "\"args\":[18446744073709551616]"));
    free(p.payload);

    /* a retry_count beyond 64 bits gains 1 in its digits (and is spent) */
    t = lossy_plan("{\"class\":\"K\",\"args\":[],\"retry\":true,\"retry_count\":100000000000000000000}", &p);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_string_equal(uh_token(t, "retry_count"), "100000000000000000001");
    free(p.payload);

    /* retry false: discarded, as any job */
    t = lossy_plan("{\"class\":\"K\",\"args\":[18446744073709551616],\"retry\":false}", &p);
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    assert_null(t);
}

/* ----------------------------------------------------- error_backtrace */

static unsigned char *b64decode(const char *in, size_t *outlen) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in);
    unsigned char *out = malloc(n);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '=') break;
        const char *p = strchr(tbl, in[i]);
        if (!p || !in[i]) fail_msg("not strict base64: byte %zu (0x%02x)", i, (unsigned char)in[i]);
        acc = (acc << 6) | (uint32_t)(p - tbl);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *outlen = o;
    return out;
}

static json_t *decode_backtrace(const char *b64) {
    size_t zlen;
    unsigned char *z = b64decode(b64, &zlen);
    assert_true(zlen > 2);
    assert_int_equal(z[0], 0x78); /* zlib format, RFC 1950 */
    uLongf rawlen = 1 << 20;
    unsigned char *raw = malloc(rawlen + 1);
    assert_int_equal(uncompress(raw, &rawlen, z, zlen), Z_OK);
    raw[rawlen] = '\0';
    json_t *arr = json_loads((char *)raw, 0, NULL);
    free(raw);
    free(z);
    assert_true(json_is_array(arr));
    return arr;
}

static json_t *plan_bt(const char *payload, size_t nlines, hh__failure_plan *p) {
    hh__retry_config cfg = cfg_default();
    hh_job *j = failed_job(payload, "default");
    const char *lines[] = {"app.rb:23:in 'perform'", "lib/x.rb:1:in 'call'", "lib/y.rb:2:in \"q\\uote\"", "main.c:99",
                           "\xc3\xa9t\xc3\xa9.c:5"};
    hh_job_set_backtrace(j, lines, nlines);
    hh__rng rng;
    hh__rng_seed(&rng);
    assert_int_equal(hh__retry_plan(j, &cfg, NOW, &rng, p), 0);
    hh__job_free(j);
    json_t *o = json_loads(p->payload, 0, NULL);
    assert_non_null(o);
    return o;
}

static void test_error_backtrace(void **s) {
    (void)s;
    hh__failure_plan p;
    /* true: every line */
    json_t *o = plan_bt("{\"retry\":true,\"backtrace\":true,\"class\":\"K\",\"args\":[]}", 5, &p);
    const char *b = sval(o, "error_backtrace");
    assert_true(strlen(b) > 0);
    assert_int_equal(strncmp(b, "eJ", 2), 0);
    assert_null(strchr(b, '\n')); /* strict base64 */
    json_t *arr = decode_backtrace(b);
    assert_int_equal(json_array_size(arr), 5);
    assert_string_equal(json_string_value(json_array_get(arr, 0)), "app.rb:23:in 'perform'");
    assert_string_equal(json_string_value(json_array_get(arr, 2)), "lib/y.rb:2:in \"q\\uote\"");
    assert_string_equal(json_string_value(json_array_get(arr, 4)), "\xc3\xa9t\xc3\xa9.c:5");
    json_decref(arr);
    assert_string_equal(uh_keys_csv(p.payload),
                        "retry,backtrace,class,args,queue,error_message,error_class,failed_at,"
                        "retry_count,error_backtrace");
    json_decref(o);
    free(p.payload);

    /* N: the first N lines */
    o = plan_bt("{\"retry\":true,\"backtrace\":3,\"class\":\"K\",\"args\":[]}", 5, &p);
    arr = decode_backtrace(sval(o, "error_backtrace"));
    assert_int_equal(json_array_size(arr), 3);
    assert_string_equal(json_string_value(json_array_get(arr, 1)), "lib/x.rb:1:in 'call'");
    json_decref(arr);
    json_decref(o);
    free(p.payload);

    /* N larger than what there is: all of it */
    o = plan_bt("{\"retry\":true,\"backtrace\":10,\"class\":\"K\",\"args\":[]}", 2, &p);
    arr = decode_backtrace(sval(o, "error_backtrace"));
    assert_int_equal(json_array_size(arr), 2);
    json_decref(arr);
    json_decref(o);
    free(p.payload);

    /* false / absent / null: none */
    const char *none[] = {"{\"retry\":true,\"backtrace\":false,\"class\":\"K\",\"args\":[]}",
                          "{\"retry\":true,\"class\":\"K\",\"args\":[]}",
                          "{\"retry\":true,\"backtrace\":null,\"class\":\"K\",\"args\":[]}"};
    for (size_t i = 0; i < 3; i++) {
        o = plan_bt(none[i], 5, &p);
        assert_null(json_object_get(o, "error_backtrace"));
        json_decref(o);
        free(p.payload);
    }
}

/* Any other value is Sidekiq's backtrace[0...value.to_i]: 0 stores an empty
 * list, a string counts by its digits, a real is truncated, a negative N
 * leaves out the last -N lines. */
static void test_error_backtrace_to_i(void **s) {
    (void)s;
    struct {
        const char *value;
        size_t want;
    } cases[] = {{"0", 0}, {"\"2\"", 2}, {"2.9", 2}, {"-1", 4}, {"-9", 0}, {"\"x\"", 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char in[128];
        snprintf(in, sizeof(in), "{\"retry\":true,\"backtrace\":%s,\"class\":\"K\",\"args\":[]}", cases[i].value);
        hh__failure_plan p;
        json_t *o = plan_bt(in, 5, &p);
        json_t *arr = decode_backtrace(sval(o, "error_backtrace"));
        if (json_array_size(arr) != cases[i].want)
            fail_msg("backtrace %s: %zu lines, want %zu", cases[i].value, json_array_size(arr), cases[i].want);
        json_decref(arr);
        json_decref(o);
        free(p.payload);
    }
}

/* retry_for (Sidekiq 7.1+): a job whose window (failed_at + retry_for)
 * ended goes to the dead set at once. 7.x checks the count as well; 8.x
 * (millisecond timestamps) the window instead of the count. */
static void test_retry_for(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    /* the window ended two hours ago: dead, whatever the count */
    const char *over = "{\"retry\":true,\"retry_for\":3600,\"retry_count\":3,\"failed_at\":1795947747.0,"
                       "\"class\":\"K\",\"args\":[]}";
    json_t *o = plan(over, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_string_equal(p.reason, "retry_for window over");
    assert_int_equal(ival(o, "retry_count"), 4);
    json_decref(o);
    free(p.payload);
    /* ...or discarded with dead: false */
    const char *over_nodead = "{\"retry\":true,\"retry_for\":3600,\"retry_count\":3,\"failed_at\":1795947747.0,"
                              "\"dead\":false,\"class\":\"K\",\"args\":[]}";
    plan(over_nodead, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DISCARD);
    /* still open: retried */
    const char *open = "{\"retry\":true,\"retry_for\":86400,\"retry_count\":3,\"failed_at\":1795947747.0,"
                       "\"class\":\"K\",\"args\":[]}";
    o = plan(open, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    /* a first failure starts the window now: retried, even with retry_for 0 */
    o = plan("{\"retry\":true,\"retry_for\":0,\"class\":\"K\",\"args\":[]}", "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    /* 7.x: the count still ends it inside the window */
    const char *counted = "{\"retry\":2,\"retry_for\":86400,\"retry_count\":1,\"failed_at\":1795947747.0,"
                          "\"class\":\"K\",\"args\":[]}";
    o = plan(counted, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    json_decref(o);
    free(p.payload);
    /* 8.x: the window alone decides; failed_at in milliseconds */
    cfg.timestamps = HH_TS_MILLIS;
    o = plan(counted, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    json_decref(o);
    free(p.payload);
    const char *over_ms = "{\"retry\":true,\"retry_for\":3600,\"retry_count\":3,\"failed_at\":1795947747000,"
                          "\"class\":\"K\",\"args\":[]}";
    o = plan(over_ms, "default", &cfg, &p, NULL);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    json_decref(o);
    free(p.payload);
}

/* Sidekiq 8.x's jitter: rand(10 * (count + 1)), any value below, not only
 * multiples of count + 1. */
static void test_retry_delay8(void **s) {
    (void)s;
    hh__rng rng;
    hh__rng_seed(&rng);
    int off_multiple = 0;
    for (int i = 0; i < 200; i++) {
        double d = hh__retry_delay8(3, &rng);
        UH_ASSERT_DBL_IN(d, 81 + 15, 81 + 15 + 39);
        assert_true(d == floor(d));
        if (((long)d - 96) % 4) off_multiple = 1;
    }
    assert_true(off_multiple);
    assert_true(hh__retry_delay8(1e30L, &rng) <= DBL_MAX);
}

static void test_backtrace_encode_direct(void **s) {
    (void)s;
    char *lines[] = {"a", "b:1"};
    char *b = hh__backtrace_encode(lines, 2);
    assert_non_null(b);
    json_t *arr = decode_backtrace(b);
    char *d = json_dumps(arr, JSON_COMPACT);
    assert_string_equal(d, "[\"a\",\"b:1\"]");
    free(d);
    json_decref(arr);
    free(b);
    b = hh__backtrace_encode(NULL, 0);
    assert_non_null(b);
    arr = decode_backtrace(b);
    assert_int_equal(json_array_size(arr), 0);
    json_decref(arr);
    free(b);
}

/* error_message is stored "invalid UTF-8 replaced": a handler
 * message with bad bytes must still produce an error_message (and not keep
 * the previous failure's message). */
static void test_invalid_utf8_error_message(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    const char *in = "{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":0,"
                     "\"error_message\":\"stale message\",\"error_class\":\"Old\"}";
    hh_job *j = hh__job_new(in, strlen(in), "default", NULL, 0);
    assert_non_null(j->item);
    hh_job_fail(j,
                "Bad\xff"
                "Class",
                "bad bytes \xff\xfe here");
    hh__rng rng;
    hh__rng_seed(&rng);
    hh__failure_plan p;
    assert_int_equal(hh__retry_plan(j, &cfg, NOW, &rng, &p), 0);
    hh__job_free(j);
    assert_non_null(p.payload);
    json_t *o = json_loads(p.payload, 0, NULL);
    assert_non_null(o);
    json_t *m = json_object_get(o, "error_message"), *c = json_object_get(o, "error_class");
    char msg[512];
    snprintf(msg, sizeof(msg),
             "after a failure with class \"Bad\\xffClass\" and message "
             "\"bad bytes \\xff\\xfe here\": error_class %s, error_message %s",
             json_is_string(c) ? json_string_value(c) : "(absent)",
             json_is_string(m) ? json_string_value(m) : "(absent)");
    int ok = json_is_string(m) && strstr(json_string_value(m), "bad bytes") && json_is_string(c) &&
        strcmp(json_string_value(c), "Old") != 0;
    json_decref(o);
    free(p.payload);
    if (!ok) fail_msg("%s", msg);
}

/* A backtrace line with bytes that are not UTF-8 (a C path, a symbol) is
 * still one entry of error_backtrace: lines are neither dropped nor shifted. */
static void test_backtrace_invalid_utf8_line_kept(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    const char *in = "{\"retry\":true,\"backtrace\":true,\"class\":\"K\",\"args\":[]}";
    hh_job *j = failed_job(in, "default");
    const char *lines[] = {"first.c:1", "/srv/caf\xe9/x.c:2", "third.c:3"};
    hh_job_set_backtrace(j, lines, 3);
    hh__rng rng;
    hh__rng_seed(&rng);
    hh__failure_plan p;
    assert_int_equal(hh__retry_plan(j, &cfg, NOW, &rng, &p), 0);
    hh__job_free(j);
    json_t *o = json_loads(p.payload, 0, NULL);
    free(p.payload);
    json_t *arr = decode_backtrace(sval(o, "error_backtrace"));
    size_t n = json_array_size(arr);
    char last[64];
    snprintf(last, sizeof(last), "%s", json_string_value(json_array_get(arr, n - 1)));
    json_decref(arr);
    json_decref(o);
    assert_int_equal(n, 3);
    assert_string_equal(last, "third.c:3");
}

/* retry_count is a JSON integer of any size; hiredhand must not truncate it
 * to int. 2^32 failures already happened: the job is exhausted. */
static void test_retry_count_beyond_int(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    json_t *o =
        plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":4294967296}", "default", &cfg, &p, NULL);
    hh__failure_kind kind = p.kind;
    long long count = json_integer_value(json_object_get(o, "retry_count"));
    json_decref(o);
    free(p.payload);
    assert_int_equal(count, 4294967297LL);
    assert_int_equal(kind, HH_FAIL_DEAD);
}

/* retry_count INT_MAX: count + 1 must not overflow (signed overflow is UB;
 * under -fsanitize=undefined it aborts). Last in the list for that reason. */
static void test_retry_count_int_max(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    json_t *o =
        plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":2147483647}", "default", &cfg, &p, NULL);
    hh__failure_kind kind = p.kind;
    double score = p.score;
    long long count = json_integer_value(json_object_get(o, "retry_count"));
    json_decref(o);
    free(p.payload);
    if (kind != HH_FAIL_DEAD)
        fail_msg("retry_count 2147483647 + failure: kind %d, retry_count %lld, score %.17g", kind, count, score);
    assert_int_equal(count, 2147483648LL);
}

static void test_retry_delay_bounds(void **s) {
    (void)s;
    hh__rng rng;
    hh__rng_seed(&rng);
    int counts[] = {0, 1, 2, 3, 5, 10, 24};
    for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++) {
        double c = counts[k];
        double lo = c * c * c * c + 15, hi = lo + 9 * (c + 1);
        int seen[10] = {0};
        for (int i = 0; i < 5000; i++) {
            double d = hh__retry_delay(counts[k], &rng);
            UH_ASSERT_DBL_IN(d, lo, hi);
            double step = (d - lo) / (c + 1);
            if (step != floor(step)) fail_msg("delay %.17g not base + k*(c+1)", d);
            seen[(int)step]++;
        }
        for (int r = 0; r < 10; r++)
            if (!seen[r]) fail_msg("count %d: rand(10) = %d never drawn", counts[k], r);
    }
    /* Sidekiq's base delays */
    assert_true(hh__retry_delay(4, &rng) >= 271);
    assert_true(hh__retry_delay(24, &rng) >= 331791);
}

/* Retry extremes: the delay for a count past 2^31 and 2^32 is Sidekiq's c^4 + 15 +
 * rand(10) * (c + 1) in full (today's int cast wrapped 2^32 to 0: a 15-24 s
 * delay), and never inf for a count whose c^4 overflows a double. */
static void test_retry_delay_extremes(void **s) {
    (void)s;
    hh__rng rng;
    hh__rng_seed(&rng);
    long double cs[] = {2147483648.0L, 4294967296.0L, 9000000000000000001.0L};
    for (size_t k = 0; k < sizeof(cs) / sizeof(*cs); k++) {
        long double c = cs[k];
        double lo = (double)(c * c * c * c + 15), hi = (double)(c * c * c * c + 15 + 9 * (c + 1));
        for (int i = 0; i < 50; i++) {
            double d = hh__retry_delay(c, &rng);
            assert_true(isfinite(d));
            UH_ASSERT_DBL_IN(d, lo * (1 - 1e-15), hi * (1 + 1e-15));
        }
    }
    volatile long double big = 1e300L; /* c^4 overflows a double */
    double d = hh__retry_delay(big, &rng);
    assert_true(isfinite(d));
    assert_true(d == DBL_MAX);
}

/* Retry extremes, huge limit: "retry": 9e18, "retry_count": 4294967295. Sidekiq 6.4 writes
 * retry_count 4294967296 and a score about 3.4e38 s away (observed:
 * 3.4028236692093846e+38), a finite double. */
static void test_retry_count_u32_max_huge_limit(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    json_t *o = plan("{\"retry\":9000000000000000000,\"class\":\"K\",\"args\":[],"
                     "\"retry_count\":4294967295}",
                     "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_string_equal(uh_token(text, "retry_count"), "4294967296");
    assert_true(isfinite(p.score));
    long double c = 4294967296.0L;
    UH_ASSERT_DBL_IN(p.score - NOW, (double)(c * c * c * c + 15) * (1 - 1e-15),
                     (double)(c * c * c * c + 15 + 9 * (c + 1)) * (1 + 1e-15));
    assert_non_null(json_object_get(o, "retried_at"));
    json_decref(o);
    free(p.payload);
}

/* Retry extremes: retry_count 9e18 with retry 9e18: 9e18 + 1 >= 9e18, dead, as 6.4 */
static void test_retry_count_huge_dead(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    json_t *o = plan("{\"retry\":9000000000000000000,\"class\":\"K\",\"args\":[],"
                     "\"retry_count\":9000000000000000000}",
                     "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_string_equal(uh_token(text, "retry_count"), "9000000000000000001");
    assert_true(p.score == NOW);
    json_decref(o);
    free(p.payload);
    /* the int64 maximum neither wraps nor sticks: Ruby goes on to a bignum */
    hh_job *j =
        failed_job("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":9223372036854775807}", "default");
    hh__rng rng;
    hh__rng_seed(&rng);
    assert_int_equal(hh__retry_plan(j, &cfg, NOW, &rng, &p), 0);
    hh__job_free(j);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_non_null(strstr(p.payload, "\"retry_count\":9223372036854775808,"));
    free(p.payload);
}

/* Retry extremes: retry_count 3.0 is read as Ruby reads it: 3.0 + 1 = 4.0, a float,
 * retried_at set, delay 4.0^4 + 15 + rand(10) * 5.0 (6.4 wrote 4.0). */
static void test_retry_count_float(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    json_t *o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":3.0}", "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_string_equal(uh_token(text, "retry_count"), "4.0");
    assert_non_null(json_object_get(o, "retried_at"));
    assert_null(json_object_get(o, "failed_at"));
    UH_ASSERT_DBL_IN(p.score - NOW, 271 - 1e-6, 271 + 45 + 1e-6);
    json_decref(o);
    free(p.payload);
    /* a float at the limit is exhausted: 24.0 + 1 = 25.0, not < 25 */
    o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":24.0}", "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_DEAD);
    assert_string_equal(uh_token(text, "retry_count"), "25.0");
    json_decref(o);
    free(p.payload);
}

/* Retry extremes: retry_count "3" (or true, [], {}): Sidekiq 6.4 raises TypeError in
 * its retry code and writes no retry (observed: "no implicit conversion of
 * Integer into String", nothing in retry or dead). hiredhand writes no retry
 * either, and keeps the job in the dead set with the reason, retry_count
 * untouched. */
static void test_retry_count_not_a_number(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    const char *in[] = {"\"3\"", "true", "[1]", "{}"};
    for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
        char payload[128];
        snprintf(payload, sizeof(payload), "{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":%s}", in[i]);
        hh__failure_plan p;
        char *text;
        json_t *o = plan(payload, "default", &cfg, &p, &text);
        if (p.kind != HH_FAIL_DEAD) fail_msg("retry_count %s: kind %d, payload %s", in[i], p.kind, text);
        assert_true(p.score == NOW);
        char kept[64];
        snprintf(kept, sizeof(kept), "\"retry_count\":%s", in[i]);
        if (!strstr(text, kept)) fail_msg("retry_count %s not kept as it was: %s", in[i], text);
        assert_non_null(strstr(sval(o, "error_message"), "boom f1"));
        assert_non_null(strstr(sval(o, "error_message"), "not a number"));
        assert_string_equal(sval(o, "error_class"), "ArgumentError");
        json_decref(o);
        free(p.payload);
    }
    /* null and false read as absent: a first failure */
    const char *absent[] = {"null", "false"};
    for (size_t i = 0; i < 2; i++) {
        char payload[128];
        snprintf(payload, sizeof(payload), "{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":%s}",
                 absent[i]);
        hh__failure_plan p;
        char *text;
        json_t *o = plan(payload, "default", &cfg, &p, &text);
        assert_int_equal(p.kind, HH_FAIL_RETRY);
        assert_string_equal(uh_token(text, "retry_count"), "0");
        assert_non_null(json_object_get(o, "failed_at"));
        json_decref(o);
        free(p.payload);
    }
}

/* A negative count goes up by one as in Ruby (-5 -> -4), with Ruby's delay
 * for it: 256 + 15 + rand(10) * -3. */
static void test_retry_count_negative(void **s) {
    (void)s;
    hh__retry_config cfg = cfg_default();
    hh__failure_plan p;
    char *text;
    json_t *o = plan("{\"retry\":true,\"class\":\"K\",\"args\":[],\"retry_count\":-5}", "default", &cfg, &p, &text);
    assert_int_equal(p.kind, HH_FAIL_RETRY);
    assert_string_equal(uh_token(text, "retry_count"), "-4");
    UH_ASSERT_DBL_IN(p.score - NOW, 271 - 27 - 1e-6, 271 + 1e-6);
    json_decref(o);
    free(p.payload);
}

static void test_malformed_dead_payload(void **s) {
    (void)s;
    size_t len = 0;
    /* an object keeps every key, in order, and gains the error fields */
    const char *obj = "{\"class\":\"\",\"args\":[],\"jid\":\"j1\",\"custom\":{\"a\":1.0}}";
    char *out = hh__malformed_dead_payload(obj, strlen(obj), "payload has an empty \"class\"", NOW, HH_TS_FLOAT, &len);
    assert_non_null(out);
    assert_int_equal(len, strlen(out));
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    assert_string_equal(uh_keys_csv(out), "class,args,jid,custom,error_class,error_message,failed_at");
    assert_non_null(strstr(out, "\"custom\":{\"a\":1.0}"));
    assert_string_equal(sval(o, "error_message"), "payload has an empty \"class\"");
    assert_true(strlen(sval(o, "error_class")) > 0);
    assert_true(json_real_value(json_object_get(o, "failed_at")) == NOW);
    json_decref(o);
    free(out);

    /* failed_at already there: kept */
    obj = "{\"args\":{},\"failed_at\":1795962000.5}";
    out = hh__malformed_dead_payload(obj, strlen(obj), "why", NOW, HH_TS_MILLIS, &len);
    assert_string_equal(uh_token(out, "failed_at"), "1795962000.5");
    free(out);
    obj = "{\"args\":{}}";
    out = hh__malformed_dead_payload(obj, strlen(obj), "why", NOW, HH_TS_MILLIS, &len);
    assert_string_equal(uh_token(out, "failed_at"), "1795962147221");
    free(out);

    /* JSON that is not an object: wrapped, exact text as the only arg, so
     * Sidekiq's Dead page can show it */
    const char *vals[] = {"[1,2,3]", "\"str\"", "null", "42"};
    for (size_t i = 0; i < sizeof(vals) / sizeof(*vals); i++) {
        out = hh__malformed_dead_payload(vals[i], strlen(vals[i]), "why", NOW, HH_TS_FLOAT, &len);
        json_t *w = json_loads(out, 0, NULL);
        assert_true(json_is_object(w));
        assert_string_equal(json_string_value(json_object_get(w, "class")), "hiredhand::InvalidJob");
        assert_string_equal(json_string_value(json_array_get(json_object_get(w, "args"), 0)), vals[i]);
        assert_string_equal(json_string_value(json_object_get(w, "error_message")), "why");
        assert_int_equal(json_string_length(json_object_get(w, "jid")), 24);
        json_decref(w);
        free(out);
    }

    /* anything else: stored byte for byte, embedded NUL and bad UTF-8 too */
    const char *raws[] = {"not json", "{\"a\":\xff}", "{\"a\":1"};
    for (size_t i = 0; i < sizeof(raws) / sizeof(*raws); i++) {
        out = hh__malformed_dead_payload(raws[i], strlen(raws[i]), "why", NOW, HH_TS_FLOAT, &len);
        assert_int_equal(len, strlen(raws[i]));
        assert_memory_equal(out, raws[i], len);
        free(out);
    }
    const char bin[] = "ab\0cd\xff";
    out = hh__malformed_dead_payload(bin, sizeof(bin) - 1, "why", NOW, HH_TS_FLOAT, &len);
    assert_int_equal(len, sizeof(bin) - 1);
    assert_memory_equal(out, bin, len);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_true_first_failure),
        cmocka_unit_test(test_retry_payload_matches_spec_example),
        cmocka_unit_test(test_retry_false_discards),
        cmocka_unit_test(test_retry_zero_goes_dead),
        cmocka_unit_test(test_retry_n_counts),
        cmocka_unit_test(test_retry_true_limit_25_and_configured),
        cmocka_unit_test(test_retry_absent),
        cmocka_unit_test(test_dead_false_on_exhaustion),
        cmocka_unit_test(test_queue_and_retry_queue),
        cmocka_unit_test(test_second_failure),
        cmocka_unit_test(test_timestamps_kept_as_tokens),
        cmocka_unit_test(test_millisecond_timestamps),
        cmocka_unit_test(test_bignum_job_retried),
        cmocka_unit_test(test_error_backtrace),
        cmocka_unit_test(test_error_backtrace_to_i),
        cmocka_unit_test(test_retry_for),
        cmocka_unit_test(test_retry_delay8),
        cmocka_unit_test(test_backtrace_encode_direct),
        cmocka_unit_test(test_invalid_utf8_error_message),
        cmocka_unit_test(test_retry_delay_bounds),
        cmocka_unit_test(test_malformed_dead_payload),
        cmocka_unit_test(test_backtrace_invalid_utf8_line_kept),
        cmocka_unit_test(test_retry_count_beyond_int),
        cmocka_unit_test(test_retry_delay_extremes),
        cmocka_unit_test(test_retry_count_u32_max_huge_limit),
        cmocka_unit_test(test_retry_count_huge_dead),
        cmocka_unit_test(test_retry_count_float),
        cmocka_unit_test(test_retry_count_not_a_number),
        cmocka_unit_test(test_retry_count_negative),
        cmocka_unit_test(test_retry_count_int_max), /* keep last: UB aborts under UBSan */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
