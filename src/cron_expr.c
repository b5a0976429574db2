/* cron_expr.c -- cron expressions as fugit 1.12 (sidekiq-cron's parser)
 * reads them (see cron_expr.h). Owns the grammar (a port of fugit's PEG:
 * same tokens, same greedy matches, same ordered choices, so the same
 * strings are accepted), the field expansion (fugit's expand/range, with
 * its wrap-around ranges, "24" as hour 0 and "a full range is a
 * wildcard"), and next/prev (a port of fugit's TimeCursor walk: the same
 * month/day/hour/minute/second jumps, in the expression's zone, so ticks
 * near daylight-saving changes fall where fugit puts them). Touches no
 * Redis key.
 *
 * Zones come from the system tz database through GLib's GTimeZone (it
 * reads the TZif files, is immutable and thread-safe); the process
 * environment is never changed. Local fields are computed from the UTC
 * offset GLib gives for an instant, with plain proleptic-Gregorian day
 * arithmetic. */
#include "cron_expr.h"

#include <ctype.h>
#include <glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DAY_S 86400
/* fugit's MAX_ITERATION_COUNT: beyond it fugit raises ("Feb 30th like?"). */
#define MAX_ITER 2048

enum { F_SEC, F_MIN, F_HOU, F_DOM, F_MON, F_DOW, F_COUNT };
static const char *const field_names[F_COUNT] = {"second", "minute", "hour", "day-of-month", "month", "day-of-week"};
static const int field_min[F_COUNT] = {0, 0, 0, 1, 1, 0};
static const int field_max[F_COUNT] = {59, 59, 23, 31, 12, 7};

/* One day-of-week entry, fugit's [wday], [wday, hash] or [wday, [mod, plus]]. */
typedef struct {
    int wday;
    int hash; /* 0: none; 1..5 or -1..-5 (L = -1) */
    int mod;  /* 0: none; else "%mod+plus" */
    int plus;
} dow_entry;

struct hh__cron_expr {
    /* A NULL field of fugit (wildcard) is all = 1 here. */
    int sec_all, min_all, hou_all, dom_all, mon_all;
    uint64_t sec, min; /* bit n: second/minute n */
    uint32_t hou;      /* bit n: hour n */
    uint32_t dom_pos;  /* bit d: day d (1..31) */
    uint32_t dom_neg;  /* bit n: day -n (1..31; -1 is the last day) */
    uint16_t mon;      /* bit m: month m (1..12) */
    int secs[60];      /* the seconds, ascending, for inc_sec/dec_sec */
    int nsecs;
    dow_entry *dow; /* NULL: wildcard */
    int ndow;
    int day_and; /* the "&" modifier: day-of-month AND day-of-week */
    GTimeZone *tz;
    char *zone; /* as hh__cron_expr_zone returns it */
};

/* ---------- errors ---------- */

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---------- the grammar (fugit's Cron::Parser) ---------- */

/* A parsed element: fugit's [a, z, slash, hash, mod]; has_* say which are set. */
typedef struct {
    int has_a, a, has_z, z, has_sl, sl, hash, has_mod, mod, plus;
} elt;

typedef struct {
    elt *v;
    int n, cap;
    const char *text; /* the field's text, for messages */
    size_t len;
} field_list;

typedef struct {
    const char *s; /* whole (stripped, alias-expanded) input */
    size_t pos;
    size_t far;    /* farthest position a token failed at */
    int far_field; /* the field being parsed there */
    int cur_field;
    int oom;
} parser;

static void fail_at(parser *p, size_t at) {
    if (at >= p->far) {
        p->far = at;
        p->far_field = p->cur_field;
    }
}

static int ci_prefix(const char *s, const char *w) {
    for (; *w; s++, w++)
        if (tolower((unsigned char)*s) != *w) return 0;
    return 1;
}

static int isdig(char c) { return c >= '0' && c <= '9'; }

/* The value regexes of fugit, anchored at p->pos, with Ruby's ordered
 * alternation (the first alternative that matches wins, not the longest). */
static int tok_value(parser *p, int f, int *out) {
    const char *s = p->s + p->pos;
    int n = 0, v = 0;
    switch (f) {
    case F_SEC:
    case F_MIN: /* [0-5]?\d */
        if (s[0] >= '0' && s[0] <= '5' && isdig(s[1])) {
            v = (s[0] - '0') * 10 + (s[1] - '0');
            n = 2;
        } else if (isdig(s[0])) {
            v = s[0] - '0';
            n = 1;
        }
        break;
    case F_HOU: /* (2[0-4]|[01]?[0-9]) */
        if (s[0] == '2' && s[1] >= '0' && s[1] <= '4') {
            v = 20 + (s[1] - '0');
            n = 2;
        } else if ((s[0] == '0' || s[0] == '1') && isdig(s[1])) {
            v = (s[0] - '0') * 10 + (s[1] - '0');
            n = 2;
        } else if (isdig(s[0])) {
            v = s[0] - '0';
            n = 1;
        }
        break;
    case F_DOM: { /* (-?(3[01]|[12][0-9]|0?[1-9])|last|l)/i */
        int neg = s[0] == '-';
        const char *q = s + neg;
        int m = 0;
        if (q[0] == '3' && (q[1] == '0' || q[1] == '1')) {
            v = 30 + (q[1] - '0');
            m = 2;
        } else if ((q[0] == '1' || q[0] == '2') && isdig(q[1])) {
            v = (q[0] - '0') * 10 + (q[1] - '0');
            m = 2;
        } else if (q[0] == '0' && q[1] >= '1' && q[1] <= '9') {
            v = q[1] - '0';
            m = 2;
        } else if (q[0] >= '1' && q[0] <= '9') {
            v = q[0] - '0';
            m = 1;
        }
        if (m) {
            n = neg + m;
            if (neg) v = -v;
        } else if (ci_prefix(s, "last")) {
            v = -1;
            n = 4;
        } else if (s[0] == 'l' || s[0] == 'L') {
            v = -1;
            n = 1;
        }
        break;
    }
    case F_MON: { /* (1[0-2]|0?[1-9]|jan|...|dec)/i */
        static const char *const mn[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                         "jul", "aug", "sep", "oct", "nov", "dec"};
        if (s[0] == '1' && s[1] >= '0' && s[1] <= '2') {
            v = 10 + (s[1] - '0');
            n = 2;
        } else if (s[0] == '0' && s[1] >= '1' && s[1] <= '9') {
            v = s[1] - '0';
            n = 2;
        } else if (s[0] >= '1' && s[0] <= '9') {
            v = s[0] - '0';
            n = 1;
        } else {
            for (int i = 0; i < 12; i++)
                if (ci_prefix(s, mn[i])) {
                    v = i + 1;
                    n = 3;
                    break;
                }
        }
        break;
    }
    case F_DOW: { /* ([0-7]|sun|mon|...|sat)/i */
        static const char *const dn[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
        if (s[0] >= '0' && s[0] <= '7') {
            v = s[0] - '0';
            n = 1;
        } else {
            for (int i = 0; i < 7; i++)
                if (ci_prefix(s, dn[i])) {
                    v = i;
                    n = 3;
                    break;
                }
        }
        break;
    }
    default: break;
    }
    if (!n) {
        fail_at(p, p->pos);
        return 0;
    }
    p->pos += (size_t)n;
    *out = v;
    return 1;
}

/* /\/\d\d?/ */
static int tok_slash(parser *p, int *sl) {
    const char *s = p->s + p->pos;
    if (s[0] != '/' || !isdig(s[1])) {
        fail_at(p, p->pos);
        return 0;
    }
    int n = 2, v = s[1] - '0';
    if (isdig(s[2])) {
        v = v * 10 + (s[2] - '0');
        n = 3;
    }
    p->pos += (size_t)n;
    *sl = v;
    return 1;
}

/* r: value (hyphen value)? ; sor: star | r ; sorws: sor slash? ;
 * elt: slash | sorws. For day-of-week, h_dow | mod_dow | elt first. */
static int parse_elt(parser *p, int f, elt *e) {
    memset(e, 0, sizeof *e);
    size_t start = p->pos;
    const char *s = p->s;
    if (f == F_DOW) {
        int a;
        /* h_dow: dow /#(-?[1-5]|last|l)/i */
        if (tok_value(p, f, &a)) {
            const char *q = s + p->pos;
            if (q[0] == '#') {
                int h = 0, n = 0;
                if (q[1] == '-' && q[2] >= '1' && q[2] <= '5') {
                    h = -(q[2] - '0');
                    n = 3;
                } else if (q[1] >= '1' && q[1] <= '5') {
                    h = q[1] - '0';
                    n = 2;
                } else if (ci_prefix(q + 1, "last")) {
                    h = -1;
                    n = 5;
                } else if (q[1] == 'l' || q[1] == 'L') {
                    h = -1;
                    n = 2;
                }
                if (n) {
                    p->pos += (size_t)n;
                    e->has_a = 1;
                    e->a = a;
                    e->hash = h;
                    return 1;
                }
                fail_at(p, p->pos + 1);
            }
            /* mod_dow: dow /%\d+(\+\d+)?/ */
            if (q[0] == '%' && isdig(q[1])) {
                size_t i = 1;
                long m = 0, pl = 0;
                int big = 0;
                while (isdig(q[i])) {
                    m = m * 10 + (q[i] - '0');
                    if (m > 1000000) {
                        big = 1;
                        m = 1000000;
                    }
                    i++;
                }
                if (q[i] == '+' && isdig(q[i + 1])) {
                    i++;
                    /* only plus % mod matters: kept reduced, exactly */
                    while (isdig(q[i])) {
                        pl = m > 0 ? (pl * 10 + (q[i] - '0')) % m : 0;
                        i++;
                    }
                }
                if (big) m = -1;
                p->pos += i;
                e->has_a = 1;
                e->a = a;
                e->has_mod = 1;
                e->mod = (int)m;
                e->plus = (int)pl;
                return 1;
            }
            p->pos = start;
        }
    }
    int sl;
    if (s[p->pos] == '/') {
        if (!tok_slash(p, &sl)) return 0;
        e->has_sl = 1;
        e->sl = sl;
        return 1;
    }
    if (s[p->pos] == '*') {
        p->pos++;
    } else {
        if (!tok_value(p, f, &e->a)) return 0;
        e->has_a = 1;
        if (s[p->pos] == '-') {
            size_t h = p->pos;
            p->pos++;
            if (tok_value(p, f, &e->z)) e->has_z = 1;
            else p->pos = h; /* (hyphen value)? failed as a whole */
        }
    }
    if (s[p->pos] == '/') {
        size_t h = p->pos;
        if (tok_slash(p, &sl)) {
            e->has_sl = 1;
            e->sl = sl;
        } else p->pos = h;
    }
    return 1;
}

/* fugit's comma /,([ \t]*,)* / (need = 1) or comma? /([ \t]*,)* / (need = 0),
 * greedy. */
static int tok_commas(parser *p, int need) {
    const char *s = p->s;
    size_t i = p->pos;
    if (need) {
        if (s[i] != ',') return 0;
        i++;
    }
    for (;;) {
        size_t j = i;
        while (s[j] == ' ' || s[j] == '\t') j++;
        if (s[j] != ',') break;
        i = j + 1;
    }
    p->pos = i;
    return 1;
}

static int push_elt(parser *p, field_list *fl, const elt *e) {
    if (fl->n == fl->cap) {
        int cap = fl->cap ? fl->cap * 2 : 8;
        elt *v = realloc(fl->v, (size_t)cap * sizeof *v);
        if (!v) {
            p->oom = 1;
            return 0;
        }
        fl->v = v;
        fl->cap = cap;
    }
    fl->v[fl->n++] = *e;
    return 1;
}

/* comma? list comma? [and?] [s] -- fugit's lsec_, lmin_, ..., ldow. */
static int parse_field(parser *p, int f, field_list *fl, int *amp) {
    p->cur_field = f;
    tok_commas(p, 0);
    size_t start = p->pos;
    elt e;
    if (!parse_elt(p, f, &e) || !push_elt(p, fl, &e)) return 0;
    for (;;) { /* jseq: (comma elt)*, giving back a comma no element follows */
        size_t h = p->pos;
        if (!tok_commas(p, 1)) break;
        if (!parse_elt(p, f, &e)) {
            p->pos = h;
            break;
        }
        if (!push_elt(p, fl, &e)) return 0;
    }
    fl->text = p->s + start;
    fl->len = p->pos - start;
    tok_commas(p, 0);
    if ((f == F_DOM || f == F_DOW) && p->s[p->pos] == '&') {
        p->pos++;
        *amp = 1;
    }
    if (f == F_DOW) return 1;
    if (p->s[p->pos] != ' ' && p->s[p->pos] != '\t') {
        fail_at(p, p->pos);
        return 0;
    }
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t') p->pos++;
    return 1;
}

/* _tz_delta / +[-+]([01][0-9]|2[0-4]):?(00|15|30|45)/ or
 * _tz_name / +[A-Z][a-zA-Z0-9+\-]+(\/[A-Z][a-zA-Z0-9+\-_]+){0,2}/ ; sets
 * [*tz, *tzlen) to the name without its leading spaces. */
static int parse_tz(parser *p, const char **tz, size_t *tzlen) {
    const char *s = p->s;
    size_t i = p->pos;
    if (s[i] != ' ') return 0;
    while (s[i] == ' ') i++;
    size_t b = i;
    if ((s[i] == '+' || s[i] == '-') &&
        (((s[i + 1] == '0' || s[i + 1] == '1') && isdig(s[i + 2])) ||
         (s[i + 1] == '2' && s[i + 2] >= '0' && s[i + 2] <= '4'))) {
        size_t j = i + 3;
        if (s[j] == ':') j++;
        if ((s[j] == '0' && s[j + 1] == '0') || (s[j] == '1' && s[j + 1] == '5') || (s[j] == '3' && s[j + 1] == '0') ||
            (s[j] == '4' && s[j + 1] == '5')) {
            p->pos = j + 2;
            *tz = s + b;
            *tzlen = p->pos - b;
            return 1;
        }
    }
#define TZC(c) (isalnum((unsigned char)(c)) || (c) == '+' || (c) == '-')
    if (!(s[i] >= 'A' && s[i] <= 'Z' && TZC(s[i + 1]))) return 0;
    i += 2;
    while (TZC(s[i])) i++;
    for (int k = 0; k < 2; k++) {
        if (!(s[i] == '/' && s[i + 1] >= 'A' && s[i + 1] <= 'Z' && (TZC(s[i + 2]) || s[i + 2] == '_'))) break;
        i += 3;
        while (TZC(s[i]) || s[i] == '_') i++;
    }
#undef TZC
    p->pos = i;
    *tz = s + b;
    *tzlen = i - b;
    return 1;
}

/* ---------- zones ---------- */

/* fugit resolves a zone with et-orbi: an offset "+09:00"/"+0900" whose
 * hours are 0..11, or a tz database name. A name is accepted only when the
 * system's database has it as a file: GLib would also read POSIX TZ
 * strings ("JST-9"), which et-orbi refuses. */
static GTimeZone *zone_load(const char *name) {
    size_t n = strlen(name);
    if (n == 0) return NULL;
    if (name[0] == '+' || name[0] == '-') {
        /* et-orbi: /\A([+-][0-1]?[0-9]):?([0-5][0-9])?\z/, |hours| <= 11 */
        size_t i = 1;
        int h = 0, m = 0;
        if ((name[i] == '0' || name[i] == '1') && isdig(name[i + 1])) {
            h = (name[i] - '0') * 10 + (name[i + 1] - '0');
            i += 2;
        } else if (isdig(name[i])) {
            h = name[i] - '0';
            i++;
        } else return NULL;
        if (name[i] == ':') i++;
        if (name[i] >= '0' && name[i] <= '5' && isdig(name[i + 1])) {
            m = (name[i] - '0') * 10 + (name[i + 1] - '0');
            i += 2;
        }
        if (name[i] || h > 11) return NULL;
        int off = h * 3600 + m * 60;
        return g_time_zone_new_offset(name[0] == '-' ? -off : off);
    }
    if (strstr(name, "..") || name[0] == '/') return NULL;
    const char *dir = getenv("TZDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
    return g_time_zone_new_identifier(name);
}

static int64_t tz_offset(GTimeZone *tz, int64_t u) {
    int i = g_time_zone_find_interval(tz, G_TIME_TYPE_UNIVERSAL, u);
    return i < 0 ? 0 : g_time_zone_get_offset(tz, i);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), and back. */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int floordiv(int64_t a, int64_t b) { return (int)(a / b - ((a % b != 0) && ((a < 0) != (b < 0)))); }

static int days_in_month(int y, int m) {
    static const int dm[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dm[m];
}

/* Local wall time -> instant, as tzinfo's local_to_utc without a dst
 * preference: 1 (one instant), 0 (in a gap: PeriodNotFound) or 2
 * (repeated: AmbiguousTime). */
static int local_to_utc(GTimeZone *tz, int y, int mo, int d, int h, int mi, int s, int64_t *out) {
    int64_t L = days_from_civil(y, mo, d) * DAY_S + h * 3600 + mi * 60 + s;
    int64_t offs[3] = {tz_offset(tz, L - DAY_S), tz_offset(tz, L), tz_offset(tz, L + DAY_S)};
    int64_t found[3] = {0, 0, 0};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        int64_t u = L - offs[i];
        if (tz_offset(tz, u) != offs[i]) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= found[j] == u;
        if (!dup) found[n++] = u;
    }
    if (n == 1) *out = found[0]; /* a gap or a repeat: fugit raises, or skips a day */
    return n > 2 ? 2 : n;
}

/* ---------- the cursor (fugit's TimeCursor) ---------- */

typedef struct {
    const hh__cron_expr *e;
    int64_t t;
    int year, month, day, hour, min, sec, wday;
    int64_t off;
    int interval; /* GLib interval, for the abbreviation */
    int err;      /* fugit would have raised */
} cursor;

static void cur_set(cursor *c, int64_t t) {
    c->t = t;
    c->interval = g_time_zone_find_interval(c->e->tz, G_TIME_TYPE_UNIVERSAL, t);
    c->off = c->interval < 0 ? 0 : g_time_zone_get_offset(c->e->tz, c->interval);
    int64_t L = t + c->off;
    int64_t days = floordiv(L, DAY_S);
    int64_t rem = L - days * DAY_S;
    civil_from_days(days, &c->year, &c->month, &c->day);
    c->hour = (int)(rem / 3600);
    c->min = (int)(rem % 3600 / 60);
    c->sec = (int)(rem % 60);
    c->wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
}

static void inc(cursor *c, int64_t i) { cur_set(c, c->t + i); }

static void inc_month(cursor *c) {
    int y = c->year, m = c->month + 1;
    if (m == 13) {
        m = 1;
        y++;
    }
    int64_t u;
    if (local_to_utc(c->e->tz, y, m, 1, 0, 0, 0, &u) != 1) {
        c->err = 1; /* EtOrbi.make raises on a missing or repeated midnight */
        return;
    }
    cur_set(c, u);
}

static void inc_day(cursor *c) {
    inc(c, (24 - c->hour) * 3600 - c->min * 60 - c->sec);
    if (c->hour == 0) return;
    if (c->hour < 12) {
        int64_t u;
        int r = local_to_utc(c->e->tz, c->year, c->month, c->day, 0, 0, 0, &u);
        if (r == 1) cur_set(c, u);
        else if (r == 0) inc(c, (24 - c->hour) * 3600);
        else c->err = 1;
    } else {
        inc(c, (24 - c->hour) * 3600);
    }
}

static void inc_hour(cursor *c) { inc(c, (60 - c->min) * 60 - c->sec); }
static void inc_min(cursor *c) { inc(c, 60 - c->sec); }

static void inc_sec(cursor *c) {
    const hh__cron_expr *e = c->e;
    for (int i = 0; i < e->nsecs; i++)
        if (e->secs[i] > c->sec) {
            inc(c, e->secs[i] - c->sec);
            return;
        }
    inc(c, 60 - c->sec + e->secs[0]);
}

static void dec_month(cursor *c) {
    inc(c, -((c->day - 1) * (int64_t)DAY_S + c->hour * 3600 + c->min * 60 + c->sec + 1));
}
static void dec_day(cursor *c) { inc(c, -(c->hour * 3600 + c->min * 60 + c->sec + 1)); }
static void dec_hour(cursor *c) { inc(c, -(c->min * 60 + c->sec + 1)); }
static void dec_min(cursor *c) { inc(c, -(c->sec + 1)); }

static void dec_sec(cursor *c) {
    const hh__cron_expr *e = c->e;
    int target = e->secs[e->nsecs - 1];
    for (int i = e->nsecs - 1; i >= 0; i--)
        if (e->secs[i] < c->sec) {
            target = e->secs[i];
            break;
        }
    inc(c, target - c->sec - (c->sec > target ? 0 : 60));
}

static int month_match(const cursor *c) { return c->e->mon_all || (c->e->mon >> c->month & 1); }
static int hour_match(const cursor *c) { return c->e->hou_all || (c->e->hou >> c->hour & 1); }
static int min_match(const cursor *c) { return c->e->min_all || (c->e->min >> c->min & 1); }
static int sec_match(const cursor *c) { return c->e->sec_all || (c->e->sec >> c->sec & 1); }

/* et-orbi's rday: whole days from 2018-12-31 12:00 to this date's 12:00,
 * both local, floored (so a date in summer time counts one day less in a
 * zone whose reference day was in winter time, as in et-orbi). */
static int rweek(cursor *c) {
    int64_t a, b;
    if (local_to_utc(c->e->tz, c->year, c->month, c->day, 12, 0, 0, &a) != 1 ||
        local_to_utc(c->e->tz, 2018, 12, 31, 12, 0, 0, &b) != 1) {
        c->err = 1;
        return 0;
    }
    return floordiv(floordiv(a - b, DAY_S), 7);
}

static int weekday_match(cursor *c) {
    const hh__cron_expr *e = c->e;
    if (!e->dow) return 1;
    for (int i = 0; i < e->ndow; i++) {
        const dow_entry *w = &e->dow[i];
        if (w->wday != c->wday) continue;
        if (!w->hash && !w->mod) return 1;
        if (w->mod) {
            int rw = rweek(c);
            int r = ((rw % w->mod) + w->mod) % w->mod;
            if (r == w->plus % w->mod) return 1;
        } else {
            /* et-orbi's wday_in_month: weeks counted from the start and
             * (negative) from the end of the month */
            int ph = (c->day - 1) / 7 + 1;
            int nh = -((days_in_month(c->year, c->month) - c->day) / 7 + 1);
            if (w->hash == ph || w->hash == nh) return 1;
        }
    }
    return 0;
}

static int monthday_match(cursor *c) {
    const hh__cron_expr *e = c->e;
    if (e->dom_all) return 1;
    /* fugit: last = (midnight of next month's 1st - 24 h).day + 1, computed
     * for every restricted day-of-month (so it fails, as fugit raises, when
     * that midnight is missing or repeated in the zone, even for "1") */
    cursor n = *c;
    inc_month(&n);
    if (n.err) {
        c->err = 1;
        return 0;
    }
    if (e->dom_pos >> c->day & 1) return 1;
    inc(&n, -DAY_S);
    int last = n.day + 1;
    int k = last - c->day; /* day == last + d  <=>  d == -k */
    return k >= 1 && k <= 31 && (e->dom_neg >> k & 1);
}

static int day_match(cursor *c) {
    const hh__cron_expr *e = c->e;
    if (e->dow && !e->dom_all) {
        if (e->day_and) return weekday_match(c) && monthday_match(c);
        return weekday_match(c) || monthday_match(c);
    }
    return weekday_match(c) && monthday_match(c);
}

int64_t hh__cron_expr_next(const hh__cron_expr *e, int64_t from) {
    if (!e) return -1;
    cursor c = {.e = e};
    cur_set(&c, from);
    /* `from` is read in the expression's zone: its wall time and offset
     * are what fugit's fall-back dedupe compares a candidate with. */
    int sf[6] = {c.year, c.month, c.day, c.hour, c.min, c.sec};
    int64_t zoff = c.off;
    const char *zab = g_time_zone_get_abbreviation(e->tz, c.interval < 0 ? 0 : c.interval);
    int64_t ifrom = from;
    for (int i = 1;; i++) {
        if (i > MAX_ITER || c.err) return -1;
        if (ifrom == c.t) {
            inc(&c, 1);
            continue;
        }
        if (!month_match(&c)) {
            inc_month(&c);
            continue;
        }
        if (!day_match(&c)) {
            if (!c.err) inc_day(&c);
            continue;
        }
        if (!hour_match(&c)) {
            inc_hour(&c);
            continue;
        }
        if (!min_match(&c)) {
            inc_min(&c);
            continue;
        }
        if (!sec_match(&c)) {
            inc_sec(&c);
            continue;
        }
        /* Out of daylight saving time, the same wall time comes twice:
         * fugit does not yield it twice in a row. */
        const char *ab = g_time_zone_get_abbreviation(e->tz, c.interval < 0 ? 0 : c.interval);
        if (c.year == sf[0] && c.month == sf[1] && c.day == sf[2] && c.hour == sf[3] && c.min == sf[4] &&
            c.sec == sf[5] && (c.off != zoff || strcmp(ab, zab) != 0)) {
            zoff = c.off;
            zab = ab;
            ifrom = c.t;
            continue;
        }
        return c.t;
    }
}

int64_t hh__cron_expr_prev(const hh__cron_expr *e, int64_t from) {
    if (!e) return -1;
    cursor c = {.e = e};
    cur_set(&c, from - 1);
    for (int i = 1;; i++) {
        if (i > MAX_ITER || c.err) return -1;
        if (!month_match(&c)) {
            dec_month(&c);
            continue;
        }
        if (!day_match(&c)) {
            if (!c.err) dec_day(&c);
            continue;
        }
        if (!hour_match(&c)) {
            dec_hour(&c);
            continue;
        }
        if (!min_match(&c)) {
            dec_min(&c);
            continue;
        }
        if (!sec_match(&c)) {
            dec_sec(&c);
            continue;
        }
        return c.t;
    }
}

/* ---------- field expansion (fugit's expand, range, determine_*) ---------- */

/* Appends fugit's range(min, max, sta, edn, sla) to vals; returns 1, 0 for
 * "the full range" (fugit's [nil]: a wildcard), -1 for fugit's
 * ArgumentError (a negative bound with a positive one). */
static int range(int min, int max, int sta, int edn, int sla, int *vals, int *nv) {
    if (sta == min && edn == max && sla == 1) return 0;
    if ((sta < 0 && edn > 0) || (edn < 0 && sta > 0)) return -1;
    int omax = max;
    if (sta < 0) {
        min = -max;
        max = -1;
    }
    int a[256], n = 0, cur = sta;
    for (;;) {
        a[n++] = cur;
        if (cur == edn) break;
        cur++;
        if (cur > max) {
            cur = min;
            if (edn > max) edn = edn - max - 1;
        }
        if (n > 2 * omax || n >= 255) return -1;
    }
    for (int i = 0; i < n; i += sla) vals[(*nv)++] = a[i];
    return 1;
}

/* fugit's do_determine for one non-weekday field: the values into *mask
 * (bit v, or for negative day-of-month values bit -v of *negmask), *all
 * when the field is a wildcard. Returns 0 with a message on refusal. */
static int determine(int f, const field_list *fl, uint64_t *mask, uint32_t *negmask, int *all, char *err,
                     size_t errlen) {
    int min = field_min[f], max = f == F_SEC || f == F_MIN ? 59 : f == F_HOU ? 23 : f == F_DOM ? 31 : 12;
    *mask = 0;
    if (negmask) *negmask = 0;
    *all = 0;
    for (int i = 0; i < fl->n; i++) {
        const elt *e = &fl->v[i];
        int vals[256], nv = 0;
        if (e->has_sl && e->sl < 1) {
            seterr(err, errlen, "%s field \"%.*s\": a step of 0", field_names[f], (int)fl->len, fl->text);
            return 0;
        }
        if (!e->has_a && !e->has_z && !e->has_sl) {
            *all = 1; /* "*" */
            continue;
        }
        if (e->has_a && !e->has_z && !e->has_sl) {
            vals[nv++] = e->a;
        } else {
            int sta = e->has_a ? e->a : min;
            int edn = e->has_z ? e->z : max; /* a slash with no end runs to max */
            int sla = e->has_sl ? e->sl : 1;
            if (edn < 0 && sta > 0) edn = max;
            int r = range(min, max, sta, edn, sla, vals, &nv);
            if (r < 0) {
                seterr(err, errlen, "%s field \"%.*s\": a range from a negative day to a positive one (or back)",
                       field_names[f], (int)fl->len, fl->text);
                return 0;
            }
            if (r == 0) {
                *all = 1;
                continue;
            }
        }
        for (int k = 0; k < nv; k++) {
            int v = vals[k];
            if (f == F_HOU && v == 24) v = 0;
            if (v < 0 && negmask) *negmask |= 1u << -v;
            else if (v >= 0 && v < 64) *mask |= (uint64_t)1 << v;
        }
    }
    return 1;
}

/* fugit's weekdays are uniq'ed: entries are kept distinct as they come
 * (Sunday 7 is 0 already). 0 when there is no room for a new one. */
#define MAX_DOW 128
static int add_dow(dow_entry *buf, int *n, dow_entry d) {
    for (int j = 0; j < *n; j++)
        if (memcmp(&buf[j], &d, sizeof d) == 0) return 1;
    if (*n >= MAX_DOW) return 0;
    buf[(*n)++] = d;
    return 1;
}

static int determine_weekdays(const field_list *fl, hh__cron_expr *x, char *err, size_t errlen) {
    dow_entry buf[MAX_DOW];
    int n = 0;
    for (int i = 0; i < fl->n; i++) {
        const elt *e = &fl->v[i];
        if (e->hash || e->has_mod) {
            if (e->has_mod && e->mod < 1) {
                seterr(err, errlen, "day-of-week field \"%.*s\": %s", (int)fl->len, fl->text,
                       e->mod == 0 ? "a modulo of 0" : "a modulo over 1000000 weeks: unsupported");
                return 0;
            }
            if (!add_dow(buf, &n, (dow_entry){e->a == 7 ? 0 : e->a, e->hash, e->has_mod ? e->mod : 0, e->plus}))
                goto many;
            continue;
        }
        int a, z, step = 1;
        if (e->has_sl) {
            z = e->has_z ? e->z : e->has_a ? e->a : 6;
            a = e->has_a ? e->a : 0;
            step = e->sl < 1 ? 1 : e->sl;
        } else if (e->has_z) {
            a = e->a;
            z = e->z;
        } else if (e->has_a) {
            a = z = e->a;
        } else {
            continue; /* "*" adds nothing */
        }
        if (a > z) z += 7;
        for (int d = a; d <= z; d += step)
            if (!add_dow(buf, &n, (dow_entry){d > 6 ? d - 7 : d, 0, 0, 0})) goto many;
    }
    int m = n;
    if (m == 0) {
        x->dow = NULL;
        x->ndow = 0;
        return 1;
    }
    x->dow = malloc((size_t)m * sizeof *x->dow);
    if (!x->dow) {
        seterr(err, errlen, "out of memory");
        return 0;
    }
    memcpy(x->dow, buf, (size_t)m * sizeof *x->dow);
    x->ndow = m;
    return 1;
many:
    seterr(err, errlen, "day-of-week field \"%.*s\": more than %d different entries: unsupported", (int)fl->len,
           fl->text, MAX_DOW);
    return 0;
}

/* ---------- parse ---------- */

static const struct {
    const char *name, *cron;
} specials[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@noon", "0 12 * * *"},   {"@hourly", "0 * * * *"},
};

static int rb_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* The whitespace-delimited word of s around position at. */
static void word_at(const char *s, size_t at, const char **w, int *wl) {
    size_t b = at, e = at;
    while (b > 0 && !rb_space(s[b - 1])) b--;
    while (s[e] && !rb_space(s[e])) e++;
    *w = s + b;
    *wl = (int)(e - b);
}

static int try_parse(parser *p, int nfields, field_list *fl, int *amp, const char **tz, size_t *tzlen) {
    p->pos = 0;
    *amp = 0;
    *tz = NULL;
    *tzlen = 0;
    for (int f = 0; f < F_COUNT; f++) fl[f].n = 0;
    for (int f = nfields == 6 ? F_SEC : F_MIN; f < F_COUNT; f++)
        if (!parse_field(p, f, &fl[f], amp)) return 0;
    parse_tz(p, tz, tzlen);
    return 1;
}

hh__cron_expr *hh__cron_expr_parse(const char *text, const char *default_zone, char *err, size_t errlen) {
    seterr(err, errlen, "%s", "");
    if (!text) {
        seterr(err, errlen, "no cron expression");
        return NULL;
    }
    /* Ruby's String#strip */
    const char *b = text, *e = text + strlen(text);
    while (b < e && (rb_space(*b) || *b == '\0')) b++;
    while (e > b && (rb_space(e[-1]) || e[-1] == '\0')) e--;
    GString *s = g_string_new_len(b, e - b);
    hh__cron_expr *x = NULL;
    field_list fl[F_COUNT];
    memset(fl, 0, sizeof fl);

    if (s->str[0] == '@') {
        size_t k = 0;
        while (s->str[k] && !rb_space(s->str[k])) k++;
        const char *cron = NULL;
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
            if (strlen(specials[i].name) == k && memcmp(specials[i].name, s->str, k) == 0) cron = specials[i].cron;
        if (!cron) {
            if (k == 7 && memcmp(s->str, "@reboot", 7) == 0)
                seterr(err, errlen, "\"@reboot\": not a periodic schedule (fugit refuses it too)");
            else
                seterr(
                    err, errlen,
                    "alias \"%.*s\": unknown (known: @yearly @annually @monthly @weekly @daily @midnight @noon @hourly)",
                    (int)k, s->str);
            goto done;
        }
        while (s->str[k] && rb_space(s->str[k])) k++;
        GString *r = g_string_new(cron);
        if (s->str[k]) {
            g_string_append_c(r, ' ');
            g_string_append(r, s->str + k);
        }
        g_string_free(s, TRUE);
        s = r;
    }

    parser p = {.s = s->str};
    int amp = 0;
    const char *tz = NULL;
    size_t tzlen = 0;
    /* fugit: alt(second_cron, classic_cron): the 6-field form when it
     * parses, and the whole input must be consumed. */
    int ok = try_parse(&p, 6, fl, &amp, &tz, &tzlen);
    if (!ok) {
        /* For the message: when the 6-field form ran out of input, the
         * 5-field form's failure is the one to report. */
        size_t far6 = p.far;
        int field6 = p.far_field;
        p.far = 0;
        ok = try_parse(&p, 5, fl, &amp, &tz, &tzlen);
        if (!ok && far6 < s->len && far6 > p.far) {
            p.far = far6;
            p.far_field = field6;
        }
    }
    if (p.oom) {
        seterr(err, errlen, "out of memory");
        goto done;
    }
    if (!ok || p.pos != s->len) {
        if (ok) fail_at(&p, p.pos);
        size_t at = p.far > s->len ? s->len : p.far;
        int words = 0;
        for (size_t i = 0; i < s->len; i++) words += !rb_space(s->str[i]) && (i == 0 || rb_space(s->str[i - 1]));
        if (s->len == 0) {
            seterr(err, errlen, "empty cron expression");
        } else if (isalpha((unsigned char)s->str[0]) && isalpha((unsigned char)s->str[1])) {
            seterr(
                err, errlen,
                "\"%s\": not a cron expression (natural-language forms such as \"every day at noon\" are not supported)",
                s->str);
        } else if (words < 5) {
            seterr(err, errlen,
                   "\"%s\": %d fields, a cron expression has 5 or 6 (seconds first) and an optional time zone", s->str,
                   words);
        } else {
            const char *w;
            int wl;
            word_at(s->str, at, &w, &wl);
            if (ok && tz && !rb_space(s->str[p.pos])) {
                word_at(s->str, (size_t)(tz - s->str), &w, &wl);
                seterr(err, errlen, "time zone \"%.*s\": unknown", wl, w);
            } else if (ok && rb_space(s->str[p.pos])) {
                size_t q = p.pos;
                while (rb_space(s->str[q])) q++;
                word_at(s->str, q, &w, &wl);
                seterr(err, errlen,
                       "\"%.*s\": extra text after the day-of-week field (a time zone follows it after spaces)", wl, w);
            } else if (ok) {
                seterr(err, errlen, "%s field \"%.*s\": not a valid day of week", field_names[F_DOW], wl, w);
            } else {
                int f = p.far_field;
                int alldig = wl > 0;
                for (int i = 0; i < wl; i++) alldig &= isdig(w[i]);
                if (alldig)
                    seterr(err, errlen, "%s field \"%.*s\": out of range %d-%d", field_names[f], wl, w, field_min[f],
                           field_max[f]);
                else
                    seterr(err, errlen, "%s field \"%.*s\": not a valid %s (numbers, names, ranges, lists, steps)",
                           field_names[f], wl, w, field_names[f]);
            }
        }
        goto done;
    }

    x = calloc(1, sizeof *x);
    if (!x) {
        seterr(err, errlen, "out of memory");
        goto done;
    }
    x->day_and = amp;
    /* seconds: [0] for the 5-field form */
    if (fl[F_SEC].n == 0) {
        x->sec = 1;
    } else if (!determine(F_SEC, &fl[F_SEC], &x->sec, NULL, &x->sec_all, err, errlen)) goto fail;
    uint64_t m64;
    uint32_t neg;
    if (!determine(F_MIN, &fl[F_MIN], &x->min, NULL, &x->min_all, err, errlen)) goto fail;
    if (!determine(F_HOU, &fl[F_HOU], &m64, NULL, &x->hou_all, err, errlen)) goto fail;
    x->hou = (uint32_t)m64;
    if (!determine(F_DOM, &fl[F_DOM], &m64, &neg, &x->dom_all, err, errlen)) goto fail;
    x->dom_pos = (uint32_t)m64;
    x->dom_neg = neg;
    if (!determine(F_MON, &fl[F_MON], &m64, NULL, &x->mon_all, err, errlen)) goto fail;
    x->mon = (uint16_t)m64;
    if (!determine_weekdays(&fl[F_DOW], x, err, errlen)) goto fail;
    if (!x->sec_all)
        for (int v = 0; v < 60; v++)
            if (x->sec >> v & 1) x->secs[x->nsecs++] = v;
    /* fugit's compact_month_days: keep the months having one of the days */
    if (!x->mon_all && !x->dom_all) {
        static const int maxdays[] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        uint16_t ms = 0;
        uint32_t pos = 0;
        for (int mo = 1; mo <= 12; mo++) {
            if (!(x->mon >> mo & 1)) continue;
            for (int d = 1; d <= 31; d++)
                if ((x->dom_pos >> d & 1) && d <= maxdays[mo]) {
                    ms |= (uint16_t)(1u << mo);
                    pos |= 1u << d;
                }
            if (x->dom_neg) ms |= (uint16_t)(1u << mo);
        }
        if (!ms) {
            seterr(err, errlen, "%s field \"%.*s\": no such day in month field \"%.*s\"", field_names[F_DOM],
                   (int)fl[F_DOM].len, fl[F_DOM].text, (int)fl[F_MON].len, fl[F_MON].text);
            goto fail;
        }
        x->mon = ms;
        x->dom_pos = pos;
    }

    /* the zone */
    {
        char *zname = tz ? g_strndup(tz, tzlen) : default_zone && *default_zone ? g_strdup(default_zone) : NULL;
        if (zname) {
            x->tz = zone_load(zname);
            if (!x->tz) {
                seterr(err, errlen, "time zone \"%s\": unknown", zname);
                g_free(zname);
                goto fail;
            }
            x->zone = strdup(zname);
            g_free(zname);
        } else {
            x->tz = g_time_zone_new_local();
            x->zone = strdup("");
        }
        if (!x->zone) {
            seterr(err, errlen, "out of memory");
            goto fail;
        }
    }
    goto done;
fail:
    hh__cron_expr_free(x);
    x = NULL;
done:
    for (int f = 0; f < F_COUNT; f++) free(fl[f].v);
    g_string_free(s, TRUE);
    return x;
}

void hh__cron_expr_free(hh__cron_expr *e) {
    if (!e) return;
    if (e->tz) g_time_zone_unref(e->tz);
    free(e->dow);
    free(e->zone);
    free(e);
}

const char *hh__cron_expr_zone(const hh__cron_expr *e) { return e && e->zone ? e->zone : ""; }
