/* test_abi.c -- the struct_size rule of hiredhand.h ("Structs that can
 * grow"): a caller built against another header version hands in a
 * shorter or longer struct, and the library reads (or writes) only the
 * bytes the caller has, the rest at its defaults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "hiredhand.h"

/* A caller from a newer header: its hh_redis_options has 8 more bytes, so
 * every manager field after it sits 8 bytes later than in ours. */
static void test_manager_options_from_a_longer_redis(void **s) {
    (void)s;
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = "redis://127.0.0.1:1/3";
    o.concurrency = 7;
    o.identity = "me";
    o.http_token = "tok";
    size_t head = offsetof(hh_manager_options, redis) + sizeof(hh_redis_options);
    size_t tail = offsetof(hh_manager_options, queues);
    size_t total = tail + 8 + (sizeof(o) - tail) + 8; /* and one newer manager field */
    char *buf = calloc(1, total);
    assert_non_null(buf);
    memcpy(buf, &o, head);
    memset(buf + head, 0x5a, 8); /* the newer redis field: not ours to read */
    memcpy(buf + tail + 8, (char *)&o + tail, sizeof(o) - tail);
    hh_manager_options *caller = (hh_manager_options *)buf;
    caller->struct_size = total;
    caller->redis.struct_size = sizeof(hh_redis_options) + 8;
    hh_manager_options got;
    hh__manager_options_read(&got, caller);
    assert_int_equal(got.struct_size, sizeof(got));
    assert_int_equal(got.redis.struct_size, sizeof(got.redis));
    assert_string_equal(got.redis.url, "redis://127.0.0.1:1/3");
    assert_int_equal(got.concurrency, 7);
    assert_string_equal(got.identity, "me");
    assert_string_equal(got.http_token, "tok");
    free(buf);
}

/* A caller from an older header: fields past its struct_size are the
 * defaults, whatever bytes lie beyond its struct. */
static void test_short_structs_take_defaults(void **s) {
    (void)s;
    hh_manager_options o;
    memset(&o, 0x7f, sizeof(o)); /* garbage past the caller's end */
    hh_manager_options_init(&o);
    o.concurrency = 3;
    o.dead_max_jobs = 42;
    o.struct_size = offsetof(hh_manager_options, shutdown_timeout);
    memset(&o.shutdown_timeout, 0x7f, sizeof(o) - offsetof(hh_manager_options, shutdown_timeout));
    hh_manager_options got;
    hh__manager_options_read(&got, &o);
    assert_int_equal(got.concurrency, 3);
    assert_int_equal(got.dead_max_jobs, 10000); /* beyond: the default */
    assert_true(got.shutdown_timeout == 25);
    assert_null(got.http_token);

    hh_push_options p;
    memset(&p, 0x7f, sizeof(p));
    p.struct_size = offsetof(hh_push_options, retry);
    p.queue = "low";
    hh_push_options gp;
    hh__push_options_read(&gp, &p);
    assert_string_equal(gp.queue, "low");
    assert_int_equal(gp.retry, HH_RETRY_DEFAULT);
    assert_null(gp.extra_json);

    /* struct_size 0 (zeroed): the first layout, every field read */
    hh_redis_options r;
    memset(&r, 0, sizeof(r));
    r.ns = "app";
    hh_redis_options gr;
    hh__redis_options_read(&gr, &r);
    assert_string_equal(gr.ns, "app");
    assert_int_equal(gr.struct_size, sizeof(gr));
    hh__redis_options_read(&gr, NULL);
    assert_true(gr.connect_timeout == 5);
}

/* Stats are written only as far as the caller's struct_size. */
static void test_stats_written_to_the_callers_size(void **s) {
    (void)s;
    hh_manager_stats full;
    memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.concurrency = 9;
    full.reconciled = 5;
    hh_manager_stats out;
    memset(&out, 0xee, sizeof(out));
    out.struct_size = offsetof(hh_manager_stats, busy);
    hh__manager_stats_write(&out, &full);
    assert_int_equal(out.struct_size, offsetof(hh_manager_stats, busy));
    assert_int_equal(out.concurrency, 9);
    unsigned char *past = (unsigned char *)&out.busy;
    for (size_t i = 0; i < sizeof(out) - offsetof(hh_manager_stats, busy); i++) assert_int_equal(past[i], 0xee);
    out.struct_size = sizeof(out);
    hh__manager_stats_write(&out, &full);
    assert_int_equal(out.reconciled, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manager_options_from_a_longer_redis),
        cmocka_unit_test(test_short_structs_take_defaults),
        cmocka_unit_test(test_stats_written_to_the_callers_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
