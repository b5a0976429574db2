/* test_conn.c -- one connection's transport (src/conn.c): seconds to a
 * timeval; a deadline caps every wait (connect and command timeouts) and,
 * once reached, fails a connect before any attempt; a new socket is
 * close-on-exec (no handler inherits an authenticated connection) with the
 * command timeout on it; and the "a TLS port?" hint goes to a plain
 * connection closed before any reply, never to a timed-out one nor once the
 * configuration has worked. Reconnects and error classes are test_redis.c's. */
#include "unit_helpers.h"

#include "conn.h"
#include "keys.h"
#include "redis.h"
#include "util.h"

#include "conn_fixture.h" /* after the library headers it uses */

UH_REDIS_GROUP()

static void test_timeval_and_time_left(void **s) {
    (void)s;
    struct timeval tv = hh__timeval(1.25);
    assert_int_equal(tv.tv_sec, 1);
    assert_int_equal(tv.tv_usec, 250000);
    tv = hh__timeval(0.0005);
    assert_int_equal(tv.tv_sec, 0);
    assert_int_equal(tv.tv_usec, 500);
    hh__conn c;
    memset(&c, 0, sizeof(c));
    UH_ASSERT_DBL_IN(hh__conn_time_left(&c, 5), 5, 5); /* no deadline */
    c.deadline = hh__mono() + 1;
    UH_ASSERT_DBL_IN(hh__conn_time_left(&c, 5), 0.5, 1.0);
    UH_ASSERT_DBL_IN(hh__conn_time_left(&c, 0.25), 0.25, 0.25);
    c.deadline = hh__mono() - 0.1;
    UH_ASSERT_DBL_IN(hh__conn_time_left(&c, 5), 0, 0);
}

static double rcvtimeo(int fd) {
    struct timeval tv;
    socklen_t n = sizeof(tv);
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &n), 0);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void test_open(void **s) {
    (void)s;
    uh_conn_fixture f;
    assert_int_equal(uh_conn_fixture_open(&f, srv.url, NULL), 0);
    f.cfg.command_timeout = 3;
    assert_int_equal(hh__conn_open(&f.conn, "127.0.0.1", srv.port), 0);
    int fl = fcntl(f.conn.ctx->fd, F_GETFD);
    assert_true(fl >= 0 && (fl & FD_CLOEXEC));
    UH_ASSERT_DBL_IN(rcvtimeo(f.conn.ctx->fd), 2.99, 3.0);
    redisReply *r = hh__conn_raw(&f.conn, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
    hh__conn_close(&f.conn);
    assert_null(f.conn.ctx);
    /* a deadline 1 s away: the command timeout is what is left of it */
    f.conn.deadline = hh__mono() + 1;
    assert_int_equal(hh__conn_open(&f.conn, "127.0.0.1", srv.port), 0);
    UH_ASSERT_DBL_IN(rcvtimeo(f.conn.ctx->fd), 0.001, 1.0);
    hh__conn_close(&f.conn);
    /* past it: no attempt */
    f.conn.deadline = hh__mono() - 1;
    assert_int_equal(hh__conn_open(&f.conn, "127.0.0.1", srv.port), -1);
    assert_string_equal(f.conn.last_error, "deadline reached");
    assert_null(f.conn.ctx);
    f.conn.deadline = 0;
    int closed = uh_pick_port();
    assert_int_equal(hh__conn_open(&f.conn, "127.0.0.1", closed), -1);
    assert_non_null(strstr(f.conn.last_error, "refused"));
    assert_null(f.conn.ctx);
    uh_conn_fixture_close(&f);
}

/* A listening socket nobody accepts on: connects succeed (the backlog),
 * commands get no reply. */
static int listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

#define HINT "a TLS port? then use rediss://"

/* PING on a connection to port, with why filled and hinted. */
static void ping_hint(uh_conn_fixture *f, int port, int close_fd, char *why, size_t len) {
    assert_int_equal(hh__conn_open(&f->conn, "127.0.0.1", port), 0);
    if (close_fd >= 0) close(close_fd); /* pending connections are reset */
    redisReply *r = hh__conn_raw(&f->conn, "PING");
    assert_null(r);
    snprintf(why, len, "%s", f->conn.ctx->errstr);
    hh__conn_tls_hint(&f->conn, why, len);
    hh__conn_close(&f->conn);
}

static void test_tls_hint(void **s) {
    (void)s;
    uh_conn_fixture f;
    assert_int_equal(uh_conn_fixture_open(&f, srv.url, NULL), 0);
    f.cfg.command_timeout = 0.3;
    char why[256];
    int port, fd = listener(&port);
    /* no reply in time: a busy server, no hint */
    ping_hint(&f, port, -1, why, sizeof(why));
    assert_null(strstr(why, HINT));
    /* closed before any reply, nothing of this configuration ever worked */
    ping_hint(&f, port, fd, why, sizeof(why));
    if (!strstr(why, HINT)) fail_msg("no hint in '%s'", why);
    /* the same once the configuration has worked: a cut link, no hint */
    fd = listener(&port);
    atomic_store(&f.cfg.ever_ready, 1);
    ping_hint(&f, port, fd, why, sizeof(why));
    assert_null(strstr(why, HINT));
    uh_conn_fixture_close(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeval_and_time_left),
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_tls_hint),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
