/* conn_fixture.h -- one library connection (hh__conn) with its config, a
 * silent logger and the key names, opened on a unit test's private Redis:
 * the setup the tests of modules that talk to Redis through hh__conn share
 * (outcome, unique jobs, job metrics). Include after the library's headers
 * (redis.h, keys.h). */
#ifndef HH_CONN_FIXTURE_H
#define HH_CONN_FIXTURE_H

typedef struct uh_conn_fixture {
    hh__redis_config cfg;
    hh__logger log;
    hh__conn conn;
    hh__keys keys;
} uh_conn_fixture;

/* Opens *c on the Redis at url, its keys under namespace ns (NULL: none).
 * 0, or -1 when the URL does not parse. */
static inline int uh_conn_fixture_open(uh_conn_fixture *c, const char *url, const char *ns) {
    char err[256];
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    if (hh__redis_config_parse(&c->cfg, &o, err, sizeof(err)) != 0) return -1;
    c->log.level = HH_LOG_ERROR + 1; /* silent */
    hh__conn_init(&c->conn, &c->cfg, &c->log, "test", NULL);
    hh__keys_init(&c->keys, ns);
    return 0;
}

static inline void uh_conn_fixture_close(uh_conn_fixture *c) {
    hh__conn_close(&c->conn);
    hh__keys_free(&c->keys);
    hh__redis_config_free(&c->cfg);
}

#endif
