/* heartbeat.c -- see heartbeat.h. Owns the beat and the process
 * registry entries, and the board of what the beats learned (the stats
 * read it); sees the manager only through its context (context.h) and
 * hh__heartbeat_env, calls the lease and walks the worker threads
 * directly, and waits between beats on the context's wake (wake.h).
 * Keys written: processes (SADD, SREM on stop), <id> (HGET info: whose it
 * is, then HSET + EXPIRE 60),
 * <id>:work and <id>:workers (UNLINK, HSET, EXPIRE 60), <id>-signals (RPOP),
 * stat:processed, stat:failed and their :<date> keys (INCRBY, EXPIRE);
 * through job_metrics.c, Sidekiq 7.x/8.x's metrics keys;
 * over maxmemory, <id> and <id>-signals in HH_LUA_LEASE. The cleanup of
 * `processes` (as Sidekiq's ProcessSet cleanup): process_cleanup (SET NX
 * EX 60, the fleet-wide lock), processes (SSCAN, SREM), every member's
 * hash (HEXISTS info). */
#include "heartbeat.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HH_PROCESS_TTL 60           /* Sidekiq's TTL for <id> and the work hashes */
#define HH_STAT_DAILY_TTL 157680000 /* 5 years */
#define HH_CLEANUP_LOCK_TTL 60      /* Sidekiq's: one cleanup a minute, fleet-wide */

long hh__rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

char *hh__heartbeat_info(const hh__heartbeat_env *e) {
    json_t *o = json_object(), *queues = json_array(), *weights = json_object(), *labels = json_array();
    for (size_t i = 0; i < e->ctx->nqueues; i++) {
        json_array_append_new(queues, json_string(e->ctx->queues[i]));
        json_object_set_new(weights, e->ctx->queues[i], json_integer(e->ctx->weighted ? e->ctx->weights[i] : 0));
    }
    for (size_t i = 0; e->ctx->labels && e->ctx->labels[i]; i++)
        json_array_append_new(labels, json_string(e->ctx->labels[i]));
    json_object_set_new(o, "hostname", json_string(e->ctx->hostname));
    json_object_set_new(o, "started_at", json_real(e->ctx->started_at));
    json_object_set_new(o, "pid", json_integer(getpid()));
    json_object_set_new(o, "tag", json_string(e->ctx->tag));
    json_object_set_new(o, "concurrency", json_integer(e->ctx->opts.concurrency));
    json_object_set_new(o, "queues", queues);
    json_t *wl = json_array();
    json_array_append(wl, weights);
    json_object_set_new(o, "weights", wl);
    json_t *cap = json_object(), *def = json_object();
    json_object_set_new(def, "concurrency", json_integer(e->ctx->opts.concurrency));
    /* Sidekiq 7/8 Capsule#queues=: all 0 strict, all 1 random, else weighted */
    int all_one = e->ctx->weighted;
    for (size_t i = 0; i < e->ctx->nqueues; i++)
        if (e->ctx->weights[i] != 1) all_one = 0;
    json_object_set_new(def, "mode", json_string(!e->ctx->weighted ? "strict" : all_one ? "random" : "weighted"));
    json_object_set_new(def, "weights", weights);
    json_object_set_new(cap, "default", def);
    json_object_set_new(o, "capsules", cap);
    json_object_set_new(o, "labels", labels);
    json_object_set_new(o, "identity", json_string(e->ctx->identity));
    json_object_set_new(o, "version", json_string(e->ctx->version));
    json_object_set_new(o, "embedded", json_false());
    char *s = hh__json_dump(o);
    json_decref(o);
    return s;
}

/* Appends the counter flush for p processed and f failed. */
static void stats_append(const hh__heartbeat_env *e, hh__pipe *pipe, unsigned long long p, unsigned long long f,
                         double now) {
    const char *names[2] = {HH_K_STAT_PROCESSED, HH_K_STAT_FAILED};
    unsigned long long v[2] = {p, f};
    for (int i = 0; i < 2; i++) {
        sds k = hh__key(e->ctx->keys, names[i]), d = hh__key_stat_daily(e->ctx->keys, names[i], now);
        hh__pipe_add(pipe, "INCRBY %s %llu", k, v[i]);
        hh__pipe_add(pipe, "INCRBY %s %llu", d, v[i]);
        hh__pipe_add(pipe, "EXPIRE %s %d", d, HH_STAT_DAILY_TTL);
        sdsfree(k);
        sdsfree(d);
    }
}

/* Writes s as the body of a JSON string, escaped exactly as jansson's
 * json_dumps escapes it (", \\, \\b \\f \\n \\r \\t, other controls as \\u00XX,
 * nothing else); with out NULL only counts. s must be valid UTF-8. */
static size_t json_escape(char *out, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char e = ch == '"' ? '"'
            : ch == '\\'   ? '\\'
            : ch == '\b'   ? 'b'
            : ch == '\f'   ? 'f'
            : ch == '\n'   ? 'n'
            : ch == '\r'   ? 'r'
            : ch == '\t'   ? 't'
                           : 0;
        if (e) {
            if (out) out[k] = '\\', out[k + 1] = e;
            k += 2;
        } else if (ch < 0x20) {
            if (out) memcpy(out + k, "\\u00", 4), out[k + 4] = hex[ch >> 4], out[k + 5] = hex[ch & 15];
            k += 6;
        } else {
            if (out) out[k] = (char)ch;
            k++;
        }
    }
    return k;
}

/* HSET key tid {"queue":..,"payload":"<the payload as a JSON string>","run_at":N}
 * in RESP, built in one buffer of the exact size: the payload may be tens
 * of MB, and building the value with jansson, then formatting the command,
 * then copying it to hiredis' output buffer held it four times over. The
 * value is what json_dumps gives for that object. NULL when the payload is
 * not valid UTF-8 (a JSON string cannot hold it) or out of memory. */
sds hh__heartbeat_work_hset(const char *key, const char *tid, const hh_job *job) {
    if (!hh__utf8_valid(job->payload, job->len) || !hh__utf8_valid(job->queue, strlen(job->queue))) return NULL;
    char tail[48];
    int tl = snprintf(tail, sizeof(tail), "\",\"run_at\":%lld}", (long long)job->run_at);
    size_t ql = json_escape(NULL, job->queue, strlen(job->queue));
    size_t pl = json_escape(NULL, job->payload, job->len);
    size_t vlen = strlen("{\"queue\":\"") + ql + strlen("\",\"payload\":\"") + pl + (size_t)tl;
    sds cmd = sdscatprintf(sdsempty(), "*4\r\n$4\r\nHSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n", strlen(key), key,
                           strlen(tid), tid, vlen);
    if (!cmd || !(cmd = sdsMakeRoomFor(cmd, vlen + 2))) {
        sdsfree(cmd);
        return NULL;
    }
    char *o = cmd + sdslen(cmd);
    memcpy(o, "{\"queue\":\"", 10), o += 10;
    o += json_escape(o, job->queue, strlen(job->queue));
    memcpy(o, "\",\"payload\":\"", 13), o += 13;
    o += json_escape(o, job->payload, job->len);
    memcpy(o, tail, (size_t)tl), o += tl;
    memcpy(o, "\r\n", 2), o += 2;
    sdsIncrLen(cmd, (int)(o - (cmd + sdslen(cmd))));
    return cmd;
}

struct work_ctx {
    sds *keys;
    int copy, n, i, busy;
    sds *cmds;
};

/* One thread's entry in the running-jobs hashes (HSET commands). */
static void work_one(void *ctx, const char *tid, const hh_job *job, int abandoned) {
    struct work_ctx *w = ctx;
    int i = w->i++;
    if (i >= w->n || !job || abandoned) return;
    w->cmds[i] = hh__heartbeat_work_hset(w->keys[0], tid, job);
    if (w->cmds[i] && !w->copy && !(w->cmds[w->n + i] = hh__heartbeat_work_hset(w->keys[1], tid, job))) {
        sdsfree(w->cmds[i]);
        w->cmds[i] = NULL;
    }
    if (w->cmds[i]) w->busy++;
}

/* Visits every worker thread under its lock (worker.h): the running-jobs
 * hashes and the dumps. */
static void each_thread(const hh__heartbeat_env *e, hh__heartbeat_thread_fn fn, void *arg) {
    for (int i = 0; e->ctx->procs && i < e->ctx->opts.concurrency; i++) {
        hh__processor *p = &e->ctx->procs[i];
        pthread_mutex_lock(&p->mu);
        fn(arg, p->tid, p->job, p->abandoned);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Appends the running-jobs hashes, both generations' keys, and
 * returns how many jobs run: the same snapshot gives `busy`, so busy always
 * equals HLEN of the work hash. */
static int work_append(const hh__heartbeat_env *e, hh__pipe *pipe) {
    sds keys[2] = {hh__key_work(e->ctx->keys, e->ctx->identity), hh__key_workers(e->ctx->keys, e->ctx->identity)};
    /* The 6.4 key is a server-side COPY where Redis has it (6.2+): a 32 MiB
     * payload is sent once per beat, not twice. */
    int copy = hh__conn_version(pipe->c) >= 602;
    int n = e->ctx->opts.concurrency, busy = 0;
    sds *cmds = calloc((size_t)n * 2, sizeof(sds)); /* HSET commands, RESP: [i] work, [n+i] workers */
    struct work_ctx w = {keys, copy, n, 0, 0, cmds};
    if (cmds) each_thread(e, work_one, &w);
    busy = w.busy;
    /* Idle: one UNLINK and nothing else, as 7.2.3+ does. */
    hh__pipe_add(pipe, "UNLINK %s %s", keys[0], keys[1]);
    for (int k = 0; k < 2 && busy; k++) {
        if (k == 1 && copy) {
            hh__pipe_add(pipe, "COPY %s %s", keys[0], keys[1]);
        } else {
            for (int i = 0; i < n; i++) {
                if (!cmds[k * n + i]) continue;
                hh__pipe_add_formatted(pipe, cmds[k * n + i]); /* owned by the pipe now */
                cmds[k * n + i] = NULL;
            }
        }
        hh__pipe_add(pipe, "EXPIRE %s %d", keys[k], HH_PROCESS_TTL);
    }
    for (int i = 0; cmds && i < 2 * n; i++) sdsfree(cmds[i]);
    free(cmds);
    sdsfree(keys[0]);
    sdsfree(keys[1]);
    return busy;
}

int hh__board_init(hh__board *b, size_t nqueues) {
    memset(b, 0, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    size_t n = nqueues ? nqueues : 1;
    b->queue_size = malloc(n * sizeof(*b->queue_size));
    b->queue_latency = calloc(n, sizeof(*b->queue_latency));
    if (!b->queue_size || !b->queue_latency) return -1;
    for (size_t i = 0; i < n; i++) b->queue_size[i] = -1;
    b->nqueues = nqueues;
    return 0;
}

void hh__board_destroy(hh__board *b) {
    pthread_mutex_destroy(&b->mu);
    free(b->queue_size);
    free(b->queue_latency);
}

/* Records a beat's result; returns whether the previous beat had failed,
 * with its error in prev. */
static int board_beat(hh__board *b, double now, int ok, const char *err, int connected, char *prev, size_t prevlen) {
    pthread_mutex_lock(&b->mu);
    int was_error = b->last_error[0] != '\0';
    hh__strlcpy(prev, b->last_error, prevlen);
    if (ok) {
        b->last_pushed_at = now;
        b->last_error[0] = '\0';
    } else {
        hh__strlcpy(b->last_error, err, sizeof(b->last_error));
    }
    b->connected = connected;
    pthread_mutex_unlock(&b->mu);
    return was_error;
}

/* The queue sizes and latencies read this beat (the first n queues). */
static void board_queues(hh__board *b, const int64_t *size, const double *latency, size_t n) {
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < n && i < b->nqueues; i++) {
        b->queue_size[i] = size[i];
        b->queue_latency[i] = latency[i];
    }
    pthread_mutex_unlock(&b->mu);
}

/* Returns 1 when the signal changed the quiet flag the hash shows. */
static int deliver_signal(const hh__heartbeat_env *e, const char *sig) {
    hh__log(e->ctx->log, HH_LOG_INFO, "received %s through %s%s", sig, e->ctx->identity, HH_K_SIGNALS_SUFFIX);
    int was_quiet = atomic_load(&e->ctx->flags->quiet);
    if (strcmp(sig, "TSTP") == 0) e->ctx->signal(e->ctx->signal_udata, HH_SIGNAL_QUIET);
    else if (strcmp(sig, "TERM") == 0 || strcmp(sig, "INT") == 0) e->ctx->signal(e->ctx->signal_udata, HH_SIGNAL_STOP);
    else if (strcmp(sig, "TTIN") == 0 || strcmp(sig, "INFO") == 0) e->ctx->signal(e->ctx->signal_udata, HH_SIGNAL_DUMP);
    else hh__log(e->ctx->log, HH_LOG_WARN, "ignoring unknown signal %s", sig);
    return !was_quiet && atomic_load(&e->ctx->flags->quiet);
}

struct dump_ctx {
    const hh__heartbeat_env *e;
    int busy;
};

static void dump_one(void *ctx, const char *tid, const hh_job *job, int abandoned) {
    struct dump_ctx *d = ctx;
    (void)abandoned;
    if (job) {
        d->busy++;
        hh__log(d->e->ctx->log, HH_LOG_WARN, "thread tid=%s: class=%s jid=%s queue=%s running for %.1f s", tid,
                job->klass, job->jid, job->queue, hh__now() - job->run_at);
    } else {
        hh__log(d->e->ctx->log, HH_LOG_WARN, "thread tid=%s: idle", tid);
    }
}

/* TTIN: every thread and what it runs, to the log. */
static void dump_threads(const hh__heartbeat_env *e) {
    struct dump_ctx d = {e, 0};
    each_thread(e, dump_one, &d);
    hh__log(e->ctx->log, HH_LOG_WARN, "%d of %d threads busy, quiet=%d", d.busy, e->ctx->opts.concurrency,
            atomic_load(&e->ctx->flags->quiet));
}

/* Queue sizes and latency for the stats snapshot and /metrics, and the
 * retry/schedule/dead sizes for /metrics: read once per beat, never per
 * request. */
static void read_queues(const hh__heartbeat_env *e, hh__conn *c, double now) {
    /* only the queues the snapshot shows (hiredhand.h): with thousands of
     * queues, reading them all would cost thousands of commands a beat */
    size_t shown = e->ctx->nqueues < HH_MAX_QUEUES ? e->ctx->nqueues : HH_MAX_QUEUES;
    hh__pipe pipe;
    hh__pipe_begin(&pipe, c);
    for (size_t i = 0; i < shown; i++) {
        sds k = hh__key_queue(e->ctx->keys, e->ctx->queues[i]);
        hh__pipe_add(&pipe, "LLEN %s", k);
        hh__pipe_add(&pipe, "LINDEX %s -1", k);
        sdsfree(k);
    }
    static const char *const sets[] = {HH_K_RETRY, HH_K_SCHEDULE, HH_K_DEAD};
    for (size_t i = 0; e->metrics && i < 3; i++) {
        sds k = hh__key(e->ctx->keys, sets[i]);
        hh__pipe_add(&pipe, "ZCARD %s", k);
        sdsfree(k);
    }
    redisReply **r = hh__pipe_exec(&pipe);
    if (!r) return;
    if (e->metrics) {
        int64_t n[3];
        for (size_t i = 0; i < 3; i++) {
            redisReply *x = r[2 * shown + i];
            n[i] = x && x->type == REDIS_REPLY_INTEGER ? x->integer : -1;
        }
        hh__metrics_set_sizes(e->metrics, n[0], n[1], n[2]);
    }
    int64_t *size = malloc((shown ? shown : 1) * sizeof(*size));
    double *latency = malloc((shown ? shown : 1) * sizeof(*latency));
    for (size_t i = 0; size && latency && i < shown; i++) {
        redisReply *len = r[2 * i], *tail = r[2 * i + 1];
        size[i] = len->type == REDIS_REPLY_INTEGER ? len->integer : -1;
        double lat = 0;
        if (tail->type == REDIS_REPLY_STRING) {
            int lossy;
            json_t *j = hh__json_load_payload(tail->str, tail->len, &lossy);
            double t = hh__payload_time(j, lossy, tail->str, tail->len, "enqueued_at");
            json_decref(j);
            if (t > 0 && now > t) lat = now - t;
        }
        latency[i] = lat;
    }
    if (size && latency) board_queues(e->board, size, latency, shown);
    free(size);
    free(latency);
    hh__replies_free(r, pipe.n);
}

/* Records a beat's result for the stats snapshot and /healthz, and logs
 * each change: a failed beat, a part refused while the beat went in, and
 * the return to normal, once each. */
static void record_beat(const hh__heartbeat_env *e, const hh__conn *c, double now, int ok, const char *err) {
    char prev_error[256];
    int was_error = board_beat(e->board, now, ok, err, hh__conn_connected(c), prev_error, sizeof(prev_error));
    static _Thread_local char partial[320]; /* a part refused while the beat itself went in */
    if (!ok) {
        if (!was_error || strncmp(prev_error, err, sizeof(prev_error) - 1) != 0)
            hh__log(e->ctx->log, HH_LOG_WARN, "%s", err);
    } else if (err[0]) {
        if (strcmp(partial, err) != 0) hh__log(e->ctx->log, HH_LOG_WARN, "%s", err);
        hh__strlcpy(partial, err, sizeof(partial));
    } else if (partial[0]) {
        partial[0] = '\0';
        hh__log(e->ctx->log, HH_LOG_INFO, "heartbeat: every write accepted again");
    } else if (was_error) {
        hh__log(e->ctx->log, HH_LOG_INFO, "heartbeat: back to normal");
    }
}

/* Whether the info read from our hash before this beat's HSET is a newer
 * process's (a later started_at): that process took our identity over
 * while this one was paused or cut off. An older one's is a late beat of
 * the process we took it from, which our HSET just overwrote. by gets who. */
static int taken_over(const hh__heartbeat_env *e, const redisReply *seen, const char *info, char *by, size_t len) {
    if (seen->type != REDIS_REPLY_STRING || strcmp(seen->str, info) == 0) return 0;
    json_t *o = json_loadb(seen->str, seen->len, 0, NULL);
    json_t *sj = json_object_get(o, "started_at"), *pj = json_object_get(o, "pid");
    const char *host = json_string_value(json_object_get(o, "hostname"));
    int newer = json_is_number(sj) && json_number_value(sj) > e->ctx->started_at;
    if (newer)
        snprintf(by, len, "pid %lld on host %s, started at %.3f", json_is_integer(pj) ? json_integer_value(pj) : -1LL,
                 host ? host : "?", json_number_value(sj));
    json_decref(o);
    return newer;
}

/* Sidekiq's ProcessSet cleanup: a process killed with SIGKILL never
 * removes its member of `processes`; its hash expires 60 s later and the
 * member stays, counted by every process count and listed on the Busy
 * page. Whoever takes the lock process_cleanup (SET NX EX 60: one process
 * in the fleet, once a minute, Sidekiq's among them) removes the members
 * whose hash has no info. A live process re-adds its member with each
 * beat, so a member removed in a race with its (re)registration comes back
 * at its next beat. Tried after each beat Redis took; best effort: an
 * error just leaves the members for the next one. */
static void processes_cleanup(const hh__heartbeat_env *e, hh__conn *c) {
    sds lk = hh__key(e->ctx->keys, "process_cleanup"), pk = hh__key(e->ctx->keys, HH_K_PROCESSES);
    redisReply *r = hh__conn_cmd(c, "SET %s 1 NX EX %d", lk, HH_CLEANUP_LOCK_TTL);
    int locked = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
    r = NULL;
    sds *members = NULL;
    size_t n = 0, cap = 0;
    char cursor[32] = "0";
    while (locked) { /* every member, as Sidekiq's sscan */
        r = hh__conn_cmd(c, "SSCAN %s %s COUNT 1000", pk, cursor);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            locked = 0;
            break;
        }
        const redisReply *page = r->element[1];
        for (size_t i = 0; i < page->elements; i++) {
            if (page->element[i]->type != REDIS_REPLY_STRING) continue;
            if (n == cap) {
                sds *grown = realloc(members, (cap = cap ? 2 * cap : 64) * sizeof(*members));
                if (!grown) break;
                members = grown;
            }
            members[n++] = sdsnewlen(page->element[i]->str, page->element[i]->len);
        }
        hh__strlcpy(cursor, r->element[0]->str, sizeof(cursor));
        freeReplyObject(r);
        r = NULL;
        if (strcmp(cursor, "0") == 0) break;
    }
    if (r) freeReplyObject(r);
    if (locked && n > 0) {
        hh__pipe pipe;
        hh__pipe_begin(&pipe, c);
        for (size_t i = 0; i < n; i++) {
            sds hk = hh__key_process(e->ctx->keys, members[i]);
            hh__pipe_add(&pipe, "HEXISTS %s info", hk);
            sdsfree(hk);
        }
        redisReply **rs = hh__pipe_exec(&pipe);
        size_t gone = 0;
        for (size_t i = 0; rs && i < n; i++) {
            /* only a hash seen without info: an error reply keeps the member */
            if (rs[i]->type == REDIS_REPLY_INTEGER && rs[i]->integer == 0) members[gone++] = members[i];
            else sdsfree(members[i]);
        }
        if (!rs) gone = 0; /* the members are freed below */
        hh__replies_free(rs, pipe.n);
        if (gone > 0) {
            size_t argc = gone + 2;
            const char **argv = malloc(argc * sizeof(*argv));
            size_t *lens = malloc(argc * sizeof(*lens));
            if (argv && lens) {
                argv[0] = "SREM", lens[0] = 4;
                argv[1] = pk, lens[1] = sdslen(pk);
                for (size_t i = 0; i < gone; i++) argv[2 + i] = members[i], lens[2 + i] = sdslen(members[i]);
                r = hh__conn_cmdargv(c, (int)argc, argv, lens);
                if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
                    hh__log(e->ctx->log, HH_LOG_INFO,
                            "heartbeat: removed %lld dead process(es) from processes (no heartbeat hash)", r->integer);
                if (r) freeReplyObject(r);
            }
            free(argv), free(lens);
        }
        if (rs) n = gone; /* members[0..gone) are left to free */
    }
    for (size_t i = 0; i < n; i++) sdsfree(members[i]);
    free(members);
    sdsfree(lk), sdsfree(pk);
}

/* Over maxmemory Redis refuses the beat's transaction whole (its HSET,
 * SADD, INCRBY are denyoom). HH_LUA_LEASE, allowed there, keeps our own
 * hash alive and current (beat, busy, quiet: the Busy page and the peers
 * see a live process) and reads one remote signal; a server without
 * script flags runs it as a plain script whose first write, an EXPIRE, is
 * allowed too. Without it (an error, a hash gone or not ours) a bare
 * EXPIRE, allowed over maxmemory, still keeps the hash from expiring.
 * Returns 1 when the hash was refreshed, with the signal popped (if any)
 * in *sig (freed by the caller). */
static int lease_over_maxmemory(const hh__heartbeat_env *e, hh__conn *c, const char *hk, const char *sk,
                                const char *info, int busy, const char *beat_s, long rtt_us, redisReply **sig) {
    char ttl[16], busy_s[16], rtt_s[24], rss_s[24];
    snprintf(ttl, sizeof(ttl), "%d", HH_PROCESS_TTL);
    snprintf(busy_s, sizeof(busy_s), "%d", busy);
    snprintf(rtt_s, sizeof(rtt_s), "%ld", rtt_us);
    snprintf(rss_s, sizeof(rss_s), "%ld", hh__rss_kb());
    const char *keys[2] = {hk, sk};
    const char *args[12] = {info,   ttl,    "beat",   beat_s,
                            "busy", busy_s, "quiet",  atomic_load(&e->ctx->flags->quiet) ? "true" : "false",
                            "rss",  rss_s,  "rtt_us", rtt_s};
    redisReply *r = hh__conn_eval(c, HH_SCRIPT_LEASE, 2, keys, NULL, 12, args, NULL);
    int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER &&
        r->element[0]->integer == 1;
    if (ok && r->element[1]->type == REDIS_REPLY_STRING) {
        *sig = r->element[1];
        r->element[1] = NULL; /* freeReplyObject skips NULL elements */
    }
    if (r) freeReplyObject(r);
    if (!ok) {
        redisReply *x = hh__conn_cmd(c, "EXPIRE %s %d", hk, HH_PROCESS_TTL);
        if (x) freeReplyObject(x);
    }
    return ok;
}

/* One beat; returns 1 when another should follow at once (a remote quiet
 * must show on the Busy page within one beat). *lost is set, with who in
 * by, when a newer process has taken the identity over. */
static int beat(const hh__heartbeat_env *e, hh__conn *c, const char *info, int *registered, int *lost, char *by,
                size_t bylen) {
    int again = 0;
    double now = hh__now();
    unsigned long long p = atomic_exchange(&e->ctx->counters->unflushed_processed, 0);
    unsigned long long f = atomic_exchange(&e->ctx->counters->unflushed_failed, 0);
    int ok = 0, stats_ok = 0, expired = 0, leased = 0;
    char err[320] = "";
    double t0 = hh__mono();
    redisReply *ping = hh__conn_cmd(c, "PING");
    long rtt_us = (long)((hh__mono() - t0) * 1e6);
    if (ping) {
        freeReplyObject(ping);
        sds pk = hh__key(e->ctx->keys, HH_K_PROCESSES), hk = hh__key_process(e->ctx->keys, e->ctx->identity);
        sds sk = hh__key_signals(e->ctx->keys, e->ctx->identity);
        hh__pipe pipe;
        hh__pipe_begin(&pipe, c);
        hh__pipe_add(&pipe, "MULTI");
        int stats_n = 0;
        if (p || f) { /* only non-zero, as 7.x */
            stats_append(e, &pipe, p, f, now);
            stats_n = pipe.n - 1;
        }
        int busy = work_append(e, &pipe);
        char beat_s[32];
        hh__fmt_double(beat_s, sizeof(beat_s), now);
        hh__pipe_add(&pipe, "SADD %s %s", pk, e->ctx->identity);
        int exists_at = pipe.n - 1; /* index inside EXEC's array */
        hh__pipe_add(&pipe, "EXISTS %s", hk);
        hh__pipe_add(&pipe, "HGET %s info", hk); /* whose hash it was: ours, or a newer owner's */
        hh__pipe_add(&pipe, "HSET %s info %s concurrency %d busy %d beat %s rtt_us %ld quiet %s rss %ld", hk, info,
                     e->ctx->opts.concurrency, busy, beat_s, rtt_us,
                     atomic_load(&e->ctx->flags->quiet) ? "true" : "false", hh__rss_kb());
        hh__pipe_add(&pipe, "EXPIRE %s %d", hk, HH_PROCESS_TTL);
        hh__pipe_add(&pipe, "RPOP %s", sk);
        hh__pipe_add(&pipe, "EXEC");
        redisReply **r = hh__pipe_exec(&pipe);
        if (r) {
            char why[256];
            int at = -1;
            if (hh__tx_check(r, 0, pipe.n - 1, why, sizeof(why), &at) == 0 || at >= 0) {
                /* EXEC ran: a failed command inside it does not undo the
                 * others, so each part is judged on its own replies. */
                redisReply *ex = r[pipe.n - 1];
                int n = (int)ex->elements;
                stats_ok = hh__replies_check(ex->element, 0, stats_n, why, sizeof(why)) < 0;
                if (!stats_ok)
                    snprintf(err, sizeof(err), "heartbeat: stats not written (kept for the next beat): %s", why);
                if (hh__replies_check(ex->element, stats_n, exists_at - 1, why, sizeof(why)) >= 0)
                    snprintf(err, sizeof(err), "heartbeat: busy jobs not written: %s", why);
                if (hh__replies_check(ex->element, n - 1, n, why, sizeof(why)) >= 0)
                    snprintf(err, sizeof(err), "heartbeat: signals not read: %s", why);
                ok = hh__replies_check(ex->element, exists_at - 1, n - 1, why, sizeof(why)) < 0;
                if (!ok) snprintf(err, sizeof(err), "heartbeat: process hash not written: %s", why);
                redisReply *exists = ex->element[exists_at];
                if (ok && exists->type == REDIS_REPLY_INTEGER && exists->integer == 0 && *registered) {
                    hh__log(e->ctx->log, HH_LOG_WARN, "heartbeat: process hash had expired; registered again");
                    expired = 1;
                }
                if (ok) *registered = 1;
                if (ok && taken_over(e, ex->element[exists_at + 1], info, by, bylen)) *lost = 1;
                redisReply *sig = ex->element[n - 1];
                if (sig->type == REDIS_REPLY_STRING) again = deliver_signal(e, sig->str);
            } else {
                /* A refused beat (OOM) need not lose the lease: the process
                 * and its jobs stay known as alive while this process
                 * retries its other writes. */
                redisReply *sig = NULL;
                leased = lease_over_maxmemory(e, c, hk, sk, info, busy, beat_s, rtt_us, &sig);
                if (leased) snprintf(err, sizeof(err), "heartbeat: hash kept, busy jobs and stats wait: %s", why);
                else snprintf(err, sizeof(err), "heartbeat: %s", why);
                if (sig) again = deliver_signal(e, sig->str);
                if (sig) freeReplyObject(sig);
            }
            hh__replies_free(r, pipe.n);
        }
        sdsfree(pk), sdsfree(hk), sdsfree(sk);
    }
    if (ok && e->reads_queues) read_queues(e, c, now); /* only someone reads them */
    /* Sidekiq flushes its metrics on each beat that went in (its :beat
     * event); after a failed one they wait for the next. Not part of the
     * beat's MULTI: a refused metrics write must not cost the lease. */
    if (ok) hh__job_metrics_flush(e->job_metrics, c, now);
    if (ok) processes_cleanup(e, c);
    if (!ok && !err[0]) snprintf(err, sizeof(err), "heartbeat: %s", hh__conn_error_or(c, "Redis unreachable"));
    if (!stats_ok) { /* keep the counts for the next beat, as Sidekiq 6.4 does */
        atomic_fetch_add(&e->ctx->counters->unflushed_processed, p);
        atomic_fetch_add(&e->ctx->counters->unflushed_failed, f);
    }
    /* A lease kept over maxmemory is a beat for the Busy page and /readyz
     * (the process runs and drains), not for the outage rule: a peer that
     * cannot run HH_LUA_LEASE (an older hiredhand) may have seen its hash
     * expire meanwhile. */
    record_beat(e, c, now, ok || leased, err);
    /* the outage rule, lease loss, hiredhand:fetchers (lease.c); the hook */
    if (e->lease) hh__lease_beat(e->lease, c, ok, expired);
    e->ctx->signal(e->ctx->signal_udata, ok ? HH_SIGNAL_BEAT_OK : HH_SIGNAL_BEAT_FAILED);
    return again;
}

/* A newer process took our identity: every running job lost its lease
 * (lease.c); the buffered jobs' entries are the new owner's to run or
 * recover, so they are dropped here, and the manager is told to stop, as
 * a refused start (the identity is live elsewhere, and a supervisor that
 * restarted this process with it would take it back). Returns 1 to beat
 * no more. */
static int identity_taken(const hh__heartbeat_env *e, const char *by) {
    if (!e->lease) return 0;
    int rc = hh__lease_identity_lost(e->lease, by);
    if (rc != 1) return rc != 0;
    hh__fetched *f = NULL;
    size_t n = hh__buffer_take_all(e->lease->buffer, &f);
    for (size_t i = 0; i < n; i++) hh__lease_finish_fetched(e->lease, &f[i]);
    free(f);
    if (n) {
        atomic_fetch_add(&e->ctx->counters->lease_lost, n);
        hh__log(e->ctx->log, HH_LOG_WARN,
                "lease lost: %zu fetched jobs that had not started dropped (identity taken over)", n);
    }
    atomic_store(&e->ctx->flags->taken_over, 1);
    atomic_store(&e->ctx->flags->start_error, HH_ERR_EXISTS);
    e->ctx->signal(e->ctx->signal_udata, HH_SIGNAL_STOP);
    return 1;
}

static int booted_or_off(const void *arg) {
    const hh__heartbeat_env *e = arg;
    int go = atomic_load(&e->ctx->flags->booted) || atomic_load(&e->ctx->flags->beats_off);
    if (!go && e->boot_waits) atomic_fetch_add(e->boot_waits, 1);
    return go;
}

static int off_or_dump(const void *arg) {
    const hh__heartbeat_env *e = arg;
    return atomic_load(&e->ctx->flags->beats_off) || atomic_load(&e->ctx->flags->dump_requested);
}

void *hh__heartbeat_main(void *arg) {
    const hh__heartbeat_env *e = arg;
    hh__conn c;
    hh__conn_init(&c, e->ctx->cfg, e->ctx->log, "heartbeat", &e->ctx->flags->beats_off);
    char *info = hh__heartbeat_info(e);
    int registered = 0, lost = 0;
    char by[256] = "";
    /* Never beat under an identity that may be another process's. */
    hh__wake_wait(e->ctx->wake, -1, booted_or_off, e);
    while (!atomic_load(&e->ctx->flags->beats_off)) {
        int again = beat(e, &c, info ? info : "{}", &registered, &lost, by, sizeof(by));
        if (lost && identity_taken(e, by)) {
            /* The hash is the new owner's: beat no more, until the stop. */
            hh__wake_wait(e->ctx->wake, -1, off_or_dump, e);
            while (!atomic_load(&e->ctx->flags->beats_off)) {
                if (atomic_exchange(&e->ctx->flags->dump_requested, 0)) dump_threads(e);
                hh__wake_wait(e->ctx->wake, -1, off_or_dump, e);
            }
            break;
        }
        lost = 0;
        /* Woken at once by TTIN and by the end of a stop. */
        double until = hh__mono() + (again ? 0 : e->ctx->opts.heartbeat_interval);
        while (!atomic_load(&e->ctx->flags->beats_off) && hh__mono() < until) {
            hh__wake_wait(e->ctx->wake, until, off_or_dump, e);
            if (atomic_exchange(&e->ctx->flags->dump_requested, 0)) dump_threads(e);
        }
    }
    free(info);
    hh__conn_close(&c);
    return NULL;
}

int hh__heartbeat_unregister(const hh__heartbeat_env *e, hh__conn *c) {
    sds pk = hh__key(e->ctx->keys, HH_K_PROCESSES);
    sds wk = hh__key_work(e->ctx->keys, e->ctx->identity), wsk = hh__key_workers(e->ctx->keys, e->ctx->identity);
    int rc = -1;
    for (int attempt = 0; attempt < 3 && rc != 0; attempt++) {
        unsigned long long p = atomic_exchange(&e->ctx->counters->unflushed_processed, 0);
        unsigned long long f = atomic_exchange(&e->ctx->counters->unflushed_failed, 0);
        hh__pipe pipe;
        hh__pipe_begin(&pipe, c);
        if (p || f) stats_append(e, &pipe, p, f, hh__now());
        hh__pipe_add(&pipe, "SREM %s %s", pk, e->ctx->identity);
        hh__pipe_add(&pipe, "UNLINK %s %s", wk, wsk);
        redisReply **r = hh__pipe_exec(&pipe);
        char why[256];
        int bad = r ? hh__replies_check(r, 0, pipe.n, why, sizeof(why)) : 0;
        if (r && bad < 0) {
            rc = 0;
        } else {
            /* the stats go first in the pipeline: keep them when any failed */
            int stats_n = (p || f) ? 6 : 0;
            if (!r || bad < stats_n) {
                atomic_fetch_add(&e->ctx->counters->unflushed_processed, p);
                atomic_fetch_add(&e->ctx->counters->unflushed_failed, f);
            }
            if (r) {
                hh__log(e->ctx->log, HH_LOG_WARN, "unregistering: %s", why);
                if (bad >= stats_n) rc = 0; /* only the removal of the busy jobs failed: they expire */
            } else {
                hh__conn_ready(c);
            }
        }
        hh__replies_free(r, pipe.n);
    }
    sdsfree(pk), sdsfree(wk), sdsfree(wsk);
    return rc;
}
