/* test_registry.c -- a manager's handler registry (src/registry.c):
 * hh_manager_register refusing a class registered twice with a reason that
 * names the class and where both handlers' code is, NULL arguments refused
 * with a reason, hh_manager_has_handler matching a class exactly (its own
 * handler only: not the catch-all "*" nor the default handler), the
 * middleware chain run in the order added around the handler, and every
 * registration refused once the manager has started. One private
 * redis-server for the test that runs a job. */
#include "unit_helpers.h"

#include <pthread.h>
#include <stdatomic.h>

UH_REDIS_GROUP()

static int handler(hh_job *job, void *udata) {
    (void)job, (void)udata;
    return 0;
}

static int other_handler(hh_job *job, void *udata) {
    (void)job, (void)udata;
    return 1;
}

static int pass_mw(hh_job *job, hh_chain *chain, void *udata) {
    (void)udata;
    return hh_chain_next(chain, job);
}

static void quiet(hh_log_level level, const char *msg, void *udata) { (void)level, (void)msg, (void)udata; }

static hh_manager *new_manager(int concurrency) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = srv.url;
    o.log = quiet;
    o.concurrency = concurrency;
    int err = 99;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_int_equal(err, HH_OK);
    return m;
}

static void expect_reason(const char *needle) {
    if (!strstr(hh_last_error(), needle)) fail_msg("hh_last_error() is '%s', want '%s' in it", hh_last_error(), needle);
}

/* A class registered twice: HH_ERR_EXISTS, and a reason naming the class
 * and where the code of both handlers is (both in this program here). The
 * first handler stays. */
static void test_register_twice_names_class(void **s) {
    (void)s;
    hh_manager *m = new_manager(1);
    assert_int_equal(hh_manager_register(m, "Billing::Invoice", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register(m, "Billing::Other", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register(m, "Billing::Invoice", other_handler, NULL), HH_ERR_EXISTS);
    expect_reason("register Billing::Invoice: that class has a handler already");
    expect_reason("the program itself");
    assert_int_equal(hh_manager_register(m, "Billing::Invoice", handler, NULL), HH_ERR_EXISTS);
    expect_reason("register Billing::Invoice: that class has a handler already");
    assert_true(hh_manager_has_handler(m, "Billing::Invoice"));
    /* the catch-all is one class like the others: twice is refused too */
    assert_int_equal(hh_manager_register(m, "*", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register(m, "*", handler, NULL), HH_ERR_EXISTS);
    expect_reason("register *:");
    hh_manager_free(m);
}

/* NULL or empty arguments: HH_ERR_INVALID, and the reason says which one. */
static void test_missing_arguments_refused(void **s) {
    (void)s;
    hh_manager *m = new_manager(1);
    assert_int_equal(hh_manager_register(NULL, "K", handler, NULL), HH_ERR_INVALID);
    expect_reason("register: the manager is missing");
    assert_int_equal(hh_manager_register(m, NULL, handler, NULL), HH_ERR_INVALID);
    expect_reason("register: the class name is missing");
    assert_int_equal(hh_manager_register(m, "", handler, NULL), HH_ERR_INVALID);
    expect_reason("register: the class name is missing");
    assert_int_equal(hh_manager_register(m, "K", NULL, NULL), HH_ERR_INVALID);
    expect_reason("register: the handler is missing");
    assert_false(hh_manager_has_handler(m, "K"));
    assert_int_equal(hh_manager_register_default(NULL, handler, NULL), HH_ERR_INVALID);
    expect_reason("register_default: the manager is missing");
    assert_int_equal(hh_manager_register_default(m, NULL, NULL), HH_ERR_INVALID);
    expect_reason("register_default: the handler is missing");
    assert_int_equal(hh_manager_use(NULL, pass_mw, NULL), HH_ERR_INVALID);
    expect_reason("use: the manager is missing");
    assert_int_equal(hh_manager_use(m, NULL, NULL), HH_ERR_INVALID);
    expect_reason("use: the middleware is missing");
    assert_int_equal(hh_manager_on_heartbeat(NULL, NULL, NULL), HH_ERR_INVALID);
    expect_reason("on_heartbeat: the manager is missing");
    hh_manager_free(m);
}

/* has_handler: the class's own handler, matched exactly (case, "::" and
 * the whole string); "*" and the default handler are not one of its own. */
static void test_has_handler_exact(void **s) {
    (void)s;
    hh_manager *m = new_manager(1);
    assert_false(hh_manager_has_handler(m, "Mailer"));
    assert_false(hh_manager_has_handler(m, NULL));
    assert_int_equal(hh_manager_register(m, "Mailer", handler, NULL), HH_OK);
    assert_true(hh_manager_has_handler(m, "Mailer"));
    assert_false(hh_manager_has_handler(m, "mailer"));
    assert_false(hh_manager_has_handler(m, "Mailer "));
    assert_false(hh_manager_has_handler(m, "Mail"));
    assert_false(hh_manager_has_handler(m, "Mailer::Job"));
    assert_false(hh_manager_has_handler(m, NULL));
    assert_int_equal(hh_manager_register(m, "*", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register_default(m, handler, NULL), HH_OK);
    assert_false(hh_manager_has_handler(m, "Other"));
    assert_true(hh_manager_has_handler(m, "*"));
    hh_manager_free(m);
}

/* --------------------------------------------------- the chain, once started */

static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static char trace[128];
static atomic_int handled;

static void note(const char *what) {
    pthread_mutex_lock(&trace_mu);
    strncat(trace, what, sizeof(trace) - strlen(trace) - 1);
    pthread_mutex_unlock(&trace_mu);
}

/* Notes "<name>(" before the rest of the chain and ")<name>" after it. */
static int tracing_mw(hh_job *job, hh_chain *chain, void *udata) {
    const char *name = udata;
    char buf[16];
    snprintf(buf, sizeof(buf), "%s(", name);
    note(buf);
    int rc = hh_chain_next(chain, job);
    snprintf(buf, sizeof(buf), ")%s", name);
    note(buf);
    return rc;
}

static int tracing_handler(hh_job *job, void *udata) {
    (void)udata;
    note(hh_job_class(job));
    atomic_fetch_add(&handled, 1);
    return 0;
}

/* Middleware runs in the order added, each around the rest of the chain
 * and the handler, as Sidekiq's server middleware chain does; once started,
 * every registration is refused with HH_ERR_STATE and a reason, and the
 * handlers in place stay. */
static void test_chain_order_and_started(void **s) {
    (void)s;
    uh_flushall(&srv);
    trace[0] = '\0';
    atomic_store(&handled, 0);
    hh_manager *m = new_manager(1);
    assert_int_equal(hh_manager_use(m, tracing_mw, "A"), HH_OK);
    assert_int_equal(hh_manager_use(m, tracing_mw, "B"), HH_OK);
    assert_int_equal(hh_manager_use(m, tracing_mw, "C"), HH_OK);
    assert_int_equal(hh_manager_register(m, "H", tracing_handler, NULL), HH_OK);
    assert_int_equal(hh_manager_start(m), HH_OK);

    assert_int_equal(hh_manager_register(m, "Late", handler, NULL), HH_ERR_STATE);
    expect_reason("register Late: the manager has started");
    assert_false(hh_manager_has_handler(m, "Late"));
    assert_true(hh_manager_has_handler(m, "H"));
    assert_int_equal(hh_manager_register_default(m, handler, NULL), HH_ERR_STATE);
    expect_reason("register_default: the manager has started");
    assert_int_equal(hh_manager_use(m, pass_mw, NULL), HH_ERR_STATE);
    expect_reason("use: the manager has started");
    assert_int_equal(hh_manager_on_heartbeat(m, NULL, NULL), HH_ERR_STATE);
    expect_reason("on_heartbeat: the manager has started");

    hh_client *c = uh_client(srv.url, NULL);
    assert_int_equal(hh_client_push(c, "H", "[]", NULL, NULL), HH_OK);
    double deadline = uh_mono() + 30;
    while (atomic_load(&handled) < 1 && uh_mono() < deadline) uh_sleep(0.01);
    /* the handler has returned; the middleware's "after" halves follow */
    while (uh_mono() < deadline) {
        pthread_mutex_lock(&trace_mu);
        int whole = strlen(trace) >= strlen("A(B(C(H)C)B)A");
        pthread_mutex_unlock(&trace_mu);
        if (whole) break;
        uh_sleep(0.01);
    }
    hh_manager_stop(m);
    assert_int_equal(hh_manager_wait(m, 10), HH_OK);
    hh_manager_free(m);
    hh_client_free(c);
    assert_int_equal(atomic_load(&handled), 1);
    assert_string_equal(trace, "A(B(C(H)C)B)A");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_twice_names_class),
        cmocka_unit_test(test_missing_arguments_refused),
        cmocka_unit_test(test_has_handler_exact),
        cmocka_unit_test(test_chain_order_and_started),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
