/* util.c -- clocks, randomness, logging, string helpers. No Redis keys. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

double hh_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double hh_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void hh_sleep(double seconds) {
    if (seconds <= 0) return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
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

int hh_random_bytes(unsigned char *buf, size_t n) { return fill_random(buf, n); }

void hh_hex(char *out, const unsigned char *raw, size_t n) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

int hh_random_hex(char *buf, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof(raw) || fill_random(raw, nbytes) != 0) return -1;
    hh_hex(buf, raw, nbytes);
    return 0;
}

int hh_new_jid(char jid[HH_JID_SIZE]) { return hh_random_hex(jid, 12); }

void hh_rng_seed(hh_rng *r) {
    if (fill_random((unsigned char *)&r->s, sizeof(r->s)) != 0 || r->s == 0)
        r->s = (uint64_t)hh_mono() * 0x9E3779B97F4A7C15ull + (uint64_t)getpid();
    if (r->s == 0) r->s = 0x9E3779B97F4A7C15ull;
}

/* xorshift64*: plenty for jitter and queue shuffles. */
uint64_t hh_rng_next(hh_rng *r) {
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double hh_rng_double(hh_rng *r) {
    return (double)(hh_rng_next(r) >> 11) / 9007199254740992.0;
}

uint64_t hh_rng_below(hh_rng *r, uint64_t n) { return n ? hh_rng_next(r) % n : 0; }

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

int hh_vsnprintf_c(char *buf, size_t len, const char *fmt, va_list ap) {
    locale_t old = enter_c();
    int n = vsnprintf(buf, len, fmt, ap);
    leave_c(old);
    return n;
}

int hh_snprintf_c(char *buf, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = hh_vsnprintf_c(buf, len, fmt, ap);
    va_end(ap);
    return n;
}

double hh_strtod_c(const char *s, char **end) {
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

void hh_log_stderr(hh_log_level level, const char *msg, void *udata) {
    FILE *f = udata ? (FILE *)udata : stderr;
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    /* One fprintf per line: stdio locks the stream, so lines never interleave. */
    fprintf(f, "%s.%03ldZ pid=%d %s: %s\n", when, ts.tv_nsec / 1000000, (int)getpid(),
            level_name(level), msg);
    fflush(f);
}

void hh_vlog(const hh_logger *lg, hh_log_level level, const char *fmt, va_list ap) {
    if (!lg || level < lg->level) return;
    char buf[2048];
    int n = hh_vsnprintf_c(buf, sizeof(buf), fmt, ap); /* "0.250 s" in any locale */
    hh_log_line(lg, level, buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void hh_log_line(const hh_logger *lg, hh_log_level level, char *msg, size_t len) {
    if (!lg || level < lg->level) return;
    /* Class names, jids, queues, error texts, payloads come from jobs and
     * Redis: escaped here, where every message passes, so none can end a
     * line early, forge the next one or drive a terminal. */
    char *esc = hh_needs_escape(msg, len) ? hh_escape_ctl(msg, len) : NULL;
    if (!esc && hh_needs_escape(msg, len)) /* out of memory: drop what is unsafe */
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f) msg[i] = '?';
    if (!esc) msg[len] = '\0';
    const char *out = esc ? esc : msg;
    if (lg->fn)
        lg->fn(level, out, lg->udata);
    else
        hh_log_stderr(level, out, NULL);
    free(esc);
}

void hh_log(const hh_logger *lg, hh_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hh_vlog(lg, level, fmt, ap);
    va_end(ap);
}

char *hh_strdup(const char *s) { return s ? strdup(s) : NULL; }

int hh_fd_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0) return -1;
    return flags & FD_CLOEXEC ? 0 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void hh_strlcpy(char *dst, const char *src, size_t n) {
    if (!n) return;
    size_t l = src ? strlen(src) : 0;
    if (l >= n) l = n - 1;
    if (l) memcpy(dst, src, l);
    dst[l] = '\0';
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end);

int hh_utf8_valid(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = utf8_seq(p, end);
        if (!n) return 0;
        p += n;
    }
    return 1;
}

char *hh_utf8_scrub(const char *s) {
    size_t len = strlen(s);
    char *out = malloc(len + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    size_t o = 0;
    while (p < end) {
        size_t n = utf8_seq(p, end);
        if (n) {
            memcpy(out + o, p, n);
            o += n, p += n;
        } else {
            out[o++] = '?';
            p++;
        }
    }
    out[o] = '\0';
    return out;
}

static size_t utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned char c = *p;
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    else if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) <= n) return 0;
    for (size_t i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n + 1;
}

/* How many bytes of p hh_escape_ctl() keeps as they are (a printable
 * character, up to 4 bytes), or 0 when the byte at p is escaped. */
static size_t kept(const unsigned char *p, const unsigned char *end) {
    if (*p >= 0x20 && *p < 0x7f) return 1;
    if (*p < 0x80) return 0; /* C0 controls and DEL */
    size_t n = utf8_seq(p, end);
    if (n == 2 && p[0] == 0xC2 && p[1] < 0xA0) return 0; /* C1: U+0080..U+009F */
    return n;
}

int hh_needs_escape(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = kept(p, end);
        if (!n) return 1;
        p += n;
    }
    return 0;
}

char *hh_escape_ctl(const char *s, size_t len) {
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

int hh_join_by(pthread_t t, double deadline) {
    double left = deadline - hh_mono();
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
