/* conn.c -- one plain connection to a Redis server (see conn.h): open it
 * (TCP, TLS over it for rediss://), write and read over either transport,
 * close it. No reconnect, no AUTH, no error classification: redis.c builds
 * those on top, and sentinel.c talks to the sentinels with these alone.
 * Touches no key. */
#include "conn.h"
#include "tls.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

void hh__conn_init(hh__conn *c, hh__redis_config *cfg, const hh__logger *log, const char *name,
                   const atomic_int *cancel) {
    memset(c, 0, sizeof(*c));
    c->cfg = cfg;
    c->log = log;
    c->name = name;
    c->cancel = cancel;
    c->backoff = HH_CONN_BACKOFF_MIN;
    /* any seed that differs between connections and processes */
    c->rng = ((unsigned long long)(uintptr_t)c ^ (unsigned long long)(hh__mono() * 1e9)) | 1;
}

void hh__conn_set_error(hh__conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
    va_end(ap);
}

void hh__conn_close(hh__conn *c) {
    if (c->ssl) hh__tls_free(c->ssl);
    c->ssl = NULL;
    if (c->ctx) redisFree(c->ctx);
    c->ctx = NULL;
    atomic_store(&c->client_id, 0);
}

struct timeval hh__timeval(double s) {
    struct timeval tv;
    tv.tv_sec = (time_t)s;
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
    return tv;
}

/* ------------------------------------------------------------------ I/O
 * Plain TCP and unix sockets: hiredis' own blocking calls. TLS: hiredis
 * still formats into ctx->obuf and parses with ctx->reader, and tls.c moves
 * the bytes; errors land in ctx->err/errstr as hiredis' own would. */

static int tls_fail(redisContext *ctx, int err) {
    ctx->err = err;
    return REDIS_ERR;
}

/* Writes ctx->obuf whole (redisBufferWrite until done). */
int hh__conn_flush(hh__conn *c) {
    redisContext *ctx = c->ctx;
    if (!c->ssl) {
        int done = sdslen(ctx->obuf) == 0;
        while (!done)
            if (redisBufferWrite(ctx, &done) != REDIS_OK) return REDIS_ERR;
        return REDIS_OK;
    }
    if (sdslen(ctx->obuf) == 0) return REDIS_OK;
    if (hh__tls_write(c->ssl, ctx->obuf, sdslen(ctx->obuf), ctx->errstr, sizeof(ctx->errstr)) != 0)
        return tls_fail(ctx, REDIS_ERR_IO);
    sdsfree(ctx->obuf);
    ctx->obuf = sdsempty();
    return ctx->obuf ? REDIS_OK : tls_fail(ctx, REDIS_ERR_OOM);
}

int hh__conn_read_some(hh__conn *c) {
    redisContext *ctx = c->ctx;
    if (!c->ssl) return redisBufferRead(ctx);
    char buf[16 * 1024];
    do { /* and what OpenSSL decrypted already, which poll() cannot see */
        long n = hh__tls_read(c->ssl, buf, sizeof(buf), ctx->errstr, sizeof(ctx->errstr));
        if (n <= 0) return tls_fail(ctx, n == 0 ? REDIS_ERR_EOF : REDIS_ERR_IO);
        if (redisReaderFeed(ctx->reader, buf, (size_t)n) != REDIS_OK) {
            hh__strlcpy(ctx->errstr, ctx->reader->errstr, sizeof(ctx->errstr));
            return tls_fail(ctx, ctx->reader->err);
        }
    } while (hh__tls_pending(c->ssl) > 0);
    return REDIS_OK;
}

/* redisGetReply: a reply already parsed, else write what is queued and
 * read until one is complete. */
int hh__conn_get_reply(hh__conn *c, void **reply) {
    if (!c->ssl) return redisGetReply(c->ctx, reply);
    *reply = NULL;
    if (redisGetReplyFromReader(c->ctx, reply) != REDIS_OK) return REDIS_ERR;
    if (*reply) return REDIS_OK;
    if (hh__conn_flush(c) != REDIS_OK) return REDIS_ERR;
    while (!*reply) {
        if (hh__conn_read_some(c) != REDIS_OK) return REDIS_ERR;
        if (redisGetReplyFromReader(c->ctx, reply) != REDIS_OK) return REDIS_ERR;
    }
    return REDIS_OK;
}

redisReply *hh__conn_vraw(hh__conn *c, const char *fmt, va_list ap) {
    void *r = NULL;
    if (redisvAppendCommand(c->ctx, fmt, ap) != REDIS_OK) return NULL;
    if (hh__conn_get_reply(c, &r) != REDIS_OK) return NULL;
    return r;
}

redisReply *hh__conn_rawargv(hh__conn *c, int argc, const char **argv, const size_t *lens) {
    void *r = NULL;
    if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK) return NULL;
    if (hh__conn_get_reply(c, &r) != REDIS_OK) return NULL;
    return r;
}

/* A timeout for the next wait on c: the configured one, or what is left
 * before c's deadline when that is less (at least 1 ms: 0 means "forever"
 * to the socket). 0 once the deadline has passed. */
double hh__conn_time_left(const hh__conn *c, double configured) {
    if (c->deadline <= 0) return configured;
    double left = c->deadline - hh__mono();
    if (left <= 0) return 0;
    if (left < 0.001) left = 0.001;
    return left < configured ? left : configured;
}

int hh__conn_open(hh__conn *c, const char *host, int port) {
    double cto = hh__conn_time_left(c, c->cfg->connect_timeout);
    if (cto <= 0) {
        hh__strlcpy(c->last_error, "deadline reached", sizeof(c->last_error));
        return -1;
    }
    c->ctx = redisConnectWithTimeout(host, port, hh__timeval(cto));
    if (!c->ctx || c->ctx->err) {
        hh__strlcpy(c->last_error, c->ctx ? c->ctx->errstr : "out of memory", sizeof(c->last_error));
        hh__conn_close(c);
        return -1;
    }
    /* hiredis 0.14 opens its sockets without close-on-exec: set it before
     * the first command, so no handler started from now on inherits an
     * authenticated connection. */
    hh__fd_cloexec(c->ctx->fd);
    /* Set on every new context: a reconnect must not lose it. */
    double cmd = hh__conn_time_left(c, c->cfg->command_timeout);
    redisSetTimeout(c->ctx, hh__timeval(cmd > 0 ? cmd : 0.001));
    redisEnableKeepAlive(c->ctx);
    if (!c->cfg->tls) return 0;
    int unwarned = 0;
    if (!c->cfg->tls_verify && atomic_compare_exchange_strong(&c->cfg->tls_warned, &unwarned, 1))
        hh__log(c->log, HH_LOG_WARN,
                "redis %s: TLS without certificate or host name verification "
                "(--tls-insecure): anyone on the path can read and change the traffic",
                c->cfg->display);
    /* the handshake waits no longer than a connect may */
    redisSetTimeout(c->ctx, hh__timeval(cto));
    c->ssl = hh__tls_connect(c->cfg->tls_ctx, c->ctx->fd, c->cfg->tls_name_forced ? c->cfg->tls_name : host,
                             c->cfg->tls_verify, cto, c->last_error, sizeof(c->last_error));
    if (!c->ssl) {
        hh__conn_close(c);
        return -1;
    }
    redisSetTimeout(c->ctx, hh__timeval(cmd > 0 ? cmd : 0.001));
    return 0;
}

redisReply *hh__conn_raw(hh__conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = hh__conn_vraw(c, fmt, ap);
    va_end(ap);
    return r;
}

int hh__conn_timed_out(const redisContext *ctx) {
    return ctx && ctx->err == REDIS_ERR_IO &&
        (!strcmp(ctx->errstr, strerror(EAGAIN)) || !strcmp(ctx->errstr, strerror(EWOULDBLOCK)) ||
         !strcmp(ctx->errstr, strerror(ETIMEDOUT)));
}

void hh__conn_tls_hint(const hh__conn *c, char *why, size_t len) {
    /* A TLS server drops a client that speaks plain text on its first
     * command (EOF or a reset), where a plain one would at least have
     * answered; no reply in time is a busy or paused server instead. */
    if (c->cfg->tls || c->cfg->unix_path || !c->ctx || hh__conn_timed_out(c->ctx) || atomic_load(&c->cfg->ever_ready) ||
        (c->ctx->err != REDIS_ERR_EOF && c->ctx->err != REDIS_ERR_IO))
        return;
    size_t n = strlen(why);
    if (n < len) snprintf(why + n, len - n, " (closed before any reply: a TLS port? then use rediss://)");
}
