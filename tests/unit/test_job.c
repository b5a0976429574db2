/* test_job.c -- src/job.c: parsing and validating payloads (docs/protocol.md), the
 * exact bytes kept, timestamps in both encodings, serialisation with
 * key order and number types kept, error_message
 * truncation, and the public accessors. */
#include "unit_helpers.h"

#include <math.h>
#include "job.h"
#include "util.h"

static hh_job *mk(const char *payload, char *why, size_t whylen) {
    hh_job *j = hh__job_new(payload, strlen(payload), "low", why, whylen);
    assert_non_null(j);
    return j;
}

static void test_valid_payload(void **s) {
    (void)s;
    const char *p = "{\"retry\":true,\"queue\":\"default\",\"class\":\"OkWorker\","
                    "\"args\":[1,\"a\",{\"z\":1,\"a\":2.0},null],"
                    "\"jid\":\"47585b590c2486eae7138aff\",\"created_at\":1795962147.0172818}";
    char why[256] = "garbage";
    hh_job *j = mk(p, why, sizeof(why));
    assert_non_null(j->item);
    assert_string_equal(why, "");
    assert_string_equal(hh_job_class(j), "OkWorker");
    assert_string_equal(hh_job_jid(j), "47585b590c2486eae7138aff");
    assert_string_equal(hh_job_queue(j), "low"); /* the queue fetched from */
    assert_int_equal(hh_job_retry_count(j), -1);
    assert_string_equal(hh_job_args(j), "[1,\"a\",{\"z\":1,\"a\":2.0},null]");
    char *v = hh_job_get(j, "retry");
    assert_string_equal(v, "true");
    free(v);
    v = hh_job_get(j, "created_at");
    assert_string_equal(v, "1795962147.0172818");
    free(v);
    assert_null(hh_job_get(j, "nope"));
    hh__job_free(j);
}

/* After a run, only what the ack needs is kept: the exact bytes, the queue
 * and the lease; the parsed tree is gone, so the names read "" / NULL. */
static void test_shed_keeps_what_the_ack_needs(void **s) {
    (void)s;
    const char *p = "{\"class\":\"K\",\"args\":[1],\"jid\":\"j1\"}";
    hh_job *j = mk(p, NULL, 0);
    j->lease = 7;
    j->queue_index = 2;
    assert_string_equal(hh_job_args(j), "[1]"); /* dumped: freed by the shed */
    hh_job_fail(j, "E", "boom %d", 1);
    hh__job_shed(j);
    assert_null(j->item);
    assert_null(j->klass);
    assert_string_equal(j->jid, "");
    assert_null(j->args_json);
    assert_null(j->error_class);
    assert_memory_equal(j->payload, p, strlen(p));
    assert_int_equal(j->len, strlen(p));
    assert_string_equal(j->queue, "low");
    assert_int_equal(j->lease, 7);
    assert_int_equal(j->queue_index, 2);
    hh__job_free(j);
}

/* A payload read lossily (a bignum): its timestamps keep their encoding. */
static void test_payload_time_lossy(void **s) {
    (void)s;
    const char *p = "{\"class\":\"K\",\"args\":[100000000000000000000],\"enqueued_at\":1700000000123,"
                    "\"failed_at\":1700000000.5,\"created_at\":17e8}";
    int lossy;
    json_t *item = hh__json_load_payload(p, strlen(p), &lossy);
    assert_non_null(item);
    assert_int_equal(lossy, 1);
    UH_ASSERT_DBL_IN(hh__payload_time(item, lossy, p, strlen(p), "enqueued_at"), 1700000000.122, 1700000000.124);
    UH_ASSERT_DBL_IN(hh__payload_time(item, lossy, p, strlen(p), "failed_at"), 1700000000.49, 1700000000.51);
    UH_ASSERT_DBL_IN(hh__payload_time(item, lossy, p, strlen(p), "created_at"), 1699999999.9, 1700000000.1);
    assert_true(hh__payload_time(item, lossy, p, strlen(p), "retried_at") == 0);
    json_decref(item);
    const char *q = "{\"class\":\"K\",\"args\":[],\"enqueued_at\":1700000000123}";
    item = hh__json_load_payload(q, strlen(q), &lossy);
    assert_int_equal(lossy, 0);
    UH_ASSERT_DBL_IN(hh__payload_time(item, lossy, q, strlen(q), "enqueued_at"), 1700000000.122, 1700000000.124);
    json_decref(item);
}

static void test_retry_count_and_defaults(void **s) {
    (void)s;
    hh_job *j = mk("{\"class\":\"K\",\"args\":[],\"retry_count\":3}", NULL, 0);
    assert_non_null(j->item);
    assert_int_equal(hh_job_retry_count(j), 3);
    assert_string_equal(hh_job_jid(j), ""); /* absent jid */
    hh__job_free(j);
    j = mk("{\"class\":\"K\",\"args\":[],\"retry_count\":0}", NULL, 0);
    assert_int_equal(hh_job_retry_count(j), 0);
    hh__job_free(j);
    const char *d = "{\"class\":\"K\",\"args\":[]}";
    j = hh__job_new(d, strlen(d), NULL, NULL, 0);
    assert_non_null(j);
    assert_string_equal(hh_job_queue(j), "default");
    hh__job_free(j);
}

static void test_exact_bytes_kept(void **s) {
    (void)s;
    /* spacing, key order, escapes and number spelling are never normalised */
    const char *p = " { \"class\" : \"A\",\n \"args\" : [ 1.50, \"\\u00e9\" ] , \"x\":1e2 } ";
    hh_job *j = mk(p, NULL, 0);
    assert_non_null(j->item);
    size_t len = 0;
    const char *got = hh_job_payload(j, &len);
    assert_int_equal(len, strlen(p));
    assert_memory_equal(got, p, len);
    assert_int_equal(got[len], '\0');
    hh__job_free(j);

    /* only len bytes are taken from the buffer */
    const char *buf = "{\"class\":\"A\",\"args\":[]}TRAILING";
    size_t n = strlen("{\"class\":\"A\",\"args\":[]}");
    j = hh__job_new(buf, n, "q", NULL, 0);
    assert_non_null(j->item);
    got = hh_job_payload(j, &len);
    assert_int_equal(len, n);
    assert_string_equal(got, "{\"class\":\"A\",\"args\":[]}");
    hh__job_free(j);
}

static void malformed(const char *payload, size_t len, const char *why_contains) {
    char why[256] = "";
    hh_job *j = hh__job_new(payload, len, "default", why, sizeof(why));
    assert_non_null(j);
    if (j->item) fail_msg("payload accepted: %.*s", (int)len, payload);
    assert_null(j->klass);
    if (!why[0]) fail_msg("no reason given for: %.*s", (int)len, payload);
    if (why_contains && !strstr(why, why_contains)) fail_msg("reason \"%s\" lacks \"%s\"", why, why_contains);
    /* the bytes are still kept for the dead set */
    size_t got_len = 0;
    const char *got = hh_job_payload(j, &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, payload, len);
    assert_string_equal(hh_job_args(j), "[]");
    assert_null(hh_job_get(j, "class"));
    assert_int_equal(hh_job_retry_count(j), -1);
    hh__job_free(j);
}

#define MALFORMED(lit, needle) malformed(lit, sizeof(lit) - 1, needle)

static void test_malformed_payloads(void **s) {
    (void)s;
    MALFORMED("not json at all", "JSON");
    MALFORMED("{\"class\":\"A\",\"args\":[]", "JSON"); /* truncated */
    MALFORMED("", "JSON");
    MALFORMED("[\"class\",\"A\"]", "object");
    MALFORMED("\"just a string\"", NULL);
    MALFORMED("{\"args\":[]}", "class");
    MALFORMED("{\"class\":42,\"args\":[]}", "class");
    MALFORMED("{\"class\":null,\"args\":[]}", "class");
    MALFORMED("{\"class\":\"\",\"args\":[]}", "class");
    MALFORMED("{\"class\":\"A\"}", "args");
    MALFORMED("{\"class\":\"A\",\"args\":{}}", "args");
    MALFORMED("{\"class\":\"A\",\"args\":\"[1]\"}", "args");
    MALFORMED("{\"class\":\"A\",\"args\":null}", "args");
    MALFORMED("{\"class\":\"A\",\"args\":[\"\xff\xfe\"]}", NULL);     /* invalid UTF-8 */
    MALFORMED("{\"class\":\"\xc3\x28\",\"args\":[]}", NULL);          /* bad continuation */
    MALFORMED("{\"class\":\"A\",\"args\":[\"\xed\xa0\x80\"]}", NULL); /* surrogate */
    MALFORMED("{\"class\":\"A\",\"args\":[]}\0{}", NULL);             /* NUL then more bytes */
}

static void test_integer_limits_accepted(void **s) {
    (void)s;
    const char *p = "{\"class\":\"A\",\"args\":[9223372036854775807,-9223372036854775808]}";
    hh_job *j = mk(p, NULL, 0);
    assert_non_null(j->item);
    assert_string_equal(hh_job_args(j), "[9223372036854775807,-9223372036854775808]");
    hh__job_free(j);
}

/* Ruby's JSON reads bignums and Sidekiq runs such jobs: they run too, with
 * their exact bytes, marked lossy so they are never re-serialised. */
static void test_bignum_args_run_lossy(void **s) {
    (void)s;
    const char *p = "{\"class\":\"A\",\"args\":[9223372036854775808,-99999999999999999999999],\"retry_count\":2}";
    hh_job *j = mk(p, NULL, 0);
    assert_non_null(j->item);
    assert_int_equal(j->lossy, 1);
    assert_string_equal(hh_job_class(j), "A");
    assert_int_equal(hh_job_retry_count(j), 2);
    size_t len;
    assert_memory_equal(hh_job_payload(j, &len), p, strlen(p));
    assert_int_equal(len, strlen(p));
    hh__job_free(j);
    /* a bignum does not rescue an otherwise malformed payload */
    j = mk("{\"args\":[99999999999999999999999]}", NULL, 0);
    assert_null(j->item);
    hh__job_free(j);
    j = mk("{\"class\":\"A\",\"args\":[1]}", NULL, 0);
    assert_int_equal(j->lossy, 0);
    hh__job_free(j);
}

/* A negative bignum alone (jansson says "too big negative integer") runs
 * like a positive one: lossy, not malformed. */
static void test_negative_bignum_runs_lossy(void **s) {
    (void)s;
    const char *p = "{\"class\":\"T\",\"args\":[-123456789012345678901234567890],\"jid\":\"bigneg\","
                    "\"retry\":true,\"queue\":\"default\"}";
    char why[256] = "";
    hh_job *j = mk(p, why, sizeof(why));
    assert_non_null(j->item);
    assert_string_equal(why, "");
    assert_int_equal(j->lossy, 1);
    assert_string_equal(hh_job_class(j), "T");
    size_t len;
    assert_memory_equal(hh_job_payload(j, &len), p, strlen(p));
    hh__job_free(j);
    int lossy = 0;
    json_t *v = hh__json_load_payload(p, strlen(p), &lossy);
    assert_true(json_is_object(v));
    assert_int_equal(lossy, 1);
    json_decref(v);
    v = hh__json_load_payload("{\"a\":-1}", 8, &lossy);
    assert_non_null(v);
    assert_int_equal(lossy, 0);
    json_decref(v);
}

static void step_is(const char *tok, int delta, const char *want) {
    char *got = hh__json_int_step(tok, strlen(tok), delta);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* Integer arithmetic on the stored digits, as Ruby's Integer does it, with
 * no 64-bit limit: a retry_count beyond int64 gains or loses exactly 1. */
static void test_json_int_step(void **s) {
    (void)s;
    step_is("100000000000000000000", -1, "99999999999999999999");
    step_is("99999999999999999999", 1, "100000000000000000000");
    step_is("9223372036854775807", 1, "9223372036854775808");
    step_is("-9223372036854775808", -1, "-9223372036854775809");
    step_is("-100000000000000000000", 1, "-99999999999999999999");
    step_is("0", -1, "-1");
    step_is("-1", 1, "0");
    step_is("-0", 1, "1");
    step_is("1", -1, "0");
    step_is("10", -1, "9");
    step_is("3", 1, "4");
    step_is("3.0", -1, NULL); /* a real stays a real: not this function's */
    step_is("1e3", -1, NULL);
    step_is("\"3\"", -1, NULL);
    step_is("-", -1, NULL);
    step_is("", -1, NULL);
}

/* A member's value text as stored, bignums and spacing included. */
static void test_json_get_raw(void **s) {
    (void)s;
    const char *o = "{\"a\":1, \"retry_count\" : 100000000000000000000 ,\"z\":[-12345678901234567890123]}";
    size_t n = 0;
    const char *v = hh__json_get_raw(o, strlen(o), "retry_count", &n);
    assert_non_null(v);
    assert_int_equal(n, strlen("100000000000000000000"));
    assert_memory_equal(v, "100000000000000000000", n);
    assert_null(hh__json_get_raw(o, strlen(o), "missing", &n));
    assert_null(hh__json_get_raw("[1]", 3, "a", &n));
    /* a lossy job's hh_job_get gives the stored text, not the real it was read as */
    hh_job *j = mk("{\"class\":\"A\",\"args\":[1],\"retry_count\":100000000000000000000}", NULL, 0);
    assert_int_equal(j->lossy, 1);
    char *rc = hh_job_get(j, "retry_count");
    assert_string_equal(rc, "100000000000000000000");
    free(rc);
    hh__job_free(j);
}

static char *set_raw(const char *obj, const char *key, const char *value) {
    size_t n = 0;
    char *out = hh__json_set_raw(obj, strlen(obj), key, value, &n);
    if (out) assert_int_equal(n, strlen(out));
    return out;
}

/* The byte-level rewrite for payloads that cannot be re-serialised: only
 * the value's bytes change, or the member is appended; everything else,
 * bignums, spacing and escapes included, is kept byte for byte. */
static void test_json_set_raw(void **s) {
    (void)s;
    char *o = set_raw("{\"class\":\"T\",\"args\":[123456789012345678901234567890]}", "enqueued_at", "1.5");
    assert_string_equal(o, "{\"class\":\"T\",\"args\":[123456789012345678901234567890],\"enqueued_at\":1.5}");
    free(o);
    o = set_raw("{\"a\":[-99999999999999999999,{\"enqueued_at\":1}],\"enqueued_at\":17.25,\"z\":\"x}\"}", "enqueued_at",
                "1795962147.5");
    assert_string_equal(
        o, "{\"a\":[-99999999999999999999,{\"enqueued_at\":1}],\"enqueued_at\":1795962147.5,\"z\":\"x}\"}");
    free(o);
    o = set_raw(" { \"k\" : \"a,\\\"b\" , \"n\":1.0E+2 }\n", "enqueued_at", "2");
    assert_string_equal(o, " { \"k\" : \"a,\\\"b\" , \"n\":1.0E+2,\"enqueued_at\":2 }\n");
    free(o);
    o = set_raw("{}", "enqueued_at", "2");
    assert_string_equal(o, "{\"enqueued_at\":2}");
    free(o);
    /* a key with an escaped spelling is the same key */
    o = set_raw("{\"enqueued\\u005fat\":1,\"b\":[]}", "enqueued_at", "3");
    assert_string_equal(o, "{\"enqueued\\u005fat\":3,\"b\":[]}");
    free(o);
    /* duplicates: the last one, the one a parser keeps */
    o = set_raw("{\"e\":1,\"e\":2}", "e", "9");
    assert_string_equal(o, "{\"e\":1,\"e\":9}");
    free(o);
    assert_null(set_raw("[1,2]", "e", "1"));
    assert_null(set_raw("{\"a\" 1}", "e", "1"));
    assert_null(set_raw("{\"a\":1", "e", "1"));
    assert_null(set_raw("{1:1}", "e", "1"));
}

static void test_json_time(void **s) {
    (void)s;
    json_t *v = json_loads("[1795962147.0172818,1795962547349,\"1795962147\",null,true,"
                           "1795962147.0,0]",
                           0, NULL);
    assert_non_null(v);
    assert_true(hh__json_time(json_array_get(v, 0)) == 1795962147.0172818);
    UH_ASSERT_DBL_IN(hh__json_time(json_array_get(v, 1)), 1795962547.349 - 1e-6, 1795962547.349 + 1e-6);
    assert_true(hh__json_time(json_array_get(v, 2)) == 0);
    assert_true(hh__json_time(json_array_get(v, 3)) == 0);
    assert_true(hh__json_time(json_array_get(v, 4)) == 0);
    assert_true(hh__json_time(json_array_get(v, 5)) == 1795962147.0);
    assert_true(hh__json_time(json_array_get(v, 6)) == 0);
    assert_true(hh__json_time(NULL) == 0);
    json_decref(v);
}

static void test_json_time_new(void **s) {
    (void)s;
    json_t *f = hh__json_time_new(1795962147.0172818, HH_TS_FLOAT);
    assert_true(json_is_real(f));
    assert_true(json_real_value(f) == 1795962147.0172818);
    assert_true(hh__json_time(f) == 1795962147.0172818);
    json_decref(f);

    /* a whole number of seconds must still be a real (8.x reads ints as ms) */
    f = hh__json_time_new(1795962147.0, HH_TS_FLOAT);
    assert_true(json_is_real(f));
    char *d = hh__json_dump(f);
    assert_string_equal(d, "1795962147.0");
    free(d);
    json_decref(f);

    json_t *m = hh__json_time_new(1795962547.349, HH_TS_MILLIS);
    assert_true(json_is_integer(m));
    assert_int_equal(json_integer_value(m), 1795962547349LL);
    UH_ASSERT_DBL_IN(hh__json_time(m), 1795962547.349 - 1e-6, 1795962547.349 + 1e-6);
    json_decref(m);
    m = hh__json_time_new(1795962547.3496, HH_TS_MILLIS); /* rounds to nearest ms */
    assert_int_equal(json_integer_value(m), 1795962547350LL);
    json_decref(m);
}

static void test_json_dump_order_and_types(void **s) {
    (void)s;
    const char *in = "{\"z\":1,\"retry\":true,\"a\":{\"y\":1.0,\"b\":[2.5,-0.5,3]},\"m\":null,"
                     "\"created_at\":1795962147.0172818,\"big\":9223372036854775807,"
                     "\"s\":\"\\u00e9\\n\"}";
    json_t *v = json_loads(in, 0, NULL);
    assert_non_null(v);
    char *out = hh__json_dump(v);
    assert_non_null(out);
    /* compact, same order, 1.0 stays a real, é written as UTF-8 */
    assert_string_equal(out,
                        "{\"z\":1,\"retry\":true,\"a\":{\"y\":1.0,\"b\":[2.5,-0.5,3]},"
                        "\"m\":null,\"created_at\":1795962147.0172818,"
                        "\"big\":9223372036854775807,\"s\":\"\xc3\xa9\\n\"}");
    json_t *back = json_loads(out, 0, NULL);
    assert_true(json_is_real(json_object_get(back, "created_at")));
    assert_true(json_real_value(json_object_get(back, "created_at")) == 1795962147.0172818);
    assert_true(json_is_real(json_object_get(json_object_get(back, "a"), "y")));
    json_decref(back);
    free(out);
    json_decref(v);
}

/* Every real reads back as the same double (no precision lost). */
static void test_json_dump_reals_roundtrip_value(void **s) {
    (void)s;
    hh__rng rng = {0x1234567ull};
    for (int i = 0; i < 20000; i++) {
        double d;
        if (i % 2) d = 1.7e9 + hh__rng_double(&rng) * 2e8; /* epoch-like */
        else {
            uint64_t bits = hh__rng_next(&rng);
            memcpy(&d, &bits, sizeof(d));
            if (!isfinite(d)) continue;
        }
        json_t *r = json_real(d);
        char *t = hh__json_dump(r);
        json_t *b = json_loads(t, JSON_DECODE_ANY, NULL);
        if (!json_is_real(b) || json_real_value(b) != d)
            fail_msg("%.17g dumped as %s does not read back as the same real", d, t);
        json_decref(b);
        free(t);
        json_decref(r);
    }
}

/* Timestamp tokens: retried and dead payloads keep created_at exactly as
 * received (the same JSON token, not converted). Ruby writes the shortest repr; re-serialising must
 * give the same text back for every timestamp in Sidekiq's own traces. */
static void test_json_dump_keeps_timestamp_tokens(void **s) {
    (void)s;
    const char *tokens[] = {"1795962147.0172818",
                            "1795962147.0173023",
                            "1795962147.2214",
                            "1795962147.019136",
                            "1795962157.0566924",
                            "1795962157.061338",
                            "1795962144.1420772",
                            "1795962544.396041",
                            "1795962147.0204237",
                            "0.1",
                            "1.5"};
    int bad = 0;
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        char in[128];
        snprintf(in, sizeof(in), "{\"created_at\":%s}", tokens[i]);
        json_t *v = json_loads(in, 0, NULL);
        assert_non_null(v);
        char *out = hh__json_dump(v);
        if (strcmp(out, in) != 0) {
            print_error("token %s re-serialised as %s\n", tokens[i], out);
            bad++;
        }
        free(out);
        json_decref(v);
    }
    assert_int_equal(bad, 0);
}

static int utf8_ok(const char *s) { return hh__utf8_valid(s, strlen(s)); }

static void fail_with(hh_job *j, const char *prefix_fill, size_t nfill, const char *tail, size_t want_len) {
    char *msg = malloc(nfill + strlen(tail) + 1);
    memset(msg, prefix_fill[0], nfill);
    strcpy(msg + nfill, tail);
    hh_job_fail(j, "ArgumentError", "%s", msg);
    assert_string_equal(j->error_class, "ArgumentError");
    assert_non_null(j->error_message);
    if (strlen(j->error_message) != want_len)
        fail_msg("fill %zu + %zu tail bytes: length %zu, want %zu", nfill, strlen(tail), strlen(j->error_message),
                 want_len);
    assert_true(utf8_ok(j->error_message));
    assert_memory_equal(j->error_message, msg, want_len);
    free(msg);
}

static void test_job_fail_truncation(void **s) {
    (void)s;
    hh_job *j = mk("{\"class\":\"A\",\"args\":[]}", NULL, 0);
    fail_with(j, "a", 10000, "", 10000); /* exactly the limit */
    fail_with(j, "a", 9999, "", 9999);
    fail_with(j, "a", 20000, "", 10000);
    fail_with(j, "a", 9999,
              "\xc3\xa9"
              "bbbb",
              9999); /* é straddles byte 10000 */
    fail_with(j, "a", 9998,
              "\xc3\xa9"
              "bbbb",
              10000); /* é ends exactly at 10000 */
    fail_with(j, "a", 9998,
              "\xe2\x82\xac"
              "bb",
              9998); /* € straddles */
    fail_with(j, "a", 9999,
              "\xe2\x82\xac"
              "bb",
              9999);
    fail_with(j, "a", 9997,
              "\xf0\x9f\x98\x80"
              "b",
              9997); /* 4-byte emoji straddles */
    fail_with(j, "a", 9996,
              "\xf0\x9f\x98\x80"
              "b",
              10000);
    hh__job_free(j);
}

/* Bytes that are not UTF-8 are stored as the text \xNN (as the log shows
 * them), never as '?'; the 10,000-byte cut never splits such an escape. */
static void test_job_fail_invalid_utf8_escaped(void **s) {
    (void)s;
    hh_job *j = mk("{\"class\":\"A\",\"args\":[]}", NULL, 0);
    hh_job_fail(j,
                "Bad\xff"
                "Class",
                "bad \xff\xfe bytes, caf\xc3\xa9 kept");
    assert_string_equal(j->error_message, "bad \\xff\\xfe bytes, caf\xc3\xa9 kept");
    assert_string_equal(j->error_class, "Bad\\xffClass");
    for (size_t fill = 9994; fill <= 10000; fill++) {
        char *msg = malloc(fill + 3);
        memset(msg, 'a', fill);
        msg[fill] = '\xff', msg[fill + 1] = '\xff', msg[fill + 2] = '\0';
        hh_job_fail(j, "E", "%s", msg);
        size_t len = strlen(j->error_message);
        assert_true(len <= 10000);
        assert_true(utf8_ok(j->error_message));
        /* the end is a whole escape or the fill, never a piece of \xff */
        const char *tail = j->error_message + (len >= 4 ? len - 4 : 0);
        if (len > fill) assert_string_equal(tail, "\\xff");
        else assert_int_equal(len, fill);
        free(msg);
    }
    hh__job_free(j);
}

static void test_job_fail_fields(void **s) {
    (void)s;
    hh_job *j = mk("{\"class\":\"A\",\"args\":[]}", NULL, 0);
    hh_job_fail(j, NULL, "boom %d %s", 42, "x");
    assert_string_equal(j->error_class, "StandardError");
    assert_string_equal(j->error_message, "boom 42 x");
    hh_job_fail(j, "KeyError", "second"); /* last call wins */
    assert_string_equal(j->error_class, "KeyError");
    assert_string_equal(j->error_message, "second");
    const char *lines[] = {"a.c:1:in 'f'", "b.c:2:in 'g'"};
    hh_job_set_backtrace(j, lines, 2);
    assert_int_equal(j->nbacktrace, 2);
    assert_string_equal(j->backtrace[1], "b.c:2:in 'g'");
    assert_true(j->backtrace[0] != lines[0]); /* copied */
    hh__job_reset_error(j);
    assert_null(j->error_class);
    assert_null(j->error_message);
    assert_int_equal(j->nbacktrace, 0);
    hh__job_free(j);
}

static void test_job_args(void **s) {
    (void)s;
    hh_job *j = mk("{\"class\":\"A\",\"args\": [ 1 , 2.0, \"x\" , {\"k\" : [true]} ] }", NULL, 0);
    assert_string_equal(hh_job_args(j), "[1,2.0,\"x\",{\"k\":[true]}]");
    const char *first = hh_job_args(j);
    assert_ptr_equal(first, hh_job_args(j)); /* cached, stable while the job lives */
    hh__job_free(j);
    j = mk("{\"class\":\"A\",\"args\":[]}", NULL, 0);
    assert_string_equal(hh_job_args(j), "[]");
    hh__job_free(j);
}

/* Active Job payloads are handled and shown by their "wrapped" class, for
 * both wrapper names; any other class (or a wrapper without a usable
 * "wrapped") by its own. */
static void test_handler_class(void **s) {
    (void)s;
    static const struct {
        const char *payload, *want;
    } cases[] = {
        {"{\"class\":\"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper\",\"wrapped\":\"ReportJob\",\"args\":[{}]}",
         "ReportJob"},
        {"{\"class\":\"Sidekiq::ActiveJob::Wrapper\",\"wrapped\":\"Mail::Job\",\"args\":[{}]}", "Mail::Job"},
        {"{\"class\":\"Sidekiq::ActiveJob::Wrapper\",\"wrapped\":\"\",\"args\":[]}", "Sidekiq::ActiveJob::Wrapper"},
        {"{\"class\":\"Sidekiq::ActiveJob::Wrapper\",\"wrapped\":7,\"args\":[]}", "Sidekiq::ActiveJob::Wrapper"},
        {"{\"class\":\"OtherWrapper\",\"wrapped\":\"ReportJob\",\"args\":[]}", "OtherWrapper"},
        {"{\"class\":\"Plain\",\"args\":[]}", "Plain"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char why[256];
        hh_job *j = mk(cases[i].payload, why, sizeof(why));
        size_t len = 0;
        assert_string_equal(hh_job_handler_class(j, &len), cases[i].want);
        assert_int_equal(len, strlen(cases[i].want));
        assert_string_equal(hh_job_handler_class(j, NULL), cases[i].want);
        hh__job_free(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_payload),
        cmocka_unit_test(test_retry_count_and_defaults),
        cmocka_unit_test(test_shed_keeps_what_the_ack_needs),
        cmocka_unit_test(test_payload_time_lossy),
        cmocka_unit_test(test_exact_bytes_kept),
        cmocka_unit_test(test_malformed_payloads),
        cmocka_unit_test(test_integer_limits_accepted),
        cmocka_unit_test(test_bignum_args_run_lossy),
        cmocka_unit_test(test_negative_bignum_runs_lossy),
        cmocka_unit_test(test_json_set_raw),
        cmocka_unit_test(test_json_int_step),
        cmocka_unit_test(test_json_get_raw),
        cmocka_unit_test(test_json_time),
        cmocka_unit_test(test_json_time_new),
        cmocka_unit_test(test_json_dump_order_and_types),
        cmocka_unit_test(test_json_dump_reals_roundtrip_value),
        cmocka_unit_test(test_json_dump_keeps_timestamp_tokens),
        cmocka_unit_test(test_job_fail_truncation),
        cmocka_unit_test(test_job_fail_fields),
        cmocka_unit_test(test_job_fail_invalid_utf8_escaped),
        cmocka_unit_test(test_job_args),
        cmocka_unit_test(test_handler_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
