/* common.c -- helpers every `hiredhand` subcommand shares: usage errors,
 * number parsing, name checks, --redis-password-file, handler output
 * cut into log lines. Depends on the
 * public API only; main.c and the subcommands depend on it, never the
 * other way round. No Redis keys. */
#include <errno.h>
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
    if (*end || v < 0 || v != v || v > 1e10) return -1;
    *out = v;
    return 0;
}

int cli_check_name(hh_name_kind kind, const char *name) {
    char why[512];
    if (hh_name_check(kind, name, why, sizeof(why)) == HH_OK) return 0;
    return cli_usage_error("%s", why);
}

int cli_parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    if (!s || !*s) return -1;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
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
            line_out(l, k, fn, udata);
            memmove(l->buf, nl + 1, l->len - k - 1);
            l->len -= k + 1;
        }
        if (l->len == sizeof(l->buf)) { /* a line too long: in pieces */
            line_out(l, l->len, fn, udata);
            l->len = 0;
        }
    }
}

void cli_lines_end(cli_lines *l, cli_line_fn *fn, void *udata) {
    if (l->len) line_out(l, l->len, fn, udata);
    l->len = 0;
}

void cli_log_handler_line(hh_manager *m, hh_job *job, const char *klass, int pid, const char *stream, const char *line,
                          size_t len) {
    if (!m) return;
    hh_manager_log(m, HH_LOG_INFO, "class=%s jid=%s pid=%d %s: %.*s", job ? hh_job_handler_class(job, NULL) : klass,
                   job ? hh_job_jid(job) : "-", pid, stream, (int)len, line);
}
