/* keys.c -- builds every Redis key name (see keys.h for the inventory) with
 * the namespace prefix applied exactly once, and checks the names users
 * give (identities, namespaces, queues, tags, labels: hh_name_check) so
 * none can name or share a key Sidekiq or hiredhand owns. */
#include "keys.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "error.h"
#include "util.h"

int hh__keys_init(hh__keys *k, const char *ns) {
    k->ns = (ns && *ns) ? sdscatfmt(sdsempty(), "%s:", ns) : sdsempty();
    return k->ns ? 0 : -1;
}

void hh__keys_free(hh__keys *k) {
    sdsfree(k->ns);
    k->ns = NULL;
}

static sds join(const hh__keys *k, const char *a, const char *b, const char *c) {
    sds s = sdsdup(k->ns);
    if (!s) return NULL;
    s = sdscat(s, a);
    if (b && s) s = sdscat(s, b);
    if (c && s) s = sdscat(s, c);
    return s;
}

sds hh__key(const hh__keys *k, const char *name) { return join(k, name, NULL, NULL); }
sds hh__key_queue(const hh__keys *k, const char *q) { return join(k, HH_K_QUEUE_PREFIX, q, NULL); }
sds hh__key_process(const hh__keys *k, const char *id) { return join(k, id, NULL, NULL); }
sds hh__key_work(const hh__keys *k, const char *id) { return join(k, id, HH_K_WORK_SUFFIX, NULL); }
sds hh__key_workers(const hh__keys *k, const char *id) { return join(k, id, HH_K_WORKERS_SUFFIX, NULL); }
sds hh__key_signals(const hh__keys *k, const char *id) { return join(k, id, HH_K_SIGNALS_SUFFIX, NULL); }

sds hh__key_stat_daily(const hh__keys *k, const char *stat, double epoch) {
    time_t t = (time_t)epoch;
    struct tm tm;
    char date[16];
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), ":%Y-%m-%d", &tm);
    return join(k, stat, date, NULL);
}

/* The metrics keys spell the same UTC minute five ways: Sidekiq formats
 * them with strftime ("%Y%m%d|%-H:%-M", "%y%m%d|%-H:%M", "%d-%H:%-M",
 * "%-d-%-H:%-M"), whose "-" flag (no padding) is a glibc extension, so the
 * fields are printed here instead. */
static struct tm utc(time_t t) {
    struct tm tm;
    gmtime_r(&t, &tm);
    return tm;
}

sds hh__key_jm_counts7(const hh__keys *k, time_t t) {
    struct tm tm = utc(t);
    sds s = sdsdup(k->ns);
    if (!s) return NULL;
    return sdscatprintf(s, "j|%04d%02d%02d|%d:%d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
}

sds hh__key_jm_counts8(const hh__keys *k, time_t t) {
    struct tm tm = utc(t);
    sds s = sdsdup(k->ns);
    if (!s) return NULL;
    return sdscatprintf(s, "j|%02d%02d%02d|%d:%02d", tm.tm_year % 100, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                        tm.tm_min);
}

/* 8.x drops the minute's last digit: "9:05" and "9:09" share "9:0". */
sds hh__key_jm_rollup8(const hh__keys *k, time_t t) {
    struct tm tm = utc(t);
    sds s = sdsdup(k->ns);
    if (!s) return NULL;
    return sdscatprintf(s, "j|%02d%02d%02d|%d:%d", tm.tm_year % 100, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                        tm.tm_min / 10);
}

sds hh__key_jm_hist7(const hh__keys *k, const char *klass, size_t len, time_t t) {
    struct tm tm = utc(t);
    sds s = sdsdup(k->ns);
    if (s) s = sdscatlen(s, klass, len);
    return s ? sdscatprintf(s, "-%02d-%02d:%d", tm.tm_mday, tm.tm_hour, tm.tm_min) : NULL;
}

sds hh__key_jm_hist8(const hh__keys *k, const char *klass, size_t len, time_t t) {
    struct tm tm = utc(t);
    sds s = sdsdup(k->ns);
    if (s) s = sdscat(s, "h|");
    if (s) s = sdscatlen(s, klass, len);
    return s ? sdscatprintf(s, "-%d-%d:%d", tm.tm_mday, tm.tm_hour, tm.tm_min) : NULL;
}

sds hh__key_inprogress(const hh__keys *k, const char *id, const char *q) {
    sds s = join(k, HH_K_INPROGRESS_PREFIX, id, HH_K_INPROGRESS_SEP);
    return s ? sdscat(s, q) : NULL;
}

sds hh__key_inprogress_pattern(const hh__keys *k) {
    sds s = sdsempty();
    for (const char *p = k->ns; s && *p; p++) {
        if (strchr("*?[]\\", *p)) s = sdscatlen(s, "\\", 1);
        if (s) s = sdscatlen(s, p, 1);
    }
    if (s) s = sdscat(s, HH_K_INPROGRESS_PREFIX "*");
    return s;
}

const char *hh__key_strip(const hh__keys *k, const char *key) {
    size_t l = sdslen(k->ns);
    return strncmp(key, k->ns, l) == 0 ? key + l : NULL;
}

int hh__key_inprogress_parse(const hh__keys *k, const char *key, sds *id, sds *q) {
    const char *p = hh__key_strip(k, key);
    size_t pl = strlen(HH_K_INPROGRESS_PREFIX);
    if (!p || strncmp(p, HH_K_INPROGRESS_PREFIX, pl) != 0) return -1;
    p += pl;
    const char *sep = strchr(p, HH_K_INPROGRESS_SEP[0]);
    if (!sep || sep == p || !sep[1]) return -1;
    *id = sdsnewlen(p, (size_t)(sep - p));
    *q = sdsnew(sep + 1);
    if (!*id || !*q) {
        sdsfree(*id);
        sdsfree(*q);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- names */

/* The names of the keys and key families Sidekiq (6 to 8, Pro and
 * Enterprise included) and hiredhand own, and the separators each family
 * puts after its name. An identity or namespace equal to one of these, or
 * starting with one and one of its separators, would name or share their
 * keys: `--identity queue:default` made every heartbeat EXPIRE that queue,
 * `--identity queue` beat into queue:work and queue:workers. The bare names
 * are refused too because an identity's own keys extend it: <id>:work,
 * <id>:workers, <id>-signals. */
static const struct {
    const char *name, *seps, *what;
} reserved[] = {
    {"queues", ":|", "Sidekiq's set of queue names"},
    {"queue", ":|", "Sidekiq's queues (queue:<name>)"},
    {"schedule", ":|", "Sidekiq's scheduled set"},
    {"retry", ":|", "Sidekiq's retry set"},
    {"dead", ":|", "Sidekiq's dead set"},
    {"processes", ":|", "Sidekiq's process set"},
    {"process_cleanup", ":|", "Sidekiq's process-cleanup lock"},
    {"stat", ":|", "Sidekiq's statistics (stat:processed...)"},
    {"dear-leader", ":|", "Sidekiq Enterprise's leader key"},
    {"paused", ":|", "Sidekiq Pro's paused queues"},
    {"super_processes", ":|", "Sidekiq Pro's super_fetch processes"},
    {"profiles", ":|", "Sidekiq 8's profiles"},
    {"j", ":|", "Sidekiq 7/8's job metrics (j|...)"},
    {"h", ":|", "Sidekiq 8's histograms (h|...)"},
    {"it", ":|-", "Sidekiq 7.3+'s iteration state (it-<jid>)"},
    {"deploylock", ":|-", "Sidekiq 7+'s deploy locks (deploylock-<label>)"},
    {"hiredhand", ":|", "hiredhand's own keys (hiredhand:...)"},
};

/* Another process's keys end so: an identity ending so would be them. */
static const char *const owned_suffixes[] = {HH_K_WORK_SUFFIX, HH_K_WORKERS_SUFFIX, HH_K_SIGNALS_SUFFIX};

static int ends_with(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static int digits(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

/* Sidekiq 7/8 metrics keys named after a class, a date or a token rather
 * than a family prefix: <Class>-<DD>-<HH>:<M> (7.x histograms),
 * <YYYYMMDD>-marks (deploy marks), <token>-<jid> (8.x profiles). */
static const char *metrics_shape(const char *s, size_t len) {
    if (len == 14 && digits(s, 8) && memcmp(s + 8, "-marks", 6) == 0) return "<YYYYMMDD>-marks";
    for (size_t m = 1; m <= 2; m++) { /* -DD-HH:M or -DD-HH:MM at the end */
        if (len <= 7 + m) continue;
        const char *t = s + len - 7 - m;
        if (t[0] == '-' && digits(t + 1, 2) && t[3] == '-' && digits(t + 4, 2) && t[6] == ':' && digits(t + 7, m))
            return "<Class>-<DD>-<HH>:<M>";
    }
    if (len > 25 && s[len - 25] == '-') {
        size_t i = len - 24;
        while (i < len && (isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f'))) i++;
        if (i == len) return "<token>-<jid>";
    }
    return NULL;
}

static int refuse(char *why, size_t whylen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The reason goes to errbuf and to hh_last_error(), as every public
 * call's does. */
static int refuse(char *why, size_t whylen, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (why && whylen) hh__strlcpy(why, msg, whylen);
    return hh__fail(HH_ERR_INVALID, "%s", msg);
}

static const char *kind_name(hh_name_kind kind) {
    switch (kind) {
    case HH_NAME_IDENTITY: return "identity";
    case HH_NAME_NAMESPACE: return "namespace";
    case HH_NAME_QUEUE: return "queue name";
    case HH_NAME_TAG: return "tag";
    default: return "label";
    }
}

int hh_name_check(hh_name_kind kind, const char *name, char *errbuf, size_t errlen) {
    const char *what = kind_name(kind);
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!name) return refuse(errbuf, errlen, "no %s given", what);
    size_t len = strlen(name);
    int keyish = kind == HH_NAME_IDENTITY || kind == HH_NAME_NAMESPACE || kind == HH_NAME_QUEUE;
    char *shown = hh__escape_ctl(name, len > 80 ? 80 : len);
    const char *sh = shown ? shown : "?", *more = len > 80 ? "..." : "";
    int rc = HH_OK;
    size_t max = kind == HH_NAME_QUEUE ? HH_NAME_QUEUE_MAX : kind <= HH_NAME_NAMESPACE ? HH_NAME_MAX : 0;
    if (keyish && len == 0) {
        rc = refuse(errbuf, errlen, "bad %s: it is empty", what);
    } else if (max && len > max) {
        rc = refuse(errbuf, errlen, "bad %s \"%s%s\": longer than %zu bytes", what, sh, more, max);
    } else if (!hh__utf8_valid(name, len)) {
        rc = refuse(errbuf, errlen, "bad %s \"%s%s\": not valid UTF-8", what, sh, more);
    } else if (hh__needs_escape(name, len)) {
        rc = refuse(errbuf, errlen, "bad %s \"%s%s\": it holds a control character", what, sh, more);
    } else if (keyish && strchr(name, HH_K_INPROGRESS_SEP[0])) {
        rc = refuse(errbuf, errlen,
                    "bad %s \"%s%s\": it holds '|', which separates identity and queue in " HH_K_INPROGRESS_PREFIX
                    "<identity>|<queue>",
                    what, sh, more);
    }
    if (rc != HH_OK || kind == HH_NAME_QUEUE || kind == HH_NAME_TAG || kind == HH_NAME_LABEL) {
        free(shown);
        return rc;
    }
    /* identities and namespaces: no whitespace, nothing Sidekiq or hiredhand owns */
    for (const char *p = name; *p && rc == HH_OK; p++)
        if (*p == ' ') rc = refuse(errbuf, errlen, "bad %s \"%s%s\": it holds a space", what, sh, more);
    for (size_t i = 0; rc == HH_OK && i < sizeof(reserved) / sizeof(*reserved); i++) {
        size_t n = strlen(reserved[i].name);
        if (strncmp(name, reserved[i].name, n) != 0) continue;
        if (name[n] == '\0')
            rc = refuse(errbuf, errlen, "bad %s \"%s\": it is the name of %s; Sidekiq and hiredhand own it", what, sh,
                        reserved[i].what);
        else if (strchr(reserved[i].seps, name[n]))
            rc = refuse(errbuf, errlen,
                        "bad %s \"%s%s\": it starts with \"%.*s\", the prefix of %s; Sidekiq and "
                        "hiredhand own those keys",
                        what, sh, more, (int)n + 1, name, reserved[i].what);
    }
    for (size_t i = 0; rc == HH_OK && kind == HH_NAME_IDENTITY && i < 3; i++)
        if (ends_with(name, len, owned_suffixes[i]))
            rc = refuse(errbuf, errlen,
                        "bad %s \"%s%s\": it ends with \"%s\", as another process's keys do "
                        "(<identity>%s)",
                        what, sh, more, owned_suffixes[i], owned_suffixes[i]);
    const char *shape = rc == HH_OK && kind == HH_NAME_IDENTITY ? metrics_shape(name, len) : NULL;
    if (shape)
        rc = refuse(errbuf, errlen, "bad %s \"%s%s\": it has the shape of Sidekiq's metrics keys %s", what, sh, more,
                    shape);
    free(shown);
    return rc;
}
