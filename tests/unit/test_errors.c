/* test_errors.c -- every failing public call leaves a reason for people in
 * hh_last_error(): option checks (shared with the CLI through
 * hh_manager_options_check), hh_manager_new, hh_manager_start (HTTP port in
 * use, started twice, a failed register), register/use, hh_client_new (Redis unreachable, and
 * nothing written to stderr), and pushes of bad JSON (what and where). */
#include "unit_helpers.h"

#include <sys/socket.h>
#include "hiredhand.h"
#include <unistd.h>

UH_REDIS_GROUP()

static int handler(hh_job *job, void *udata) {
    (void)job, (void)udata;
    return 0;
}

static void quiet(hh_log_level level, const char *msg, void *udata) { (void)level, (void)msg, (void)udata; }

static void opts_init(hh_manager_options *o) {
    hh_manager_options_init(o);
    o->redis.url = srv.url;
    o->log = quiet;
}

/* hh_manager_new fails with INVALID and hh_last_error() holds `needle`;
 * hh_manager_options_check says the same into its errbuf. */
static void expect_refused(const hh_manager_options *o, const char *needle) {
    char buf[512] = "unset";
    assert_int_equal(hh_manager_options_check(o, buf, sizeof(buf)), HH_ERR_INVALID);
    if (!strstr(buf, needle)) fail_msg("options check said '%s', want '%s' in it", buf, needle);
    int err = 0;
    assert_null(hh_manager_new(o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    if (!strstr(hh_last_error(), needle)) fail_msg("hh_last_error() is '%s', want '%s' in it", hh_last_error(), needle);
}

static void test_manager_new_says_why(void **s) {
    (void)s;
    hh_manager_options o;
    char id[151];
    memset(id, 'a', 150);
    id[150] = '\0';
    opts_init(&o);
    o.identity = id; /* 150 bytes: fine */
    char buf0[256];
    assert_int_equal(hh_manager_options_check(&o, buf0, sizeof(buf0)), HH_OK);
    char *long_id = malloc(260);
    assert_non_null(long_id);
    memset(long_id, 'b', 259);
    long_id[259] = '\0';
    o.identity = long_id;
    expect_refused(&o, "longer than 200 bytes");
    free(long_id);
    opts_init(&o);
    o.identity = "queue:default";
    expect_refused(&o, "queue:default");
    opts_init(&o);
    o.concurrency = 5000;
    expect_refused(&o, "concurrency 5000: want 1 to 1000");
    opts_init(&o);
    o.heartbeat_interval = 0;
    expect_refused(&o, "heartbeat interval");
    opts_init(&o);
    o.shutdown_timeout = -1;
    expect_refused(&o, "shutdown timeout");
    opts_init(&o);
    o.lease_lost = (hh_lease_lost_policy)7;
    expect_refused(&o, "lease_lost 7");
    opts_init(&o);
    o.max_recoveries = -1;
    expect_refused(&o, "max recoveries -1");
    hh_queue_weight q[2] = {{"ok", 1}, {"bad|name", 1}};
    opts_init(&o);
    o.queues = q;
    o.nqueues = 2;
    expect_refused(&o, "bad|name");
    q[1].name = "fine";
    q[1].weight = -3;
    expect_refused(&o, "queue fine: weight -3");
    opts_init(&o);
    o.queues = q;
    o.nqueues = HH_QUEUES_LIMIT + 1;
    expect_refused(&o, "too many queues: at most 10000");
    opts_init(&o);
    o.redis.url = "redis://127.0.0.1:99999999/0";
    char buf[256];
    assert_int_equal(hh_manager_options_check(&o, buf, sizeof(buf)), HH_ERR_INVALID);
    assert_true(buf[0] != '\0');
    opts_init(&o);
    o.redis.ns = "retry";
    expect_refused(&o, "retry");
    opts_init(&o);
    o.tag = "a\nb";
    expect_refused(&o, "tag");
    opts_init(&o);
    o.http_token = "has space";
    expect_refused(&o, "http_token");
    opts_init(&o);
    assert_int_equal(hh_manager_options_check(&o, buf, sizeof(buf)), HH_OK);
    assert_string_equal(buf, "");
}

static void test_manager_start_and_register_say_why(void **s) {
    (void)s;
    /* a port held by a listening socket of ours */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 1), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char bindaddr[32];
    snprintf(bindaddr, sizeof(bindaddr), "127.0.0.1:%d", ntohs(a.sin_port));
    hh_manager_options o;
    opts_init(&o);
    o.concurrency = 1;
    o.http_bind = bindaddr;
    /* the check finds the port in use before anything starts... */
    char why[512];
    assert_int_equal(hh_manager_options_check(&o, why, sizeof(why)), HH_ERR_INVALID);
    if (!strstr(why, "http: cannot listen on") || !strstr(why, "Address already in use") || !strstr(why, bindaddr))
        fail_msg("the check said '%s'", why);
    /* ...and a bad address the same way, parsed only by hh_manager_new */
    o.http_bind = "127.0.0.1:70000";
    assert_int_equal(hh_manager_options_check(&o, why, sizeof(why)), HH_ERR_INVALID);
    assert_non_null(strstr(why, "bad --http port"));
    int err;
    assert_null(hh_manager_new(&o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    /* ...while creating a manager does not take the port: start does */
    o.http_bind = bindaddr;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_int_equal(hh_manager_register(m, "K", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_start(m), HH_ERR_INVALID);
    if (!strstr(hh_last_error(), "Address already in use") || !strstr(hh_last_error(), bindaddr))
        fail_msg("start said '%s'", hh_last_error());
    assert_int_equal(hh_manager_start(m), HH_ERR_STATE);
    assert_non_null(strstr(hh_last_error(), "started already"));
    assert_int_equal(hh_manager_register(m, "L", handler, NULL), HH_ERR_STATE);
    assert_non_null(strstr(hh_last_error(), "register L: the manager has started"));
    hh_manager_free(m);
    close(fd);
}

static char logged_errors[2048];
static void keep_errors(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    size_t n = strlen(logged_errors);
    if (level == HH_LOG_ERROR) snprintf(logged_errors + n, sizeof(logged_errors) - n, "%s\n", msg);
}

/* A failed registration that its caller ignored (a plug-in whose init goes
 * on and returns 0) stops the start, with the first failure's reason:
 * running would give the class the other handler, or none. */
static void test_failed_register_refuses_start(void **s) {
    (void)s;
    hh_manager_options o;
    opts_init(&o);
    o.concurrency = 1;
    o.log = keep_errors;
    logged_errors[0] = '\0';
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_int_equal(hh_manager_register(m, "K", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register(m, "K", handler, NULL), HH_ERR_EXISTS);
    assert_non_null(strstr(hh_last_error(), "register K: that class has a handler already"));
    assert_int_equal(hh_manager_register(m, "", handler, NULL), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "class name"));
    assert_int_equal(hh_manager_register(m, "L", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_start(m), HH_ERR_INVALID);
    const char *want = "not starting: a handler registration failed: register K: that class has a handler already";
    if (!strstr(hh_last_error(), want)) fail_msg("start said '%s'", hh_last_error());
    if (!strstr(logged_errors, want)) fail_msg("logged '%s'", logged_errors);
    assert_int_equal(hh_manager_wait(m, 5), HH_OK);
    hh_manager_free(m);
}

/* Redis unreachable: HH_ERR_REDIS with where and why, and not a byte on
 * stderr (the library has no business writing there). */
static void test_client_new_says_why_quietly(void **s) {
    (void)s;
    int port = uh_pick_port();
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    o.connect_timeout = 2;
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    int err = 0;
    hh_client *c = hh_client_new(&o, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_null(c);
    assert_int_equal(err, HH_ERR_REDIS);
    char expect[96];
    snprintf(expect, sizeof(expect), "cannot connect to redis redis://127.0.0.1:%d/0", port);
    if (!strstr(hh_last_error(), expect)) fail_msg("hh_last_error() is '%s'", hh_last_error());
    assert_int_equal(ftell(cap), 0); /* nothing on stderr */
    fclose(cap);
    o.url = "redis://127.0.0.1:1/0";
    o.ns = "queue";
    assert_null(hh_client_new(&o, &err));
    assert_int_equal(err, HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "namespace"));
}

static void expect_push_refused(int rc, const char *needle) {
    assert_int_equal(rc, HH_ERR_INVALID);
    if (!strstr(hh_last_error(), needle)) fail_msg("hh_last_error() is '%s', want '%s' in it", hh_last_error(), needle);
}

static void test_push_says_what_and_where(void **s) {
    (void)s;
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = srv.url;
    int err;
    hh_client *c = hh_client_new(&ro, &err);
    assert_non_null(c);
    expect_push_refused(hh_client_push(c, "K", "[1,\n 2,", NULL, NULL), "args_json is not JSON");
    expect_push_refused(hh_client_push(c, "K", "[1,\n 2,", NULL, NULL), "line 2");
    expect_push_refused(hh_client_push(c, "K", "{\"a\":1}", NULL, NULL), "args_json must be a JSON array");
    expect_push_refused(hh_client_push(c, "", "[]", NULL, NULL), "the class is empty");
    hh_push_options po;
    hh_push_options_init(&po);
    po.queue = "a|b";
    expect_push_refused(hh_client_push(c, "K", "[]", &po, NULL), "a|b");
    hh_push_options_init(&po);
    po.extra_json = "[1]";
    expect_push_refused(hh_client_push(c, "K", "[]", &po, NULL), "extra_json must be a JSON object");
    po.extra_json = "{\"tags\":";
    expect_push_refused(hh_client_push(c, "K", "[]", &po, NULL), "extra_json is not JSON");
    hh_push_options_init(&po);
    po.retry = HH_RETRY_COUNT;
    po.retry_max = -2;
    expect_push_refused(hh_client_push(c, "K", "[]", &po, NULL), "retry_max -2");
    const char *args[] = {"[1]", "[2", "[3]"};
    expect_push_refused(hh_client_push_bulk(c, "K", args, 3, NULL, NULL), "args_json[1] is not JSON");
    expect_push_refused(hh_client_push_item(c, "{\"class\":", NULL), "the item is not JSON");
    expect_push_refused(hh_client_push_item(c, "[]", NULL), "must be a JSON object");
    expect_push_refused(hh_client_push_item(c, "{\"args\":[]}", NULL), "\"class\"");
    expect_push_refused(hh_client_push_item(c, "{\"class\":\"K\",\"args\":{}}", NULL), "\"args\" must be a JSON array");
    assert_int_equal(hh_client_signal(c, "nobody-here", "TERM"), HH_ERR_NOTFOUND);
    assert_non_null(strstr(hh_last_error(), "nobody-here"));
    assert_int_equal(hh_client_signal(c, "x", "KILL"), HH_ERR_INVALID);
    assert_non_null(strstr(hh_last_error(), "KILL"));
    char jid[HH_JID_SIZE];
    assert_int_equal(hh_client_push(c, "K", "[1]", NULL, jid), HH_OK); /* and a good one still goes */
    hh_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manager_new_says_why),          cmocka_unit_test(test_manager_start_and_register_say_why),
        cmocka_unit_test(test_failed_register_refuses_start), cmocka_unit_test(test_client_new_says_why_quietly),
        cmocka_unit_test(test_push_says_what_and_where),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
