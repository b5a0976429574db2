/* test_redis.c -- src/redis.c: URL parsing and masking, score formatting,
 * connection-level error detection (READONLY, UNBLOCKED), and, against a private
 * redis-server: reconnect after a restart with timeouts and SELECT re-applied,
 * pipelines, EVALSHA reload on NOSCRIPT, READONLY dropping the
 * connection, blocking calls longer than the command timeout, and
 * the capped connect backoff. */
#include "unit_helpers.h"

#include <fcntl.h>
#include <math.h>
#include "redis.h"

#define SECRET "hunter2S3cret"

static int parse(const char *url, hh__redis_config *cfg, char *err, size_t errlen) {
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    return hh__redis_config_parse(cfg, &o, err, errlen);
}

static void expect_tcp(const char *url, const char *host, int port, int db, const char *user, const char *pass,
                       const char *display) {
    hh__redis_config cfg;
    char err[256] = "";
    if (parse(url, &cfg, err, sizeof(err)) != 0) fail_msg("%s rejected: %s", url, err);
    assert_null(cfg.unix_path);
    assert_non_null(cfg.host);
    assert_string_equal(cfg.host, host);
    assert_int_equal(cfg.port, port);
    assert_int_equal(cfg.db, db);
    if (user) {
        assert_non_null(cfg.user);
        assert_string_equal(cfg.user, user);
    } else {
        assert_null(cfg.user);
    }
    if (pass) {
        assert_non_null(cfg.password);
        if (sdslen(cfg.password) != strlen(pass) || memcmp(cfg.password, pass, strlen(pass)) != 0) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s: password decoded as %zu bytes \"%s\", want \"%s\"", url,
                     sdslen(cfg.password), cfg.password, pass);
            hh__redis_config_free(&cfg);
            fail_msg("%s", msg);
        }
        assert_null(strstr(cfg.display, pass));
    } else {
        assert_null(cfg.password);
    }
    if (display) assert_string_equal(cfg.display, display);
    hh__redis_config_free(&cfg);
}

static void test_parse_tcp_urls(void **s) {
    (void)s;
    expect_tcp("redis://localhost:6380/2", "localhost", 6380, 2, NULL, NULL, "redis://localhost:6380/2");
    expect_tcp("redis://10.1.2.3", "10.1.2.3", 6379, 0, NULL, NULL, "redis://10.1.2.3:6379/0");
    expect_tcp("redis://h/", "h", 6379, 0, NULL, NULL, NULL);
    expect_tcp("redis://h:7000", "h", 7000, 0, NULL, NULL, NULL);
    expect_tcp("redis://:" SECRET "@redis.example", "redis.example", 6379, 0, NULL, SECRET,
               "redis://:***@redis.example:6379/0");
    /* no ':' : a user name and no password, as redis-rb reads it (it then
     * sends no AUTH); masked in logs, since it is often a password */
    expect_tcp("redis://" SECRET "@h:6379/1", "h", 6379, 1, SECRET, NULL, "redis://***@h:6379/1");
    expect_tcp("redis://name@h", "h", 6379, 0, "name", NULL, "redis://***@h:6379/0");
    /* empty parts are absent (redis-rb: user/password only when non-empty) */
    expect_tcp("redis://alice:@h", "h", 6379, 0, "alice", NULL, "redis://***@h:6379/0");
    expect_tcp("redis://:@h", "h", 6379, 0, NULL, NULL, "redis://h:6379/0");
    expect_tcp("redis://alice:" SECRET "@h:6380/3", "h", 6380, 3, "alice", SECRET, "redis://alice:***@h:6380/3");
    expect_tcp("redis://:p%40ss%2Fw%3Ard%25@h:1/0", "h", 1, 0, NULL, "p@ss/w:rd%", NULL);
    expect_tcp("redis://us%65r:pw@h:65535/15", "h", 65535, 15, "user", "pw", NULL);
    expect_tcp("redis://:a@b@h", "h", 6379, 0, NULL, "a@b", NULL); /* last '@' splits */
    expect_tcp("redis://[::1]:6379", "::1", 6379, 0, NULL, NULL, "redis://[::1]:6379/0");
    expect_tcp("redis://[::1]/4", "::1", 6379, 4, NULL, NULL, NULL);
    expect_tcp("redis://:pw@[fe80::1]:6390/2", "fe80::1", 6390, 2, NULL, "pw", "redis://:***@[fe80::1]:6390/2");
    expect_tcp("redis://h:6379/3?timeout=1", "h", 6379, 3, NULL, NULL, NULL);
}

/* "%" must be followed by two hex digits to be an escape; anything else is
 * literal (strtol also accepts signs and spaces, which are not hex digits). */
static void test_parse_percent_literal(void **s) {
    (void)s;
    expect_tcp("redis://:50%@h", "h", 6379, 0, NULL, "50%", NULL);
    expect_tcp("redis://:a%zzb@h", "h", 6379, 0, NULL, "a%zzb", NULL);
    expect_tcp("redis://:a%4@h", "h", 6379, 0, NULL, "a%4", NULL);
    expect_tcp("redis://:a%+1b@h", "h", 6379, 0, NULL, "a% 1b", NULL); /* '+' is a space */
    expect_tcp("redis://:a%-1b@h", "h", 6379, 0, NULL, "a%-1b", NULL);
    expect_tcp("redis://:a% fb@h", "h", 6379, 0, NULL, "a% fb", NULL);
    /* redis-rb's CGI.unescape: '+' is a space, %2B a plus */
    expect_tcp("redis://:a+b%2Bc@h", "h", 6379, 0, NULL, "a b+c", NULL);
}

/* unix://[user:]password@/path?db=N: the user info ends at the '@' before
 * the path's first '/'; percent-decoded; masked in `display`. */
static void test_parse_unix_userinfo(void **s) {
    (void)s;
    struct {
        const char *url, *user, *pass, *path, *display;
        int db;
    } ok[] = {
        {"unix://:x%2Fy%40z@/tmp/r.sock?db=2", NULL, "x/y@z", "/tmp/r.sock", "unix://:***@/tmp/r.sock?db=2", 2},
        {"unix://alice:" SECRET "@/var/run/r.sock", "alice", SECRET, "/var/run/r.sock",
         "unix://alice:***@/var/run/r.sock?db=0", 0},
        {"unix://:" SECRET "@/r.sock?db=15", NULL, SECRET, "/r.sock", "unix://:***@/r.sock?db=15", 15},
        {"unix://" SECRET "@/r.sock", SECRET, NULL, "/r.sock", "unix://***@/r.sock?db=0", 0},
        {"unix://:@/r.sock", NULL, NULL, "/r.sock", "unix:///r.sock?db=0", 0},
        {"unix:///tmp/a@b.sock", NULL, NULL, "/tmp/a@b.sock", "unix:///tmp/a@b.sock?db=0", 0},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
        hh__redis_config cfg;
        char err[256] = "";
        if (parse(ok[i].url, &cfg, err, sizeof(err)) != 0) fail_msg("%s rejected: %s", ok[i].url, err);
        assert_null(cfg.host);
        assert_string_equal(cfg.unix_path, ok[i].path);
        assert_int_equal(cfg.db, ok[i].db);
        if (ok[i].user) assert_string_equal(cfg.user, ok[i].user);
        else assert_null(cfg.user);
        if (ok[i].pass) assert_string_equal(cfg.password, ok[i].pass);
        else assert_null(cfg.password);
        assert_string_equal(cfg.display, ok[i].display);
        assert_null(strstr(cfg.display, SECRET));
        hh__redis_config_free(&cfg);
    }
}

static void test_parse_unix(void **s) {
    (void)s;
    hh__redis_config cfg;
    char err[256];
    assert_int_equal(parse("unix:///tmp/r.sock?db=2", &cfg, err, sizeof(err)), 0);
    assert_null(cfg.host);
    assert_string_equal(cfg.unix_path, "/tmp/r.sock");
    assert_int_equal(cfg.db, 2);
    assert_string_equal(cfg.display, "unix:///tmp/r.sock?db=2");
    hh__redis_config_free(&cfg);
    assert_int_equal(parse("unix:///var/run/redis/redis.sock", &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.unix_path, "/var/run/redis/redis.sock");
    assert_int_equal(cfg.db, 0);
    hh__redis_config_free(&cfg);
}

static void test_parse_defaults(void **s) {
    (void)s;
    char *saved = getenv("REDIS_URL") ? strdup(getenv("REDIS_URL")) : NULL;
    hh__redis_config cfg;
    char err[256];

    unsetenv("REDIS_URL");
    assert_int_equal(hh__redis_config_parse(&cfg, NULL, err, sizeof(err)), 0);
    assert_string_equal(cfg.host, "127.0.0.1");
    assert_int_equal(cfg.port, 6379);
    assert_int_equal(cfg.db, 0);
    assert_null(cfg.password);
    assert_true(cfg.connect_timeout == 5.0 && cfg.command_timeout == 5.0);
    hh__redis_config_free(&cfg);

    hh_redis_options o;
    memset(&o, 0, sizeof(o)); /* zeroed options: url NULL, timeouts 0 = defaults */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.display, "redis://127.0.0.1:6379/0");
    assert_true(cfg.connect_timeout == 5.0 && cfg.command_timeout == 5.0);
    hh__redis_config_free(&cfg);

    setenv("REDIS_URL", "redis://:" SECRET "@envhost:7001/5", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, NULL, err, sizeof(err)), 0);
    assert_string_equal(cfg.host, "envhost");
    assert_int_equal(cfg.port, 7001);
    assert_int_equal(cfg.db, 5);
    assert_string_equal(cfg.password, SECRET);
    assert_null(strstr(cfg.display, SECRET));
    hh__redis_config_free(&cfg);
    o.url = ""; /* empty means unset too */
    o.connect_timeout = 0.25;
    o.command_timeout = 1.5;
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.host, "envhost");
    assert_true(cfg.connect_timeout == 0.25 && cfg.command_timeout == 1.5);
    hh__redis_config_free(&cfg);
    o.url = "redis://explicit:1/1"; /* an explicit URL wins over the environment */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.host, "explicit");
    hh__redis_config_free(&cfg);

    if (saved) {
        setenv("REDIS_URL", saved, 1);
        free(saved);
    } else {
        unsetenv("REDIS_URL");
    }
}

/* A password kept off the command line: hh_redis_options.password (the
 * CLI's --redis-password-file), else $REDIS_PASSWORD; one in the URL wins. */
static void test_password_option_and_env(void **s) {
    (void)s;
    hh_redis_options o;
    hh__redis_config cfg;
    char err[256];
    unsetenv("REDIS_PASSWORD");
    hh_redis_options_init(&o);
    assert_null(o.password);
    o.url = "redis://h:6379/0";
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_null(cfg.password);
    hh__redis_config_free(&cfg);

    setenv("REDIS_PASSWORD", "env" SECRET, 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_non_null(cfg.password);
    assert_string_equal(cfg.password, "env" SECRET);
    assert_null(cfg.user);
    assert_string_equal(cfg.display, "redis://:***@h:6379/0");
    hh__redis_config_free(&cfg);

    o.password = "opt" SECRET; /* the option wins over the environment */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.password, "opt" SECRET);
    assert_null(strstr(cfg.display, SECRET));
    hh__redis_config_free(&cfg);

    o.url = "redis://alice@h:6379/0"; /* a user name without a password: both are sent */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.user, "alice");
    assert_string_equal(cfg.password, "opt" SECRET);
    hh__redis_config_free(&cfg);

    o.url = "unix:///tmp/r.sock?db=1";
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.password, "opt" SECRET);
    assert_string_equal(cfg.display, "unix://:***@/tmp/r.sock?db=1");
    hh__redis_config_free(&cfg);

    o.url = "redis://:url" SECRET "@h:6379/0"; /* the URL's own wins */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.password, "url" SECRET);
    hh__redis_config_free(&cfg);

    o.password = ""; /* empty: as NULL */
    o.url = "redis://h:6379/0";
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.password, "env" SECRET);
    hh__redis_config_free(&cfg);
    setenv("REDIS_PASSWORD", "", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_null(cfg.password);
    hh__redis_config_free(&cfg);
    unsetenv("REDIS_PASSWORD");
}

static void expect_bad(const char *url) {
    hh__redis_config cfg;
    char err[512];
    memset(err, 0, sizeof(err));
    if (parse(url, &cfg, err, sizeof(err)) != -1) {
        hh__redis_config_free(&cfg);
        fail_msg("accepted bad URL %s", url);
    }
    if (!err[0]) fail_msg("no message for %s", url);
    if (strstr(err, SECRET)) fail_msg("message for a bad URL shows the password: %s", err);
    /* the public checker agrees */
    char err2[512] = "";
    assert_int_equal(hh_redis_url_check(url, err2, sizeof(err2)), HH_ERR_INVALID);
    assert_null(strstr(err2, SECRET));
    assert_int_equal(hh_redis_url_check(url, NULL, 0), HH_ERR_INVALID);
}

static void test_parse_bad_urls(void **s) {
    (void)s;
    expect_bad("http://localhost:6379/0");
    expect_bad("http://:" SECRET "@localhost:6379/0");
    expect_bad("rediss://:" SECRET "@localhost:abc/0");
    expect_bad("rediss://h:70000");
    expect_bad("redis+tls://:" SECRET "@localhost:6379/0");
    expect_bad("localhost:6379");
    expect_bad("redis://h:0");
    expect_bad("redis://:" SECRET "@h:0/1");
    expect_bad("redis://h:70000");
    expect_bad("redis://u:" SECRET "@h:70000/1");
    expect_bad("redis://h:abc");
    expect_bad("redis://:" SECRET "@h:abc/1");
    expect_bad("redis://h:-1");
    expect_bad("redis://h:/0");
    expect_bad("redis://h:6379/x");
    expect_bad("redis://:" SECRET "@h:6379/x");
    expect_bad("redis://h:6379/-1");
    expect_bad("redis://h:6379/1/2");
    expect_bad("redis://[::1");
    expect_bad("redis://:" SECRET "@[::1:6379");
    expect_bad("redis://[::1]x:6379");
    expect_bad("unix://");
    expect_bad("unix://relative.sock");
    expect_bad("unix:///tmp/r.sock?db=x");
    expect_bad("unix:///tmp/r.sock?database=1");
    assert_int_equal(hh_redis_url_check("redis://h:6379/2", NULL, 0), HH_OK);
}

/* rediss:// parses as redis:// does, with TLS on: verification by default,
 * the URL's host as the name to check, and the password masked in logs. */
static void test_parse_rediss(void **s) {
    (void)s;
    hh__redis_config cfg;
    char err[512] = "";
    unsetenv("HIREDHAND_TLS_INSECURE");
    unsetenv("HIREDHAND_TLS_SERVER_NAME");
    if (parse("rediss://u:" SECRET "@redis.example:6380/3", &cfg, err, sizeof(err)) != 0)
        fail_msg("rediss:// rejected: %s", err);
    assert_int_equal(cfg.tls, 1);
    assert_int_equal(cfg.tls_verify, 1);
    assert_non_null(cfg.tls_ctx);
    assert_string_equal(cfg.host, "redis.example");
    assert_string_equal(cfg.tls_name, "redis.example");
    assert_int_equal(cfg.port, 6380);
    assert_int_equal(cfg.db, 3);
    assert_string_equal(cfg.password, SECRET);
    assert_string_equal(cfg.display, "rediss://u:***@redis.example:6380/3");
    hh__redis_config_free(&cfg);
    /* plain URLs stay plain whatever the TLS options say */
    if (parse("redis://h:6379/0", &cfg, err, sizeof(err)) != 0) fail_msg("%s", err);
    assert_int_equal(cfg.tls, 0);
    assert_null(cfg.tls_ctx);
    hh__redis_config_free(&cfg);
}

/* The TLS options: a file that cannot be read is an error naming it, a
 * certificate needs its key, and each option falls back to its environment
 * variable. */
static void test_parse_tls_options(void **s) {
    (void)s;
    hh_redis_options o;
    hh__redis_config cfg;
    char err[512] = "";
    hh_redis_options_init(&o);
    o.url = "rediss://:" SECRET "@127.0.0.1:6380";
    o.tls_ca_file = "/nonexistent/ca.pem";
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/ca.pem"));
    assert_null(strstr(err, SECRET));
    assert_int_equal(hh_redis_options_check(&o, NULL, 0), HH_ERR_INVALID);
    o.tls_ca_file = NULL;
    setenv("HIREDHAND_TLS_CA_DIR", "/nonexistent/dir", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0); /* a directory is searched lazily */
    hh__redis_config_free(&cfg);
    unsetenv("HIREDHAND_TLS_CA_DIR");
    setenv("HIREDHAND_TLS_CERT", "/nonexistent/client.pem", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "--tls-key"));
    setenv("HIREDHAND_TLS_KEY", "/nonexistent/client.key", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/client.pem"));
    unsetenv("HIREDHAND_TLS_CERT");
    unsetenv("HIREDHAND_TLS_KEY");
    setenv("HIREDHAND_TLS_SERVER_NAME", "redis.test", 1);
    setenv("HIREDHAND_TLS_INSECURE", "1", 1);
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.tls_name, "redis.test");
    assert_int_equal(cfg.tls_verify, 0);
    hh__redis_config_free(&cfg);
    o.tls_server_name = "option.test"; /* the option wins over the environment */
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), 0);
    assert_string_equal(cfg.tls_name, "option.test");
    hh__redis_config_free(&cfg);
    unsetenv("HIREDHAND_TLS_SERVER_NAME");
    unsetenv("HIREDHAND_TLS_INSECURE");
}

/* Sentinel options: the address list (IPv6 in brackets, 26379 by
 * default), the master named by the option or else the URL's host (as
 * redis-rb reads it), the sentinels' password apart from the master's, the
 * environment as fallback, and bad lists refused. */
static void test_parse_sentinel(void **s) {
    (void)s;
    hh_redis_options o;
    hh__redis_config cfg;
    char err[512] = "";
    hh_redis_options_init(&o);
    o.url = "redis://:" SECRET "@mymaster/2";
    o.sentinels = "127.0.0.1:26380,[::1]:26381,sentinel.example";
    o.sentinel_password = "sentinel-pw";
    if (hh__redis_config_parse(&cfg, &o, err, sizeof(err)) != 0) fail_msg("rejected: %s", err);
    assert_int_equal(cfg.nsentinels, 3);
    assert_string_equal(cfg.sentinel_host[0], "127.0.0.1");
    assert_int_equal(cfg.sentinel_port[0], 26380);
    assert_string_equal(cfg.sentinel_host[1], "::1");
    assert_int_equal(cfg.sentinel_port[1], 26381);
    assert_string_equal(cfg.sentinel_host[2], "sentinel.example");
    assert_int_equal(cfg.sentinel_port[2], 26379);
    assert_string_equal(cfg.sentinel_master, "mymaster");
    assert_string_equal(cfg.sentinel_password, "sentinel-pw");
    assert_string_equal(cfg.password, SECRET);
    assert_int_equal(cfg.db, 2);
    assert_null(strstr(cfg.display, SECRET));
    assert_null(strstr(cfg.display, "sentinel-pw"));
    assert_non_null(strstr(cfg.display, "mymaster"));
    hh__redis_config_free(&cfg);
    o.sentinel_master = "other";
    o.sentinels = NULL;
    setenv("HIREDHAND_SENTINELS", "127.0.0.1:1", 1);
    if (hh__redis_config_parse(&cfg, &o, err, sizeof(err)) != 0) fail_msg("rejected: %s", err);
    assert_int_equal(cfg.nsentinels, 1);
    assert_string_equal(cfg.sentinel_master, "other");
    hh__redis_config_free(&cfg);
    unsetenv("HIREDHAND_SENTINELS");
    const char *bad[] = {"127.0.0.1:0", "127.0.0.1:x", "::1:26379", "[::1", "h:123456", ",", NULL};
    for (int i = 0; bad[i]; i++) {
        o.sentinels = bad[i];
        if (hh__redis_config_parse(&cfg, &o, err, sizeof(err)) == 0) {
            hh__redis_config_free(&cfg);
            fail_msg("accepted sentinels '%s'", bad[i]);
        }
        assert_null(strstr(err, SECRET));
    }
    o.url = "unix:///tmp/r.sock";
    o.sentinels = "127.0.0.1:26379";
    assert_int_equal(hh__redis_config_parse(&cfg, &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "unix://"));
}

/* A password written into a bad unix:// URL must not be echoed in the error message either (redis.h: "a message in
 * err (never the password)"). */
static void test_parse_bad_unix_url_hides_password(void **s) {
    (void)s;
    expect_bad("unix://:" SECRET "/tmp/r.sock");    /* no '@' before the path */
    expect_bad("unix://:" SECRET "@relative.sock"); /* no path */
    expect_bad("unix://:" SECRET "@/tmp/r.sock?db=x");
    expect_bad("unix:///tmp/r.sock?password=" SECRET);
    expect_bad("unix:///tmp/r.sock?db=1&password=" SECRET);
}

/* Whatever the shape of a bad URL, its user info is not shown: a mistyped
 * scheme, none at all, a password holding '/', or a URL longer than any
 * fixed buffer (the message is cut only after masking). */
static void test_parse_bad_url_shapes_hide_password(void **s) {
    (void)s;
    expect_bad("redis:/:" SECRET "@h:6379/0");
    expect_bad("redis:" SECRET "@h:6379/0");
    expect_bad(":" SECRET "@h:6379");
    expect_bad("u:" SECRET "@h:6379");
    expect_bad(SECRET "@h:6379");
    expect_bad("redis//:" SECRET "@h:6379/0");
    expect_bad("redis://:" SECRET "/x@h:abc/0");
    expect_bad("redis://:" SECRET "?x@h:abc/0");
    expect_bad("redis://:" SECRET);
    expect_bad("redis://u:" SECRET "/0");
    expect_bad("redis://h:abc/0?password=" SECRET);
    expect_bad("redis://h:6379/x?PASSWORD=" SECRET);
    /* longer than 512 bytes, the '@' far past the password */
    char *big = malloc(4096);
    assert_non_null(big);
    snprintf(big, 4096, "redis://:%s%0600d@h:bad", SECRET, 0);
    expect_bad(big);
    snprintf(big, 4096, "redis:/:%s%01000d@h:6379/0", SECRET, 0);
    expect_bad(big);
    snprintf(big, 4096, "unix://:%s%01000d/tmp/r.sock?db=x", SECRET, 0);
    expect_bad(big);
    free(big);
}

/* The error of a bad URL masks only the password: a port that is not a
 * number is named and shown after a host (an IP address, localhost, a
 * dotted name), a user name beside a password stays, in redis://,
 * rediss:// and unix:// alike; only where HOST:PORT may be USER:PASSWORD
 * (no '@', a bare word before the ':') is the "port" hidden, and a '/' in
 * a password is named as the cause. */
static void expect_err(const char *url, const char *want) {
    hh__redis_config cfg;
    char err[512] = "";
    if (parse(url, &cfg, err, sizeof(err)) != -1) {
        hh__redis_config_free(&cfg);
        fail_msg("accepted bad URL %s", url);
    }
    if (strcmp(err, want) != 0) fail_msg("for %s\n got: %s\nwant: %s", url, err, want);
}

static void test_parse_bad_url_masks_only_password(void **s) {
    (void)s;
    expect_err("redis://127.0.0.1:notaport/0",
               "invalid Redis URL (bad port 'notaport': want a number from 1 to 65535): redis://127.0.0.1:notaport/0");
    expect_err("redis://localhost:63790x/0",
               "invalid Redis URL (bad port '63790x': want a number from 1 to 65535): redis://localhost:63790x/0");
    expect_err("redis://redis.example.com:99999",
               "invalid Redis URL (bad port '99999': want a number from 1 to 65535): redis://redis.example.com:99999");
    expect_err("redis://[::1]:x/0",
               "invalid Redis URL (bad port 'x': want a number from 1 to 65535): redis://[::1]:x/0");
    expect_err(
        "redis://u:" SECRET "@127.0.0.1:notaport/0",
        "invalid Redis URL (bad port 'notaport': want a number from 1 to 65535): redis://u:***@127.0.0.1:notaport/0");
    expect_err("rediss://:" SECRET "@h.example:x/0",
               "invalid Redis URL (bad port 'x': want a number from 1 to 65535): rediss://:***@h.example:x/0");
    expect_err("redis://" SECRET "@h:x/0",
               "invalid Redis URL (bad port 'x': want a number from 1 to 65535): redis://***@h:x/0");
    expect_err("unix://u:" SECRET "@/tmp/r.sock?db=x",
               "invalid Redis URL (db must be a number 0-1048576): unix://u:***@/tmp/r.sock?db=x");
    expect_err("redis://u:" SECRET "@h:6379/x",
               "invalid Redis URL (db must be a number 0-1048576): redis://u:***@h:6379/x");
    /* no '@': "alice:secret" may be USER:PASSWORD, so the "port" is hidden */
    expect_err("redis://alice:" SECRET "/0",
               "invalid Redis URL (bad port: want a number from 1 to 65535; not shown, as with no '@' HOST:PORT may "
               "be USER:PASSWORD): redis://alice:***/0");
    expect_err(
        "redis://:pa/" SECRET "@h:6379/0",
        "invalid Redis URL (a '/' in the user info ends the host early: write it as %2F): redis://:***@h:6379/0");
    /* the '/' after a host-looking part, the real host past an '@' in the "db" */
    expect_err("redis://:p@ss/" SECRET "@h:6379/0",
               "invalid Redis URL (a '/' in the user info ends the host early: write it as %2F, and '@' as %40): "
               "redis://:***@h:6379/0");
}

/* A Sentinel URL's display keeps the user name and hides the password. */
static void test_sentinel_display_masks_only_password(void **s) {
    (void)s;
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = "redis://app:" SECRET "@mymaster/2";
    o.sentinels = "127.0.0.1:26379";
    hh__redis_config cfg;
    char err[512] = "";
    if (hh__redis_config_parse(&cfg, &o, err, sizeof(err)) != 0) fail_msg("%s", err);
    assert_string_equal(cfg.display, "redis://app:***@mymaster/2 (via Sentinel 127.0.0.1:26379)");
    hh__redis_config_free(&cfg);
}

/* The input that overflowed a 512-byte stack copy while masking (a long
 * host after an empty password): a clear error, the message cut to fit. */
static void test_parse_bad_long_url_no_overflow(void **s) {
    (void)s;
    char *url = malloc(700);
    assert_non_null(url);
    strcpy(url, "redis://:@");
    memset(url + 10, 'a', 600);
    strcpy(url + 610, ":bad");
    for (size_t errlen = 1; errlen <= 1024; errlen = errlen * 2 + 1) {
        char *err = malloc(errlen);
        assert_non_null(err);
        hh__redis_config cfg;
        assert_int_equal(parse(url, &cfg, err, errlen), -1);
        assert_true(strlen(err) < errlen);
        if (errlen > 40) assert_non_null(strstr(err, "invalid Redis URL"));
        free(err);
    }
    assert_int_equal(hh_redis_url_check(url, NULL, 0), HH_ERR_INVALID);
    /* the empty user info is masked like any other */
    char err[2048];
    hh__redis_config cfg;
    assert_int_equal(parse(url, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "redis://***@aaaa"));
    assert_non_null(strstr(err, "aaaa:bad"));
    free(url);
}

static void test_fmt_double_shortest(void **s) {
    (void)s;
    char buf[32];
    struct {
        double v;
        const char *want;
    } fixed[] = {
        {1795962147.0172818, "1795962147.0172818"},
        {1795962157.061338, "1795962157.061338"},
        {1795962147.2214, "1795962147.2214"},
        {1795962153.0191004, "1795962153.0191004"},
        {0.1, "0.1"},
        {1.0, "1"},
        {-0.5, "-0.5"},
        {0.0, "0"},
        {1e21, "1e+21"},
        {123456789012345680.0, "1.2345678901234568e+17"},
    };
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        hh__fmt_double(buf, sizeof(buf), fixed[i].v);
        assert_string_equal(buf, fixed[i].want);
    }
    /* random doubles: reads back exactly, and no shorter %g reads back */
    hh__rng rng = {0xfeedbeefull};
    for (int i = 0; i < 20000; i++) {
        double v;
        if (i % 2) v = 1.7e9 + hh__rng_double(&rng) * 1e8;
        else {
            uint64_t bits = hh__rng_next(&rng);
            memcpy(&v, &bits, sizeof(v));
            if (!isfinite(v)) continue;
        }
        hh__fmt_double(buf, sizeof(buf), v);
        if (strtod(buf, NULL) != v) fail_msg("%.17g formatted as %s", v, buf);
        int shortest = 17;
        char t[40];
        for (int p = 1; p <= 17; p++) {
            snprintf(t, sizeof(t), "%.*g", p, v);
            if (strtod(t, NULL) == v) {
                shortest = p;
                break;
            }
        }
        snprintf(t, sizeof(t), "%.*g", shortest, v);
        if (strcmp(t, buf) != 0) fail_msg("%.17g formatted as %s, shortest is %s", v, buf, t);
    }
}

static void test_connection_level_errors(void **s) {
    (void)s;
    const char *yes[] = {"READONLY You can't write against a read only replica.",
                         "UNBLOCKED force unblock from blocking operation, instance state changed "
                         "(master -> replica?)",
                         "LOADING Redis is loading the dataset in memory",
                         "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set "
                         "to 'no'."};
    const char *no[] = {"WRONGTYPE Operation against a key holding the wrong kind of value",
                        "ERR unknown command 'FOO'",
                        "NOSCRIPT No matching script. Please use EVAL.",
                        "EXECABORT Transaction discarded because of previous errors.",
                        "BUSYKEY Target key name already exists.",
                        "",
                        "readonly lower case is not a Redis error prefix",
                        NULL};
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        if (!hh__error_is_connection_level(yes[i])) fail_msg("not connection-level: %s", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        if (hh__error_is_connection_level(no[i])) fail_msg("wrongly connection-level: %s", no[i] ? no[i] : "(null)");
}

/* ------------------------------------------------------ live Redis tests */

UH_REDIS_GROUP()

typedef struct live {
    hh__redis_config cfg;
    hh__logger log;
    hh__conn c;
} live;

static live *live_new(const char *url, double command_timeout) {
    live *l = calloc(1, sizeof(*l));
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    o.connect_timeout = 1;
    if (command_timeout > 0) o.command_timeout = command_timeout;
    char err[256];
    assert_int_equal(hh__redis_config_parse(&l->cfg, &o, err, sizeof(err)), 0);
    l->log.level = HH_LOG_ERROR + 1; /* silent */
    hh__conn_init(&l->c, &l->cfg, &l->log, "test", NULL);
    return l;
}

static void live_free(live *l) {
    hh__conn_close(&l->c);
    hh__redis_config_free(&l->cfg);
    free(l);
}

static double rcvtimeo(const hh__conn *c) {
    struct timeval tv;
    socklen_t len = sizeof(tv);
    assert_int_equal(getsockopt(c->ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len), 0);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Runs cmd until it returns a reply, through at most `seconds` of backoff. */
static redisReply *cmd_retry(hh__conn *c, double seconds, const char *cmd) {
    double until = uh_mono() + seconds;
    redisReply *r = NULL;
    while (!r && uh_mono() < until) r = hh__conn_cmd(c, cmd);
    return r;
}

static void test_live_reconnect_after_restart(void **s) {
    (void)s;
    uh_flushall(&srv);
    char url[96];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/3", srv.port);
    live *l = live_new(url, 1.5);
    redisReply *r = hh__conn_cmd(&l->c, "SET k before");
    assert_non_null(r);
    freeReplyObject(r);
    assert_true(l->c.version >= 400); /* INFO read on connect */
    UH_ASSERT_DBL_IN(rcvtimeo(&l->c), 1.49, 1.51);

    assert_int_equal(uh_redis_restart(&srv), 0); /* empty dataset, same port */
    /* the old socket was closed while idle: replaced before the command,
     * which goes through on the first try, and no outage began */
    r = hh__conn_cmd(&l->c, "SET k after");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    assert_non_null(l->c.ctx);
    /* the new connection has the command timeout again, and SELECT */
    UH_ASSERT_DBL_IN(rcvtimeo(&l->c), 1.49, 1.51);
    char *v = uh_str(&srv, "GET k");
    assert_null(v); /* not in db 0 */
    v = NULL;
    redisContext *dc = uh_connect(srv.port);
    assert_non_null(dc);
    redisReply *x = redisCommand(dc, "SELECT 3");
    freeReplyObject(x);
    x = redisCommand(dc, "GET k");
    assert_int_equal(x->type, REDIS_REPLY_STRING);
    assert_string_equal(x->str, "after");
    freeReplyObject(x);
    redisFree(dc);
    assert_int_equal(atomic_load(&l->cfg.outage), 0);
    assert_true(l->c.backoff <= 0.05 + 1e-9);
    live_free(l);
}

/* hiredis 0.14 opens its sockets without close-on-exec; every connection
 * gets it before its first command, a reconnect's included. */
static void test_live_socket_close_on_exec(void **s) {
    (void)s;
    live *l = live_new(srv.url, 0);
    for (int round = 0; round < 2; round++) {
        redisReply *r = hh__conn_cmd(&l->c, "PING");
        assert_non_null(r);
        freeReplyObject(r);
        assert_non_null(l->c.ctx);
        int flags = fcntl(l->c.ctx->fd, F_GETFD);
        assert_true(flags >= 0 && (flags & FD_CLOEXEC));
        hh__conn_fail(&l->c, "test: reconnect");
        l->c.next_attempt = 0;
    }
    live_free(l);
}

static void test_live_pipeline(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0);
    hh__pipe p;
    hh__pipe_begin(&p, &l->c);
    assert_int_equal(p.failed, 0);
    hh__pipe_add(&p, "SET %s %b", "bin", "a\0b", (size_t)3);
    hh__pipe_add(&p, "INCRBY %s %d", "ctr", 5);
    hh__pipe_add(&p, "LPUSH %s %s", "ctr", "x"); /* WRONGTYPE: an ordinary error */
    const char *argv[] = {"GET", "bin"};
    hh__pipe_addargv(&p, 2, argv, NULL);
    assert_int_equal(p.n, 4);
    redisReply **r = hh__pipe_exec(&p);
    assert_non_null(r);
    assert_int_equal(r[0]->type, REDIS_REPLY_STATUS);
    assert_int_equal(r[1]->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r[1]->integer, 5);
    assert_int_equal(r[2]->type, REDIS_REPLY_ERROR);
    assert_true(hh__reply_is_error(r[2]));
    assert_false(hh__reply_is_error(r[1]));
    assert_int_equal(r[3]->type, REDIS_REPLY_STRING);
    assert_int_equal(r[3]->len, 3);
    assert_memory_equal(r[3]->str, "a\0b", 3);
    hh__replies_free(r, p.n);
    assert_non_null(l->c.ctx); /* WRONGTYPE does not drop the connection */

    /* MULTI/EXEC inside a pipeline */
    hh__pipe_begin(&p, &l->c);
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "INCR ctr");
    hh__pipe_add(&p, "EXPIRE ctr 60");
    hh__pipe_add(&p, "EXEC");
    r = hh__pipe_exec(&p);
    assert_non_null(r);
    assert_int_equal(r[3]->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r[3]->elements, 2);
    assert_int_equal(r[3]->element[0]->integer, 6);
    hh__replies_free(r, p.n);
    long long ttl = uh_int(&srv, "TTL ctr");
    assert_true(ttl > 0 && ttl <= 60);
    live_free(l);
}

static void test_live_eval_reload_after_script_flush(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0);
    redisReply *x = uh_cmd(&srv, "RPUSH inprog payload-1");
    freeReplyObject(x);
    const char *keys[2] = {"inprog", "queue:q"};
    const char *args[1] = {"payload-1"};
    redisReply *r = hh__conn_eval(&l->c, HH_SCRIPT_REQUEUE, 2, keys, NULL, 1, args, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    assert_int_equal(strlen(l->c.shas[HH_SCRIPT_REQUEUE]), 40);
    char sha[41];
    memcpy(sha, l->c.shas[HH_SCRIPT_REQUEUE], sizeof(sha));

    x = uh_cmd(&srv, "SCRIPT FLUSH");
    freeReplyObject(x);
    x = uh_cmd(&srv, "SCRIPT EXISTS %s", sha);
    assert_int_equal(x->element[0]->integer, 0);
    freeReplyObject(x);

    /* the cached sha is now unknown to Redis: NOSCRIPT, reload, run */
    x = uh_cmd(&srv, "RPUSH inprog payload-2");
    freeReplyObject(x);
    args[0] = "payload-2";
    r = hh__conn_eval(&l->c, HH_SCRIPT_REQUEUE, 2, keys, NULL, 1, args, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    x = uh_cmd(&srv, "SCRIPT EXISTS %s", sha);
    assert_int_equal(x->element[0]->integer, 1);
    freeReplyObject(x);
    assert_int_equal(uh_int(&srv, "LLEN queue:q"), 2);
    assert_int_equal(uh_int(&srv, "LLEN inprog"), 0);
    /* once only: a second requeue of the same payload does nothing */
    r = hh__conn_eval(&l->c, HH_SCRIPT_REQUEUE, 2, keys, NULL, 1, args, NULL);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_non_null(l->c.ctx);
    live_free(l);
}

/* Over maxmemory Redis refuses a plain script's first denyoom write; the
 * scripts that only move a job carry the allow-oom shebang and run there,
 * the ones that grow the data set (a retry entry) stay refused. A server
 * without script flags (Redis before 7.0) refuses the shebang with an ERR:
 * the same script is then loaded without it, and is refused over
 * maxmemory as before. */
static void test_live_scripts_over_maxmemory(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0);
    redisReply *x = uh_cmd(&srv, "LPUSH queue:q p1 p2 p3"); /* p1 the oldest */
    freeReplyObject(x);
    x = uh_cmd(&srv, "CONFIG SET maxmemory 1");
    freeReplyObject(x);
    const char *keys[2] = {"queue:q", "inprog"};
    const char *args[4] = {"1x", "1", "1", "1"}; /* reliable (LMOVE), one job, from queue 1 */
    redisReply *r = hh__conn_eval(&l->c, HH_SCRIPT_FETCH, 2, keys, NULL, 4, args, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[2]->str, "p1");
    freeReplyObject(r);
    assert_int_equal(uh_int(&srv, "LLEN inprog"), 1);
    /* the push back too (several jobs: LRANGE + LPUSH + LTRIM) */
    args[1] = "2", args[3] = "2";
    r = hh__conn_eval(&l->c, HH_SCRIPT_FETCH, 2, keys, NULL, 4, args, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 5);
    freeReplyObject(r);
    const char *rkeys[2] = {"inprog", "queue:q"}, *rargs[1] = {"p1"};
    r = hh__conn_eval(&l->c, HH_SCRIPT_REQUEUE, 2, rkeys, NULL, 1, rargs, NULL);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    /* basic fetch's push back of a job it took */
    const char *bkeys[1] = {"queue:b"}, *bargs[1] = {"pb"};
    r = hh__conn_eval(&l->c, HH_SCRIPT_PUSH_BACK, 1, bkeys, NULL, 1, bargs, NULL);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    /* a retry entry grows the data set: refused, the job left in place */
    const char *okeys[2] = {"inprog", "retry"}, *oargs[7] = {"p2", "entry", "1", "retry", "0", "0", "list"};
    r = hh__conn_eval(&l->c, HH_SCRIPT_OUTCOME, 2, okeys, NULL, 7, oargs, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "OOM", 3);
    freeReplyObject(r);
    assert_int_equal(uh_int(&srv, "LLEN inprog"), 2);

    /* without flags (as on Redis 6): loads, runs, refused over maxmemory */
    assert_memory_equal(hh__script_source(HH_SCRIPT_FETCH, 0), "#!lua flags=allow-oom\n", 22);
    assert_string_equal(hh__script_source(HH_SCRIPT_FETCH, 1), hh__script_source(HH_SCRIPT_FETCH, 0) + 22);
    assert_string_equal(hh__script_source(HH_SCRIPT_OUTCOME, 1), hh__script_source(HH_SCRIPT_OUTCOME, 0));
    l->c.plain_scripts = 1;
    l->c.shas[HH_SCRIPT_FETCH][0] = '\0';
    args[1] = "1", args[3] = "1";
    r = hh__conn_eval(&l->c, HH_SCRIPT_FETCH, 2, keys, NULL, 4, args, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "OOM", 3);
    freeReplyObject(r);
    x = uh_cmd(&srv, "CONFIG SET maxmemory 0");
    freeReplyObject(x);
    r = hh__conn_eval(&l->c, HH_SCRIPT_FETCH, 2, keys, NULL, 4, args, NULL);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);

    /* which replies to SCRIPT LOAD of a flagged script mean "no flags here" */
    redisReply e = {.type = REDIS_REPLY_ERROR};
    e.str = "ERR Error compiling script (new function): user_script:1: unexpected symbol near '#'";
    assert_true(hh__script_flags_refused(&e));
    e.str = "ERR Unexpected flag in script shebang: allow-oom";
    assert_true(hh__script_flags_refused(&e));
    e.str = "LOADING Redis is loading the dataset in memory";
    assert_false(hh__script_flags_refused(&e));
    e.str = "NOPERM this user has no permissions to run the 'script|load' command";
    assert_false(hh__script_flags_refused(&e));
    assert_false(hh__script_flags_refused(NULL));
    live_free(l);
}

static void test_live_readonly_drops_connection(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0);
    redisReply *r = hh__conn_cmd(&l->c, "SET a 1");
    assert_non_null(r);
    freeReplyObject(r);
    int nowhere = uh_pick_port();
    redisReply *x = uh_cmd(&srv, "REPLICAOF 127.0.0.1 %d", nowhere);
    assert_non_null(x);
    freeReplyObject(x);

    r = hh__conn_cmd(&l->c, "SET a 2");
    assert_null(r);        /* READONLY is not handed out as a reply */
    assert_null(l->c.ctx); /* the connection was dropped */
    assert_non_null(strstr(l->c.last_error, "READONLY"));

    /* READONLY inside EXEC, in a pipeline, also drops it */
    hh__conn_fail(&l->c, "reset");
    l->c.next_attempt = 0;
    hh__pipe p;
    hh__pipe_begin(&p, &l->c);
    assert_int_equal(p.failed, 0);
    hh__pipe_add(&p, "MULTI");
    hh__pipe_add(&p, "SET a 3");
    hh__pipe_add(&p, "EXEC");
    assert_null(hh__pipe_exec(&p));
    assert_null(l->c.ctx);

    x = uh_cmd(&srv, "REPLICAOF NO ONE");
    freeReplyObject(x);
    r = cmd_retry(&l->c, 5.0, "SET a 4");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    live_free(l);
}

/* A connection killed while idle (CLIENT KILL, a proxy, Redis' timeout) is
 * replaced before the next command, at once and without an outage; one that
 * worked and breaks mid-command is reconnected at once, with no backoff. */
static void test_live_killed_connection_replaced_at_once(void **s) {
    (void)s;
    live *l = live_new(srv.url, 0);
    for (int round = 0; round < 3; round++) {
        redisReply *r = hh__conn_cmd(&l->c, "PING");
        assert_non_null(r);
        freeReplyObject(r);
        long long id = atomic_load(&l->c.client_id);
        assert_true(id > 0);
        redisReply *x = uh_cmd(&srv, "CLIENT KILL ID %lld", id);
        assert_non_null(x);
        assert_int_equal(x->type, REDIS_REPLY_INTEGER);
        freeReplyObject(x);
        /* the kill lands on the socket before the next command looks */
        double until = uh_mono() + 2;
        while (uh_mono() < until) {
            x = uh_cmd(&srv, "CLIENT LIST ID %lld", id);
            int gone = x && x->type == REDIS_REPLY_STRING && x->len == 0;
            if (x) freeReplyObject(x);
            if (gone) break;
            uh_sleep(0.01);
        }
        double t0 = uh_mono();
        r = hh__conn_cmd(&l->c, "PING");
        assert_non_null(r); /* the first try goes through */
        freeReplyObject(r);
        assert_true(uh_mono() - t0 < 0.5);
        assert_true(atomic_load(&l->c.client_id) != id);
        assert_int_equal(atomic_load(&l->cfg.outage), 0);
        assert_true(l->c.backoff <= 0.05 + 1e-9);
    }
    /* broken mid-command after it worked: the next try is due now */
    hh__conn_fail(&l->c, "Server closed the connection");
    assert_true(l->c.next_attempt <= uh_mono());
    assert_true(l->c.backoff <= 0.05 + 1e-9);
    /* broken again before anything went through: that one backs off */
    redisReply *r = NULL;
    assert_int_equal(hh__conn_ready(&l->c), 0);
    hh__conn_fail(&l->c, "Server closed the connection");
    assert_true(l->c.next_attempt > uh_mono());
    r = cmd_retry(&l->c, 2.0, "PING");
    assert_non_null(r);
    freeReplyObject(r);
    live_free(l);
}

/* Redis refusing writes as a replica does is one outage, whatever reads it
 * still answers: reads on a connection opened before do not end it, a new
 * connection probes a write before it is used (and backs off while that is
 * refused), and a success on a connection probed after NO ONE ends it. */
static void test_live_readonly_one_outage(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0);
    hh__conn reader;
    hh__conn_init(&reader, &l->cfg, &l->log, "reader", NULL);
    redisReply *r = hh__conn_cmd(&l->c, "SET a 1");
    assert_non_null(r);
    freeReplyObject(r);
    r = hh__conn_cmd(&reader, "GET a");
    assert_non_null(r);
    freeReplyObject(r);
    redisReply *x = uh_cmd(&srv, "REPLICAOF 127.0.0.1 %d", uh_pick_port());
    assert_non_null(x);
    freeReplyObject(x);

    assert_null(hh__conn_cmd(&l->c, "SET a 2"));
    assert_int_equal(atomic_load(&l->cfg.outage), 1);
    assert_int_equal(atomic_load(&l->cfg.unreachable), HH_UNREACHABLE_REFUSED);
    uh_sleep(1.1); /* past the second after which a success ends an outage */
    r = hh__conn_cmd(&reader, "GET a");
    assert_non_null(r); /* a replica still answers reads... */
    freeReplyObject(r);
    assert_int_equal(atomic_load(&l->cfg.outage), 1); /* ...which say nothing of the writes */
    assert_int_equal(atomic_load(&l->cfg.unreachable), HH_UNREACHABLE_REFUSED);
    /* a new connection is not handed out while writes are refused */
    l->c.next_attempt = 0;
    assert_int_equal(hh__conn_ready(&l->c), -1);
    assert_non_null(strstr(l->c.last_error, "READONLY"));
    assert_true(l->c.next_attempt > uh_mono()); /* and backs off */
    assert_int_equal(atomic_load(&l->cfg.outage), 1);
    assert_int_equal(atomic_load(&l->cfg.unreachable), HH_UNREACHABLE_REFUSED);

    x = uh_cmd(&srv, "REPLICAOF NO ONE");
    freeReplyObject(x);
    r = cmd_retry(&l->c, 5.0, "SET a 3");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    double since = uh_mono();
    while (atomic_load(&l->cfg.outage) != 0 && uh_mono() - since < 5) {
        uh_sleep(0.1);
        r = hh__conn_cmd(&l->c, "PING");
        assert_non_null(r);
        freeReplyObject(r);
    }
    assert_int_equal(atomic_load(&l->cfg.outage), 0);
    assert_int_equal(atomic_load(&l->cfg.unreachable), 0);
    x = uh_cmd(&srv, "EXISTS stat:processed");
    assert_int_equal(x->integer, 0); /* the probe wrote nothing */
    freeReplyObject(x);
    hh__conn_close(&reader);
    live_free(l);
}

/* A blocking call longer than the command timeout is not a timeout,
 * and the normal timeout is back afterwards. */
static void test_live_blocking_longer_than_timeout(void **s) {
    (void)s;
    uh_flushall(&srv);
    live *l = live_new(srv.url, 0.3);
    redisReply *r = hh__conn_cmd(&l->c, "PING");
    assert_non_null(r);
    freeReplyObject(r);
    const char *argv[] = {"BLPOP", "empty", "1"};
    double t0 = uh_mono();
    r = hh__conn_cmdargv_blocking(&l->c, 1.0, 3, argv, NULL);
    double took = uh_mono() - t0;
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    UH_ASSERT_DBL_IN(took, 0.9, 1.3);
    assert_non_null(l->c.ctx);
    UH_ASSERT_DBL_IN(rcvtimeo(&l->c), 0.29, 0.31);
    /* while a plain command that blocks past the timeout fails fast */
    t0 = uh_mono();
    r = hh__conn_cmd(&l->c, "BLPOP empty 2");
    took = uh_mono() - t0;
    assert_null(r);
    UH_ASSERT_DBL_IN(took, 0.2, 0.8);
    live_free(l);
}

/* Nothing listening: -1 each time, never longer than the 2 s backoff cap,
 * and the attempts back off to one every 1 to 2 s (the cap, less its random
 * part of up to half). */
static void test_live_ready_gives_up_with_capped_backoff(void **s) {
    (void)s;
    int port = uh_pick_port();
    char url[96];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    live *l = live_new(url, 0);
    double last = 0;
    for (int i = 0; i < 8; i++) {
        double t0 = uh_mono();
        assert_int_equal(hh__conn_ready(&l->c), -1);
        last = uh_mono() - t0;
        if (last > 2.3) fail_msg("attempt %d took %.3f s (cap 2 s)", i, last);
        assert_null(l->c.ctx);
        assert_true(l->c.backoff <= 2.0);
    }
    assert_true(l->c.backoff >= 2.0 - 1e-9); /* saturated at the cap */
    UH_ASSERT_DBL_IN(last, 0.95, 2.3);
    assert_int_equal(atomic_load(&l->cfg.outage), 1);
    assert_true(l->c.last_error[0] != '\0');

    /* a set cancel flag ends the wait at once */
    atomic_int cancel = 1;
    l->c.cancel = &cancel;
    double t0 = uh_mono();
    assert_int_equal(hh__conn_ready(&l->c), -1);
    assert_true(uh_mono() - t0 < 0.2);

    /* the server appears: connected within one backoff period */
    l->c.cancel = NULL;
    uh_redis other;
    memset(&other, 0, sizeof(other));
    assert_int_equal(uh_redis_start_on(&other, port), 0);
    t0 = uh_mono();
    int rc = -1;
    while (rc != 0 && uh_mono() - t0 < 5) rc = hh__conn_ready(&l->c);
    assert_int_equal(rc, 0);
    assert_true(uh_mono() - t0 < 2.5);
    assert_true(l->c.backoff > 0.05); /* connecting alone does not reset it */
    /* the first command that goes through does (a replica refusing writes
     * never gets that far: test_live_readonly_one_outage) */
    redisReply *pong = hh__conn_cmd(&l->c, "PING");
    assert_non_null(pong);
    freeReplyObject(pong);
    assert_true(l->c.backoff <= 0.05 + 1e-9);
    /* the outage's end is logged once the connection has lasted a second */
    double since = uh_mono();
    while (atomic_load(&l->cfg.outage) != 0 && uh_mono() - since < 10) {
        pong = hh__conn_cmd(&l->c, "PING");
        assert_non_null(pong);
        freeReplyObject(pong);
        if (atomic_load(&l->cfg.outage) != 0) uh_sleep(0.05);
    }
    assert_int_equal(atomic_load(&l->cfg.outage), 0);
    assert_true(uh_mono() - since >= 0.5); /* not on the first command */
    uh_redis_stop(&other);
    live_free(l);
}

/* A refused SELECT (db out of range) before any connection worked is
 * recorded as a permanent refusal with Redis' text; once a connection has
 * worked, a refusal is not (a rotated password must keep the backoff). A
 * connection refused at TCP level is never permanent. */
static void test_live_refusal_only_before_first_success(void **s) {
    (void)s;
    char url[96];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/99999", srv.port);
    live *l = live_new(url, 0);
    assert_int_equal(hh__conn_ready(&l->c), -1);
    const char *why = hh__redis_refused(&l->cfg);
    assert_non_null(why);
    assert_non_null(strstr(why, "DB index is out of range"));
    live_free(l);

    snprintf(url, sizeof(url), "redis://:" SECRET "@127.0.0.1:%d/0", srv.port);
    l = live_new(url, 0);
    assert_int_equal(hh__conn_ready(&l->c), -1); /* no password configured: AUTH refused */
    assert_non_null(hh__redis_refused(&l->cfg));
    assert_null(strstr(hh__redis_refused(&l->cfg), SECRET));
    live_free(l);

    /* worked once, then refused: not permanent */
    l = live_new(srv.url, 0);
    assert_int_equal(hh__conn_ready(&l->c), 0);
    hh__conn_close(&l->c);
    l->cfg.db = 99999;
    l->c.next_attempt = 0;
    assert_int_equal(hh__conn_ready(&l->c), -1);
    assert_null(hh__redis_refused(&l->cfg));
    live_free(l);

    /* nobody listening: transient */
    uh_redis other;
    assert_int_equal(uh_redis_start(&other), 0);
    int port = other.port;
    uh_redis_stop(&other);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", port);
    l = live_new(url, 0);
    assert_int_equal(hh__conn_ready(&l->c), -1);
    assert_null(hh__redis_refused(&l->cfg));
    live_free(l);
}

int main(void) {
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_parse_tcp_urls),
        cmocka_unit_test(test_parse_percent_literal),
        cmocka_unit_test(test_parse_unix),
        cmocka_unit_test(test_parse_defaults),
        cmocka_unit_test(test_password_option_and_env),
        cmocka_unit_test(test_parse_bad_urls),
        cmocka_unit_test(test_parse_rediss),
        cmocka_unit_test(test_parse_tls_options),
        cmocka_unit_test(test_parse_sentinel),
        cmocka_unit_test(test_parse_bad_unix_url_hides_password),
        cmocka_unit_test(test_parse_bad_url_shapes_hide_password),
        cmocka_unit_test(test_parse_bad_long_url_no_overflow),
        cmocka_unit_test(test_parse_bad_url_masks_only_password),
        cmocka_unit_test(test_sentinel_display_masks_only_password),
        cmocka_unit_test(test_parse_unix_userinfo),
        cmocka_unit_test(test_fmt_double_shortest),
        cmocka_unit_test(test_connection_level_errors),
    };
    const struct CMUnitTest withredis[] = {
        cmocka_unit_test(test_live_pipeline),
        cmocka_unit_test(test_live_socket_close_on_exec),
        cmocka_unit_test(test_live_eval_reload_after_script_flush),
        cmocka_unit_test(test_live_scripts_over_maxmemory),
        cmocka_unit_test(test_live_readonly_drops_connection),
        cmocka_unit_test(test_live_killed_connection_replaced_at_once),
        cmocka_unit_test(test_live_readonly_one_outage),
        cmocka_unit_test(test_live_blocking_longer_than_timeout),
        cmocka_unit_test(test_live_reconnect_after_restart),
        cmocka_unit_test(test_live_ready_gives_up_with_capped_backoff),
        cmocka_unit_test(test_live_refusal_only_before_first_success),
    };
    int failed = cmocka_run_group_tests_name("redis_pure", pure, NULL, NULL);
    failed += cmocka_run_group_tests_name("redis_live", withredis, group_setup, group_teardown);
    return failed;
}
