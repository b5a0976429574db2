/* test_fetch_ack.c -- src/finish.c against a private redis-server: the ack of
 * a finished job that the ack queue has no room for (the queue cannot grow:
 * out of memory) is sent at once, alone, so the job leaves its in-progress
 * list instead of staying there to run again. The binary is linked with
 * -Wl,--wrap=realloc (tests/CMakeLists.txt): the test makes one realloc of
 * the library fail. No worker threads run. */
#include "unit_helpers.h"

#include <stdatomic.h>
#include "fetch.h"
#include "manager.h"

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static atomic_int fail_next_realloc; /* the next realloc returns NULL */

void *__wrap_realloc(void *p, size_t n) {
    if (atomic_exchange(&fail_next_realloc, 0)) return NULL;
    return __real_realloc(p, n);
}

static uh_redis srv;

static int setup(void **s) {
    (void)s;
    return uh_redis_start(&srv) == 0 ? 0 : -1;
}

static int teardown(void **s) {
    (void)s;
    uh_redis_stop(&srv);
    return 0;
}

#define INPROG "hiredhand:inprogress:ack-test|"

static hh_job *job(const char *queue, int n) {
    char payload[128], why[128];
    snprintf(payload, sizeof(payload), "{\"class\":\"A\",\"jid\":\"%s%d\",\"args\":[]}", queue, n);
    hh_job *j = hh__job_new(payload, strlen(payload), queue, why, sizeof(why));
    assert_non_null(j);
    return j;
}

static void test_ack_sent_when_the_queue_cannot_grow(void **s) {
    (void)s;
    uh_flushall(&srv);
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.concurrency = 1;
    o.identity = "ack-test";
    o.log_level = HH_LOG_ERROR;
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    /* a refused flush puts its acks back instead of retrying forever */
    atomic_store(&m->flags.giving_up, 1);
    hh__conn c;
    hh__conn_init(&c, &m->cfg, &m->log, "test", NULL);
    /* Fill the ack queue with acks Redis refuses (their in-progress key is
     * not a list): the flush at the threshold gives them back, so the queue
     * stays full. */
    freeReplyObject(uh_cmd(&srv, "SET %s %s", INPROG "bad", "not a list"));
    size_t cap = (size_t)o.concurrency + HH_FETCH_BATCH_MAX;
    for (size_t i = 0; i < cap; i++) hh__finish_queue_ack(&m->finish_env, job("bad", (int)i), &c);
    /* the next ack finds the queue full, and it cannot grow */
    hh_job *ok = job("default", 0);
    freeReplyObject(uh_cmd(&srv, "LPUSH %s %s", INPROG "default", ok->payload));
    atomic_store(&fail_next_realloc, 1);
    hh__finish_queue_ack(&m->finish_env, ok, &c);
    assert_int_equal(atomic_load(&fail_next_realloc), 0); /* the growth was tried, and failed */
    redisReply *r = uh_cmd(&srv, "LLEN %s", INPROG "default");
    assert_non_null(r);
    assert_int_equal(r->integer, 0); /* acknowledged: it will not run again */
    freeReplyObject(r);
    hh__conn_close(&c);
    hh_manager_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ack_sent_when_the_queue_cannot_grow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
