/* keys.c -- builds every Redis key name (see keys.h for the inventory) with
 * the namespace prefix applied exactly once. */
#include "keys.h"

#include <string.h>
#include <time.h>

int hh_keys_init(hh_keys *k, const char *ns) {
    k->ns = (ns && *ns) ? sdscatfmt(sdsempty(), "%s:", ns) : sdsempty();
    return k->ns ? 0 : -1;
}

void hh_keys_free(hh_keys *k) {
    sdsfree(k->ns);
    k->ns = NULL;
}

static sds join(const hh_keys *k, const char *a, const char *b, const char *c) {
    sds s = sdsdup(k->ns);
    if (!s) return NULL;
    s = sdscat(s, a);
    if (b && s) s = sdscat(s, b);
    if (c && s) s = sdscat(s, c);
    return s;
}

sds hh_key(const hh_keys *k, const char *name) { return join(k, name, NULL, NULL); }
sds hh_key_queue(const hh_keys *k, const char *q) { return join(k, HH_K_QUEUE_PREFIX, q, NULL); }
sds hh_key_process(const hh_keys *k, const char *id) { return join(k, id, NULL, NULL); }
sds hh_key_work(const hh_keys *k, const char *id) { return join(k, id, HH_K_WORK_SUFFIX, NULL); }
sds hh_key_workers(const hh_keys *k, const char *id) {
    return join(k, id, HH_K_WORKERS_SUFFIX, NULL);
}
sds hh_key_signals(const hh_keys *k, const char *id) {
    return join(k, id, HH_K_SIGNALS_SUFFIX, NULL);
}

sds hh_key_stat_daily(const hh_keys *k, const char *stat, double epoch) {
    time_t t = (time_t)epoch;
    struct tm tm;
    char date[16];
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), ":%Y-%m-%d", &tm);
    return join(k, stat, date, NULL);
}

sds hh_key_inprogress(const hh_keys *k, const char *id, const char *q) {
    sds s = join(k, HH_K_INPROGRESS_PREFIX, id, HH_K_INPROGRESS_SEP);
    return s ? sdscat(s, q) : NULL;
}

sds hh_key_inprogress_pattern(const hh_keys *k) {
    sds s = sdsempty();
    for (const char *p = k->ns; s && *p; p++) {
        if (strchr("*?[]\\", *p)) s = sdscatlen(s, "\\", 1);
        if (s) s = sdscatlen(s, p, 1);
    }
    if (s) s = sdscat(s, HH_K_INPROGRESS_PREFIX "*");
    return s;
}

const char *hh_key_strip(const hh_keys *k, const char *key) {
    size_t l = sdslen(k->ns);
    return strncmp(key, k->ns, l) == 0 ? key + l : NULL;
}

int hh_key_inprogress_parse(const hh_keys *k, const char *key, sds *id, sds *q) {
    const char *p = hh_key_strip(k, key);
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
