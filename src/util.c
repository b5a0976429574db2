/* util.c -- clocks, randomness, logging, string helpers. No Redis keys. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

double hh__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double hh__mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void hh__sleep(double seconds) {
    if (seconds <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static int fill_random(unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

int hh__random_bytes(unsigned char *buf, size_t n) { return fill_random(buf, n); }

void hh__hex(char *out, const unsigned char *raw, size_t n) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

int hh__random_hex(char *buf, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof(raw) || fill_random(raw, nbytes) != 0) return -1;
    hh__hex(buf, raw, nbytes);
    return 0;
}

int hh__new_jid(char jid[HH_JID_SIZE]) { return hh__random_hex(jid, 12); }

void hh__rng_seed(hh__rng *r) {
    if (fill_random((unsigned char *)&r->s, sizeof(r->s)) != 0 || r->s == 0)
        r->s = (uint64_t)hh__mono() * 0x9E3779B97F4A7C15ull + (uint64_t)getpid();
    if (r->s == 0) r->s = 0x9E3779B97F4A7C15ull;
}

/* xorshift64*: plenty for jitter and queue shuffles. */
uint64_t hh__rng_next(hh__rng *r) {
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double hh__rng_double(hh__rng *r) { return (double)(hh__rng_next(r) >> 11) / 9007199254740992.0; }

uint64_t hh__rng_below(hh__rng *r, uint64_t n) { return n ? hh__rng_next(r) % n : 0; }

/* The "C" locale, made once; (locale_t)0 if even that failed, and then the
 * process's locale is used (nothing better is at hand). */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

static locale_t enter_c(void) {
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c(locale_t old) {
    if (old) uselocale(old);
}

int hh__vsnprintf_c(char *buf, size_t len, const char *fmt, va_list ap) {
    locale_t old = enter_c();
    int n = vsnprintf(buf, len, fmt, ap);
    leave_c(old);
    return n;
}

int hh__snprintf_c(char *buf, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = hh__vsnprintf_c(buf, len, fmt, ap);
    va_end(ap);
    return n;
}

double hh__strtod_c(const char *s, char **end) {
    locale_t old = enter_c();
    double v = strtod(s, end);
    leave_c(old);
    return v;
}

static const char *level_name(hh_log_level l) {
    switch (l) {
    case HH_LOG_DEBUG: return "DEBUG";
    case HH_LOG_INFO: return "INFO";
    case HH_LOG_WARN: return "WARN";
    default: return "ERROR";
    }
}

/* The log context of this thread: its tid, and the job it runs. */
static _Thread_local struct {
    char tid[16];
    int job; /* 1 between hh__log_job_begin and _end */
    int has_elapsed;
    double elapsed;
    char klass[256];
    char jid[128];
} log_ctx;

void hh__log_job_begin(const char *tid, const char *klass, const char *jid) {
    if (tid) hh__strlcpy(log_ctx.tid, tid, sizeof(log_ctx.tid));
    hh__strlcpy(log_ctx.klass, klass ? klass : "", sizeof(log_ctx.klass));
    hh__strlcpy(log_ctx.jid, jid ? jid : "", sizeof(log_ctx.jid));
    log_ctx.has_elapsed = 0;
    log_ctx.job = 1;
}

void hh__log_job_elapsed(double seconds) {
    log_ctx.elapsed = round(seconds * 1000) / 1000; /* JobLogger: .round(3) */
    log_ctx.has_elapsed = 1;
}

void hh__log_job_end(void) { log_ctx.job = 0; }

/* A thread without a tid of its own (heartbeat, scheduler...) gets one
 * from its kernel thread id, in base 36 as Sidekiq writes them. */
static const char *thread_tid(void) {
    if (!log_ctx.tid[0]) {
        unsigned long v = (unsigned long)syscall(SYS_gettid) ^ ((unsigned long)getpid() << 16);
        char tmp[16];
        int k = 0;
        do {
            tmp[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
            v /= 36;
        } while (v && k < 12);
        for (int j = 0; j < k; j++) log_ctx.tid[j] = tmp[k - 1 - j];
        log_ctx.tid[k] = '\0';
    }
    return log_ctx.tid;
}

/* Ruby's Float#to_s of a value rounded to ms: "0.012", "1.0", "12.5". */
static void fmt_elapsed(char *buf, size_t n, double v) {
    hh__snprintf_c(buf, n, "%.3f", v);
    size_t l = strlen(buf);
    while (l > 2 && buf[l - 1] == '0' && buf[l - 2] != '.') buf[--l] = '\0';
}

char *hh_log_format_line(hh_log_level level, const char *msg, hh_log_format format) {
    struct timespec ts;
    struct tm tm;
    char when[40], day[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when, sizeof(when), "%s.%03ldZ", day, ts.tv_nsec / 1000000);
    const char *tid = thread_tid();
    char el[32] = "";
    if (log_ctx.job && log_ctx.has_elapsed) fmt_elapsed(el, sizeof(el), log_ctx.elapsed);
    if (!msg) msg = "";
    if (format == HH_LOG_FORMAT_JSON) {
        json_t *o = json_object(), *ctx = NULL;
        json_object_set_new(o, "ts", json_string(when));
        json_object_set_new(o, "pid", json_integer(getpid()));
        json_object_set_new(o, "tid", json_string(tid));
        json_object_set_new(o, "lvl", json_string(level_name(level)));
        json_t *m = json_string(msg);
        json_object_set_new(o, "msg", m ? m : json_string("(not UTF-8)"));
        if (log_ctx.job) {
            char *k = hh__utf8_escape_len(log_ctx.klass, strlen(log_ctx.klass), NULL),
                 *j = hh__utf8_escape_len(log_ctx.jid, strlen(log_ctx.jid), NULL);
            ctx = json_object();
            json_object_set_new(ctx, "class", json_string(k ? k : ""));
            json_object_set_new(ctx, "jid", json_string(j ? j : ""));
            if (el[0]) json_object_set_new(ctx, "elapsed", json_real(log_ctx.elapsed));
            json_object_set_new(o, "ctx", ctx);
            free(k);
            free(j);
        }
        char *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        json_decref(o);
        return out;
    }
    char *k = NULL, *j = NULL;
    if (log_ctx.job) { /* from jobs: escaped as messages are */
        k = hh__escape_ctl(log_ctx.klass, strlen(log_ctx.klass));
        j = hh__escape_ctl(log_ctx.jid, strlen(log_ctx.jid));
        if (!k || !j) {
            free(k);
            free(j);
            return NULL;
        }
    }
    size_t n = strlen(when) + strlen(tid) + strlen(msg) + (k ? strlen(k) + strlen(j) : 0) + 96;
    char *out = malloc(n);
    if (out) {
        if (k)
            snprintf(out, n, "%s pid=%d tid=%s class=%s jid=%s%s%s %s: %s", when, (int)getpid(), tid, k, j,
                     el[0] ? " elapsed=" : "", el, level_name(level), msg);
        else snprintf(out, n, "%s pid=%d tid=%s %s: %s", when, (int)getpid(), tid, level_name(level), msg);
    }
    free(k);
    free(j);
    return out;
}

void hh__log_stderr(hh_log_level level, const char *msg, void *udata) {
    FILE *f = udata ? (FILE *)udata : stderr;
    char *line = hh_log_format_line(level, msg, HH_LOG_FORMAT_TEXT);
    /* One fprintf per line: stdio locks the stream, so lines never interleave. */
    if (line) fprintf(f, "%s\n", line);
    else fprintf(f, "pid=%d %s: %s\n", (int)getpid(), level_name(level), msg);
    fflush(f);
    free(line);
}

void hh__vlog(const hh__logger *lg, hh_log_level level, const char *fmt, va_list ap) {
    if (!lg || level < lg->level) return;
    char buf[2048];
    va_list again;
    va_copy(again, ap);
    int n = hh__vsnprintf_c(buf, sizeof(buf), fmt, ap); /* "0.250 s" in any locale */
    /* A longer message (a handler's output line, a long error) is logged
     * whole, not cut where the stack buffer ends. */
    char *big = n > 0 && (size_t)n >= sizeof(buf) ? malloc((size_t)n + 1) : NULL;
    if (big && hh__vsnprintf_c(big, (size_t)n + 1, fmt, again) == n) hh__log_line(lg, level, big, (size_t)n);
    else hh__log_line(lg, level, buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
    va_end(again);
    free(big);
}

void hh__log_line(const hh__logger *lg, hh_log_level level, char *msg, size_t len) {
    if (!lg || level < lg->level) return;
    /* Class names, jids, queues, error texts, payloads come from jobs and
     * Redis: escaped here, where every message passes, so none can end a
     * line early, forge the next one or drive a terminal. */
    char *esc = hh__needs_escape(msg, len) ? hh__escape_ctl(msg, len) : NULL;
    if (!esc && hh__needs_escape(msg, len)) /* out of memory: drop what is unsafe */
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f) msg[i] = '?';
    if (!esc) msg[len] = '\0';
    const char *out = esc ? esc : msg;
    if (lg->fn) lg->fn(level, out, lg->udata);
    else hh__log_stderr(level, out, NULL);
    free(esc);
}

void hh__log(const hh__logger *lg, hh_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hh__vlog(lg, level, fmt, ap);
    va_end(ap);
}

char *hh__strdup(const char *s) { return s ? strdup(s) : NULL; }

int hh__fd_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) return -1;
    return flags & FD_CLOEXEC ? 0 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void hh__strlcpy(char *dst, const char *src, size_t n) {
    if (!n) return;
    size_t l = src ? strlen(src) : 0;
    if (l >= n) l = n - 1;
    if (l) memcpy(dst, src, l);
    dst[l] = '\0';
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end);

int hh__utf8_valid(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = utf8_seq(p, end);
        if (!n) return 0;
        p += n;
    }
    return 1;
}

/* The copy both rewrites below make: valid UTF-8 as it is, every other
 * byte as U+FFFD (replace) or as the text \xNN. At most 4 bytes out per
 * byte in. */
static char *utf8_rewrite(const char *s, size_t len, size_t *outlen, int replace) {
    static const char hex[] = "0123456789abcdef";
    char *out = len < SIZE_MAX / 4 ? malloc(4 * len + 1) : NULL;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    size_t o = 0;
    while (p < end) {
        size_t n = utf8_seq(p, end);
        if (n) {
            memcpy(out + o, p, n);
            o += n, p += n;
        } else if (replace) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3, p++;
        } else {
            out[o++] = '\\', out[o++] = 'x', out[o++] = hex[*p >> 4], out[o++] = hex[*p & 15];
            p++;
        }
    }
    out[o] = '\0';
    if (outlen) *outlen = o;
    return out;
}

char *hh__utf8_escape_len(const char *s, size_t len, size_t *outlen) { return utf8_rewrite(s, len, outlen, 0); }

char *hh__utf8_replace_len(const char *s, size_t len, size_t *outlen) { return utf8_rewrite(s, len, outlen, 1); }

json_t *hh__json_base64(const char *s, size_t len) {
    if (len > INT_MAX / 2) return NULL;
    char *b = malloc(4 * ((len + 2) / 3) + 1);
    if (!b) return NULL;
    EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)s, (int)len);
    json_t *v = json_string(b);
    free(b);
    return v;
}

static size_t utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned char c = *p;
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    else if ((c & 0xE0) == 0xC0) {
        n = 1;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 2;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 3;
        cp = c & 0x07;
    } else return 0;
    if ((size_t)(end - p) <= n) return 0;
    for (size_t i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n + 1;
}

/* How many bytes of p hh__escape_ctl() keeps as they are (a printable
 * character, up to 4 bytes), or 0 when the byte at p is escaped. */
static size_t kept(const unsigned char *p, const unsigned char *end) {
    if (*p >= 0x20 && *p < 0x7f) return 1;
    if (*p < 0x80) return 0; /* C0 controls and DEL */
    size_t n = utf8_seq(p, end);
    if (n == 2 && p[0] == 0xC2 && p[1] < 0xA0) return 0; /* C1: U+0080..U+009F */
    return n;
}

int hh__needs_escape(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = kept(p, end);
        if (!n) return 1;
        p += n;
    }
    return 0;
}

char *hh__escape_ctl(const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    char *out = malloc(6 * len + 1), *o = out; /* \u0085 is the longest: 6 for 2 */
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = kept(p, end);
        if (n) {
            memcpy(o, p, n);
            o += n, p += n;
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            *o++ = '\\';
            *o++ = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
            p++;
        } else if (p[0] == 0xC2 && p + 1 < end && p[1] >= 0x80 && p[1] < 0xA0) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[p[1] >> 4], o[5] = hex[p[1] & 15];
            o += 6, p += 2;
        } else {
            o[0] = '\\', o[1] = 'x', o[2] = hex[*p >> 4], o[3] = hex[*p & 15];
            o += 4, p++;
        }
    }
    *o = '\0';
    return out;
}

int hh__join_by(pthread_t t, double deadline) {
    double left = deadline - hh__mono();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (left > 0) {
        long long ns = (long long)ts.tv_nsec + (long long)(left * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
    }
    if (pthread_timedjoin_np(t, NULL, &ts) == 0) return 1;
    pthread_detach(t);
    return 0;
}

int hh__proc_stat_parse(const char *text, long hz, double btime, long page, hh__proc_info *out) {
    unsigned long long utime, stime, start, vsize;
    long long rss;
    char state;
    memset(out, 0, sizeof(*out));
    const char *p = strrchr(text, ')');
    if (!p || hz <= 0) return -1;
    /* fields 3 (state) to 24 (rss), see proc(5) */
    if (sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
               &state, &utime, &stime, &start, &vsize, &rss) != 6)
        return -1;
    out->state = state;
    out->utime = (double)utime / (double)hz;
    out->stime = (double)stime / (double)hz;
    out->start = btime > 0 ? btime + (double)start / (double)hz : 0;
    out->vsize = vsize;
    out->rss = rss > 0 && page > 0 ? (unsigned long long)rss * (unsigned long long)page : 0;
    return 0;
}

/* When the machine booted, epoch seconds; 0 unknown. */
static double boot_time(void) {
    FILE *f = fopen("/proc/stat", "re");
    char line[256];
    double bt = 0;
    if (!f) return 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long v;
        if (sscanf(line, "btime %llu", &v) == 1) {
            bt = (double)v;
            break;
        }
    }
    fclose(f);
    return bt;
}

int hh__proc_stat(long pid, hh__proc_info *out) {
    char path[64], buf[2048];
    memset(out, 0, sizeof(*out));
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return hh__proc_stat_parse(buf, sysconf(_SC_CLK_TCK), boot_time(), sysconf(_SC_PAGESIZE), out);
}

/* ------------------------------------------------------------ error runs */

void hh__err_run_init(hh__err_run *e) {
    pthread_mutex_init(&e->mu, NULL);
    e->last[0] = '\0';
    e->since = 0;
    atomic_init(&e->on, 0);
}

void hh__err_run_destroy(hh__err_run *e) { pthread_mutex_destroy(&e->mu); }

void hh__err_run_fail(const hh__logger *log, hh__err_run *e, hh_log_level level, const char *what, const char *why) {
    pthread_mutex_lock(&e->mu);
    if (!atomic_load(&e->on)) {
        e->since = hh__mono();
        e->last[0] = '\0';
        atomic_store(&e->on, 1);
    }
    /* Redis names the script line that failed (" script: <sha>, on
     * @user_script:25."), which differs between the fetch's paths: the
     * same refusal, not a change */
    const char *at = strstr(why, " script: ");
    size_t n = at ? (size_t)(at - why) : strlen(why);
    if (n > sizeof(e->last) - 1) n = sizeof(e->last) - 1;
    int changed = strlen(e->last) != n || strncmp(e->last, why, n) != 0;
    if (changed) {
        memcpy(e->last, why, n);
        e->last[n] = '\0';
    }
    pthread_mutex_unlock(&e->mu);
    if (changed) hh__log(log, level, "%s: %s", what, why);
}

void hh__err_run_ok(const hh__logger *log, hh__err_run *e, const char *what) {
    if (!atomic_load(&e->on)) return;
    pthread_mutex_lock(&e->mu);
    int was = atomic_exchange(&e->on, 0);
    double since = e->since;
    pthread_mutex_unlock(&e->mu);
    if (was) hh__log(log, HH_LOG_INFO, "%s restored after %.0f s", what, hh__mono() - since);
}
