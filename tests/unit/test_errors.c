/* test_errors.c -- every failing public call leaves a reason for people in
 * hh_last_error(): option checks (shared with the CLI through
 * hh_manager_options_check), hh_manager_new, hh_manager_start (HTTP port in
 * use, started twice, a failed register), register/use, hh_client_new (Redis unreachable, and
 * nothing written to stderr), and pushes of bad JSON (what and where).
 * Then every exported function of hiredhand.h, failing once each, leaves
 * a fresh reason; the header's HH_EXPORT list is read so that a new export
 * fails the test until it is listed here. */
#include "unit_helpers.h"

#include <ctype.h>
#include <sys/socket.h>
#include "error.h"
#include "util.h"
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
    opts_init(&o);
    o.cron_poll_interval = 0.01;
    expect_refused(&o, "cron poll interval 0.01");
    const char *bad_ns[] = {"a:b"};
    opts_init(&o);
    o.cron_namespaces = bad_ns;
    o.ncron_namespaces = 1;
    expect_refused(&o, "cron namespace \"a:b\"");
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

/* ------------------------------------------------ every export, failing */

/* Each exported function of hiredhand.h, by name: either a call that fails
 * (each run after a sentinel reason, so a stale reason shows) or why it
 * has no failure to report. The header's HH_EXPORT list is read at run
 * time and must equal this table: a new export fails the test until it is
 * covered here. */
static hh_client *down; /* a client whose Redis went away */
static hh_manager *mgr;

static int f_url(void) { return hh_redis_url_check("bogus://x", NULL, 0); }
static int f_ropts(void) {
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = "bogus://x";
    return hh_redis_options_check(&o, NULL, 0);
}
static int f_name(void) { return hh_name_check(HH_NAME_QUEUE, "", NULL, 0); }
static int f_client_new(void) {
    int err = 0;
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = "bogus://x";
    return hh_client_new(&o, &err) ? HH_OK : err;
}
static int f_push(void) { return hh_client_push(NULL, "K", "[]", NULL, NULL); }
static int f_push_item(void) { return hh_client_push_item(NULL, "{}", NULL); }
static int f_push_bulk(void) { return hh_client_push_bulk(NULL, "K", NULL, 0, NULL, NULL); }
static int f_stats(void) {
    char *j = NULL;
    return hh_client_stats(down, &j);
}
static int f_processes(void) {
    char *j = NULL;
    return hh_client_processes(down, &j);
}
static int f_signal(void) { return hh_client_signal(NULL, "x", "TSTP"); }
static int f_kill(void) { return hh_client_kill(NULL, "{}", 2, 0, 0); }
static int each_fn(const hh_jobset_entry *e, void *u) { return (void)e, (void)u, 0; }
static int f_js_size(void) { return hh_jobset_size(NULL, HH_JOBSET_RETRY, NULL); }
static int f_js_size_down(void) {
    long long n;
    return hh_jobset_size(down, HH_JOBSET_RETRY, &n);
}
static int f_js_each(void) { return hh_jobset_each(down, HH_JOBSET_DEAD, NULL, NULL, NULL); }
static int f_js_find(void) { return hh_jobset_find(down, HH_JOBSET_DEAD, "", each_fn, NULL); }
static int f_js_act(void) { return hh_jobset_act(down, HH_JOBSET_DEAD, "abc", HH_JOBSET_KILL, NULL); }
static int f_js_act_all(void) {
    hh_jobset_filter f = {.error = ""};
    return hh_jobset_act_all(down, HH_JOBSET_RETRY, &f, HH_JOBSET_DELETE, NULL, NULL, NULL);
}
static int f_js_clear(void) { return hh_jobset_clear(down, (hh_jobset)9, NULL); }
static int f_queues(void) {
    char *j = NULL;
    return hh_queues_list(down, &j);
}
static int f_queue_show(void) {
    char *j = NULL;
    return hh_queue_show(down, "default", 1000000, &j);
}
static int f_queue_clear(void) { return hh_queue_clear(NULL, "default", NULL); }
static int f_js_page(void) { return hh_jobset_page(NULL, HH_JOBSET_RETRY, 0, 10, 0, NULL, NULL); }
static int f_queue_page(void) { return hh_queue_page(NULL, "default", 0, 10, NULL); }
static int f_queue_delete(void) { return hh_queue_delete_job(NULL, "default", "x", 1); }
static int f_history(void) { return hh_stats_history(NULL, 1, NULL); }
static int f_metrics(void) { return hh_job_metrics_summary(NULL, 1, NULL); }
static int f_busy(void) { return hh_busy(down, NULL); }
static int f_cron_save(void) { return hh_cron_save(down, NULL); }
static int f_cron_save_bad(void) {
    hh_cron_spec sp = {.struct_size = sizeof(sp), .name = "n", .cron = "61 * * * *", .klass = "K"};
    return hh_cron_save(down, &sp);
}
static int f_cron_list(void) {
    char *j = NULL;
    return hh_cron_list(down, NULL, &j);
}
static int f_cron_enable(void) { return hh_cron_set_enabled(down, NULL, "n", 1); }
static int f_cron_delete(void) { return hh_cron_delete(down, NULL, "n"); }
static int f_cron_enqueue(void) { return hh_cron_enqueue_now(down, NULL, "n", NULL); }
static int f_cron_history(void) {
    char *j = NULL;
    return hh_cron_history(down, NULL, "n", &j);
}
static int f_cron_layout(void) { return hh_cron_use_layout(down, 3); }
static int f_cron_layout_null(void) { return hh_cron_use_layout(NULL, 1); }
static int f_jobs_find(void) {
    char *j = NULL;
    return hh_jobs_find(down, "", &j);
}
static int f_mopts(void) {
    hh_manager_options o;
    opts_init(&o);
    o.concurrency = 0;
    return hh_manager_options_check(&o, NULL, 0);
}
static int f_mnew(void) {
    hh_manager_options o;
    opts_init(&o);
    o.concurrency = 0;
    int err = 0;
    return hh_manager_new(&o, &err) ? HH_OK : err;
}
static int f_register(void) { return hh_manager_register(mgr, "", handler, NULL); }
/* refused only once started: a manager of its own that starts */
static int f_register_default(void) {
    hh_manager_options o;
    opts_init(&o);
    o.concurrency = 1;
    int err;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_int_equal(hh_manager_start(m), HH_OK);
    hh__fail(HH_ERR_IO, "sentinel reason");
    int rc = hh_manager_register_default(m, handler, NULL);
    char why[1024];
    hh__strlcpy(why, hh_last_error(), sizeof(why));
    hh_manager_stop(m);
    assert_int_equal(hh_manager_wait(m, 10), HH_OK);
    hh_manager_free(m);
    hh__fail(rc, "%s", why); /* the reason as the call left it */
    return rc;
}
static int f_use(void) { return hh_manager_use(mgr, NULL, NULL); }
static int f_start(void) { return hh_manager_start(mgr); }
static int f_wait(void) { return hh_manager_wait(NULL, 0); }
static int f_get_stats(void) { return hh_manager_get_stats(mgr, NULL); }
static int f_on_heartbeat(void) { return hh_manager_on_heartbeat(mgr, NULL, NULL); }
static int f_set_unready(void) { return hh_manager_set_unready(mgr, "", "down"); }

typedef struct export_case {
    const char *name;
    int (*call)(void); /* NULL: no failure to report, for the reason below */
    const char *why_not;
} export_case;

static const export_case exports[] = {
    {"hh_version", NULL, "a static string"},
    {"hh_strerror", NULL, "a static string for any code"},
    {"hh_last_error", NULL, "reads the reason"},
    {"hh_redis_options_init", NULL, "fills defaults"},
    {"hh_redis_url_check", f_url, NULL},
    {"hh_redis_options_check", f_ropts, NULL},
    {"hh_name_check", f_name, NULL},
    {"hh_push_options_init", NULL, "fills defaults"},
    {"hh_client_new", f_client_new, NULL},
    {"hh_client_free", NULL, "void"},
    {"hh_client_last_error", NULL, "reads the client's error"},
    {"hh_client_push", f_push, NULL},
    {"hh_client_push_item", f_push_item, NULL},
    {"hh_client_push_bulk", f_push_bulk, NULL},
    {"hh_client_stats", f_stats, NULL},
    {"hh_client_processes", f_processes, NULL},
    {"hh_client_signal", f_signal, NULL},
    {"hh_client_kill", f_kill, NULL},
    {"hh_jobset_entry_get", NULL, "NULL means absent (or out of memory), as hh_job_get"},
    {"hh_jobset_size", f_js_size, NULL},
    {"hh_jobset_size", f_js_size_down, NULL},
    {"hh_jobset_each", f_js_each, NULL},
    {"hh_jobset_find", f_js_find, NULL},
    {"hh_jobset_act", f_js_act, NULL},
    {"hh_jobset_act_all", f_js_act_all, NULL},
    {"hh_jobset_clear", f_js_clear, NULL},
    {"hh_queues_list", f_queues, NULL},
    {"hh_queue_show", f_queue_show, NULL},
    {"hh_queue_clear", f_queue_clear, NULL},
    {"hh_jobset_page", f_js_page, NULL},
    {"hh_queue_page", f_queue_page, NULL},
    {"hh_queue_delete_job", f_queue_delete, NULL},
    {"hh_stats_history", f_history, NULL},
    {"hh_job_metrics_summary", f_metrics, NULL},
    {"hh_backtrace_decode", NULL, "NULL for input that is not an encoded backtrace"},
    {"hh_busy", f_busy, NULL},
    {"hh_cron_save", f_cron_save, NULL},
    {"hh_cron_save", f_cron_save_bad, NULL},
    {"hh_cron_list", f_cron_list, NULL},
    {"hh_cron_set_enabled", f_cron_enable, NULL},
    {"hh_cron_delete", f_cron_delete, NULL},
    {"hh_cron_enqueue_now", f_cron_enqueue, NULL},
    {"hh_cron_history", f_cron_history, NULL},
    {"hh_cron_use_layout", f_cron_layout, NULL},
    {"hh_cron_use_layout", f_cron_layout_null, NULL},
    {"hh_jobs_find", f_jobs_find, NULL},
    {"hh_job_jid", NULL, "an accessor of a job a handler runs"},
    {"hh_job_class", NULL, "an accessor"},
    {"hh_job_queue", NULL, "an accessor"},
    {"hh_job_args", NULL, "an accessor"},
    {"hh_job_payload", NULL, "an accessor"},
    {"hh_job_retry_count", NULL, "an accessor (-1: absent)"},
    {"hh_job_get", NULL, "NULL means absent (or out of memory)"},
    {"hh_job_fail", NULL, "void: records the job's failure"},
    {"hh_job_set_backtrace", NULL, "void"},
    {"hh_job_cancelled", NULL, "a flag"},
    {"hh_job_handler_class", NULL, "an accessor"},
    {"hh_chain_next", NULL, "returns the handler's result, not an hh_err"},
    {"hh_manager_options_init", NULL, "fills defaults"},
    {"hh_manager_options_check", f_mopts, NULL},
    {"hh_manager_new", f_mnew, NULL},
    {"hh_manager_free", NULL, "void"},
    {"hh_manager_register", f_register, NULL},
    {"hh_manager_register_default", f_register_default, NULL},
    {"hh_manager_has_handler", NULL, "a flag"},
    {"hh_manager_use", f_use, NULL},
    {"hh_manager_start", f_start, NULL},
    {"hh_manager_quiet", NULL, "void, async-signal-safe"},
    {"hh_manager_stop", NULL, "void, async-signal-safe"},
    {"hh_manager_dump", NULL, "void, async-signal-safe"},
    {"hh_manager_wait", f_wait, NULL},
    {"hh_manager_detached", NULL, "a count"},
    {"hh_manager_identity", NULL, "an accessor"},
    {"hh_manager_get_stats", f_get_stats, NULL},
    {"hh_manager_on_heartbeat", f_on_heartbeat, NULL},
    {"hh_manager_set_unready", f_set_unready, NULL},
    {"hh_manager_log", NULL, "void: logs"},
    {"hh_log_format_line", NULL, "NULL only when out of memory"},
};
#define NEXPORTS (sizeof(exports) / sizeof(exports[0]))

static int in_table(const char *name) {
    for (size_t i = 0; i < NEXPORTS; i++)
        if (strcmp(exports[i].name, name) == 0) return 1;
    return 0;
}

/* The name before the first '(' of each HH_EXPORT declaration, as
 * tests/abi/check_symbols.sh reads them; returns how many, each checked
 * against the table. */
static size_t header_exports_covered(void) {
    FILE *f = fopen(HH_HEADER_PATH, "r");
    assert_non_null(f);
    char line[1024], decl[4096] = "";
    int on = 0;
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "HH_EXPORT", 9) == 0) on = 1, decl[0] = '\0';
        if (!on) continue;
        strncat(decl, line, sizeof(decl) - strlen(decl) - 1);
        char *paren = strchr(decl, '(');
        if (!paren) continue;
        on = 0;
        char *end = paren;
        while (end > decl && (end[-1] == ' ')) end--;
        char *start = end;
        while (start > decl && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) start--;
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(end - start), start);
        if (!in_table(name)) fail_msg("%s is exported but test_errors.c does not cover it: add it to exports[]", name);
        n++;
    }
    fclose(f);
    return n;
}

static void test_every_export_says_why(void **s) {
    (void)s;
    /* a Redis that was there and went away: its loopback port has
     * nothing listening once the client has connected */
    uh_redis gone;
    assert_int_equal(uh_redis_start(&gone), 0);
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = gone.url;
    ro.connect_timeout = 1;
    ro.command_timeout = 1;
    int err;
    down = hh_client_new(&ro, &err);
    assert_non_null(down);
    uh_redis_stop(&gone);
    hh_manager_options mo;
    opts_init(&mo);
    mo.concurrency = 1;
    mgr = hh_manager_new(&mo, &err);
    assert_non_null(mgr);
    assert_int_equal(hh_manager_register(mgr, "K", handler, NULL), HH_OK);
    assert_int_equal(hh_manager_register(mgr, "K", handler, NULL), HH_ERR_EXISTS); /* start refuses now */
    size_t in_header = header_exports_covered(), distinct = 0;
    for (size_t i = 0; i < NEXPORTS; i++) {
        if (i == 0 || strcmp(exports[i].name, exports[i - 1].name) != 0) distinct++;
        if (!exports[i].call) continue;
        hh__fail(HH_ERR_IO, "sentinel reason"); /* what a stale reason would look like */
        int rc = exports[i].call();
        if (rc == HH_OK) fail_msg("%s did not fail", exports[i].name);
        const char *why = hh_last_error();
        if (!*why || strcmp(why, "sentinel reason") == 0)
            fail_msg("%s failed (%s) and left hh_last_error() '%s'", exports[i].name, hh_strerror(rc), why);
    }
    assert_int_equal(in_header, distinct); /* and nothing in the table that is no export */
    hh_client_free(down);
    hh_manager_free(mgr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manager_new_says_why),          cmocka_unit_test(test_manager_start_and_register_say_why),
        cmocka_unit_test(test_failed_register_refuses_start), cmocka_unit_test(test_client_new_says_why_quietly),
        cmocka_unit_test(test_push_says_what_and_where),      cmocka_unit_test(test_every_export_says_why),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
