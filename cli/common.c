/* common.c -- helpers every `hiredhand` subcommand shares: usage errors,
 * number parsing, name checks, --redis-password-file, tables sized to
 * their content, handler output cut into log lines within a per-job
 * budget. Depends on the public API only; main.c and the subcommands
 * depend on it, never the other way round. No Redis keys. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("hiredhand: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* The last password read: reachable until exit (no leak reports). */
static char *password_read;

int cli_words_end(int argc, char **argv, int w) {
    while (optind < argc) argv[w++] = argv[optind++]; /* after "--" */
    int n = w - 1;
    memmove(argv + argc - n, argv + 1, sizeof(*argv) * (size_t)n);
    return argc - n;
}

int cli_redis_url(const char *arg, const char **url) {
    if (!*arg)
        return cli_usage_error("-r/--redis: the URL is empty (an unset variable?); leave -r out for $REDIS_URL, "
                               "else redis://127.0.0.1:6379/0");
    *url = arg;
    return 0;
}

const char *cli_password_file(const char *path) {
    free(password_read);
    password_read = NULL;
    FILE *f = fopen(path, "re");
    if (!f) {
        cli_usage_error("cannot open --redis-password-file %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&password_read, &cap, f);
    int e = errno, failed = ferror(f);
    fclose(f);
    while (n > 0 && (password_read[n - 1] == '\n' || password_read[n - 1] == '\r')) password_read[--n] = '\0';
    if (n <= 0) {
        if (failed) cli_usage_error("cannot read --redis-password-file %s: %s", path, strerror(e ? e : EIO));
        else cli_usage_error("--redis-password-file %s: the first line is empty (want the password)", path);
        free(password_read);
        password_read = NULL;
        return NULL;
    }
    return password_read;
}

int cli_parse_seconds(const char *s, double *out) {
    char *end;
    if (!s || !*s) return -1;
    double v = strtod(s, &end);
    if (*end || v < 0 || v != v || v > CLI_SECONDS_MAX) return -1;
    *out = v;
    return 0;
}

int cli_check_name(hh_name_kind kind, const char *name) {
    if (hh_name_check(kind, name, NULL, 0) == HH_OK) return 0;
    return cli_usage_error("%s", hh_last_error());
}

int cli_parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    if (!s || !*s) return -1;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cli_option_int(const char *opt, const char *arg, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = arg && *arg ? strtol(arg, &end, 10) : 0;
    if (!arg || !*arg || *end)
        return cli_usage_error("%s: '%s' is not a number, want %ld to %ld", opt, arg ? arg : "", lo, hi);
    if (errno == ERANGE || v < lo || v > hi)
        return cli_usage_error("%s: %s is out of range, want %ld to %ld", opt, arg, lo, hi);
    *out = v;
    return 0;
}

int cli_option_timestamps(const char *arg, hh_timestamps *out) {
    if (!strcmp(arg, "float")) *out = HH_TS_FLOAT;
    else if (!strcmp(arg, "millis")) *out = HH_TS_MILLIS;
    else return cli_usage_error("--timestamps is float or millis, not '%s'", arg);
    return 0;
}

int cli_option_seconds(const char *opt, const char *arg, double lo, int lo_excluded, double hi, double *out) {
    char *end, range[96];
    double v = arg && *arg ? strtod(arg, &end) : 0;
    /* %.11g: the largest limit (1e10) in digits, 0.1 as 0.1 */
    if (lo_excluded) snprintf(range, sizeof(range), "more than %.11g and at most %.11g seconds", lo, hi);
    else snprintf(range, sizeof(range), "%.11g to %.11g seconds", lo, hi);
    if (!arg || !*arg || *end || v != v)
        return cli_usage_error("%s: '%s' is not a number, want %s", opt, arg ? arg : "", range);
    if (v < lo || (lo_excluded && v == lo) || v > hi)
        return cli_usage_error("%s: %s is out of range, want %s", opt, arg, range);
    *out = v;
    return 0;
}

/* Bytes of the UTF-8 sequence at p (1-4) that is shown as it is, or 0
 * for a byte to escape: ASCII controls, DEL, C1 (U+0080..U+009F), bytes
 * that start no valid sequence. */
static size_t shown_as_is(const unsigned char *p, const unsigned char *end) {
    if (*p >= 0x20 && *p < 0x7f) return 1;
    if (*p < 0xc2 || *p > 0xf4) return 0;
    size_t n = *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) return 0;  /* C1 */
    if (n == 3 && p[0] == 0xe0 && p[1] < 0xa0) return 0;  /* overlong */
    if (n == 3 && p[0] == 0xed && p[1] >= 0xa0) return 0; /* surrogates */
    if (n == 4 && p[0] == 0xf0 && p[1] < 0x90) return 0;  /* overlong */
    if (n == 4 && p[0] == 0xf4 && p[1] >= 0x90) return 0; /* past U+10FFFF */
    return n;
}

static char *escape(const char *s, size_t len, int keep_backslash) {
    static const char hex[] = "0123456789abcdef";
    char *out = malloc(4 * len + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = *p == '\\' ? (size_t)keep_backslash : shown_as_is(p, end);
        if (n) {
            memcpy(o, p, n);
            o += n, p += n;
            continue;
        }
        *o++ = '\\';
        if (*p == '\\' || *p == '\n' || *p == '\r' || *p == '\t') {
            *o++ = *p == '\\' ? '\\' : *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
        } else {
            *o++ = 'x', *o++ = hex[*p >> 4], *o++ = hex[*p & 15];
        }
        p++;
    }
    *o = '\0';
    return out;
}

char *cli_name_escape(const char *s, size_t len) { return escape(s, len, 0); }

/* Four rotating slots, so that one printf can show up to four names; each
 * slot keeps its string until it comes round again. */
static const char *shown_slot(char *esc) {
    static char *slots[4];
    static unsigned next;
    unsigned i = next++ & 3;
    free(slots[i]);
    slots[i] = esc;
    return esc ? esc : "(out of memory)";
}

const char *cli_shown(const char *s, size_t len) { return shown_slot(escape(s ? s : "", s ? len : 0, 0)); }

const char *cli_shown_str(const char *s) { return cli_shown(s, s ? strlen(s) : 0); }

const char *cli_shown_text(const char *s, size_t len) { return shown_slot(escape(s ? s : "", s ? len : 0, 1)); }

const char *cli_shown_json(const json_t *v) {
    return json_is_string(v) ? cli_shown(json_string_value(v), json_string_length(v)) : cli_shown("", 0);
}

void cli_put_payload(const char *s, size_t len, FILE *f) {
    char *esc = escape(s, len, 1);
    if (esc) fputs(esc, f);
    free(esc);
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'  ? c - 'a' + 10
        : c >= 'A' && c <= 'F'  ? c - 'A' + 10
                                : -1;
}

char *cli_name_unescape(const char *s) {
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out) {
        cli_usage_error("out of memory");
        return NULL;
    }
    for (const char *p = s; *p; p++) {
        if (*p != '\\') {
            *o++ = *p;
            continue;
        }
        char c = p[1];
        if (c == '\\' || c == 'n' || c == 'r' || c == 't') {
            *o++ = c == '\\' ? '\\' : c == 'n' ? '\n' : c == 'r' ? '\r' : '\t';
            p++;
        } else if (c == 'x') {
            int hi = hexval(p[2]), lo = hi >= 0 ? hexval(p[3]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(out);
                cli_usage_error(
                    "bad escape in name '%s': \\x wants two hex digits, not 00 (a backslash itself is \\\\)", s);
                return NULL;
            }
            *o++ = (char)(hi * 16 + lo);
            p += 3;
        } else {
            *o++ = *p; /* a lone backslash is itself */
        }
    }
    *o = '\0';
    return out;
}

static void line_out(cli_lines *l, size_t n, cli_line_fn *fn, void *udata) {
    if (n && l->buf[n - 1] == '\r') n--;
    fn(udata, l->buf, n);
}

void cli_lines_feed(cli_lines *l, const char *data, size_t n, cli_line_fn *fn, void *udata) {
    while (n) {
        size_t take = sizeof(l->buf) - l->len < n ? sizeof(l->buf) - l->len : n;
        memcpy(l->buf + l->len, data, take);
        l->len += take;
        data += take;
        n -= take;
        char *nl;
        while ((nl = memchr(l->buf, '\n', l->len))) {
            size_t k = (size_t)(nl - l->buf);
            /* the newline that ends a long line cut right before it ends
             * the last piece, not an empty line of its own */
            if (k || !l->cut) line_out(l, k, fn, udata);
            l->cut = 0;
            memmove(l->buf, nl + 1, l->len - k - 1);
            l->len -= k + 1;
        }
        if (l->len == sizeof(l->buf)) { /* a line too long: in pieces */
            line_out(l, l->len, fn, udata);
            l->len = 0;
            l->cut = 1;
        } else if (l->len) {
            l->cut = 0;
        }
    }
}

void cli_lines_end(cli_lines *l, cli_line_fn *fn, void *udata) {
    if (l->len) line_out(l, l->len, fn, udata);
    l->cut = 0;
    l->len = 0;
}

char *cli_output_text(const char *s, size_t len, size_t *outlen) {
    size_t nuls = 0;
    for (const char *p = s; (p = memchr(p, '\0', len - (size_t)(p - s))) != NULL; p++) nuls++;
    char *out = malloc(len + 3 * nuls + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i]) *o++ = s[i];
        else memcpy(o, "\\x00", 4), o += 4;
    }
    *o = '\0';
    if (outlen) *outlen = (size_t)(o - out);
    return out;
}

const char *cli_error_text(const char *line) {
    const char *cr = strrchr(line, '\r'), *t = cr ? cr + 1 : line;
    for (const char *p = t; *p; p++)
        if (*p != ' ' && *p != '\t' && *p != '\v' && *p != '\f') return t;
    return NULL;
}

void cli_log_handler_line(cli_log_budget *b, hh_manager *m, hh_job *job, const char *klass, int pid, const char *stream,
                          const char *line, size_t len) {
    if (b && b->max) {
        if (b->logged == b->max) { /* spent: an empty line goes too */
            b->dropped += len;
            return;
        }
        size_t room = b->max - b->logged, take = len < room ? len : room;
        b->dropped += len - take;
        b->logged += take;
        len = take;
    }
    if (!m) return;
    /* "%.*s" would end at a NUL byte: such a line goes as text */
    char *text = memchr(line, '\0', len) ? cli_output_text(line, len, &len) : NULL;
    hh_manager_log(m, HH_LOG_INFO, "class=%s jid=%s pid=%d %s: %.*s", job ? hh_job_handler_class(job, NULL) : klass,
                   job ? hh_job_jid(job) : "-", pid, stream, (int)len, text ? text : line);
    free(text);
}

void cli_log_budget_end(cli_log_budget *b, hh_manager *m, hh_job *job, const char *klass, int pid) {
    if (b->dropped && m)
        hh_manager_log(
            m, HH_LOG_WARN, "class=%s jid=%s pid=%d: %zu more bytes of output not logged (--exec-log-max %zu)",
            job ? hh_job_handler_class(job, NULL) : klass, job ? hh_job_jid(job) : "-", pid, b->dropped, b->max);
    b->logged = b->dropped = 0;
}

/* ------------------------------------------------------------ tables */

/* Columns a code point takes: 0 for combining marks and zero-width
 * characters, 2 for East Asian wide and fullwidth forms and emoji. */
static size_t cp_width(unsigned cp) {
    if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0xfe00 && cp <= 0xfe0f)) return 0;
    if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) ||
        (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
        (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
        (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd))
        return 2;
    return 1;
}

size_t cli_width(const char *s) {
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    size_t w = 0;
    while (p < end) {
        size_t n = shown_as_is(p, end);
        if (n <= 1) { /* ASCII, or a byte that starts no character */
            w++, p++;
            continue;
        }
        unsigned cp = p[0] & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
        for (size_t i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3f);
        w += cp_width(cp);
        p += n;
    }
    return w;
}

struct cli_table {
    size_t ncols;
    char *align;
    size_t *width;
    char **cells; /* held rows, ncols cells each */
    size_t n, cap;
    int fixed; /* widths fixed: rows are written as they come */
    cli_table_line_fn *fn;
    void *udata;
};

cli_table *cli_table_new(const char *align, cli_table_line_fn *fn, void *udata) {
    cli_table *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    t->ncols = strlen(align);
    t->align = strdup(align);
    t->width = calloc(t->ncols ? t->ncols : 1, sizeof(*t->width));
    t->fn = fn;
    t->udata = udata;
    if (!t->align || !t->width) {
        free(t->align);
        free(t->width);
        free(t);
        return NULL;
    }
    return t;
}

/* A cell NULL (out of memory) is written as empty. */
static void table_write(cli_table *t, char *const *row) {
    size_t len = 1;
    for (size_t c = 0; c < t->ncols; c++) len += (row[c] ? strlen(row[c]) : 0) + t->width[c] + 2;
    char *line = malloc(len), *o = line;
    if (!line) return;
    for (size_t c = 0; c < t->ncols; c++) {
        const char *cell = row[c] ? row[c] : "";
        size_t w = cli_width(cell), pad = w < t->width[c] ? t->width[c] - w : 0, l = strlen(cell);
        if (c) *o++ = ' ', *o++ = ' ';
        if (t->align[c] == 'r') memset(o, ' ', pad), o += pad;
        memcpy(o, cell, l), o += l;
        if (t->align[c] != 'r' && c + 1 < t->ncols) memset(o, ' ', pad), o += pad;
    }
    while (o > line && o[-1] == ' ') o--; /* an empty last cell leaves no blanks */
    *o = '\0';
    if (t->fn) t->fn(t->udata, line);
    else puts(line);
    free(line);
}

static void table_flush(cli_table *t) {
    for (size_t r = 0; r < t->n; r++) {
        table_write(t, t->cells + r * t->ncols);
        for (size_t c = 0; c < t->ncols; c++) free(t->cells[r * t->ncols + c]);
    }
    t->n = 0;
    t->fixed = 1;
}

void cli_table_row(cli_table *t, const char *const *cells) {
    if (!t) return;
    if (t->n == t->cap && !t->fixed) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * t->ncols * sizeof(*c));
        if (c) t->cells = c, t->cap = cap;
        else table_flush(t); /* out of memory: the widths so far */
    }
    char *stack[16], **row = t->fixed ? stack : t->cells + t->n * t->ncols;
    if (t->fixed && t->ncols > 16) return;
    for (size_t c = 0; c < t->ncols; c++) {
        row[c] = strdup(cells[c] ? cells[c] : "");
        size_t w = row[c] ? cli_width(row[c]) : 0;
        if (!t->fixed && w > t->width[c]) t->width[c] = w;
    }
    if (t->fixed) {
        table_write(t, row);
        for (size_t c = 0; c < t->ncols; c++) free(row[c]);
        return;
    }
    if (++t->n >= CLI_TABLE_HOLD) table_flush(t);
}

void cli_table_end(cli_table *t) {
    if (!t) return;
    table_flush(t);
    free(t->cells);
    free(t->width);
    free(t->align);
    free(t);
}

int cli_base64_field(const json_t *o, const char *key, char **out, size_t *len) {
    json_t *v = json_object_get(o, key);
    *out = NULL;
    size_t bn = json_string_length(v);
    if (!json_is_string(v) || bn % 4 || bn > INT_MAX || !(*out = malloc(bn / 4 * 3 + 1))) return -1;
    const char *b = json_string_value(v);
    int n = EVP_DecodeBlock((unsigned char *)*out, (const unsigned char *)b, (int)bn);
    if (n < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    /* EVP_DecodeBlock counts the '=' padding as bytes: drop them */
    for (size_t i = bn; n > 0 && i > 0 && b[i - 1] == '='; i--) n--;
    (*out)[n] = '\0';
    *len = (size_t)n;
    return 0;
}
