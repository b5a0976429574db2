/* unit_helpers.h -- shared by the cmocka unit tests in tests/unit.
 *
 *   uh_redis_start / uh_redis_stop / uh_redis_restart
 *       a private redis-server on 127.0.0.1 and a random free port in
 *       [20000, 32000) (--save "" --appendonly no), killed at the end (also
 *       when the test binary dies: PR_SET_PDEATHSIG + atexit).
 *   uh_sentinel_start a Redis Sentinel the same way (stop it with
 *       uh_redis_stop), monitoring one master name.
 *   uh_cmd            one command on a private hiredis context, for checks
 *   uh_keys_csv       the top-level keys of a JSON object, in order, "a,b,c"
 *   UH_ASSERT_DBL_IN  a double within [lo, hi], printing the values
 *
 * Everything is static inline so each test uses what it needs without
 * unused-function warnings. */
#ifndef HH_UNIT_HELPERS_H
#define HH_UNIT_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "hiredhand.h"

#define UH_ASSERT_DBL_IN(x, lo, hi)                                                  \
    do {                                                                             \
        double uh_x_ = (x), uh_lo_ = (lo), uh_hi_ = (hi);                            \
        if (!(uh_x_ >= uh_lo_ && uh_x_ <= uh_hi_))                                   \
            fail_msg("%s = %.17g not in [%.17g, %.17g]", #x, uh_x_, uh_lo_, uh_hi_); \
    } while (0)

static inline double uh_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void uh_sleep(double s) {
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* --------------------------------------------------------------- JSON */

/* "k1,k2,..." for the top-level keys of a JSON object in document order
 * (jansson >= 2.8 keeps insertion order). Returns a static buffer. */
static inline const char *uh_keys_csv(const char *json) {
    static char buf[4096];
    buf[0] = '\0';
    json_t *o = json_loads(json, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return "<not an object>";
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (buf[0]) strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, k, sizeof(buf) - strlen(buf) - 1);
    }
    json_decref(o);
    return buf;
}

/* The raw JSON token of a top-level key's value as written in `json` (for
 * numbers: exactly the digits in the text). Returns a static buffer, "" when
 * absent. Only for simple flat payloads whose keys are not repeated in
 * nested values. */
static inline const char *uh_token(const char *json, const char *key) {
    static char buf[256];
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *p = strstr(json, pat);
    buf[0] = '\0';
    if (!p) return buf;
    p += strlen(pat);
    size_t n = strcspn(p, ",}]");
    if (n >= sizeof(buf)) n = sizeof(buf) - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* -------------------------------------------------------------- Redis */

typedef struct uh_redis {
    pid_t pid;
    int port;
    char url[64];
} uh_redis;

#define UH_MAX_SERVERS 8
static uh_redis *uh_redis_live_[UH_MAX_SERVERS]; /* for the atexit safety net */
static int uh_redis_atexit_set_;

static inline int uh_port_free(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

/* A loopback port in [20000, 32000) that nothing listens on now. */
static inline int uh_pick_port(void) {
    static unsigned seed;
    if (!seed) seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)(uh_mono() * 1e6);
    for (int i = 0; i < 200; i++) {
        int port = 20000 + (int)(rand_r(&seed) % 12000); /* below ephemeral ports */
        if (uh_port_free(port)) return port;
    }
    return -1;
}

static inline redisContext *uh_connect(int port) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c) redisSetTimeout(c, tv);
    return c;
}

static inline void uh_redis_kill(uh_redis *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

static inline void uh_redis_atexit_(void) {
    for (int i = 0; i < UH_MAX_SERVERS; i++)
        if (uh_redis_live_[i]) uh_redis_kill(uh_redis_live_[i]);
}

static inline void uh_redis_track_(uh_redis *r, int on) {
    if (!uh_redis_atexit_set_) {
        atexit(uh_redis_atexit_);
        uh_redis_atexit_set_ = 1;
    }
    for (int i = 0; i < UH_MAX_SERVERS; i++)
        if (uh_redis_live_[i] == r) uh_redis_live_[i] = NULL;
    if (!on) return;
    for (int i = 0; i < UH_MAX_SERVERS; i++)
        if (!uh_redis_live_[i]) {
            uh_redis_live_[i] = r;
            return;
        }
}

/* Starts redis-server on `port` (a sentinel when sentinel_conf names its
 * configuration file) and waits (<= 5 s) for PING. 0 or -1. */
static inline int uh_server_start_on_(uh_redis *r, int port, const char *sentinel_conf) {
    char ports[16];
    snprintf(ports, sizeof(ports), "%d", port);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        if (sentinel_conf)
            execlp("redis-server", "redis-server", sentinel_conf, "--sentinel", "--port", ports, "--bind", "127.0.0.1",
                   "--daemonize", "no", "--loglevel", "warning", (char *)NULL);
        else
            execlp("redis-server", "redis-server", "--port", ports, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                   "no", "--dir", "/tmp", "--daemonize", "no", "--loglevel", "warning", (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
    r->port = port;
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d/0", port);
    double until = uh_mono() + 5.0;
    while (uh_mono() < until) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            r->pid = 0;
            return -1;
        }
        redisContext *c = uh_connect(port);
        if (c) {
            redisReply *rep = redisCommand(c, "PING");
            int ok = rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
            if (rep) freeReplyObject(rep);
            redisFree(c);
            if (ok) {
                uh_redis_track_(r, 1);
                return 0;
            }
        }
        uh_sleep(0.02);
    }
    uh_redis_kill(r);
    return -1;
}

static inline int uh_redis_start_on(uh_redis *r, int port) { return uh_server_start_on_(r, port, NULL); }

/* A Redis Sentinel on a random free port that monitors `master` at
 * 127.0.0.1:master_port (nothing needs to listen there: the sentinel names
 * the address it was given until a failover). Its configuration file (the
 * sentinel rewrites it) is conf, a path of conflen bytes the caller
 * unlinks. 0 or -1. */
static inline int uh_sentinel_start(uh_redis *r, const char *master, int master_port, char *conf, size_t conflen) {
    memset(r, 0, sizeof(*r));
    snprintf(conf, conflen, "/tmp/uh-sentinel-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(conf);
    if (fd < 0) return -1;
    char text[256];
    int n = snprintf(text, sizeof(text), "sentinel monitor %s 127.0.0.1 %d 1\n", master, master_port);
    int ok = n > 0 && write(fd, text, (size_t)n) == n;
    close(fd);
    for (int i = 0; ok && i < 5; i++) {
        int port = uh_pick_port();
        if (port > 0 && uh_server_start_on_(r, port, conf) == 0) return 0;
    }
    fprintf(stderr, "unit_helpers: cannot start a sentinel (redis-server --sentinel)\n");
    return -1;
}

/* A fresh server on a random free port (a few tries against races). */
static inline int uh_redis_start(uh_redis *r) {
    memset(r, 0, sizeof(*r));
    for (int i = 0; i < 5; i++) {
        int port = uh_pick_port();
        if (port > 0 && uh_redis_start_on(r, port) == 0) return 0;
    }
    fprintf(stderr, "unit_helpers: cannot start redis-server (is it installed?)\n");
    return -1;
}

static inline void uh_redis_stop(uh_redis *r) {
    uh_redis_kill(r);
    uh_redis_track_(r, 0);
}

/* Same port, empty dataset. */
static inline int uh_redis_restart(uh_redis *r) {
    int port = r->port;
    uh_redis_stop(r);
    for (int i = 0; i < 50; i++) {
        if (uh_redis_start_on(r, port) == 0) return 0;
        uh_sleep(0.1);
    }
    return -1;
}

/* One command on a fresh private connection; the reply (freeReplyObject
 * it) or NULL. The helpers below read its reply in one way each. */
static inline redisReply *uh_vcmd(const uh_redis *r, const char *fmt, va_list ap) {
    redisContext *c = uh_connect(r->port);
    if (!c) return NULL;
    redisReply *rep = redisvCommand(c, fmt, ap);
    redisFree(c);
    return rep;
}

static inline redisReply *uh_cmd(const uh_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = uh_vcmd(r, fmt, ap);
    va_end(ap);
    return rep;
}

static inline long long uh_int(const uh_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = uh_vcmd(r, fmt, ap);
    va_end(ap);
    long long v = -999;
    if (rep && rep->type == REDIS_REPLY_INTEGER) v = rep->integer;
    else if (rep && rep->type == REDIS_REPLY_STRING) v = strtoll(rep->str, NULL, 10);
    else if (rep && rep->type == REDIS_REPLY_NIL) v = -1000;
    if (rep) freeReplyObject(rep);
    return v;
}

/* A string reply as a malloc'd copy (free it), or NULL when not a string. */
static inline char *uh_str(const uh_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = uh_vcmd(r, fmt, ap);
    va_end(ap);
    char *s = NULL;
    if (rep && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS)) {
        s = malloc(rep->len + 1);
        if (s) {
            memcpy(s, rep->str, rep->len);
            s[rep->len] = '\0';
        }
    }
    if (rep) freeReplyObject(rep);
    return s;
}

static inline void uh_flushall(const uh_redis *r) {
    redisReply *rep = uh_cmd(r, "FLUSHALL");
    assert_non_null(rep);
    freeReplyObject(rep);
}

/* A client of the Redis at url, keys under ns (NULL: none); the test
 * fails if it cannot connect. */
static inline hh_client *uh_client(const char *url, const char *ns) {
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    o.ns = ns;
    int err = 99;
    hh_client *c = hh_client_new(&o, &err);
    assert_non_null(c);
    assert_int_equal(err, HH_OK);
    return c;
}

/* One private redis-server for a cmocka group: defines `srv` and the
 * group_setup/group_teardown to pass to cmocka_run_group_tests. */
#define UH_REDIS_GROUP()                  \
    static uh_redis srv;                  \
    static int group_setup(void **s) {    \
        (void)s;                          \
        return uh_redis_start(&srv);      \
    }                                     \
    static int group_teardown(void **s) { \
        (void)s;                          \
        uh_redis_stop(&srv);              \
        return 0;                         \
    }

#endif
