/* sentinel.c -- Redis Sentinel (see sentinel.h): the master's address from
 * SENTINEL get-master-addr-by-name, asked of each sentinel in turn, and a
 * listener on +switch-master. That ROLE says "master" after each connect is
 * checked in redis.c. Touches no key; the listener SUBSCRIBEs to the
 * sentinels' +switch-master channel. */
#include "sentinel.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *opt_env(const char *v, const char *env) {
    if (v && *v) return v;
    v = getenv(env);
    return v && *v ? v : NULL;
}

/* "host:port", "[v6]:port" or "host" (port 26379). */
static int parse_addr(const char *s, size_t n, sds *host, int *port) {
    const char *colon = NULL, *hs = s, *he = s + n;
    if (n && s[0] == '[') {
        const char *rb = memchr(s, ']', n);
        if (!rb) return -1;
        hs = s + 1, he = rb;
        if (rb + 1 < s + n) {
            if (rb[1] != ':') return -1;
            colon = rb + 1;
        }
    } else {
        colon = memchr(s, ':', n);
        if (colon) he = colon;
        if (colon && memchr(colon + 1, ':', (size_t)(s + n - colon - 1))) return -1; /* v6 without [] */
    }
    *port = 26379;
    if (colon) {
        int v = 0;
        const char *p = colon + 1;
        if (p == s + n || s + n - p > 5) return -1;
        for (; p < s + n; p++) {
            if (*p < '0' || *p > '9') return -1;
            v = v * 10 + (*p - '0');
        }
        if (v < 1 || v > 65535) return -1;
        *port = v;
    }
    if (he <= hs) return -1;
    *host = sdsnewlen(hs, (size_t)(he - hs));
    return *host ? 0 : -1;
}

int hh__sentinel_config(hh__redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen) {
    const char *list = opt_env(o ? o->sentinels : NULL, "HIREDHAND_SENTINELS");
    if (!list) return 0;
    if (cfg->unix_path) {
        snprintf(err, errlen, "Sentinel needs a redis:// or rediss:// URL, not unix://");
        return -1;
    }
    size_t cap = 1;
    for (const char *p = list; *p; p++)
        if (*p == ',') cap++;
    cfg->sentinel_host = calloc(cap, sizeof(*cfg->sentinel_host));
    cfg->sentinel_port = calloc(cap, sizeof(*cfg->sentinel_port));
    if (!cfg->sentinel_host || !cfg->sentinel_port) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n && parse_addr(p, n, &cfg->sentinel_host[cfg->nsentinels], &cfg->sentinel_port[cfg->nsentinels]) != 0) {
            snprintf(err, errlen, "bad sentinel address '%.*s' (want HOST:PORT, [IPv6]:PORT)", (int)(n > 200 ? 200 : n),
                     p);
            return -1;
        }
        if (n) cfg->nsentinels++;
        p += n;
        if (*p == ',') p++;
    }
    if (!cfg->nsentinels) {
        snprintf(err, errlen, "no sentinel address in '%s'", list);
        return -1;
    }
    /* As redis-rb: redis://mymaster with sentinels names the master. */
    const char *name = opt_env(o ? o->sentinel_master : NULL, "HIREDHAND_SENTINEL_MASTER");
    cfg->sentinel_master = sdsnew(name ? name : cfg->host);
    const char *pw = opt_env(o ? o->sentinel_password : NULL, "HIREDHAND_SENTINEL_PASSWORD");
    if (pw) cfg->sentinel_password = sdsnew(pw);
    /* the URL's host and port are not used: logs name the master instead */
    /* user info masked as mask_url masks it: the user name shows beside
     * a password, only the password is hidden */
    const char *ui = cfg->password ? ":***@" : cfg->user ? "***@" : "";
    const char *un = cfg->password && cfg->user ? cfg->user : "";
    sds d = sdscatfmt(sdsempty(), "%s://%s%s%s/%i (via Sentinel %S:%i", cfg->tls ? "rediss" : "redis", un, ui,
                      cfg->sentinel_master, cfg->db, cfg->sentinel_host[0], cfg->sentinel_port[0]);
    for (int i = 1; d && i < cfg->nsentinels; i++)
        d = sdscatfmt(d, ",%S:%i", cfg->sentinel_host[i], cfg->sentinel_port[i]);
    if (d) d = sdscat(d, ")");
    if (!d || !cfg->sentinel_master) {
        sdsfree(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sdsfree(cfg->display);
    cfg->display = d;
    return 0;
}

void hh__sentinel_config_free(hh__redis_config *cfg) {
    if (atomic_exchange(&cfg->watch_state, 2) == 1 && cfg->watch_thread) {
        pthread_join(*(pthread_t *)cfg->watch_thread, NULL);
        free(cfg->watch_thread);
    }
    cfg->watch_thread = NULL;
    for (int i = 0; i < cfg->nsentinels; i++) sdsfree(cfg->sentinel_host[i]);
    free(cfg->sentinel_host);
    free(cfg->sentinel_port);
    sdsfree(cfg->sentinel_master);
    sdsfree(cfg->sentinel_password);
    cfg->sentinel_host = NULL;
    cfg->sentinel_port = NULL;
    cfg->sentinel_master = cfg->sentinel_password = NULL;
    cfg->nsentinels = 0;
}

/* Connects to sentinel i and AUTHs with the sentinels' password. Returns
 * 0, -1 (no connection or no reply) or -3 (AUTH refused: an answer). */
static int sentinel_open(hh__conn *s, int i, char *why, size_t len) {
    hh__redis_config *cfg = hh__conn_config(s);
    if (hh__conn_open(s, cfg->sentinel_host[i], cfg->sentinel_port[i]) != 0) {
        hh__strlcpy(why, hh__conn_last_error(s), len);
        return -1;
    }
    if (!cfg->sentinel_password) return 0;
    redisReply *r = hh__conn_raw(s, "AUTH %b", cfg->sentinel_password, sdslen(cfg->sentinel_password));
    int ok = r && r->type == REDIS_REPLY_STATUS, answered = r != NULL;
    snprintf(why, len, "AUTH failed: %s",
             !r                                 ? hh__conn_io_error(s, "")
                 : r->type == REDIS_REPLY_ERROR ? r->str
                                                : "unexpected reply");
    if (!r) hh__conn_tls_hint(s, why, len);
    if (r) freeReplyObject(r);
    if (!ok) hh__conn_close(s);
    return ok ? 0 : answered ? -3 : -1;
}

/* Asks sentinel i for the master's address. Returns 0 with host and port;
 * -2 when it does not know the master's name (a nil reply); -1 when it
 * gave no answer; -3 for any other answer (an error). */
static int ask(hh__conn *s, int i, char *host, size_t hostlen, int *port, char *why, size_t len) {
    int rc = sentinel_open(s, i, why, len);
    if (rc != 0) return rc;
    redisReply *r = hh__conn_raw(s, "SENTINEL get-master-addr-by-name %s", hh__conn_config(s)->sentinel_master);
    rc = -3;
    if (!r) {
        rc = -1;
        snprintf(why, len, "%s", hh__conn_io_error(s, ""));
        hh__conn_tls_hint(s, why, len);
    } else if (r->type == REDIS_REPLY_NIL) {
        rc = -2;
        snprintf(why, len, "does not know a master named %s", hh__conn_config(s)->sentinel_master);
    } else if (r->type == REDIS_REPLY_ERROR) {
        snprintf(why, len, "%s", r->str);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
               r->element[1]->type != REDIS_REPLY_STRING || r->element[0]->len == 0 || r->element[0]->len >= hostlen) {
        snprintf(why, len, "unexpected reply to SENTINEL get-master-addr-by-name");
    } else {
        char *end;
        long p = strtol(r->element[1]->str, &end, 10);
        if (*end || p < 1 || p > 65535) {
            snprintf(why, len, "bad master port '%.20s'", r->element[1]->str);
        } else {
            memcpy(host, r->element[0]->str, r->element[0]->len);
            host[r->element[0]->len] = '\0';
            *port = (int)p;
            rc = 0;
        }
    }
    if (r) freeReplyObject(r);
    return rc;
}

int hh__sentinel_discover(hh__conn *c, char *host, size_t hostlen, int *port) {
    hh__redis_config *cfg = hh__conn_config(c);
    int first = atomic_load(&cfg->sentinel_last), answered_else = 0;
    /* every failure; the sentinels that do not know the name; the others */
    sds errs = sdsempty(), unknown = sdsempty(), silent = sdsempty();
    for (int k = 0; k < cfg->nsentinels; k++) {
        int i = (first + k) % cfg->nsentinels;
        hh__conn s;
        char why[256];
        hh__conn_init(&s, cfg, hh__conn_logger(c), "sentinel", NULL);
        hh__conn_set_deadline(&s, hh__conn_deadline(c));
        int rc = ask(&s, i, host, hostlen, port, why, sizeof(why));
        hh__conn_close(&s);
        if (rc == 0) {
            if (i != first) atomic_store(&cfg->sentinel_last, i);
            sdsfree(errs), sdsfree(unknown), sdsfree(silent);
            return 0;
        }
        if (rc == -3) answered_else = 1;
        if (errs)
            errs = sdscatprintf(errs, "%s%s:%d %s", sdslen(errs) ? "; " : "", cfg->sentinel_host[i],
                                cfg->sentinel_port[i], why);
        if (rc == -2 && unknown)
            unknown = sdscatprintf(unknown, "%s%s:%d", sdslen(unknown) ? ", " : "", cfg->sentinel_host[i],
                                   cfg->sentinel_port[i]);
        if (rc == -1 && silent)
            silent = sdscatprintf(silent, "%s%s:%d %s", sdslen(silent) ? "; " : "", cfg->sentinel_host[i],
                                  cfg->sentinel_port[i], why);
    }
    /* Every sentinel that answered does not know the name: a name to fix
     * (at start) rather than an outage, unless some other answer came. */
    int rc = -1;
    if (unknown && silent && sdslen(unknown) && !answered_else) {
        hh__conn_set_error(c, "no sentinel knows a master named %s (asked %s%s%s)", cfg->sentinel_master, unknown,
                           sdslen(silent) ? "; no answer from " : "", silent);
        rc = -2;
    } else {
        hh__conn_set_error(c, "no sentinel gave the master %s: %s", cfg->sentinel_master,
                           errs ? errs : "out of memory");
    }
    sdsfree(errs), sdsfree(unknown), sdsfree(silent);
    return rc;
}

/* ------------------------------------------------------ +switch-master */

static int watching(hh__redis_config *cfg) { return atomic_load(&cfg->watch_state) == 1; }

static void nap(hh__redis_config *cfg, double s) {
    for (double t = 0; t < s && watching(cfg); t += 0.1) hh__sleep(0.1);
}

/* "+switch-master <name> <old ip> <old port> <new ip> <new port>", or
 * "+promoted-slave slave <ip:port> <ip> <port> @ <name> <ip> <port>".
 * The sentinel that leads a failover says +switch-master only once every
 * replica is reconfigured (seconds later), while it already names the
 * promoted replica to SENTINEL get-master-addr-by-name: writes to the old
 * master in between are lost when it becomes a replica. Its
 * +promoted-slave lets connections move at once; the other sentinels say
 * +switch-master as soon as they hear of the promotion. */
static void on_message(hh__redis_config *cfg, redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, "message") != 0 || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return;
    const char *chan = r->element[1]->str, *msg = r->element[2]->str;
    size_t n = sdslen(cfg->sentinel_master);
    if (strcmp(chan, "+switch-master") == 0) {
        if (strncmp(msg, cfg->sentinel_master, n) != 0 || msg[n] != ' ') return;
    } else if (strcmp(chan, "+promoted-slave") == 0) {
        const char *at = strstr(msg, " @ ");
        if (!at || strncmp(at + 3, cfg->sentinel_master, n) != 0 || at[3 + n] != ' ') return;
    } else {
        return;
    }
    atomic_fetch_add(&cfg->master_epoch, 1);
    hh__log(cfg->watch_log, HH_LOG_INFO, "sentinel: %s %s: every connection moves to the new master", chan, msg);
}

static void *watch_main(void *arg) {
    hh__redis_config *cfg = arg;
    hh__conn s;
    hh__conn_init(&s, cfg, cfg->watch_log, "sentinel-watch", NULL);
    int i = atomic_load(&cfg->sentinel_last);
    while (watching(cfg)) {
        if (!hh__conn_connected(&s)) {
            char why[256];
            redisReply *r = NULL;
            if (sentinel_open(&s, i, why, sizeof(why)) != 0 ||
                !(r = hh__conn_raw(&s, "SUBSCRIBE +switch-master +promoted-slave")) || r->type != REDIS_REPLY_ARRAY) {
                if (r) freeReplyObject(r);
                hh__conn_close(&s);
                hh__log(cfg->watch_log, HH_LOG_DEBUG, "sentinel %s:%d: cannot listen to +switch-master",
                        cfg->sentinel_host[i], cfg->sentinel_port[i]);
                i = (i + 1) % cfg->nsentinels;
                nap(cfg, 1.0);
                continue;
            }
            freeReplyObject(r);
        }
        struct pollfd pfd = {hh__conn_fd(&s), POLLIN, 0};
        int rc = poll(&pfd, 1, 100);
        if (rc == 0 || (rc < 0 && errno == EINTR)) continue;
        int bad = hh__conn_read_some(&s) != REDIS_OK;
        void *rep = NULL;
        while (!bad) {
            if (hh__conn_buffered_reply(&s, &rep) != REDIS_OK) bad = 1;
            if (!rep) break;
            on_message(cfg, rep);
            freeReplyObject(rep);
            rep = NULL;
        }
        if (bad) { /* the sentinel went away: the next one, after a pause */
            hh__conn_close(&s);
            i = (i + 1) % cfg->nsentinels;
            nap(cfg, 0.5);
        }
    }
    hh__conn_close(&s);
    return NULL;
}

void hh__sentinel_watch(hh__redis_config *cfg, const hh__logger *log) {
    int none = 0;
    if (!cfg->nsentinels || atomic_load(&cfg->watch_state) != 0 ||
        !atomic_compare_exchange_strong(&cfg->watch_state, &none, 1))
        return;
    cfg->watch_log = log;
    pthread_t *t = malloc(sizeof(*t));
    if (!t || pthread_create(t, NULL, watch_main, cfg) != 0) {
        free(t);
        atomic_store(&cfg->watch_state, 0);
        hh__log(log, HH_LOG_WARN,
                "sentinel: cannot start the +switch-master listener; failovers are noticed by "
                "connection loss and READONLY only");
        return;
    }
    cfg->watch_thread = t;
}
