/* redis.c -- connections, reconnect with capped backoff, pipelines and
 * scripts (see redis.h), over plain TCP, unix sockets or TLS (the bytes go
 * through tls.c; hiredis keeps the protocol), to a fixed address or the
 * master Sentinel names (sentinel.c), on the plain connection of conn.c.
 * Reads INFO server (and ROLE with Sentinel) once per connect; touches no
 * data key (while Redis refuses writes as a replica would, a connect probes
 * them with SETRANGE stat:processed 0 "", which changes nothing). */
#include "redis.h"
#include "sentinel.h"
#include "tls.h"
#include "unique_lua.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#define HH_DEFAULT_URL "redis://127.0.0.1:6379/0"
#define BACKOFF_MIN HH_CONN_BACKOFF_MIN
#define BACKOFF_MAX 2.0 /* at the cap, connect attempts 1 to 2 s apart (jittered) */

static const char *script_src[HH_SCRIPT_COUNT] = {
    [HH_SCRIPT_FETCH] = HH_LUA_FETCH,
    [HH_SCRIPT_ENQUEUE_DUE] = HH_LUA_ENQUEUE_DUE,
    [HH_SCRIPT_CRON_ENQUEUE] = HH_LUA_CRON_ENQUEUE,
    [HH_SCRIPT_REQUEUE] = HH_LUA_REQUEUE,
    [HH_SCRIPT_OUTCOME] = HH_LUA_OUTCOME,
    [HH_SCRIPT_RECOVER] = HH_LUA_RECOVER,
    [HH_SCRIPT_ADMIN_MOVE] = HH_LUA_ADMIN_MOVE,
    [HH_SCRIPT_UNIQUE_QUEUE] = HH_LUA_UNIQUE_QUEUE,
    [HH_SCRIPT_UNIQUE_LOCK] = HH_LUA_UNIQUE_LOCK,
    [HH_SCRIPT_UNIQUE_UNLOCK] = HH_LUA_UNIQUE_UNLOCK,
    [HH_SCRIPT_UNIQUE_DELETE] = HH_LUA_UNIQUE_DELETE_BY_DIGEST,
    [HH_SCRIPT_LEASE] = HH_LUA_LEASE,
    [HH_SCRIPT_PUSH_BACK] = HH_LUA_PUSH_BACK,
};

const char *hh__script_source(hh__script_id id, int plain) {
    const char *s = script_src[id];
    if (plain && strncmp(s, "#!", 2) == 0) s = strchr(s, '\n') + 1;
    return s;
}

int hh__conn_plain_scripts(const hh__conn *c) { return c->plain_scripts || (c->version > 0 && c->version < 700); }

int hh__script_flags_refused(const redisReply *r) {
    /* Redis 6: "ERR Error compiling script ... unexpected symbol near '#'";
     * a Redis 7 that knows no flag of ours: "ERR Unexpected flag in script
     * shebang". Not a transient refusal (LOADING, BUSY) nor an ACL one. */
    return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR", 3) == 0;
}

/* ------------------------------------------------------------ URL parsing */

/* User info as a parsed URL shows it (mask_url): "user:***@" when a
 * password follows the first ':', else "***@" (a user name alone is most
 * often a password written without its ':'). */
static sds shown_userinfo(sds shown, const char *ui, size_t n) {
    const char *colon = memchr(ui, ':', n);
    if (colon && colon + 1 < ui + n) {
        shown = sdscatlen(shown, ui, (size_t)(colon - ui));
        return sdscat(shown, ":***@");
    }
    return sdscat(shown, "***@");
}

/* Whether host, given in a URL with no '@', could be a user name whose
 * password stands where the port is ("redis://user:secret" without
 * "@host"): not an IP literal, "localhost" or a dotted host name. */
static int host_may_be_user(const char *host, size_t n) {
    if (n == 0) return 1; /* "redis://:secret" */
    if (host[0] == '[' || (n == 9 && !strncasecmp(host, "localhost", 9))) return 0;
    return memchr(host, '.', n) == NULL;
}

/* The URL as an error shows it: whole, but the password masked, whatever
 * the URL's shape (a mistyped scheme such as "redis:/" or none at all must
 * not make the password visible). Masking works on the whole URL, in an
 * allocated copy: the message may be cut to fit only afterwards.
 * - After an optional scheme ("word:" and any '/'), everything up to the
 *   last '@' of the URL is user info (a password may hold '/', '?' or '@'
 *   when not percent-encoded), shown as shown_userinfo does.
 * - In unix://, whatever comes before the socket path's first '/' is user
 *   info even without an '@'.
 * - Without an '@', a "port" that is not a number after a host that may
 *   be a user name may be a password whose '@host' is missing: it is
 *   masked too (*port_masked set); after an IP address, localhost or a
 *   dotted name it is shown.
 * - A query naming a password is masked from its '?'. */
static sds url_shown(const char *url, int *port_masked) {
    size_t n = strlen(url), s = 0;
    *port_masked = 0;
    if (isalpha((unsigned char)url[0])) { /* scheme */
        size_t i = 1;
        while (i < n && (isalnum((unsigned char)url[i]) || strchr("+.-", url[i]))) i++;
        if (i < n && url[i] == ':') {
            s = i + 1;
            while (s < n && url[s] == '/') s++;
        }
    }
    /* unix://[[user]:password@]/path: the path's own '/' ends the scheme,
     * and only what stands before it is user info */
    int is_unix = strncmp(url, "unix://", 7) == 0;
    if (is_unix) s = 7;
    /* user info ends at its last '@' before any ?query or #fragment (a
     * password with an unencoded '/' is still masked) */
    const char *at = NULL;
    for (const char *p = url + s; !is_unix && *p && *p != '?' && *p != '#'; p++)
        if (*p == '@') at = p;
    sds shown = sdsnewlen(url, s);
    const char *rest = url + s;
    if (at) {
        shown = shown_userinfo(shown, rest, (size_t)(at - rest));
        rest = at + 1;
    } else if (is_unix) {
        const char *slash = strchr(rest, '/'), *uat = NULL;
        for (const char *p = rest; *p && p != slash && *p != '?'; p++)
            if (*p == '@') uat = p;
        if (uat) {
            shown = shown_userinfo(shown, rest, (size_t)(uat - rest));
            rest = uat + 1;
        } else if (slash && slash > rest) {
            shown = sdscat(shown, "***@");
            rest = slash;
        }
    } else {
        size_t alen = strcspn(rest, "/?#");
        const char *colon = NULL;
        for (size_t i = 0; i < alen; i++)
            if (rest[i] == ':') colon = rest + i;
        int digits = colon != NULL;
        for (const char *p = colon ? colon + 1 : rest; colon && p < rest + alen; p++)
            if (!isdigit((unsigned char)*p)) digits = 0;
        if (colon && !digits && colon + 1 < rest + alen && host_may_be_user(rest, (size_t)(colon - rest))) {
            shown = sdscatlen(shown, rest, (size_t)(colon + 1 - rest));
            shown = sdscat(shown, "***");
            rest += alen;
            *port_masked = 1;
        }
    }
    const char *q = strchr(rest, '?'); /* ?password=... and the like */
    if (q && strcasestr(q, "pass")) {
        shown = sdscatlen(shown, rest, (size_t)(q - rest));
        shown = sdscat(shown, "?***");
    } else {
        shown = sdscat(shown, rest);
    }
    return shown;
}

/* Writes "invalid Redis URL (msg): <the URL shown>" to err; returns -1. */
static int fail_url(char *err, size_t len, const char *msg, const char *url) {
    if (!err || !len) return -1;
    int masked;
    sds shown = url_shown(url ? url : "", &masked);
    snprintf(err, len, "invalid Redis URL (%s): %s", msg, shown ? shown : "(out of memory)");
    sdsfree(shown);
    return -1;
}

/* A port that is not a number from 1 to 65535: the message names it,
 * unless the URL shown masks it (it may be a password), and says when the
 * cause is rather a '/' in the password (the host then starts after an
 * '@' past the first '/'). */
static int fail_port(char *err, size_t len, const char *url, const char *auth_end, const char *port, size_t plen) {
    if (!err || !len) return -1;
    int masked;
    sds shown = url_shown(url, &masked);
    const char *late_at = NULL;
    for (const char *p = auth_end; *p && *p != '?' && *p != '#'; p++)
        if (*p == '@') late_at = p;
    if (late_at)
        snprintf(err, len, "invalid Redis URL (a '/' in the user info ends the host early: write it as %%2F): %s",
                 shown ? shown : "(out of memory)");
    else if (masked)
        snprintf(err, len,
                 "invalid Redis URL (bad port: want a number from 1 to 65535; not shown, as with no '@' "
                 "HOST:PORT may be USER:PASSWORD): %s",
                 shown ? shown : "(out of memory)");
    else
        snprintf(err, len, "invalid Redis URL (bad port '%.*s': want a number from 1 to 65535): %s",
                 (int)(plen > 64 ? 64 : plen), port, shown ? shown : "(out of memory)");
    sdsfree(shown);
    return -1;
}

static int parse_int(const char *s, size_t n, int lo, int hi, int *out) {
    if (n == 0 || n > 9) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Decodes user info as redis-rb does (CGI.unescape): %XX escapes, and '+'
 * is a space, so one REDIS_URL means the same to Sidekiq and hiredhand. A
 * '%' not followed by two hex digits stays literal. */
static sds pct_decode(const char *s, size_t n) {
    sds out = sdsempty();
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            char ch = (char)strtol(hex, NULL, 16);
            out = sdscatlen(out, &ch, 1);
            i += 2;
            continue;
        }
        out = sdscatlen(out, s[i] == '+' ? " " : s + i, 1);
    }
    return out;
}

/* [user][:password] as redis-rb reads it (Ruby's URI, then CGI.unescape):
 * the first ':' splits; an empty part is absent; no ':' at all makes the
 * whole a user name, with no password, and redis-rb then sends no AUTH. */
static void parse_userinfo(hh__redis_config *cfg, const char *p, size_t n) {
    const char *colon = memchr(p, ':', n);
    size_t ulen = colon ? (size_t)(colon - p) : n;
    if (ulen) cfg->user = pct_decode(p, ulen);
    if (colon && n - ulen - 1 > 0) cfg->password = pct_decode(colon + 1, n - ulen - 1);
}

/* What logs show: the password as ***; a user name without a password is
 * masked too (it is never sent, and is most often a password written
 * without its ':'). */
static void mask_url(hh__redis_config *cfg) {
    const char *ui = cfg->password ? ":***@" : cfg->user ? "***@" : "";
    const char *un = cfg->password && cfg->user ? cfg->user : "";
    if (cfg->unix_path) cfg->display = sdscatfmt(sdsempty(), "unix://%s%s%s?db=%i", un, ui, cfg->unix_path, cfg->db);
    else {
        int v6 = strchr(cfg->host, ':') != NULL; /* an IPv6 address keeps its brackets, as written */
        cfg->display = sdscatfmt(sdsempty(), "%s://%s%s%s%s%s:%i/%i", cfg->tls ? "rediss" : "redis", un, ui,
                                 v6 ? "[" : "", cfg->host, v6 ? "]" : "", cfg->port, cfg->db);
    }
}

/* A URL without a password takes the options' (a password file), else
 * $REDIS_PASSWORD: either keeps the secret off the command line. */
static void default_password(hh__redis_config *cfg, const hh_redis_options *o) {
    if (cfg->password) return;
    const char *pw = o && o->password && *o->password ? o->password : getenv("REDIS_PASSWORD");
    if (pw && *pw) cfg->password = sdsnew(pw);
}

/* An option, else its environment variable (for containers), else NULL. */
static const char *opt_env(const char *v, const char *env) {
    if (v && *v) return v;
    v = getenv(env);
    return v && *v ? v : NULL;
}

static int env_true(const char *env) {
    const char *v = getenv(env);
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

/* rediss://: the TLS settings from the options, else the environment, and
 * one SSL_CTX for every connection of this configuration (the CA store and
 * client certificate are read once, here, so a bad file is reported before
 * anything connects). */
static int tls_setup(hh__redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen) {
    hh__tls_settings s;
    s.ca_file = opt_env(o ? o->tls_ca_file : NULL, "HIREDHAND_TLS_CA_FILE");
    s.ca_dir = opt_env(o ? o->tls_ca_dir : NULL, "HIREDHAND_TLS_CA_DIR");
    s.cert = opt_env(o ? o->tls_cert : NULL, "HIREDHAND_TLS_CERT");
    s.key = opt_env(o ? o->tls_key : NULL, "HIREDHAND_TLS_KEY");
    s.server_name = opt_env(o ? o->tls_server_name : NULL, "HIREDHAND_TLS_SERVER_NAME");
    s.insecure = (o && o->tls_insecure) || env_true("HIREDHAND_TLS_INSECURE");
    cfg->tls_verify = !s.insecure;
    cfg->tls_name = sdsnew(s.server_name ? s.server_name : cfg->host);
    cfg->tls_client_cert = s.cert != NULL;
    cfg->tls_name_forced = s.server_name != NULL;
    cfg->tls_ctx = hh__tls_ctx_new(&s, err, errlen);
    return cfg->tls_ctx && cfg->tls_name ? 0 : -1;
}

int hh__redis_config_parse(hh__redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen) {
    memset(cfg, 0, sizeof(*cfg));
    const char *url = o ? o->url : NULL;
    if (!url || !*url) url = getenv("REDIS_URL");
    if (!url || !*url) url = HH_DEFAULT_URL;
    cfg->connect_timeout = (o && o->connect_timeout > 0) ? o->connect_timeout : 5.0;
    cfg->command_timeout = (o && o->command_timeout > 0) ? o->command_timeout : 5.0;

    if (strncmp(url, "unix://", 7) == 0) {
        /* unix://[[user]:password@]/path[?db=N]: the path starts at the
         * first '/', so user info must percent-encode any '/' (and '@'). */
        const char *rest = url + 7;
        const char *path = strchr(rest, '/');
        if (!path) return fail_url(err, errlen, "unix:// needs an absolute socket path", url);
        if (path > rest) {
            if (path[-1] != '@') return fail_url(err, errlen, "unix:// takes [user]:password@ before the /path", url);
            parse_userinfo(cfg, rest, (size_t)(path - rest - 1));
        }
        const char *q = strchr(path, '?');
        size_t plen = q ? (size_t)(q - path) : strlen(path);
        cfg->unix_path = sdsnewlen(path, plen);
        if (q) {
            if (strncmp(q, "?db=", 4) != 0)
                return hh__redis_config_free(cfg), fail_url(err, errlen, "unix:// takes only ?db=N", url);
            if (parse_int(q + 4, strlen(q + 4), 0, 1 << 20, &cfg->db))
                return hh__redis_config_free(cfg), fail_url(err, errlen, "db must be a number 0-1048576", url);
        }
        default_password(cfg, o);
        mask_url(cfg);
        if (hh__sentinel_config(cfg, o, err, errlen) != 0) return hh__redis_config_free(cfg), -1;
        return 0;
    }
    cfg->tls = strncmp(url, "rediss://", 9) == 0;
    if (!cfg->tls && strncmp(url, "redis://", 8) != 0)
        return fail_url(err, errlen, "must start with redis://, rediss:// or unix://", url);
    const char *p = url + (cfg->tls ? 9 : 8);
    const char *end = p + strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *s = p; s < end; s++)
        if (*s == '@') at = s;
    if (at) {
        parse_userinfo(cfg, p, (size_t)(at - p));
        p = at + 1;
    }
    /* host[:port], with [v6] literals */
    const char *hend, *portp = NULL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb) return hh__redis_config_free(cfg), fail_url(err, errlen, "unclosed [", url);
        cfg->host = sdsnewlen(p + 1, (size_t)(rb - p - 1));
        hend = rb + 1;
        if (hend < end && *hend == ':') portp = hend + 1;
        else if (hend != end) return hh__redis_config_free(cfg), fail_url(err, errlen, "bad host", url);
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        hend = colon ? colon : end;
        cfg->host = sdsnewlen(p, (size_t)(hend - p));
        if (colon) portp = colon + 1;
    }
    if (sdslen(cfg->host) == 0) {
        sdsfree(cfg->host);
        cfg->host = sdsnew("127.0.0.1");
    }
    cfg->port = 6379;
    if (portp && parse_int(portp, (size_t)(end - portp), 1, 65535, &cfg->port))
        return hh__redis_config_free(cfg), fail_port(err, errlen, url, end, portp, (size_t)(end - portp));
    if (*end == '/' && end[1]) {
        const char *d = end + 1;
        size_t dl = strcspn(d, "?#");
        if (dl && parse_int(d, dl, 0, 1 << 20, &cfg->db)) {
            /* an '@' past the '/': the '/' was in the password, not before the db */
            int late_at = memchr(d, '@', dl) != NULL;
            return hh__redis_config_free(cfg),
                   fail_url(err, errlen,
                            late_at ? "a '/' in the user info ends the host early: write it as %2F, and '@' as %40"
                                    : "db must be a number 0-1048576",
                            url);
        }
    }
    default_password(cfg, o);
    mask_url(cfg);
    cfg->probe_key =
        o && o->ns && *o->ns ? sdscatfmt(sdsempty(), "%s:stat:processed", o->ns) : sdsnew("stat:processed");
    if ((cfg->tls && tls_setup(cfg, o, err, errlen) != 0) || hh__sentinel_config(cfg, o, err, errlen) != 0) {
        hh__redis_config_free(cfg);
        return -1;
    }
    return 0;
}

void hh__redis_config_free(hh__redis_config *cfg) {
    hh__sentinel_config_free(cfg);
    sdsfree(cfg->host);
    sdsfree(cfg->unix_path);
    sdsfree(cfg->user);
    sdsfree(cfg->password);
    sdsfree(cfg->display);
    sdsfree(cfg->tls_name);
    sdsfree(cfg->probe_key);
    cfg->probe_key = NULL;
    if (cfg->tls_ctx) hh__tls_ctx_free(cfg->tls_ctx);
    cfg->tls_ctx = NULL;
    cfg->host = cfg->unix_path = cfg->user = cfg->password = cfg->display = cfg->tls_name = NULL;
}

/* ------------------------------------------------------------- connections */

int hh__error_is_connection_level(const char *msg) {
    static const char *prefixes[] = {"READONLY", "UNBLOCKED", "LOADING",     "MASTERDOWN",
                                     "NOAUTH",   "MISCONF",   "CLUSTERDOWN", NULL};
    if (!msg) return 0;
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(msg, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

int hh__reply_is_error(const redisReply *r) { return !r || r->type == REDIS_REPLY_ERROR; }

/* Seconds to wait before the next connect: the backoff, less a random
 * part of up to half of it, so that connections broken at one instant (a
 * restart, CLIENT KILL, a proxy) do not all come back at one instant, and
 * do not stay in step with faults that recur at a fixed period. */
static double jittered(hh__conn *c, double backoff) {
    c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17; /* xorshift64 */
    return backoff * (0.5 + 0.5 * (double)(c->rng >> 11) / 9007199254740992.0);
}

/* Causes of a failure, as the outage log names them (each once per outage:
 * outage_log): a bit each in hh__redis_config.outage_causes. */
enum {
    CAUSE_OTHER,
    CAUSE_CLOSED,
    CAUSE_RESET,
    CAUSE_TIMEOUT,
    CAUSE_REFUSED,
    CAUSE_UNREACHABLE,
    CAUSE_READONLY,
    CAUSE_LOADING,
    CAUSE_MISCONF,
    CAUSE_MASTERDOWN,
    CAUSE_AUTH,
    CAUSE_REPLY, /* another connection-level reply */
};

/* The cause of a failure from its text (hiredis' errno text, Redis' reply,
 * or this file's own words), and a hint at what makes it happen, or NULL. */
static int cause_of(const char *why, const char **hint) {
    static const struct {
        const char *needle;
        int cause;
        const char *hint;
    } known[] = {
        /* EXECABORT hides READONLY; REPLICAOF ends blocking calls with UNBLOCKED first */
        {"READONLY", CAUSE_READONLY,
         "Redis refuses writes as a replica does, after a failover or REPLICAOF: "
         "writes resume once it is a master again"},
        {"master -> replica", CAUSE_READONLY, "Redis became a replica: a failover or REPLICAOF?"},
        {"LOADING", CAUSE_LOADING, NULL},
        {"MISCONF", CAUSE_MISCONF, NULL},
        {"MASTERDOWN", CAUSE_MASTERDOWN, NULL},
        {"NOAUTH", CAUSE_AUTH, NULL},
        {"WRONGPASS", CAUSE_AUTH, NULL},
        {"NOPERM", CAUSE_AUTH, NULL},
        {"AUTH failed", CAUSE_AUTH, NULL},
        {"timed out", CAUSE_TIMEOUT, "no reply: a network partition, a firewall, or Redis busy or paused?"},
        {"Resource temporarily unavailable", CAUSE_TIMEOUT, NULL},
        {"Connection refused", CAUSE_REFUSED, "nothing listens there: Redis down or restarting?"},
        {"reset by peer", CAUSE_RESET, "reset by Redis or by something in between: a proxy, NAT or firewall?"},
        {"Server closed the connection", CAUSE_CLOSED,
         "closed by Redis or by something in between: CLIENT KILL, Redis' timeout, a restart, a proxy?"},
        {"unreachable", CAUSE_UNREACHABLE, NULL},
        {"No route to host", CAUSE_UNREACHABLE, NULL},
    };
    *hint = NULL;
    for (size_t i = 0; why && i < sizeof(known) / sizeof(known[0]); i++)
        if (strstr(why, known[i].needle)) {
            *hint = known[i].hint;
            return known[i].cause;
        }
    return why && hh__error_is_connection_level(why) ? CAUSE_REPLY : CAUSE_OTHER;
}

/* Logs a failure of c (c->last_error) once per outage and cause: the
 * outage's start ("<what> (<conn>): <why>; <then>"), then each cause not
 * seen during it yet ("still unavailable"), with a hint at what makes it
 * happen when the message holds none; the rest at DEBUG. An outage whose
 * cause stays one (a replica refusing writes for minutes) thus logs one
 * line, and one more when it ends (succeeded). */
static void outage_log(hh__conn *c, const char *what, const char *then) {
    hh__redis_config *cfg = c->cfg;
    const char *hint;
    unsigned bit = 1u << cause_of(c->last_error, &hint);
    char h[160] = "";
    if (hint && !strchr(c->last_error, '(')) snprintf(h, sizeof(h), " (%s)", hint);
    int was = 0;
    if (atomic_compare_exchange_strong(&cfg->outage, &was, 1)) {
        atomic_store(&cfg->outage_causes, bit);
        atomic_store(&cfg->outage_since_ms, (long long)(hh__mono() * 1000));
        hh__log(c->log, HH_LOG_WARN, "redis %s: %s (%s): %s%s; %s", cfg->display, what, c->name, c->last_error, h,
                then);
    } else if (!(atomic_fetch_or(&cfg->outage_causes, bit) & bit)) {
        hh__log(c->log, HH_LOG_WARN, "redis %s: still unavailable (%s): %s%s", cfg->display, c->name, c->last_error, h);
    } else {
        hh__log(c->log, HH_LOG_DEBUG, "redis (%s): %s", c->name, c->last_error);
    }
}

void hh__conn_fail(hh__conn *c, const char *why) {
    hh__strlcpy(c->last_error, why ? why : "connection lost", sizeof(c->last_error));
    hh__conn_close(c);
    c->failures++;
    /* EXECABORT hides READONLY (conn_level) */
    int refused = hh__error_is_connection_level(c->last_error) || strstr(c->last_error, "READONLY");
    if (!refused && c->worked) {
        /* A link that worked and then broke (a restart, CLIENT KILL, a
         * proxy or NAT dropping it): try a new one at once. A server that
         * is down refuses that connect, whose failure then backs off; a
         * server refusing our writes is no reason to hurry. */
        c->next_attempt = hh__mono();
    } else {
        c->next_attempt = hh__mono() + jittered(c, c->backoff);
        c->backoff = c->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : c->backoff * 2;
    }
    c->worked = 0;
    if (refused) {
        if (atomic_exchange(&c->cfg->unreachable, HH_UNREACHABLE_REFUSED) != HH_UNREACHABLE_REFUSED)
            atomic_fetch_add(&c->cfg->refusal_epoch, 1); /* connections opened before prove nothing now */
    } else {
        atomic_store(&c->cfg->unreachable, HH_UNREACHABLE_IO);
    }
    outage_log(c, "connection lost", "reconnecting with backoff");
}

/* Whether an error reply to AUTH or SELECT means the same settings will
 * always be refused (WRONGPASS, "invalid password", AUTH without a password
 * configured, user names on Redis < 6, NOPERM, "DB index is out of
 * range"...), as opposed to a server state that passes (LOADING, BUSY, a
 * replica without its master, too many clients). */
static int refusal_is_permanent(const char *msg) {
    static const char *passing[] = {
        "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "ERR max number of clients", NULL};
    if (!msg) return 0;
    for (int i = 0; passing[i]; i++)
        if (strncmp(msg, passing[i], strlen(passing[i])) == 0) return 0;
    return 1;
}

/* Any other command refused for want of credentials. */
static int auth_refusal(const char *msg) {
    return msg &&
        (strncmp(msg, "NOAUTH", 6) == 0 || strncmp(msg, "NOPERM", 6) == 0 || strncmp(msg, "WRONGPASS", 9) == 0);
}

const char *hh__redis_refused(hh__redis_config *cfg) { return atomic_load(&cfg->refused) ? cfg->refused_why : NULL; }

/* AUTH, SELECT, INFO server and CLIENT ID on a new connection. Returns 0,
 * -1 (may pass: retry) or -2 (Redis refused these settings for good). */
/* Whether the last call failed because no reply came before the socket
 * timeout (hiredis reports EAGAIN as an I/O error), rather than because
 * the server closed or reset the connection. */

/* Why the last call on c got no reply, for c->last_error and the logs:
 * hiredis' text, except for a timeout, which it words as EAGAIN's
 * "Resource temporarily unavailable": that says how long was waited (the
 * socket's receive timeout then: the command timeout, more for a blocking
 * call, less near a deadline). Returns buf. */
static const char *io_error(const hh__conn *c, char *buf, size_t len) {
    if (!c->ctx || !c->ctx->errstr[0]) {
        hh__strlcpy(buf, "connection lost", len);
    } else if (hh__conn_timed_out(c->ctx)) {
        struct timeval tv = {0, 0};
        socklen_t tl = sizeof(tv);
        double s = c->cfg->command_timeout;
        if (getsockopt(c->ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &tl) == 0 && (tv.tv_sec || tv.tv_usec))
            s = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
        snprintf(buf, len, "Redis call timed out: no reply within %g s (Redis busy or paused?)",
                 (double)(long long)(s * 100 + 0.5) / 100);
    } else {
        hh__strlcpy(buf, c->ctx->errstr, len);
    }
    return buf;
}

static int setup(hh__conn *c) {
    redisReply *r;
    char why[200];
    c->version = 0;
    if (c->cfg->password) {
        /* binary-safe: a decoded password may hold any byte */
        const char *argv[3] = {"AUTH", c->cfg->user, c->cfg->password};
        size_t lens[3] = {4, c->cfg->user ? sdslen(c->cfg->user) : 0, sdslen(c->cfg->password)};
        if (!c->cfg->user) argv[1] = argv[2], lens[1] = lens[2];
        r = hh__conn_rawargv(c, c->cfg->user ? 3 : 2, argv, lens);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(c->last_error, sizeof(c->last_error), "AUTH failed: %s",
                     r ? r->str : io_error(c, why, sizeof(why)));
            int rc = r && refusal_is_permanent(r->str) ? -2 : -1;
            if (r) freeReplyObject(r);
            return rc;
        }
        freeReplyObject(r);
    }
    if (c->cfg->db) {
        r = hh__conn_raw(c, "SELECT %d", c->cfg->db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(c->last_error, sizeof(c->last_error), "SELECT failed: %s",
                     r ? r->str : io_error(c, why, sizeof(why)));
            int rc = r && refusal_is_permanent(r->str) ? -2 : -1;
            if (r) freeReplyObject(r);
            return rc;
        }
        freeReplyObject(r);
    }
    r = hh__conn_raw(c, "INFO server");
    if (!r || r->type != REDIS_REPLY_STRING) {
        snprintf(c->last_error, sizeof(c->last_error), "INFO failed: %s",
                 r && r->str ? r->str : io_error(c, why, sizeof(why)));
        int rc = r && r->type == REDIS_REPLY_ERROR && auth_refusal(r->str) ? -2 : -1;
        if (r) freeReplyObject(r);
        return rc;
    }
    const char *v = strstr(r->str, "redis_version:");
    if (v) {
        int major = 0, minor = 0;
        sscanf(v + 14, "%d.%d", &major, &minor);
        c->version = major * 100 + minor;
    }
    freeReplyObject(r);
    if (c->cfg->nsentinels) { /* never write to a replica the sentinels named too early */
        r = hh__conn_raw(c, "ROLE");
        int master = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
            r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0;
        if (!master) {
            snprintf(c->last_error, sizeof(c->last_error), "ROLE of %.100s: %.100s; asking the sentinels again",
                     c->master_addr,
                     !r                                 ? io_error(c, why, sizeof(why))
                         : r->type == REDIS_REPLY_ERROR ? r->str
                         : r->type == REDIS_REPLY_ARRAY && r->elements && r->element[0]->type == REDIS_REPLY_STRING
                         ? r->element[0]->str
                         : "unexpected reply");
            if (r) freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    /* Redis refused writes as a replica would (READONLY, MISCONF...): a
     * write that changes nothing (SETRANGE of "" leaves any key as it is)
     * says whether it still does, before the connection is used. Any other
     * answer (OOM, NOPERM, WRONGTYPE) is no such refusal. */
    int epoch = atomic_load(&c->cfg->refusal_epoch);
    if (atomic_load(&c->cfg->unreachable) == HH_UNREACHABLE_REFUSED) {
        r = hh__conn_raw(c, "SETRANGE %s 0 %s", c->cfg->probe_key ? c->cfg->probe_key : "stat:processed", "");
        if (!r || (r->type == REDIS_REPLY_ERROR && hh__error_is_connection_level(r->str))) {
            hh__strlcpy(c->last_error, r ? r->str : io_error(c, why, sizeof(why)), sizeof(c->last_error));
            if (r) freeReplyObject(r);
            return -1;
        }
        freeReplyObject(r);
    }
    c->refusal_epoch = epoch;
    if (c->version >= 500) { /* lets another thread end our blocking calls */
        r = hh__conn_raw(c, "CLIENT ID");
        if (r && r->type == REDIS_REPLY_INTEGER) atomic_store(&c->client_id, r->integer);
        if (r) freeReplyObject(r);
    }
    return 0;
}

/* Whether the server closed or reset c while no reply was due: the socket
 * reads as its end (or an error) without waiting. Pending bytes (a TLS
 * record, an invalidation message) are the reader's: not a close. */
static int closed_by_peer(const hh__conn *c) {
    char b;
    if (!c->ctx || c->ctx->fd < 0) return 0;
    ssize_t n = recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Before each command on a connection with a deadline: shortens the socket
 * timeout to what is left, or drops the connection once nothing is. */
static int arm(hh__conn *c) {
    if (c->deadline <= 0 || !c->ctx) return 0;
    double t = hh__conn_time_left(c, c->cfg->command_timeout);
    if (t <= 0) {
        hh__strlcpy(c->last_error, "deadline reached", sizeof(c->last_error));
        hh__conn_close(c);
        return -1;
    }
    redisSetTimeout(c->ctx, hh__timeval(t));
    return 0;
}

int hh__conn_ready(hh__conn *c) {
    if (c->ctx && c->cfg->nsentinels && c->master_epoch != atomic_load(&c->cfg->master_epoch)) {
        hh__conn_fail(c, "the sentinels announced a new master (+switch-master)");
        c->next_attempt = hh__mono(); /* move now: the old master may take writes it will lose */
    }
    if (c->ctx && closed_by_peer(c)) {
        /* Closed while idle (CLIENT KILL, Redis' timeout, a restart, a
         * proxy or NAT dropping idle links): nothing was sent on it, so
         * nothing is in doubt; a new connection now, without backoff. */
        hh__log(c->log, HH_LOG_DEBUG, "redis (%s): closed by the server while idle; reconnecting", c->name);
        hh__conn_close(c);
        c->worked = 0;
        c->next_attempt = hh__mono();
    }
    if (c->ctx) return 0;
    if (c->deadline > 0 && (c->next_attempt >= c->deadline || hh__mono() >= c->deadline)) {
        hh__strlcpy(c->last_error, "deadline reached", sizeof(c->last_error));
        return -1;
    }
    while (hh__mono() < c->next_attempt) {
        if (c->cancel && atomic_load(c->cancel)) return -1;
        double left = c->next_attempt - hh__mono();
        hh__sleep(left > 0.05 ? 0.05 : left);
    }
    double cto = hh__conn_time_left(c, c->cfg->connect_timeout);
    if (cto <= 0) {
        hh__strlcpy(c->last_error, "deadline reached", sizeof(c->last_error));
        return -1;
    }
    int ok, opened, rc = -1;
    if (c->cfg->unix_path) {
        c->ctx = redisConnectUnixWithTimeout(c->cfg->unix_path, hh__timeval(cto));
        ok = c->ctx && !c->ctx->err;
        if (ok) {
            hh__fd_cloexec(c->ctx->fd); /* see hh__conn_open */
            double cmd = hh__conn_time_left(c, c->cfg->command_timeout);
            redisSetTimeout(c->ctx, hh__timeval(cmd > 0 ? cmd : 0.001));
        } else {
            hh__strlcpy(c->last_error, c->ctx ? c->ctx->errstr : "out of memory", sizeof(c->last_error));
            hh__conn_close(c);
        }
    } else if (c->cfg->nsentinels) {
        /* the master is whoever the sentinels name now; an epoch bumped
         * after this point makes this connection move again */
        char host[256];
        int port = 0;
        hh__sentinel_watch(c->cfg, c->log);
        c->master_epoch = atomic_load(&c->cfg->master_epoch);
        int found = hh__sentinel_discover(c, host, sizeof(host), &port);
        ok = found == 0;
        if (found == -2) rc = -2; /* no sentinel knows the name: refused as a wrong password is */
        if (ok) {
            snprintf(c->master_addr, sizeof(c->master_addr), "%s:%d", host, port);
            ok = hh__conn_open(c, host, port) == 0;
        }
    } else {
        ok = hh__conn_open(c, c->cfg->host, c->cfg->port) == 0;
    }
    opened = ok;
    if (ok) {
        rc = setup(c);
        ok = rc == 0;
    }
    /* No reply in time (setup said so) is a busy or paused server, not a
     * TLS port: a TLS server closes the connection (EOF) or resets it at
     * once. */
    if (!ok && opened && rc == -1 && c->version == 0) hh__conn_tls_hint(c, c->last_error, sizeof(c->last_error));
    if (!ok && opened && c->cfg->tls && c->ssl && !c->cfg->tls_client_cert && rc == -1 && c->version == 0 &&
        !hh__conn_timed_out(c->ctx) && (c->ctx->err == REDIS_ERR_EOF || c->ctx->err == REDIS_ERR_IO)) {
        /* TLS 1.3 finishes the client's side of the handshake before the
         * server checks for a client certificate: its refusal comes as an
         * alert, or a reset, on the first command. */
        size_t n = strlen(c->last_error);
        snprintf(c->last_error + n, sizeof(c->last_error) - n,
                 " (dropped after the handshake: does the server want a client certificate? --tls-cert/--tls-key)");
    }
    if (!ok) {
        hh__conn_close(c);
        c->backoff = c->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : c->backoff * 2;
        c->next_attempt = hh__mono() + jittered(c, c->backoff);
        /* Refused before anything ever worked: the settings are wrong, and
         * the owner (the CLI, the manager) gives up instead of retrying.
         * Not opened: the sentinels do not know the master's name. */
        int unclaimed = 0;
        if (rc == -2 && !atomic_load(&c->cfg->ever_ready) &&
            atomic_compare_exchange_strong(&c->cfg->refusal_claimed, &unclaimed, 1)) {
            snprintf(c->cfg->refused_why, sizeof(c->cfg->refused_why),
                     opened ? "Redis %s refused the connection: %s" : "Redis %s: %s", c->cfg->display, c->last_error);
            atomic_store(&c->cfg->refused, 1);
            hh__log(c->log, HH_LOG_ERROR, "%s (%s); not retried: %s", c->cfg->refused_why, c->name,
                    opened ? "check the URL's password, user and db"
                           : "check the master's name (--sentinel-master, else the URL's host)");
            return -1;
        }
        int unlogged = 0;
        /* a connection refused at setup as a replica would keeps that
         * state (and its epoch): the server answered, and refuses still */
        if (!(atomic_load(&c->cfg->unreachable) == HH_UNREACHABLE_REFUSED &&
              hh__error_is_connection_level(c->last_error)))
            atomic_store(&c->cfg->unreachable, HH_UNREACHABLE_IO);
        if (!atomic_load(&c->cfg->outage) || rc != -2) outage_log(c, "cannot connect", "retrying with backoff");
        else if (atomic_compare_exchange_strong(&c->cfg->refusal_logged, &unlogged, 1))
            /* after a "connection lost": say why reconnecting fails */
            hh__log(c->log, HH_LOG_WARN, "redis %s: refused (%s): %s; retrying with backoff (%s)", c->cfg->display,
                    c->name, c->last_error, opened ? "password or db changed?" : "master removed from the sentinels?");
        return -1;
    }
    atomic_store(&c->cfg->ever_ready, 1);
    atomic_store(&c->cfg->refusal_logged, 0);
    /* The backoff is reset and the outage declared over only when a command
     * succeeds (finish()): a replica accepts the connection and INFO but
     * refuses every write (READONLY), and must not be hammered. */
    memset(c->shas, 0, sizeof(c->shas));
    c->plain_scripts = 0; /* the server may have changed (a failover, an upgrade) */
    c->connected_at = hh__mono();
    c->worked = 0;
    return 0;
}

/* Job payloads may be tens of MB; these keep each one from being held
 * twice by hiredis itself (see trim_reader and append_argv). */
#define BIG_COMMAND (1 << 20)

/* hiredis keeps the bytes of the last reply in its read buffer until the
 * next read on the connection: after a fetch that is a second copy of the
 * payload for as long as the job runs. Dropped once nothing is pending. */
static void trim_reader(redisContext *ctx) {
    redisReader *r = ctx ? ctx->reader : NULL;
    if (r && r->buf && r->len == 0 && r->ridx == -1 && sdsavail(r->buf) > REDIS_READER_MAX_BUF) {
        sds fresh = sdsempty();
        if (!fresh) return;
        sdsfree(r->buf);
        r->buf = fresh;
        r->pos = 0;
    }
}

/* Queues one command. hiredis formats it into a buffer, then copies that
 * onto its output buffer: two copies of a payload at once. A big command
 * instead becomes the output buffer itself, once what was queued before it
 * has been written. */
static int append_sds(hh__conn *c, sds cmd) {
    redisContext *ctx = c->ctx;
    if (sdslen(cmd) < BIG_COMMAND) {
        int rc = redisAppendFormattedCommand(ctx, cmd, sdslen(cmd));
        sdsfree(cmd);
        return rc;
    }
    if (hh__conn_flush(c) != REDIS_OK) {
        sdsfree(cmd);
        return REDIS_ERR;
    }
    sdsfree(ctx->obuf);
    ctx->obuf = cmd;
    return REDIS_OK;
}

static int append_argv(hh__conn *c, int argc, const char **argv, const size_t *lens) {
    sds cmd = NULL;
    if (redisFormatSdsCommandArgv(&cmd, argc, argv, lens) < 0 || !cmd) return REDIS_ERR;
    return append_sds(c, cmd);
}

/* redisCommandArgv, through append_argv. */
static redisReply *command_argv(hh__conn *c, int argc, const char **argv, const size_t *lens) {
    void *r = NULL;
    if (append_argv(c, argc, argv, lens) != REDIS_OK) return NULL;
    if (hh__conn_get_reply(c, &r) != REDIS_OK) return NULL;
    return r;
}

/* Inspects a reply (recursively for EXEC arrays) for connection-level errors. */
static int conn_level(const redisReply *r, char *why, size_t len) {
    if (!r) return 0;
    if (r->type == REDIS_REPLY_ERROR && hh__error_is_connection_level(r->str)) {
        hh__strlcpy(why, r->str, len);
        return 1;
    }
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++)
            if (conn_level(r->element[i], why, len)) return 1;
    /* EXECABORT hides READONLY of a queued command. */
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "EXECABORT", 9) == 0 && strstr(r->str, "READONLY")) {
        hh__strlcpy(why, r->str, len);
        return 1;
    }
    return 0;
}

/* A command went through: the backoff starts over (a link that keeps
 * breaking still gets a new one at once each time: hh__conn_fail). While
 * Redis refuses writes as a replica would, only a connection opened and
 * probed since (setup) says anything of the writes: the reads a replica
 * still answers on older ones must not end that state. The outage's end
 * is logged once a connection has lasted a second, so a link that breaks
 * again at once does not log an end and a start each time. */
static void succeeded(hh__conn *c) {
    c->worked = 1;
    c->backoff = BACKOFF_MIN;
    /* Readiness follows the first call that goes through, whichever thread
     * makes it: not the second-long wait below, which would hold it until a
     * connection that has lasted makes a call (the next heartbeat, often). */
    int io = HH_UNREACHABLE_IO;
    if (atomic_load(&c->cfg->unreachable) == io) atomic_compare_exchange_strong(&c->cfg->unreachable, &io, 0);
    if (atomic_load(&c->cfg->unreachable) == HH_UNREACHABLE_REFUSED &&
        c->refusal_epoch != atomic_load(&c->cfg->refusal_epoch))
        return;
    if (hh__mono() - c->connected_at < 1.0) return;
    atomic_store(&c->cfg->unreachable, 0);
    int was = 1;
    if (atomic_compare_exchange_strong(&c->cfg->outage, &was, 0)) {
        double s = hh__mono() - (double)atomic_load(&c->cfg->outage_since_ms) / 1000;
        atomic_store(&c->cfg->outage_causes, 0);
        hh__log(c->log, HH_LOG_INFO, "redis %s: connection restored (%s) after %.0f s", c->cfg->display, c->name, s);
    }
}

static redisReply *finish(hh__conn *c, redisReply *r) {
    char why[256];
    if (c->ctx) trim_reader(c->ctx);
    if (!r) {
        hh__conn_fail(c, io_error(c, why, sizeof(why)));
        return NULL;
    }
    if (conn_level(r, why, sizeof(why))) {
        freeReplyObject(r);
        hh__conn_fail(c, why);
        return NULL;
    }
    succeeded(c);
    return r;
}

redisReply *hh__conn_cmd(hh__conn *c, const char *fmt, ...) {
    if (hh__conn_ready(c) != 0 || arm(c) != 0) return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = hh__conn_vraw(c, fmt, ap);
    va_end(ap);
    return finish(c, r);
}

redisReply *hh__conn_cmdargv(hh__conn *c, int argc, const char **argv, const size_t *lens) {
    if (hh__conn_ready(c) != 0 || arm(c) != 0) return NULL;
    return finish(c, command_argv(c, argc, argv, lens));
}

redisReply *hh__conn_cmdargv_blocking(hh__conn *c, double block_s, int argc, const char **argv, const size_t *lens) {
    if (hh__conn_ready(c) != 0 || arm(c) != 0) return NULL;
    redisSetTimeout(c->ctx, hh__timeval(hh__conn_time_left(c, block_s + c->cfg->command_timeout)));
    atomic_store(&c->blocking, 1);
    redisReply *r = finish(c, command_argv(c, argc, argv, lens));
    atomic_store(&c->blocking, 0);
    if (c->ctx) redisSetTimeout(c->ctx, hh__timeval(c->cfg->command_timeout));
    return r;
}

void hh__pipe_begin(hh__pipe *p, hh__conn *c) {
    p->c = c;
    p->n = 0;
    p->failed = hh__conn_ready(c) != 0 || arm(c) != 0;
}

void hh__pipe_add(hh__pipe *p, const char *fmt, ...) {
    if (p->failed) return;
    va_list ap;
    va_start(ap, fmt);
    if (redisvAppendCommand(p->c->ctx, fmt, ap) != REDIS_OK) p->failed = 1;
    else p->n++;
    va_end(ap);
}

void hh__pipe_addargv(hh__pipe *p, int argc, const char **argv, const size_t *lens) {
    if (p->failed) return;
    if (append_argv(p->c, argc, argv, lens) != REDIS_OK) p->failed = 1;
    else p->n++;
}

void hh__pipe_add_formatted(hh__pipe *p, sds cmd) {
    if (!cmd) p->failed = 1;
    if (p->failed) {
        sdsfree(cmd);
        return;
    }
    if (append_sds(p->c, cmd) != REDIS_OK) p->failed = 1;
    else p->n++;
}

void hh__replies_free(redisReply **r, int n) {
    if (!r) return;
    for (int i = 0; i < n; i++)
        if (r[i]) freeReplyObject(r[i]);
    free(r);
}

redisReply **hh__pipe_exec(hh__pipe *p) {
    if (p->failed) {
        if (p->c->ctx) hh__conn_fail(p->c, "pipeline could not be written");
        return NULL;
    }
    redisReply **out = calloc((size_t)(p->n ? p->n : 1), sizeof(*out));
    if (!out) {
        hh__conn_fail(p->c, "out of memory");
        return NULL;
    }
    char why[256];
    int bad = 0;
    for (int i = 0; i < p->n; i++) {
        void *r = NULL;
        if (arm(p->c) != 0) { /* the deadline passed between replies */
            hh__replies_free(out, i);
            return NULL;
        }
        if (hh__conn_get_reply(p->c, &r) != REDIS_OK || !r) {
            hh__replies_free(out, i);
            hh__conn_fail(p->c, io_error(p->c, why, sizeof(why)));
            return NULL;
        }
        out[i] = r;
        if (!bad && conn_level(out[i], why, sizeof(why))) bad = 1;
    }
    trim_reader(p->c->ctx);
    if (bad) {
        hh__replies_free(out, p->n);
        hh__conn_fail(p->c, why);
        return NULL;
    }
    succeeded(p->c);
    return out;
}

int hh__replies_check(redisReply **r, int from, int to, char *why, size_t len) {
    for (int i = from; r && i < to; i++) {
        if (!r[i]) {
            hh__strlcpy(why, "missing reply", len);
            return i;
        }
        if (r[i]->type == REDIS_REPLY_ERROR) {
            hh__strlcpy(why, r[i]->str, len);
            return i;
        }
    }
    return -1;
}

int hh__tx_check(redisReply **r, int multi, int exec, char *why, size_t len, int *failed_at) {
    if (failed_at) *failed_at = -1;
    /* A command refused when queued (OOM, a syntax error) aborts the EXEC;
     * its own reply says why, where EXECABORT only says "previous errors". */
    int bad = hh__replies_check(r, multi, exec, why, len);
    if (bad >= 0 || r[multi]->type != REDIS_REPLY_STATUS) {
        if (bad < 0) hh__strlcpy(why, "MULTI refused", len);
        return -1;
    }
    redisReply *ex = r[exec];
    if (ex->type == REDIS_REPLY_ERROR) {
        hh__strlcpy(why, ex->str, len);
        return -1;
    }
    if (ex->type != REDIS_REPLY_ARRAY) { /* nil: a WATCHed key changed */
        hh__strlcpy(why, "transaction aborted", len);
        return -1;
    }
    if (ex->elements != (size_t)(exec - multi - 1)) {
        snprintf(why, len, "transaction answered %zu replies for %d commands", ex->elements, exec - multi - 1);
        return -1;
    }
    int at = hh__replies_check(ex->element, 0, (int)ex->elements, why, len);
    if (at >= 0) {
        if (failed_at) *failed_at = at;
        return -1;
    }
    return 0;
}

redisReply *hh__conn_eval(hh__conn *c, hh__script_id id, int nkeys, const char **keys, const size_t *keylens, int nargs,
                          const char **args, const size_t *arglens) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (hh__conn_ready(c) != 0) return NULL;
        if (!c->shas[id][0]) {
            int plain = hh__conn_plain_scripts(c);
            redisReply *r = hh__conn_cmd(c, "SCRIPT LOAD %s", hh__script_source(id, plain));
            if (!r) return NULL;
            if (!plain && script_src[id][0] == '#' && hh__script_flags_refused(r)) {
                /* A server without script flags (Redis before 7.0): the
                 * same script without its shebang, for this connection. */
                hh__log(c->log, HH_LOG_INFO, "redis: scripts without flags (%s): %s", c->name, r->str);
                freeReplyObject(r);
                c->plain_scripts = 1;
                r = hh__conn_cmd(c, "SCRIPT LOAD %s", hh__script_source(id, 1));
                if (!r) return NULL;
            }
            if (r->type != REDIS_REPLY_STRING || r->len != 40) { /* an error reply, or not a SHA1 */
                if (r->type == REDIS_REPLY_ERROR) return r;
                freeReplyObject(r);
                hh__conn_fail(c, "unexpected reply to SCRIPT LOAD");
                return NULL;
            }
            hh__strlcpy(c->shas[id], r->str, sizeof(c->shas[id]));
            freeReplyObject(r);
        }
        int argc = 3 + nkeys + nargs;
        const char *argv[argc];
        size_t lens[argc];
        char nk[16];
        snprintf(nk, sizeof(nk), "%d", nkeys);
        argv[0] = "EVALSHA", lens[0] = 7;
        argv[1] = c->shas[id], lens[1] = strlen(c->shas[id]);
        argv[2] = nk, lens[2] = strlen(nk);
        for (int i = 0; i < nkeys; i++) {
            argv[3 + i] = keys[i];
            lens[3 + i] = keylens ? keylens[i] : strlen(keys[i]);
        }
        for (int i = 0; i < nargs; i++) {
            argv[3 + nkeys + i] = args[i];
            lens[3 + nkeys + i] = arglens ? arglens[i] : strlen(args[i]);
        }
        redisReply *r = hh__conn_cmdargv(c, argc, argv, lens);
        if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(r);
            c->shas[id][0] = '\0';
            continue;
        }
        return r;
    }
    return NULL;
}

void hh__fmt_double(char *buf, size_t len, double v) {
    /* The shortest of 15..17 digits that reads back as the same double,
     * with a '.' whatever the locale (a score "1700000020,5" is refused). */
    for (int prec = 15; prec <= 17; prec++) {
        hh__snprintf_c(buf, len, "%.*g", prec, v);
        if (hh__strtod_c(buf, NULL) == v) return;
    }
}
