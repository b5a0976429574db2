/* test_recovery.c -- src/recovery.c against a private redis-server: which
 * in-progress lists a scan takes (an owner whose heartbeat hash is gone;
 * never a live owner's, never this process's own), that each job goes
 * back to its queue once and a job recovered past max_recoveries goes to
 * the dead set as hiredhand::PoisonPill; the outage rule and the fleet
 * lock that hold a scan back; the registry of fetchers pruned of dead
 * owners; and at boot, whether a fixed identity is live elsewhere (its
 * hash, its membership of `processes`, and on this host its pid). */
#include "unit_helpers.h"

#include "keys.h"
#include "recovery.h"
#include "redis.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

#define run(...) freeReplyObject(uh_cmd(&srv, __VA_ARGS__))

typedef struct fx {
    uh_conn_fixture c;
    hh__recovery_env env;
    hh__lease_env lease; /* .lease NULL: peers judgeable; `held`: not yet (no beat) */
    struct hh__lease *held;
    hh__ctx ctx;
    hh__flags flags;
    hh__counters counters;
} fx;

/* The outage rule as lease.c answers it: no lease state (basic fetch)
 * judges at once; a lease that has seen no beat yet holds the scan back. */
static void judgeable(fx *f, int yes) { f->lease.lease = yes ? NULL : f->held; }

static int setup(void **s) {
    fx *f = calloc(1, sizeof(*f));
    if (!f || uh_conn_fixture_open(&f->c, srv.url, NULL) != 0) return -1;
    uh_flushall(&srv);
    hh__ctx *x = &f->ctx;
    x->keys = &f->c.keys;
    x->log = &f->c.log;
    x->cfg = &f->c.cfg;
    x->identity = "me";
    x->hostname = "thishost";
    x->opts.fetch = HH_FETCH_RELIABLE;
    x->opts.recovery_interval = 60;
    x->opts.heartbeat_interval = 5;
    x->opts.dead_timeout = 15552000;
    x->opts.dead_max_jobs = 10000;
    x->opts.max_recoveries = 3;
    x->opts.concurrency = 1;
    x->flags = &f->flags;
    x->counters = &f->counters;
    hh__recovery_env *e = &f->env;
    e->ctx = x;
    f->lease.ctx = x;
    if (!(f->held = hh__lease_new(&f->lease))) return -1;
    e->lease = &f->lease;
    *s = f;
    return 0;
}

static int teardown(void **s) {
    fx *f = *s;
    uh_conn_fixture_close(&f->c);
    hh__lease_free(f->held);
    free(f);
    return 0;
}

#define JOB(jid) "{\"class\":\"K\",\"queue\":\"q\",\"jid\":\"" jid "\",\"args\":[]}"

/* (A dead owner is "gone" here: its heartbeat hash's key would be the
 * identity itself, and an identity "dead" names the dead set's key.) */

/* The jobs of a dead owner go back to their queue, each once; a live
 * owner's and our own lists stay as they are. */
static void test_scan_takes_dead_owners_only(void **s) {
    fx *f = *s;
    run("RPUSH hiredhand:inprogress:gone|q %s %s", JOB("a"), JOB("b"));
    run("RPUSH hiredhand:inprogress:live|q %s", JOB("c"));
    run("HSET live beat 1");
    run("RPUSH hiredhand:inprogress:me|q %s", JOB("d")); /* ours, and no hash */
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), 2);
    assert_int_equal(atomic_load(&f->counters.recovered), 2);
    assert_int_equal(uh_int(&srv, "EXISTS hiredhand:inprogress:gone|q"), 0);
    /* the oldest (the list's tail) is pushed back first, as the fetch took it */
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 2);
    char *first = uh_str(&srv, "LINDEX queue:q 0");
    assert_string_equal(first, JOB("b"));
    free(first);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:live|q"), 1);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:me|q"), 1);
    /* each recovery counted per jid (the poison-pill limit) */
    char *n = uh_str(&srv, "GET hiredhand:recoveries:a");
    assert_string_equal(n, "1");
    free(n);
}

/* The fourth recovery of one job (max_recoveries 3) buries it. */
static void test_poison_pill_to_dead(void **s) {
    fx *f = *s;
    run("SET hiredhand:recoveries:p 3");
    run("RPUSH hiredhand:inprogress:gone|q %s", JOB("p"));
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), 0); /* none back to a queue */
    assert_int_equal(atomic_load(&f->counters.recovered), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 0);
    assert_int_equal(uh_int(&srv, "EXISTS hiredhand:inprogress:gone|q"), 0);
    redisReply *r = uh_cmd(&srv, "ZRANGE dead 0 -1");
    assert_non_null(r);
    assert_int_equal(r->elements, 1);
    json_t *j = json_loads(r->element[0]->str, 0, NULL);
    freeReplyObject(r);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "jid")), "p");
    assert_string_equal(json_string_value(json_object_get(j, "error_class")), "hiredhand::PoisonPill");
    assert_non_null(strstr(json_string_value(json_object_get(j, "error_message")), "died 4 times (max_recoveries 3)"));
    assert_true(json_is_number(json_object_get(j, "failed_at")));
    json_decref(j);
    /* max_recoveries 0: no limit */
    f->ctx.opts.max_recoveries = 0;
    run("DEL hiredhand:recovery-lock");
    run("SET hiredhand:recoveries:z 50");
    run("RPUSH hiredhand:inprogress:gone|q %s", JOB("z"));
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), 1);
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 1);
}

/* Before this process's own beats prove that live peers had time to beat
 * (the outage rule), and while another process holds the fleet lock, no
 * scan runs: a missing hash proves nothing then. */
static void test_scan_held_back(void **s) {
    fx *f = *s;
    run("RPUSH hiredhand:inprogress:gone|q %s", JOB("a"));
    judgeable(f, 0);
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), -1);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:gone|q"), 1);
    assert_int_equal(uh_int(&srv, "EXISTS hiredhand:recovery-lock"), 0);
    judgeable(f, 1);
    run("SET hiredhand:recovery-lock other PX 30000");
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), -1);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:gone|q"), 1);
    run("DEL hiredhand:recovery-lock");
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), 1);
    /* the lock stays (it expires): a second scan right after does nothing */
    long long pttl = uh_int(&srv, "PTTL hiredhand:recovery-lock");
    assert_true(pttl > 0 && pttl <= 30000);
    run("RPUSH hiredhand:inprogress:gone|q %s", JOB("b"));
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), -1);
}

/* Registered fetchers that are dead are forgotten; live ones and we stay. */
static void test_fetchers_pruned(void **s) {
    fx *f = *s;
    run("SADD hiredhand:fetchers me live gone");
    run("HSET live beat 1");
    assert_int_equal(hh__recovery_scan(&f->env, &f->c.conn), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER hiredhand:fetchers gone"), 0);
    assert_int_equal(uh_int(&srv, "SISMEMBER hiredhand:fetchers live"), 1);
    assert_int_equal(uh_int(&srv, "SISMEMBER hiredhand:fetchers me"), 1);
}

/* A heartbeat hash of identity "me" naming host and pid. */
static void write_me(const char *host, long pid, int member) {
    char info[256];
    snprintf(info, sizeof(info), "{\"hostname\":\"%s\",\"pid\":%ld,\"started_at\":%.3f}", host, pid, hh__now() - 5);
    run("HSET me info %s beat %.3f", info, hh__now());
    if (member) run("SADD processes me");
}

static pid_t sleeper(void) {
    pid_t p = fork();
    if (p == 0) {
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    return p;
}

/* A fixed identity is refused while another live process holds it; a dead
 * pid, a hash outside `processes` or our own pid free it, and then boot
 * pushes back what the earlier run of the identity left. */
static void test_boot_identity(void **s) {
    fx *f = *s;
    f->ctx.fixed_identity = 1;
    pid_t live = sleeper();
    assert_true(live > 0);
    write_me("thishost", (long)live, 1);
    run("RPUSH hiredhand:inprogress:me|q %s", JOB("left"));
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_ERR_EXISTS);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:me|q"), 1);
    /* on another host only the hash can tell */
    write_me("otherhost", 999999, 1);
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_ERR_EXISTS);
    /* the live pid, but the identity left `processes` (a clean stop) */
    run("SREM processes me");
    write_me("thishost", (long)live, 0);
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_OK);
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 1);
    assert_int_equal(uh_int(&srv, "SISMEMBER hiredhand:fetchers me"), 1);
    /* the pid is gone: free */
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    write_me("thishost", (long)live, 1);
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_OK);
    /* our own pid (a container restarted as pid 1): free */
    write_me("thishost", (long)getpid(), 1);
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_OK);
    /* a random identity owns nothing: its lists are not looked at */
    f->ctx.fixed_identity = 0;
    run("RPUSH hiredhand:inprogress:me|q %s", JOB("x"));
    assert_int_equal(hh__recovery_boot(&f->env, &f->c.conn), HH_OK);
    assert_int_equal(uh_int(&srv, "LLEN hiredhand:inprogress:me|q"), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scan_takes_dead_owners_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poison_pill_to_dead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_held_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetchers_pruned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_boot_identity, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
