/* shapes_driver.c -- one hiredhand drain run in one shape, for bench/shapes.sh.
 *
 *   shapes_driver -u URL -n JOBS -q QUEUES -c CONCURRENCY -p PROCESSES
 *                 [--weighted] [--basic] [--timeout S] [--sleep-us US] [--check-once]
 *
 * Loads JOBS no-op jobs round robin into QUEUES queues (q1..qN) under
 * aside keys, forks PROCESSES workers (each one hh_manager, strict or
 * weighted order, reliable or basic fetch), waits until every worker has
 * beaten once, then RENAMEs the aside keys to queue:<q> in one MULTI: the
 * measurement window starts there and ends when the workers' shared counter
 * reaches JOBS. Redis CPU (INFO cpu) and calls (INFO commandstats) are read
 * at both ends; each worker reports its own CPU in the window and its peak
 * RSS (VmHWM). Checks that exactly JOBS jobs ran and every queue and
 * in-progress list is empty afterwards. --sleep-us makes each job sleep
 * (a job waiting on I/O: the shape where every thread must be busy).
 * --check-once marks each job's index (its args) and checks that every
 * job ran exactly once, not only how many ran (for fault tests: a job run
 * twice and one lost would cancel out in the count).
 *
 * Prints one line: key=value pairs. Exit 0, 1 on a failed check, 2 on a
 * usage or setup error. Self-contained: built by bench/shapes.sh with cc
 * against the libhiredhand in the build folder. */
#include <errno.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "hiredhand.h"

#define MAXPROC 16

typedef struct shared {
    atomic_long processed;
    atomic_int ready; /* workers that beat once */
    atomic_int go;    /* window open: workers take their CPU snapshot */
    atomic_int stop;  /* window closed */
    double cpu0[MAXPROC], cpu1[MAXPROC];
    long hwm[MAXPROC];
} shared;

static shared *sh;
static atomic_uchar *seen; /* --check-once: runs per job index, shared */
static long seen_n;
static long sleep_us;

static int noop(hh_job *job, void *udata) {
    (void)job, (void)udata;
    if (sleep_us > 0) sleep_s((double)sleep_us / 1e6);
    if (seen) {
        const char *a = hh_job_args(job); /* "[i]" */
        long i = a && a[0] == '[' ? atol(a + 1) : -1;
        if (i >= 0 && i < seen_n && atomic_load(&seen[i]) < 255) atomic_fetch_add(&seen[i], 1);
    }
    atomic_fetch_add(&sh->processed, 1);
    return 0;
}

static void quiet_log(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    if (level >= HH_LOG_WARN) fprintf(stderr, "worker: %s\n", msg);
}

typedef struct opts {
    const char *url;
    long n;
    int nq, conc, nproc, weighted, basic;
    double timeout;
} opts;

static int worker(const opts *o, int idx) {
    hh_queue_weight *qs = calloc((size_t)o->nq, sizeof(*qs));
    char **names = calloc((size_t)o->nq, sizeof(*names));
    for (int i = 0; i < o->nq; i++) {
        names[i] = malloc(16);
        snprintf(names[i], 16, "q%d", i + 1);
        qs[i].name = names[i];
        qs[i].weight = o->weighted ? 1 + i % 3 : 0;
    }
    hh_manager_options mo;
    hh_manager_options_init(&mo);
    mo.redis.url = o->url;
    mo.queues = qs;
    mo.nqueues = (size_t)o->nq;
    mo.concurrency = o->conc;
    mo.fetch = o->basic ? HH_FETCH_BASIC : HH_FETCH_RELIABLE;
    mo.log = quiet_log;
    mo.log_level = HH_LOG_WARN; /* as make bench runs every system: no per-job lines */
    mo.heartbeat_interval = 1;
    int err = 0;
    hh_manager *m = hh_manager_new(&mo, &err);
    if (!m || hh_manager_register(m, "NoopJob", noop, NULL) != HH_OK || hh_manager_start(m) != HH_OK) {
        fprintf(stderr, "worker %d: cannot start: %s\n", idx, hh_strerror(err));
        return 2;
    }
    hh_manager_stats st = {.struct_size = sizeof st}; /* no queues wanted */
    double until = mono() + 30;
    do {
        sleep_s(0.01);
        hh_manager_get_stats(m, &st);
    } while (st.heartbeat_last_pushed_at <= 0 && mono() < until);
    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go)) sleep_s(0.001);
    sh->cpu0[idx] = cpu_seconds();
    while (!atomic_load(&sh->stop)) sleep_s(0.001);
    sh->cpu1[idx] = cpu_seconds();
    hh_manager_stop(m);
    hh_manager_wait(m, 30);
    hh_manager_free(m);
    sh->hwm[idx] = vm_hwm_kib();
    for (int i = 0; i < o->nq; i++) free(names[i]);
    free(names);
    free(qs);
    return 0;
}

/* INFO cpu: used_cpu_sys + used_cpu_user; INFO commandstats: sum of calls. */
static int redis_snapshot(redisContext *c, double *cpu, long long *calls) {
    redisReply *r = redisCommand(c, "INFO cpu");
    if (!r || r->type != REDIS_REPLY_STRING) return -1;
    double s = 0, u = 0;
    const char *p = strstr(r->str, "used_cpu_sys:"), *q = strstr(r->str, "used_cpu_user:");
    if (!p || !q) return -1;
    s = atof(p + 13), u = atof(q + 14);
    *cpu = s + u;
    freeReplyObject(r);
    r = redisCommand(c, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) return -1;
    long long total = 0;
    for (const char *x = strstr(r->str, "calls="); x; x = strstr(x + 6, "calls=")) total += atoll(x + 6);
    /* minus this process's own INFO calls: two per snapshot, counted before */
    *calls = total;
    freeReplyObject(r);
    return 0;
}

static int load(redisContext *c, const opts *o) {
    char payload[512];
    long sent = 0;
    for (long i = 0; i < o->n; i++) {
        int q = (int)(i % o->nq) + 1;
        int len = snprintf(payload, sizeof(payload),
                           "{\"class\":\"NoopJob\",\"args\":[%ld],\"retry\":true,\"queue\":\"q%d\","
                           "\"jid\":\"%012lx%012lx\",\"created_at\":1700000000.0,\"enqueued_at\":1700000000.0}",
                           i, q, (long)getpid(), i);
        redisAppendCommand(c, "LPUSH shapes:aside:%d %b", q, payload, (size_t)len);
        sent++;
        if (sent == 1000 || i + 1 == o->n) {
            for (long k = 0; k < sent; k++) {
                redisReply *r;
                if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_INTEGER) return -1;
                freeReplyObject(r);
            }
            sent = 0;
        }
    }
    for (int q = 1; q <= o->nq; q++) {
        redisReply *r = redisCommand(c, "SADD queues q%d", q);
        if (r) freeReplyObject(r);
    }
    return 0;
}

int main(int argc, char **argv) {
    opts o = {NULL, 100000, 1, 10, 1, 0, 0, 300};
    static const struct option lo[] = {
        {"weighted", no_argument, NULL, 'w'},      {"basic", no_argument, NULL, 'B'},
        {"timeout", required_argument, NULL, 'T'}, {"sleep-us", required_argument, NULL, 'S'},
        {"check-once", no_argument, NULL, 'O'},    {NULL, 0, NULL, 0}};
    int ch, check_once = 0;
    while ((ch = getopt_long(argc, argv, "u:n:q:c:p:", lo, NULL)) != -1) {
        switch (ch) {
        case 'u': o.url = optarg; break;
        case 'n': o.n = atol(optarg); break;
        case 'q': o.nq = atoi(optarg); break;
        case 'c': o.conc = atoi(optarg); break;
        case 'p': o.nproc = atoi(optarg); break;
        case 'w': o.weighted = 1; break;
        case 'B': o.basic = 1; break;
        case 'T': o.timeout = atof(optarg); break;
        case 'S': sleep_us = atol(optarg); break;
        case 'O': check_once = 1; break;
        default: fprintf(stderr, "usage: see the head of bench/shapes_driver.c\n"); return 2;
        }
    }
    if (!o.url || o.n < 1 || o.nq < 1 || o.conc < 1 || o.nproc < 1 || o.nproc > MAXPROC) {
        fprintf(stderr, "shapes_driver: bad arguments\n");
        return 2;
    }
    const char *hp = strstr(o.url, "://");
    char host[128] = "127.0.0.1";
    int port = 6379;
    if (hp && sscanf(hp + 3, "%127[^:]:%d", host, &port) < 1) return 2;
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) {
        fprintf(stderr, "shapes_driver: cannot connect to %s:%d\n", host, port);
        return 2;
    }
    redisReply *r = redisCommand(c, "FLUSHALL");
    if (r) freeReplyObject(r);
    if (load(c, &o) != 0) {
        fprintf(stderr, "shapes_driver: loading failed\n");
        return 2;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) return 2;
    memset(sh, 0, sizeof(*sh));
    if (check_once) {
        seen = mmap(NULL, (size_t)o.n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (seen == MAP_FAILED) return 2;
        seen_n = o.n;
    }
    pid_t pids[MAXPROC];
    for (int i = 0; i < o.nproc; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(worker(&o, i));
    }
    double until = mono() + 60;
    while (atomic_load(&sh->ready) < o.nproc && mono() < until) sleep_s(0.01);
    sleep_s(0.3); /* boot work (recovery, first beats) settles */
    redisReply *x = redisCommand(c, "CONFIG RESETSTAT");
    if (x) freeReplyObject(x);
    double cpu0, cpu1;
    long long calls0, calls1;
    if (redis_snapshot(c, &cpu0, &calls0) != 0) return 2;
    redisAppendCommand(c, "MULTI");
    for (int q = 1; q <= o.nq; q++) redisAppendCommand(c, "RENAME shapes:aside:%d queue:q%d", q, q);
    redisAppendCommand(c, "EXEC");
    for (int q = 0; q < o.nq + 2; q++) {
        if (redisGetReply(c, (void **)&x) != REDIS_OK) return 2;
        freeReplyObject(x);
    }
    atomic_store(&sh->go, 1);
    double t0 = mono();
    until = t0 + o.timeout;
    while (atomic_load(&sh->processed) < o.n && mono() < until) sleep_s(0.0005);
    double t1 = mono();
    atomic_store(&sh->stop, 1);
    if (redis_snapshot(c, &cpu1, &calls1) != 0) return 2;
    int bad = atomic_load(&sh->processed) != o.n;
    double wcpu = 0;
    long hwm = 0;
    for (int i = 0; i < o.nproc; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
        wcpu += sh->cpu1[i] - sh->cpu0[i];
        if (sh->hwm[i] > hwm) hwm = sh->hwm[i];
    }
    long processed = atomic_load(&sh->processed);
    /* nothing left behind: queues and in-progress lists empty */
    long left = 0;
    for (int q = 1; q <= o.nq; q++) {
        x = redisCommand(c, "LLEN queue:q%d", q);
        if (x && x->type == REDIS_REPLY_INTEGER) left += x->integer;
        if (x) freeReplyObject(x);
    }
    x = redisCommand(c, "EVAL %s 0",
                     "local n = 0 for _, k in ipairs(redis.call('KEYS', 'hiredhand:inprogress:*')) do "
                     "n = n + redis.call('LLEN', k) end return n");
    if (x && x->type == REDIS_REPLY_INTEGER) left += x->integer;
    if (x) freeReplyObject(x);
    if (left) bad = 1;
    long twice = 0, never = 0;
    for (long i = 0; seen && i < seen_n; i++) {
        if (atomic_load(&seen[i]) > 1) twice++;
        if (atomic_load(&seen[i]) == 0) never++;
    }
    if (twice || never) bad = 1;
    if (seen) printf("twice=%ld never=%ld ", twice, never);
    double secs = t1 - t0;
    long long calls = calls1 - calls0 - 2; /* this process's two INFO calls */
    printf("jobs=%ld secs=%.3f jobs_s=%.0f redis_us_job=%.2f worker_us_job=%.2f cmds_job=%.3f peak_rss_kib=%ld "
           "left=%ld ok=%d\n",
           processed, secs, (double)processed / secs, (cpu1 - cpu0) * 1e6 / (double)o.n, wcpu * 1e6 / (double)o.n,
           (double)calls / (double)o.n, hwm, left, !bad);
    if (getenv("SHAPES_COMMANDS")) { /* calls per job of each command in the window */
        x = redisCommand(c, "INFO commandstats");
        for (const char *k = x && x->type == REDIS_REPLY_STRING ? strstr(x->str, "cmdstat_") : NULL; k;
             k = strstr(k + 8, "cmdstat_")) {
            char name[64];
            long long n = 0;
            if (sscanf(k + 8, "%63[^:]:calls=%lld", name, &n) == 2 && n >= o.n / 100)
                printf("  %s %.3f/job\n", name, (double)n / (double)o.n);
        }
        if (x) freeReplyObject(x);
    }
    redisFree(c);
    return bad;
}
