/* bench.c -- hh_bench: the hiredhand row of `make bench`.
 *
 * Drives libhiredhand through its public API only (hiredhand.h); a plain
 * hiredis connection is used for what the API does not offer: INFO
 * commandstats and cpu, GET stat:*, LLEN and the RENAMEs that release the
 * jobs. bench/run.sh starts Redis, calls the modes below in separate
 * invocations and prints the table against the peers (the other drivers
 * in bench/).
 * Keys: queue:<q>, hh_bench:staging:<q>, stat:processed, stat:failed, and
 * whatever a manager touches.
 *
 *   hh_bench enqueue -u URL -n N [-b 1000] [--queues K]
 *       push N NoopJob jobs (args [i]) with hh_client_push_bulk, -b per
 *       call; job i to queue i mod K ("default" when K is 1, else q1..qK).
 *   hh_bench process -u URL -n N -c C [--queues K] [--procs P]
 *                    [--fetch reliable|basic] [--weighted] [--prefix KEY]
 *                    [--timeout S] [--stall S]
 *       the K queues must hold exactly N jobs. They are moved aside (RENAME,
 *       in one MULTI), P worker processes are forked, each a manager of
 *       concurrency C on the K queues (strict, or weight 1 each), and once
 *       every one has beaten and settled the jobs are moved back: the clock,
 *       the workers' CPU (/proc), Redis's CPU (INFO cpu) and commandstats
 *       start there and end at the N-th job. Each job does one counter
 *       increment and marks its index in memory shared with the driver, so
 *       every job is checked to have run exactly once; then the workers stop
 *       (final counter flush) and stat:processed / stat:failed must have
 *       grown by exactly N / 0. A run without progress for --stall s (a lost
 *       job) ends early and fails. Prints KEY_* lines (default proc_c<C>).
 *   hh_bench latency -u URL [-c 10] [-j 1000] [--rate 200] [--idle 10]
 *       a manager on critical,default,low (strict order), idle; a second
 *       thread pushes j LatencyJob jobs at --rate per second, round robin
 *       over the queues, with hh_client_push; the handler records now -
 *       enqueued_at. Then the manager sits idle for --idle s: CPU % and
 *       Redis commands/s. Prints lat_* and idle_* lines.
 *   hh_bench pickup -u URL [-c 3] [--queues 3] [--busy] [-j 100] [--prefix P]
 *       a manager on N queues (strict; critical,default,low when N is 3,
 *       else q1..qN), one thread held by a BusyJob with --busy; then j
 *       LatencyJob jobs pushed one at a time, each once the previous one
 *       started, to queue (i * 37) % N: now - enqueued_at at the handler.
 *       Prints P_p50_ms, P_p99_ms, P_max_ms, P_jobs, P_ok.
 *   hh_bench trickle -u URL [-c 10] [--queues 3] [-j 1000] [--rate 200] [--prefix P]
 *       a manager on N strict queues (q1..qN), idle; j LatencyJob jobs pushed
 *       at --rate per second, job i to queue (i * 37) % N: Redis CPU and
 *       commands per job over the pushes and pickups (what a trickle of jobs
 *       costs with many queues), worker CPU per job, pickup latency. Prints
 *       P_redis_cpu_us_per_job, P_cmds_per_job, P_p99_ms, P_ok... (P: trickle).
 *
 * Output: one "key=value" per line on stdout; progress and errors on stderr.
 * Exit status: 0, 1 when a correctness check failed, 2 on a usage or setup
 * error. Every wait is bounded. Speed figures are printed, never checked. */
#include <errno.h>
#include <getopt.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "hiredhand.h"

/* ------------------------------------------------------------ utilities */

static double realnow(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("hh_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void out(const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s=", key);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

/* ------------------------------------------------------------ options */

typedef struct bopts {
    const char *url;
    size_t n;           /* jobs to enqueue / process */
    int conc;           /* manager concurrency */
    size_t batch;       /* jobs per push_bulk call */
    size_t jobs;        /* latency jobs */
    double rate;        /* latency pushes per second */
    double idle;        /* idle window, seconds */
    double settle;      /* seconds between the first beat and the measurement */
    double timeout;     /* bound on the processing wait, seconds */
    const char *dump;   /* latency: write every job's figures here */
    size_t queues;      /* pickup: how many queues */
    int busy;           /* pickup: hold one thread with a BusyJob */
    const char *prefix; /* pickup, process: key prefix of the output */
    int prefix_set;     /* process: --prefix given (else proc_c<C>) */
    int procs;          /* process: worker processes, each -c C */
    int basic;          /* --fetch basic */
    int weighted;       /* process: queues weighted 1 each rather than strict */
    double stall;       /* process: give up after this long without progress */
} bopts;

/* ------------------------------------------------------------ hiredis side */

/* A direct connection for INFO / GET / LLEN / RENAME. Accepts
 * redis://[user:pass@]host:port[/db] (no password support needed: the
 * benchmark's Redis is private and on loopback). */
static redisContext *raw_connect(const char *url) {
    char host[256] = "127.0.0.1";
    int port = 6379, db = 0;
    const char *p = url;
    if (!p || !*p) p = getenv("REDIS_URL");
    if (!p || !*p) p = "redis://127.0.0.1:6379/0";
    if (strncmp(p, "redis://", 8) != 0) {
        note("only redis:// URLs are supported here: %s", p);
        return NULL;
    }
    p += 8;
    const char *at = strchr(p, '@');
    if (at) p = at + 1;
    size_t hl = strcspn(p, ":/");
    if (hl > 0 && hl < sizeof(host)) {
        memcpy(host, p, hl);
        host[hl] = '\0';
    }
    p += hl;
    if (*p == ':') port = atoi(p + 1), p += 1 + strcspn(p + 1, "/");
    if (*p == '/' && p[1]) db = atoi(p + 1);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        note("cannot connect to %s:%d: %s", host, port, c ? c->errstr : "out of memory");
        if (c) redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (db) {
        redisReply *r = redisCommand(c, "SELECT %d", db);
        if (r) freeReplyObject(r);
    }
    return c;
}

/* Runs a command that must answer an integer (or a number as a string, or
 * nil = 0). Returns -1 on an error. */
static long long raw_int(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = -1;
    if (!r) {
        note("redis: %s", c->errstr);
        return -1;
    }
    if (r->type == REDIS_REPLY_INTEGER) v = r->integer;
    else if (r->type == REDIS_REPLY_STRING) v = atoll(r->str);
    else if (r->type == REDIS_REPLY_NIL) v = 0;
    else if (r->type == REDIS_REPLY_ERROR) note("redis: %s", r->str);
    freeReplyObject(r);
    return v;
}

/* INFO commandstats, as (command, calls) pairs. Redis updates a command's
 * counters after it ran, so a snapshot does not include its own INFO: the
 * delta between two snapshots holds the first INFO and not the second. */
#define MAX_CMDS 512
typedef struct cmdstat {
    char name[64];
    long long calls;
} cmdstat;
typedef struct cmdstats {
    cmdstat v[MAX_CMDS];
    size_t n;
} cmdstats;

static int cmdstats_read(redisContext *c, cmdstats *s) {
    s->n = 0;
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) {
        note("INFO commandstats failed: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        if (r) freeReplyObject(r);
        return -1;
    }
    const char *p = r->str;
    while ((p = strstr(p, "cmdstat_")) != NULL && s->n < MAX_CMDS) {
        p += 8;
        size_t nl = strcspn(p, ":");
        const char *calls = strstr(p, "calls=");
        if (!calls) break;
        if (nl >= sizeof(s->v[0].name)) nl = sizeof(s->v[0].name) - 1;
        memcpy(s->v[s->n].name, p, nl);
        s->v[s->n].name[nl] = '\0';
        s->v[s->n].calls = atoll(calls + 6);
        s->n++;
    }
    freeReplyObject(r);
    return 0;
}

static int cmd_cmp_desc(const void *a, const void *b) {
    const cmdstat *x = a, *y = b;
    return (y->calls > x->calls) - (y->calls < x->calls);
}

/* d = b - a per command (sorted by calls, descending); returns the total. */
static long long cmdstats_delta(const cmdstats *a, const cmdstats *b, cmdstats *d) {
    long long total = 0;
    d->n = 0;
    for (size_t i = 0; i < b->n; i++) {
        long long before = 0;
        for (size_t j = 0; j < a->n; j++)
            if (strcmp(a->v[j].name, b->v[i].name) == 0) {
                before = a->v[j].calls;
                break;
            }
        long long diff = b->v[i].calls - before;
        if (diff <= 0) continue;
        d->v[d->n] = b->v[i];
        d->v[d->n].calls = diff;
        d->n++;
        total += diff;
    }
    qsort(d->v, d->n, sizeof(d->v[0]), cmd_cmp_desc);
    return total;
}

/* Removes `k` calls of `name` (our own commands) from the delta. */
static long long cmdstats_discount(cmdstats *d, long long total, const char *name, long long k) {
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->v[i].name, name) == 0) {
            long long take = d->v[i].calls < k ? d->v[i].calls : k;
            d->v[i].calls -= take;
            return total - take;
        }
    return total;
}

/* "cmd:x.xx,cmd:y.yy" with calls divided by `per`, the top `max` entries. */
static void out_breakdown(const char *key, const cmdstats *d, double per, size_t max) {
    char buf[1024];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0, shown = 0; i < d->n && shown < max; i++) {
        if (d->v[i].calls <= 0) continue;
        int w = snprintf(buf + len, sizeof(buf) - len, "%s%s:%.3g", shown ? "," : "", d->v[i].name,
                         (double)d->v[i].calls / per);
        if (w < 0 || (size_t)w >= sizeof(buf) - len) break;
        len += (size_t)w;
        shown++;
    }
    out(key, "%s", buf);
}

/* ------------------------------------------------------------ manager helpers */

static atomic_int log_problems;

static void log_sink(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    if (level >= HH_LOG_WARN) atomic_fetch_add(&log_problems, 1);
    fprintf(stderr, "hiredhand[%s]: %s\n",
            level >= HH_LOG_ERROR      ? "error"
                : level == HH_LOG_WARN ? "warn"
                                       : "info",
            msg);
}

static hh_manager *manager_make(const bopts *o, const hh_queue_weight *queues, size_t nq) {
    hh_manager_options mo;
    hh_manager_options_init(&mo);
    mo.redis.url = o->url;
    mo.concurrency = o->conc;
    mo.queues = queues;
    mo.nqueues = nq;
    mo.fetch = o->basic ? HH_FETCH_BASIC : HH_FETCH_RELIABLE;
    mo.log = log_sink;
    mo.log_level = HH_LOG_WARN;
    mo.tag = "hh_bench";
    int err = 0;
    hh_manager *m = hh_manager_new(&mo, &err);
    if (!m) note("hh_manager_new: %s", hh_strerror(err));
    return m;
}

/* Waits (bounded) for the first acknowledged heartbeat, then `settle` s so
 * every worker thread sits in its blocking fetch. */
static int manager_wait_ready(hh_manager *m, double settle) {
    hh_manager_stats st = {.struct_size = sizeof st}; /* no queues wanted */
    double deadline = mono() + 20;
    for (;;) {
        hh_manager_get_stats(m, &st);
        if (st.heartbeat_last_pushed_at > 0) break;
        if (mono() > deadline) {
            note("no acknowledged heartbeat within 20 s (%s)", st.heartbeat_last_error);
            return -1;
        }
        sleep_s(0.01);
    }
    sleep_s(settle);
    return 0;
}

static int manager_finish(hh_manager *m) {
    hh_manager_stop(m);
    if (hh_manager_wait(m, 60) != HH_OK) {
        note("the manager did not stop within 60 s");
        return -1; /* cannot free a running manager; the process exits soon */
    }
    hh_manager_free(m);
    return 0;
}

/* ------------------------------------------------------------ enqueue */

/* Queue names of a K-queue run: "default" alone, else q1..qK. */
static void queue_name(char *buf, size_t len, size_t k, size_t i) {
    if (k == 1) snprintf(buf, len, "default");
    else snprintf(buf, len, "q%zu", i + 1);
}

static int mode_enqueue(const bopts *o) {
    redisContext *rc = raw_connect(o->url);
    if (!rc) return 2;
    size_t nq = o->queues, per = o->n / nq + 1;
    char **args = calloc(o->n ? o->n : 1, sizeof(char *));
    char **chunk = calloc(per, sizeof(char *));
    if (!args || !chunk) return 2;
    for (size_t i = 0; i < o->n; i++) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "[%zu]", i);
        args[i] = strdup(tmp);
        if (!args[i]) return 2;
    }
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = o->url;
    int err = 0;
    hh_client *c = hh_client_new(&ro, &err);
    if (!c) {
        note("hh_client_new: %s", hh_strerror(err));
        return 2;
    }
    char qn[32];
    long long len0 = 0;
    for (size_t q = 0; q < nq; q++) {
        queue_name(qn, sizeof(qn), nq, q);
        len0 += raw_int(rc, "LLEN queue:%s", qn);
    }
    static cmdstats a, b, d;
    if (cmdstats_read(rc, &a) != 0) return 2;
    double cpu0 = cpu_seconds(), t0 = mono();
    /* job i goes to queue i mod K, --batch per call */
    for (size_t q = 0; q < nq; q++) {
        hh_push_options po;
        hh_push_options_init(&po);
        queue_name(qn, sizeof(qn), nq, q);
        po.queue = qn;
        size_t m = 0;
        for (size_t i = q; i < o->n; i += nq) chunk[m++] = args[i];
        for (size_t off = 0; off < m; off += o->batch) {
            size_t k = m - off < o->batch ? m - off : o->batch;
            int e = hh_client_push_bulk(c, "NoopJob", (const char *const *)(chunk + off), k, &po, NULL);
            if (e != HH_OK) {
                note("hh_client_push_bulk to %s: %s", qn, hh_strerror(e));
                return 1;
            }
        }
    }
    double t1 = mono(), cpu1 = cpu_seconds();
    if (cmdstats_read(rc, &b) != 0) return 2;
    long long total = cmdstats_delta(&a, &b, &d);
    total = cmdstats_discount(&d, total, "info", 1);
    long long len1 = 0;
    for (size_t q = 0; q < nq; q++) {
        queue_name(qn, sizeof(qn), nq, q);
        len1 += raw_int(rc, "LLEN queue:%s", qn);
    }
    int bad = 0;
    if (len1 - len0 != (long long)o->n) {
        note("CHECK FAILED: the queues grew by %lld, expected %zu", len1 - len0, o->n);
        bad = 1;
    }
    double secs = t1 - t0;
    out("enqueue_jobs", "%zu", o->n);
    out("enqueue_seconds", "%.4f", secs);
    out("enqueue_jobs_per_s", "%.0f", secs > 0 ? (double)o->n / secs : 0.0);
    out("enqueue_client_cpu_us_per_job", "%.2f", (cpu1 - cpu0) * 1e6 / (double)(o->n ? o->n : 1));
    out("enqueue_cmds_per_job", "%.4f", (double)total / (double)(o->n ? o->n : 1));
    out_breakdown("enqueue_cmd_breakdown", &d, (double)(o->n ? o->n : 1), 8);
    out("enqueue_ok", "%d", !bad);
    hh_client_free(c);
    for (size_t i = 0; i < o->n; i++) free(args[i]);
    free(args);
    free(chunk);
    redisFree(rc);
    return bad;
}

/* ------------------------------------------------------------ process */

/* What the worker processes share with the driver (one MAP_SHARED page set
 * made before fork): the counter every job increments, and one byte per job
 * index so "each job ran exactly once" is checked job by job. */
typedef struct procshare {
    atomic_ullong ran;     /* the per-job counter increment */
    atomic_ullong dups;    /* a job whose index had already run */
    atomic_ullong badargs; /* args not [i] with i < N */
    size_t n;
    int drop; /* BENCH_FAULT=drop: job [0] is acked without running */
    atomic_uchar seen[];
} procshare;

static procshare *share;

/* The benchmark's job: parse its index, one counter increment. */
static int count_handler(hh_job *job, void *udata) {
    (void)udata;
    const char *a = hh_job_args(job);
    char *end = NULL;
    unsigned long long i = (a && a[0] == '[') ? strtoull(a + 1, &end, 10) : 0;
    if (!end || *end != ']' || i >= share->n) {
        atomic_fetch_add(&share->badargs, 1);
        return 0;
    }
    if (share->drop && i == 0) return 0; /* the injected fault: a job lost */
    if (atomic_fetch_add(&share->seen[i], 1) != 0) atomic_fetch_add(&share->dups, 1);
    atomic_fetch_add(&share->ran, 1);
    return 0;
}

/* INFO cpu: redis-server's used_cpu_sys + used_cpu_user, seconds. */
static double redis_cpu(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO cpu");
    double v = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *s = strstr(r->str, "used_cpu_sys:"), *u = strstr(r->str, "used_cpu_user:");
        if (s && u) v = atof(s + 13) + atof(u + 14);
    }
    if (v < 0) note("INFO cpu failed");
    if (r) freeReplyObject(r);
    return v;
}

/* utime + stime of a process (all its threads), seconds; -1 when gone. */
static double proc_cpu(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long proc_hwm_kib(pid_t pid) {
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

/* One worker process: a manager on the run's queues; says 'R' on `ready`
 * once it has beaten and settled, runs until `stop` closes, then stops
 * (final counter flush) and exits 0, or 1 when anything went wrong. */
static int worker_child(const bopts *o, int ready, int stop) {
    hh_queue_weight *qs = calloc(o->queues, sizeof(*qs));
    char(*names)[24] = calloc(o->queues, sizeof(*names));
    if (!qs || !names) _exit(1);
    for (size_t i = 0; i < o->queues; i++) {
        queue_name(names[i], sizeof(names[i]), o->queues, i);
        qs[i].name = names[i];
        qs[i].weight = o->weighted ? 1 : 0;
    }
    hh_manager *m = manager_make(o, qs, o->queues);
    if (!m || hh_manager_register(m, "NoopJob", count_handler, NULL) != HH_OK) _exit(1);
    int e = hh_manager_start(m);
    if (e != HH_OK) {
        note("hh_manager_start: %s", hh_strerror(e));
        _exit(1);
    }
    if (manager_wait_ready(m, o->settle) != 0) _exit(1);
    char c = 'R';
    if (write(ready, &c, 1) != 1) _exit(1);
    while (read(stop, &c, 1) > 0) {}
    hh_manager_stats st = {.struct_size = sizeof st}; /* no queues wanted */
    hh_manager_get_stats(m, &st);
    int bad = st.failed != 0;
    if (manager_finish(m) != 0) _exit(1);
    _exit(bad);
}

static int mode_process(const bopts *o) {
    redisContext *rc = raw_connect(o->url);
    if (!rc) return 2;
    size_t nq = o->queues;
    char qn[32];
    long long len = 0;
    for (size_t i = 0; i < nq; i++) {
        queue_name(qn, sizeof(qn), nq, i);
        long long l = raw_int(rc, "LLEN queue:%s", qn);
        if (l < 0) return 2;
        len += l;
    }
    if (len != (long long)o->n) {
        note("the %zu queue(s) hold %lld jobs, expected %zu (run the enqueue mode first, same --queues)", nq, len,
             o->n);
        return 2;
    }
    share = mmap(NULL, sizeof(procshare) + o->n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (share == MAP_FAILED) {
        note("mmap: %s", strerror(errno));
        return 2;
    }
    share->n = o->n;
    const char *fault = getenv("BENCH_FAULT");
    share->drop = fault && strcmp(fault, "drop") == 0;
    if (share->drop) note("BENCH_FAULT=drop: job [0] will be acknowledged without running");

    long long p0 = raw_int(rc, "GET stat:processed"), f0 = raw_int(rc, "GET stat:failed");
    /* the jobs are moved aside while the workers boot: all at once, so
     * the clock starts when every queue holds its jobs again */
    redisAppendCommand(rc, "MULTI");
    for (size_t i = 0; i < nq; i++) {
        queue_name(qn, sizeof(qn), nq, i);
        redisAppendCommand(rc, "RENAME queue:%s hh_bench:staging:%s", qn, qn);
    }
    redisAppendCommand(rc, "EXEC");
    for (size_t i = 0; i < nq + 2; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r || r->type == REDIS_REPLY_ERROR) {
            note("RENAME to staging failed: %s", r ? r->str : rc->errstr);
            return 2;
        }
        freeReplyObject(r);
    }

    pid_t pids[64];
    int readyfd[64], stopfd[64];
    for (int w = 0; w < o->procs; w++) {
        int rp[2], sp[2];
        if (pipe(rp) != 0 || pipe(sp) != 0) return 2;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) {
            close(rp[0]);
            close(sp[1]);
            for (int k = 0; k < w; k++) close(stopfd[k]);
            worker_child(o, rp[1], sp[0]);
        }
        close(rp[1]);
        close(sp[0]);
        pids[w] = pid;
        readyfd[w] = rp[0];
        stopfd[w] = sp[1];
    }
    for (int w = 0; w < o->procs; w++) {
        char c = 0;
        if (read(readyfd[w], &c, 1) != 1 || c != 'R') {
            note("worker process %d did not get ready", (int)pids[w]);
            for (int k = 0; k < o->procs; k++) kill(pids[k], SIGKILL);
            return 2;
        }
        close(readyfd[w]);
    }

    static cmdstats a, b, d;
    if (cmdstats_read(rc, &a) != 0) return 2;
    double cpu0 = 0, rcpu0 = redis_cpu(rc);
    for (int w = 0; w < o->procs; w++) cpu0 += proc_cpu(pids[w]);
    double t0 = mono();
    /* the jobs appear at once to the blocked fetches */
    redisAppendCommand(rc, "MULTI");
    for (size_t i = 0; i < nq; i++) {
        queue_name(qn, sizeof(qn), nq, i);
        redisAppendCommand(rc, "RENAME hh_bench:staging:%s queue:%s", qn, qn);
    }
    redisAppendCommand(rc, "EXEC");
    for (size_t i = 0; i < nq + 2; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r || r->type == REDIS_REPLY_ERROR) {
            note("RENAME back failed: %s", r ? r->str : rc->errstr);
            return 2;
        }
        freeReplyObject(r);
    }
    /* until every job ran; a run that makes no progress for --stall s
     * (a system that lost jobs) ends the wait early */
    unsigned long long last = 0;
    double last_t = mono();
    int timed_out = 0, stalled = 0;
    for (;;) {
        unsigned long long ran = atomic_load(&share->ran);
        if (ran >= o->n) break;
        double now = mono();
        if (ran != last) last = ran, last_t = now;
        if (now - t0 > o->timeout) {
            timed_out = 1;
            break;
        }
        if (now - last_t > o->stall) {
            stalled = 1;
            break;
        }
        sleep_s(0.001);
    }
    double t1 = mono(), cpu1 = 0, rcpu1 = redis_cpu(rc);
    long hwm = 0;
    for (int w = 0; w < o->procs; w++) {
        cpu1 += proc_cpu(pids[w]);
        hwm += proc_hwm_kib(pids[w]);
    }
    int bad = 0;
    for (int w = 0; w < o->procs; w++) close(stopfd[w]);
    for (int w = 0; w < o->procs; w++) {
        int status = 0;
        double until = mono() + 90;
        pid_t got;
        while ((got = waitpid(pids[w], &status, WNOHANG)) == 0 && mono() < until) sleep_s(0.01);
        if (got != pids[w]) {
            note("CHECK FAILED: worker process %d did not stop within 90 s", (int)pids[w]);
            kill(pids[w], SIGKILL);
            waitpid(pids[w], &status, 0);
            bad = 1;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            note("CHECK FAILED: worker process %d exited with status %d (a failed job, a warning or a crash)",
                 (int)pids[w], status);
            bad = 1;
        }
    }
    if (cmdstats_read(rc, &b) != 0) return 2;
    long long total = cmdstats_delta(&a, &b, &d);
    total = cmdstats_discount(&d, total, "info", 3);
    total = cmdstats_discount(&d, total, "rename", (long long)nq);
    total = cmdstats_discount(&d, total, "multi", 1);
    total = cmdstats_discount(&d, total, "exec", 1);
    long long p1 = raw_int(rc, "GET stat:processed"), f1 = raw_int(rc, "GET stat:failed");
    long long left = 0;
    for (size_t i = 0; i < nq; i++) {
        queue_name(qn, sizeof(qn), nq, i);
        left += raw_int(rc, "LLEN queue:%s", qn);
    }
    unsigned long long missing = 0, ran = atomic_load(&share->ran);
    for (size_t i = 0; i < o->n; i++)
        if (atomic_load(&share->seen[i]) == 0) missing++;

    if (timed_out || stalled)
        note("CHECK FAILED: only %llu of %zu jobs ran (%s)", ran, o->n,
             timed_out ? "timed out" : "no progress, the rest is lost");
    if (missing) note("CHECK FAILED: %llu job(s) never ran", missing);
    if (atomic_load(&share->dups)) note("CHECK FAILED: %llu job(s) ran more than once", atomic_load(&share->dups));
    if (atomic_load(&share->badargs)) note("CHECK FAILED: %llu job(s) with bad args", atomic_load(&share->badargs));
    if (p1 - p0 != (long long)o->n) {
        note("CHECK FAILED: stat:processed grew by %lld, expected exactly %zu", p1 - p0, o->n);
        bad = 1;
    }
    if (f1 - f0 != 0) {
        note("CHECK FAILED: stat:failed grew by %lld, expected 0", f1 - f0);
        bad = 1;
    }
    if (left != 0) {
        note("CHECK FAILED: %lld jobs left in the queues", left);
        bad = 1;
    }
    if (timed_out || stalled || missing || atomic_load(&share->dups) || atomic_load(&share->badargs)) bad = 1;
    char k[96];
    double n = (double)(o->n ? o->n : 1), secs = t1 - t0;
    char prefix[48];
    if (o->prefix_set) snprintf(prefix, sizeof(prefix), "%s", o->prefix);
    else snprintf(prefix, sizeof(prefix), "proc_c%d", o->conc);
#define OUTC(suffix, ...)                                \
    do {                                                 \
        snprintf(k, sizeof(k), "%s_%s", prefix, suffix); \
        out(k, __VA_ARGS__);                             \
    } while (0)
    OUTC("seconds", "%.4f", secs);
    OUTC("jobs_per_s", "%.0f", secs > 0 ? n / secs : 0.0);
    OUTC("cpu_us_per_job", "%.2f", (cpu1 - cpu0) * 1e6 / n);
    OUTC("cpu_pct", "%.1f", secs > 0 ? (cpu1 - cpu0) / secs * 100 : 0.0);
    OUTC("redis_cpu_us_per_job", "%.2f", (rcpu1 - rcpu0) * 1e6 / n);
    OUTC("redis_cpu_pct", "%.1f", secs > 0 ? (rcpu1 - rcpu0) / secs * 100 : 0.0);
    OUTC("peak_rss_kib", "%ld", hwm);
    OUTC("cmds_per_job", "%.4f", (double)total / n);
    OUTC("ran", "%llu", ran);
    OUTC("missing", "%llu", missing);
    OUTC("dups", "%llu", atomic_load(&share->dups));
    OUTC("processed_delta", "%lld", p1 - p0);
    OUTC("failed_delta", "%lld", f1 - f0);
    OUTC("ok", "%d", !bad);
#undef OUTC
    snprintf(k, sizeof(k), "%s_cmd_breakdown", prefix);
    out_breakdown(k, &d, n, 10);
    munmap(share, sizeof(procshare) + o->n);
    redisFree(rc);
    return bad;
}

/* ------------------------------------------------------------ latency + idle */

typedef struct latstore {
    double *lat; /* seconds, one per job */
    double *at;  /* enqueued_at of each, for --dump */
    char (*queue)[16];
    size_t cap;
    atomic_size_t n;
    atomic_int bad; /* payloads without a numeric enqueued_at */
} latstore;

static int latency_handler(hh_job *job, void *udata) {
    double now = realnow();
    latstore *s = udata;
    size_t len = 0;
    const char *payload = hh_job_payload(job, &len);
    json_t *j = json_loadb(payload, len, 0, NULL);
    json_t *e = json_object_get(j, "enqueued_at");
    if (!json_is_number(e)) {
        atomic_fetch_add(&s->bad, 1);
    } else {
        double t = json_number_value(e);
        if (json_is_integer(e)) t /= 1000.0; /* Sidekiq 8 EPOCH_MS */
        size_t i = atomic_fetch_add(&s->n, 1);
        if (i < s->cap) {
            s->lat[i] = now - t;
            s->at[i] = t;
            snprintf(s->queue[i], sizeof(s->queue[i]), "%s", hh_job_queue(job));
        }
    }
    json_decref(j);
    return 0;
}

typedef struct pusher {
    const bopts *o;
    const char *const *queues;
    size_t nq;
    int err;
    size_t pushed;
    size_t stride; /* job i goes to queue (i * stride) % nq; 0: 1 */
    hh_client *c;  /* connected before the window, or NULL: the pusher connects */
} pusher;

/* Pushes o->jobs LatencyJob jobs at o->rate per second, on a schedule (job
 * i is due at t0 + i / rate), with a client of its own. */
static void *pusher_main(void *arg) {
    pusher *p = arg;
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = p->o->url;
    int err = 0;
    hh_client *c = p->c ? p->c : hh_client_new(&ro, &err);
    if (!c) {
        p->err = err;
        return NULL;
    }
    double t0 = mono();
    for (size_t i = 0; i < p->o->jobs; i++) {
        sleep_s(t0 + (double)i / p->o->rate - mono());
        char args[32];
        snprintf(args, sizeof(args), "[%zu]", i);
        hh_push_options po;
        hh_push_options_init(&po);
        po.queue = p->queues[(i * (p->stride ? p->stride : 1)) % p->nq];
        int e = hh_client_push(c, "LatencyJob", args, &po, NULL);
        if (e != HH_OK) {
            p->err = e;
            break;
        }
        p->pushed++;
    }
    if (!p->c) hh_client_free(c);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nearest-rank percentile of a sorted array */
static double pct(const double *v, size_t n, double q) {
    if (!n) return 0;
    size_t r = (size_t)ceil(q * (double)n);
    if (r < 1) r = 1;
    if (r > n) r = n;
    return v[r - 1];
}

static int mode_latency(const bopts *o) {
    static const char *const qnames[3] = {"critical", "default", "low"};
    hh_queue_weight qs[3] = {{"critical", 0}, {"default", 0}, {"low", 0}};
    redisContext *rc = raw_connect(o->url);
    if (!rc) return 2;
    latstore s;
    memset(&s, 0, sizeof(s));
    s.cap = o->jobs;
    s.lat = calloc(o->jobs ? o->jobs : 1, sizeof(double));
    s.at = calloc(o->jobs ? o->jobs : 1, sizeof(double));
    s.queue = calloc(o->jobs ? o->jobs : 1, sizeof(*s.queue));
    if (!s.lat || !s.at || !s.queue) return 2;
    atomic_init(&s.n, 0);
    atomic_init(&s.bad, 0);

    hh_manager *m = manager_make(o, qs, 3);
    if (!m) return 2;
    if (hh_manager_register(m, "LatencyJob", latency_handler, &s) != HH_OK) return 2;
    int e = hh_manager_start(m);
    if (e != HH_OK) {
        note("hh_manager_start: %s", hh_strerror(e));
        return 2;
    }
    if (manager_wait_ready(m, o->settle) != 0) return 2;

    pusher p = {o, qnames, 3, 0, 0, 1, NULL};
    pthread_t th;
    if (pthread_create(&th, NULL, pusher_main, &p) != 0) return 2;
    double deadline = mono() + (double)o->jobs / o->rate + 30;
    hh_manager_stats st = {.struct_size = sizeof st}; /* no queues wanted */
    int timed_out = 0;
    for (;;) {
        hh_manager_get_stats(m, &st);
        if (st.processed >= o->jobs) break;
        if (mono() > deadline) {
            timed_out = 1;
            break;
        }
        sleep_s(0.005);
    }
    pthread_join(th, NULL);
    int bad = 0;
    if (p.err) {
        note("CHECK FAILED: hh_client_push: %s after %zu jobs", hh_strerror(p.err), p.pushed);
        bad = 1;
    }
    if (timed_out) {
        note("CHECK FAILED: only %llu of %zu latency jobs processed in time", (unsigned long long)st.processed,
             o->jobs);
        bad = 1;
    }
    if (atomic_load(&s.bad)) {
        note("CHECK FAILED: %d payloads had no numeric enqueued_at", atomic_load(&s.bad));
        bad = 1;
    }
    size_t n = atomic_load(&s.n);
    if (n > s.cap) n = s.cap;
    if (o->dump) { /* enqueued_at, queue, latency ms: one line per job in pickup order */
        FILE *f = fopen(o->dump, "w");
        for (size_t i = 0; f && i < n; i++) fprintf(f, "%.6f %s %.3f\n", s.at[i], s.queue[i], s.lat[i] * 1e3);
        if (f) fclose(f);
    }
    qsort(s.lat, n, sizeof(double), cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += s.lat[i];
    out("lat_jobs", "%zu", n);
    out("lat_p50_ms", "%.3f", pct(s.lat, n, 0.50) * 1e3);
    out("lat_p99_ms", "%.3f", pct(s.lat, n, 0.99) * 1e3);
    out("lat_max_ms", "%.3f", n ? s.lat[n - 1] * 1e3 : 0.0);
    out("lat_mean_ms", "%.3f", n ? sum / (double)n * 1e3 : 0.0);
    out("lat_ok", "%d", !bad);

    /* idle: the same manager, nothing to do */
    sleep_s(1.0);
    static cmdstats a, b, d;
    if (cmdstats_read(rc, &a) != 0) return 2;
    double cpu0 = cpu_seconds(), rcpu0 = redis_cpu(rc), t0 = mono();
    sleep_s(o->idle);
    double t1 = mono(), cpu1 = cpu_seconds(), rcpu1 = redis_cpu(rc);
    if (cmdstats_read(rc, &b) != 0) return 2;
    long long total = cmdstats_delta(&a, &b, &d);
    total = cmdstats_discount(&d, total, "info", 3);
    double secs = t1 - t0;
    out("idle_seconds", "%.2f", secs);
    out("idle_redis_cpu_pct", "%.3f", (rcpu1 - rcpu0) / secs * 100);
    out("idle_cpu_pct", "%.3f", (cpu1 - cpu0) / secs * 100);
    out("idle_cmds_per_s", "%.2f", (double)total / secs);
    out_breakdown("idle_cmd_breakdown", &d, secs, 12);
    out("idle_peak_rss_kib", "%ld", vm_hwm_kib());
    if (manager_finish(m) != 0) bad = 1;
    free(s.lat);
    free(s.at);
    free(s.queue);
    redisFree(rc);
    return bad;
}

/* ------------------------------------------------------------ pickup */

static atomic_int busy_release;
static atomic_int busy_started;

/* Holds its thread until the pickup run is over. */
static int busy_handler(hh_job *job, void *udata) {
    (void)job;
    (void)udata;
    atomic_store(&busy_started, 1);
    double until = mono() + 300;
    while (!atomic_load(&busy_release) && mono() < until) sleep_s(0.005);
    return 0;
}

/* Pickup latency on an idle manager: `-c C` over --queues N queues (strict
 * order), optionally with one thread held by a BusyJob; then -j jobs pushed
 * one at a time with hh_client_push, each once the previous one started,
 * to queue (i * 37) % N. Prints <prefix>_p50_ms, _p99_ms, _max_ms, _ok. */
static int mode_pickup(const bopts *o) {
    size_t nq = o->queues;
    char **names = calloc(nq, sizeof(char *));
    hh_queue_weight *qs = calloc(nq, sizeof(*qs));
    if (!names || !qs) return 2;
    static const char *const three[3] = {"critical", "default", "low"};
    for (size_t i = 0; i < nq; i++) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "q%zu", i + 1);
        names[i] = strdup(nq == 3 ? three[i] : tmp);
        if (!names[i]) return 2;
        qs[i].name = names[i];
        qs[i].weight = 0;
    }
    latstore s;
    memset(&s, 0, sizeof(s));
    s.cap = o->jobs;
    s.lat = calloc(o->jobs, sizeof(double));
    s.at = calloc(o->jobs, sizeof(double));
    s.queue = calloc(o->jobs, sizeof(*s.queue));
    if (!s.lat || !s.at || !s.queue) return 2;
    atomic_init(&s.n, 0);
    atomic_init(&s.bad, 0);

    hh_manager *m = manager_make(o, qs, nq);
    if (!m) return 2;
    if (hh_manager_register(m, "LatencyJob", latency_handler, &s) != HH_OK ||
        hh_manager_register(m, "BusyJob", busy_handler, NULL) != HH_OK)
        return 2;
    if (hh_manager_start(m) != HH_OK) return 2;
    if (manager_wait_ready(m, o->settle) != 0) return 2;

    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = o->url;
    int err = 0, bad = 0;
    hh_client *c = hh_client_new(&ro, &err);
    if (!c) {
        note("hh_client_new: %s", hh_strerror(err));
        return 2;
    }
    hh_push_options po;
    if (o->busy) {
        hh_push_options_init(&po);
        po.queue = names[0];
        if (hh_client_push(c, "BusyJob", "[]", &po, NULL) != HH_OK) return 2;
        double until = mono() + 20;
        while (!atomic_load(&busy_started) && mono() < until) sleep_s(0.002);
        if (!atomic_load(&busy_started)) {
            note("CHECK FAILED: the BusyJob did not start within 20 s");
            bad = 1;
        }
        sleep_s(0.5); /* the other threads go idle */
    }
    for (size_t i = 0; i < o->jobs && !bad; i++) {
        char args[32];
        snprintf(args, sizeof(args), "[%zu]", i);
        hh_push_options_init(&po);
        po.queue = names[(i * 37) % nq];
        if (hh_client_push(c, "LatencyJob", args, &po, NULL) != HH_OK) {
            note("CHECK FAILED: hh_client_push failed");
            bad = 1;
            break;
        }
        double until = mono() + 30;
        while (atomic_load(&s.n) <= i && mono() < until) sleep_s(0.0005);
        if (atomic_load(&s.n) <= i) {
            note("CHECK FAILED: pickup job %zu not started within 30 s", i);
            bad = 1;
        }
        sleep_s(0.02 + (double)((i * 13) % 30) / 1000); /* back to idle */
    }
    atomic_store(&busy_release, 1);
    hh_client_free(c);
    size_t n = atomic_load(&s.n);
    if (n > s.cap) n = s.cap;
    qsort(s.lat, n, sizeof(double), cmp_double);
    char key[64];
    snprintf(key, sizeof(key), "%s_p50_ms", o->prefix);
    out(key, "%.3f", pct(s.lat, n, 0.50) * 1e3);
    snprintf(key, sizeof(key), "%s_p99_ms", o->prefix);
    out(key, "%.3f", pct(s.lat, n, 0.99) * 1e3);
    snprintf(key, sizeof(key), "%s_max_ms", o->prefix);
    out(key, "%.3f", n ? s.lat[n - 1] * 1e3 : 0.0);
    snprintf(key, sizeof(key), "%s_jobs", o->prefix);
    out(key, "%zu", n);
    if (manager_finish(m) != 0) bad = 1;
    snprintf(key, sizeof(key), "%s_ok", o->prefix);
    out(key, "%d", !bad);
    for (size_t i = 0; i < nq; i++) free(names[i]);
    free(names);
    free(qs);
    free(s.lat);
    free(s.at);
    free(s.queue);
    return bad;
}

/* ------------------------------------------------------------ trickle */

/* What a trickle of jobs costs Redis on an otherwise idle manager with many
 * queues: `-c C` over --queues N queues (strict order, q1..qN), settled
 * idle; then -j LatencyJob jobs pushed at --rate per second (hh_client_push,
 * job i to queue (i * 37) % N). The window runs from the first push to the
 * last job's start: Redis CPU (INFO cpu) and commands (INFO commandstats,
 * the pushes included, our own INFO calls left out) per job, the worker's
 * CPU per job and the pickup latency. Prints <prefix>_* lines (default
 * trickle_). */
static int mode_trickle(const bopts *o) {
    size_t nq = o->queues;
    const char *prefix = o->prefix_set ? o->prefix : "trickle";
    char **names = calloc(nq, sizeof(char *));
    hh_queue_weight *qs = calloc(nq, sizeof(*qs));
    redisContext *rc = raw_connect(o->url);
    if (!names || !qs || !rc) return 2;
    for (size_t i = 0; i < nq; i++) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "q%zu", i + 1);
        if (!(names[i] = strdup(tmp))) return 2;
        qs[i].name = names[i];
        qs[i].weight = 0;
    }
    latstore s;
    memset(&s, 0, sizeof(s));
    s.cap = o->jobs;
    s.lat = calloc(o->jobs, sizeof(double));
    s.at = calloc(o->jobs, sizeof(double));
    s.queue = calloc(o->jobs, sizeof(*s.queue));
    if (!s.lat || !s.at || !s.queue) return 2;
    atomic_init(&s.n, 0);
    atomic_init(&s.bad, 0);

    hh_manager *m = manager_make(o, qs, nq);
    if (!m) return 2;
    if (hh_manager_register(m, "LatencyJob", latency_handler, &s) != HH_OK) return 2;
    if (hh_manager_start(m) != HH_OK) return 2;
    if (manager_wait_ready(m, o->settle) != 0) return 2;
    sleep_s(1.0); /* every thread found the queues empty and waits */

    /* the pushes' client connects before the window (its INFO and CLIENT ID are no job's cost) */
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = o->url;
    int err = 0;
    pusher p = {o, (const char *const *)names, nq, 0, 0, 37, hh_client_new(&ro, &err)};
    if (!p.c) {
        note("hh_client_new: %s", hh_strerror(err));
        return 2;
    }
    static cmdstats a, b, d;
    if (cmdstats_read(rc, &a) != 0) return 2;
    double cpu0 = cpu_seconds(), rcpu0 = redis_cpu(rc), t0 = mono();
    pthread_t th;
    if (pthread_create(&th, NULL, pusher_main, &p) != 0) return 2;
    double deadline = mono() + (double)o->jobs / o->rate + 30;
    int timed_out = 0;
    while (atomic_load(&s.n) < o->jobs) {
        if (mono() > deadline) {
            timed_out = 1;
            break;
        }
        sleep_s(0.002);
    }
    pthread_join(th, NULL);
    double t1 = mono(), cpu1 = cpu_seconds(), rcpu1 = redis_cpu(rc);
    hh_client_free(p.c);
    if (cmdstats_read(rc, &b) != 0) return 2;
    long long total = cmdstats_delta(&a, &b, &d);
    total = cmdstats_discount(&d, total, "info", 3);
    int bad = 0;
    if (p.err) {
        note("CHECK FAILED: hh_client_push: %s after %zu jobs", hh_strerror(p.err), p.pushed);
        bad = 1;
    }
    if (timed_out) {
        note("CHECK FAILED: only %zu of %zu trickle jobs started in time", atomic_load(&s.n), o->jobs);
        bad = 1;
    }
    if (atomic_load(&s.bad)) {
        note("CHECK FAILED: %d payloads had no numeric enqueued_at", atomic_load(&s.bad));
        bad = 1;
    }
    size_t n = atomic_load(&s.n);
    if (n > s.cap) n = s.cap;
    qsort(s.lat, n, sizeof(double), cmp_double);
    double per = (double)(n ? n : 1);
    char key[96];
#define OUTT(name, ...)                                    \
    do {                                                   \
        snprintf(key, sizeof(key), "%s_%s", prefix, name); \
        out(key, __VA_ARGS__);                             \
    } while (0)
    OUTT("jobs", "%zu", n);
    OUTT("queues", "%zu", nq);
    OUTT("seconds", "%.2f", t1 - t0);
    OUTT("redis_cpu_us_per_job", "%.1f", (rcpu1 - rcpu0) * 1e6 / per);
    OUTT("cpu_us_per_job", "%.1f", (cpu1 - cpu0) * 1e6 / per);
    OUTT("cmds_per_job", "%.2f", (double)total / per);
    OUTT("p50_ms", "%.3f", pct(s.lat, n, 0.50) * 1e3);
    OUTT("p99_ms", "%.3f", pct(s.lat, n, 0.99) * 1e3);
    snprintf(key, sizeof(key), "%s_cmd_breakdown", prefix);
    out_breakdown(key, &d, per, 10);
    if (manager_finish(m) != 0) bad = 1;
    OUTT("ok", "%d", !bad);
#undef OUTT
    for (size_t i = 0; i < nq; i++) free(names[i]);
    free(names);
    free(qs);
    free(s.lat);
    free(s.at);
    free(s.queue);
    redisFree(rc);
    return bad;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f) {
    fputs("usage: hh_bench enqueue|process|latency|pickup|trickle [-u URL] [-n N] [-c CONCURRENCY] [-b BATCH]\n"
          "                [-j LATENCY_JOBS] [--rate PER_S] [--idle S] [--settle S] [--timeout S]\n"
          "                [--dump FILE (latency: enqueued_at, queue, ms per job)]\n"
          "                [--queues N] [--busy] [--prefix KEY (pickup, process, trickle)]\n"
          "                [--procs P] [--fetch reliable|basic] [--weighted] [--stall S] (process)\n"
          "BENCH_FAULT=drop (process): the job [0] is acknowledged without running, to show\n"
          "the correctness checks catch a lost job.\n"
          "Normally run by bench/run.sh, which starts a private Redis.\n",
          f);
}

static int parse_size(const char *s, size_t *out, size_t min) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s || v < min || s[0] == '-') return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_double(const char *s, double *out, double min) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= min) || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *mode = argv[1];
    bopts o = {NULL, 100000, 10, 1000, 1000, 200, 10, 0.5, 120, NULL, 3, 0, "pickup", 0, 1, 0, 0, 10};
    int queues_set = 0;
    static const struct option longopts[] = {{"url", required_argument, NULL, 'u'},
                                             {"jobs", required_argument, NULL, 'n'},
                                             {"concurrency", required_argument, NULL, 'c'},
                                             {"batch", required_argument, NULL, 'b'},
                                             {"latency-jobs", required_argument, NULL, 'j'},
                                             {"rate", required_argument, NULL, 'R'},
                                             {"idle", required_argument, NULL, 'I'},
                                             {"settle", required_argument, NULL, 'S'},
                                             {"timeout", required_argument, NULL, 'T'},
                                             {"dump", required_argument, NULL, 'D'},
                                             {"queues", required_argument, NULL, 'Q'},
                                             {"busy", no_argument, NULL, 'B'},
                                             {"prefix", required_argument, NULL, 'P'},
                                             {"procs", required_argument, NULL, 'p'},
                                             {"fetch", required_argument, NULL, 'F'},
                                             {"weighted", no_argument, NULL, 'W'},
                                             {"stall", required_argument, NULL, 'L'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    optind = 2;
    int ch;
    size_t tmp;
    while ((ch = getopt_long(argc, argv, "u:n:c:b:j:h", longopts, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'u': o.url = optarg; break;
        case 'n': bad = parse_size(optarg, &o.n, 1); break;
        case 'c':
            bad = parse_size(optarg, &tmp, 1) || tmp > 1000;
            o.conc = (int)tmp;
            break;
        case 'b': bad = parse_size(optarg, &o.batch, 1); break;
        case 'j': bad = parse_size(optarg, &o.jobs, 1); break;
        case 'R': bad = parse_double(optarg, &o.rate, 0.001); break;
        case 'I': bad = parse_double(optarg, &o.idle, 0.1); break;
        case 'S': bad = parse_double(optarg, &o.settle, 0); break;
        case 'T': bad = parse_double(optarg, &o.timeout, 1); break;
        case 'D': o.dump = optarg; break;
        case 'Q':
            bad = parse_size(optarg, &o.queues, 1) || o.queues > HH_QUEUES_LIMIT;
            queues_set = 1;
            break;
        case 'p':
            bad = parse_size(optarg, &tmp, 1) || tmp > 64;
            o.procs = (int)tmp;
            break;
        case 'F':
            bad = strcmp(optarg, "basic") != 0 && strcmp(optarg, "reliable") != 0;
            o.basic = strcmp(optarg, "basic") == 0;
            break;
        case 'W': o.weighted = 1; break;
        case 'L': bad = parse_double(optarg, &o.stall, 1); break;
        case 'B': o.busy = 1; break;
        case 'P':
            o.prefix = optarg;
            o.prefix_set = 1;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            note("bad value for -%c: %s", ch, optarg);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (!o.url) o.url = getenv("REDIS_URL");
    if (!o.url) {
        note("no Redis URL: pass -u or set REDIS_URL");
        return 2;
    }
    /* enqueue and process default to the one queue "default" */
    if (!queues_set && (strcmp(mode, "enqueue") == 0 || strcmp(mode, "process") == 0)) o.queues = 1;
    if (strcmp(mode, "enqueue") == 0) return mode_enqueue(&o);
    if (strcmp(mode, "process") == 0) return mode_process(&o);
    if (strcmp(mode, "latency") == 0) return mode_latency(&o);
    if (strcmp(mode, "pickup") == 0) return mode_pickup(&o);
    if (strcmp(mode, "trickle") == 0) return mode_trickle(&o);
    usage(stderr);
    return 2;
}
