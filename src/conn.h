/* conn.h -- the plain connection primitives both redis.c (reconnects,
 * AUTH, error classification, pipelines, scripts) and sentinel.c (asking
 * the sentinels) stand on: the configuration a connection is made from,
 * the connection, open, one command, read, close. Touches no key. */
#ifndef HH_CONN_H
#define HH_CONN_H

#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/time.h>
#include "scripts.h"
#include "util.h"

/* The first reconnect backoff of a new connection (redis.c doubles it). */
#define HH_CONN_BACKOFF_MIN 0.05
/* hh__redis_config.unreachable: why readiness is off */
#define HH_UNREACHABLE_IO 1      /* a call did not reach Redis */
#define HH_UNREACHABLE_REFUSED 2 /* Redis refused it as a replica would */

typedef struct hh__redis_config {
    sds host; /* NULL for unix sockets */
    int port;
    sds unix_path; /* NULL for TCP */
    int db;
    sds user;     /* NULL: AUTH <password> */
    sds password; /* NULL: no AUTH */
    sds display;  /* the URL with the password masked, for logs */
    double connect_timeout;
    double command_timeout;
    atomic_int outage; /* 1 while some connection is down: logs once */
    /* The causes (bits, redis.c) already logged during this outage: each
     * is logged once, when it first shows, so a long outage whose cause
     * alternates (READONLY writes, a reconnect refused) logs each once. */
    atomic_uint outage_causes;
    atomic_llong outage_since_ms; /* hh__mono() in ms when the outage began */
    /* Bumped each time Redis starts refusing writes as a replica would
     * (HH_UNREACHABLE_REFUSED). While refusals go on, a connection opened
     * since proves with a write (probe_key) in setup that writes pass
     * again before it is used, and only a success on such a connection
     * ends the outage: reads still answered by a replica say nothing of
     * the writes. */
    atomic_int refusal_epoch;
    sds probe_key; /* a key SETRANGE "" probes writes with (never changed) */
    /* Readiness (hh_manager_stats.redis_reachable): 0 once a call went
     * through; HH_UNREACHABLE_IO after a call failed to reach Redis, cleared
     * by the next one that goes through, on any connection; and
     * HH_UNREACHABLE_REFUSED after Redis refused one as a replica would
     * (READONLY...), cleared as the outage is (a read answered by a replica
     * says nothing of the writes). */
    atomic_int unreachable;
    atomic_int ever_ready; /* 1 once any connection passed AUTH, SELECT and INFO */
    atomic_int refusal_claimed;
    atomic_int refusal_logged; /* a later refusal was logged; cleared on connect */
    atomic_int refused;        /* 1: refused for good before that (hh__redis_refused) */
    char refused_why[1024];    /* Redis' reason, set before `refused` */
    /* rediss://: every connection runs TLS over the socket hiredis opens */
    int tls;
    int tls_verify;        /* 0 with --tls-insecure */
    int tls_client_cert;   /* a client certificate is configured */
    sds tls_name;          /* SNI and the name the certificate must match */
    void *tls_ctx;         /* SSL_CTX, shared by every connection */
    atomic_int tls_warned; /* --tls-insecure was logged */
    int tls_name_forced;   /* tls_name from --tls-server-name: used for
                             * every host (sentinels, discovered masters) */
    /* Sentinel (sentinel.c): nsentinels > 0 means the master is discovered */
    int nsentinels;
    sds *sentinel_host;
    int *sentinel_port;
    sds sentinel_master;
    sds sentinel_password;
    atomic_int sentinel_last; /* the sentinel that answered last: asked first */
    atomic_int master_epoch;  /* bumped on +switch-master: connections reconnect */
    atomic_int watch_state;   /* 0 none, 1 running, 2 stopping */
    void *watch_thread;       /* pthread_t of the +switch-master listener */
    const hh__logger *watch_log;
} hh__redis_config;

typedef struct hh__conn {
    hh__redis_config *cfg;
    const hh__logger *log;
    const char *name;         /* "heartbeat", "fetch", ... for logs */
    const atomic_int *cancel; /* when non-NULL and set, backoff waits end */
    redisContext *ctx;        /* NULL while disconnected */
    /* rediss://: the SSL over ctx->fd. hiredis then only formats commands
     * into ctx->obuf and parses replies in ctx->reader; the bytes go through
     * tls.c (see hh__conn_get_reply). NULL for plain TCP and unix sockets. */
    void *ssl;
    double next_attempt;    /* monotonic time of the next connect try */
    double backoff;         /* seconds */
    double connected_at;    /* monotonic time of the last connect */
    int version;            /* Redis version as major*100+minor, 0 unknown */
    atomic_llong client_id; /* CLIENT ID of the live connection (Redis >= 5), 0 none */
    atomic_int blocking;    /* inside hh__conn_cmdargv_blocking, connected: CLIENT UNBLOCK ends it */
    char last_error[256];
    unsigned long failures; /* hh__conn_fail calls: tells a broken link from an error reply */
    int worked;             /* a command went through since the last connect */
    int refusal_epoch;      /* cfg->refusal_epoch the connection was opened (and probed) in */
    unsigned long long rng; /* jitter of the reconnect delays */
    char shas[HH_SCRIPT_COUNT][41];
    int plain_scripts;     /* the server refused script flags: load them without (redis.c) */
    int master_epoch;      /* cfg->master_epoch when this connection opened */
    char master_addr[300]; /* the master it reached through Sentinel, for logs */
    /* Monotonic time after which every call on this connection fails at
     * once; before it, no connect, command or pipeline waits longer than
     * what is left. 0: none. For work that must end by a deadline whatever
     * Redis does (the stop's push-back). */
    double deadline;
} hh__conn;

/* Accessors. hh__conn's fields belong to conn.c and redis.c: every other
 * file reads and changes a connection through these (or the calls of
 * redis.h), so that what a connection's state means stays decided in one
 * place. Inline: some sit on the fetch path. */

/* Why the last call on c failed ("" when nothing has failed yet). Valid
 * until the next call on c. */
static inline const char *hh__conn_last_error(const hh__conn *c) { return c->last_error; }
/* The same, or fallback when no reason was recorded. */
static inline const char *hh__conn_error_or(const hh__conn *c, const char *fallback) {
    return c->last_error[0] ? c->last_error : fallback;
}
/* Records why (printf-style) as c's last error, for a caller that judged a
 * reply itself (the client API's "why" of a refused push). */
void hh__conn_set_error(hh__conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void hh__conn_clear_error(hh__conn *c) { c->last_error[0] = '\0'; }
/* Whether c holds an open connection (it may still prove dead on use). */
static inline int hh__conn_connected(const hh__conn *c) { return c->ctx != NULL; }
/* The socket of an open connection, -1 when closed: for callers that poll
 * it themselves (then hh__conn_read_some, hh__conn_buffered_reply). */
static inline int hh__conn_fd(const hh__conn *c) { return c->ctx ? c->ctx->fd : -1; }
/* hiredis's own words for the last I/O or protocol error of the open
 * connection, or fallback when it has none (or c is closed). */
static inline const char *hh__conn_io_error(const hh__conn *c, const char *fallback) {
    return c->ctx && c->ctx->errstr[0] ? c->ctx->errstr : fallback;
}
/* A reply hh__conn_read_some already read, without touching the socket:
 * REDIS_OK with *reply NULL when none is complete yet; REDIS_ERR on a
 * protocol error or a closed connection. */
static inline int hh__conn_buffered_reply(hh__conn *c, void **reply) {
    *reply = NULL;
    return c->ctx ? redisGetReplyFromReader(c->ctx, reply) : REDIS_ERR;
}
/* The server's version, major*100+minor (702 is 7.2); 0 before the first
 * connect or when the server did not say. */
static inline int hh__conn_version(const hh__conn *c) { return c->version; }
/* CLIENT ID of the live connection (0: none or Redis < 5). Any thread. */
static inline long long hh__conn_client_id(const hh__conn *c) { return atomic_load(&c->client_id); }
/* Whether c waits in a blocking command now (CLIENT UNBLOCK ends it). Any thread. */
static inline int hh__conn_blocking(const hh__conn *c) { return atomic_load(&c->blocking); }
/* How many times a call on c failed so far: a change tells a broken link
 * from an error reply. */
static inline unsigned long hh__conn_failures(const hh__conn *c) { return c->failures; }
/* The SHA1 c loaded script id under ("" while not loaded), and forgetting
 * it (NOSCRIPT: the server lost it; the next call loads it again). */
static inline const char *hh__conn_script_sha(const hh__conn *c, int script) { return c->shas[script]; }
static inline void hh__conn_forget_script(hh__conn *c, int script) { c->shas[script][0] = '\0'; }
/* The configuration and logger c was made from. */
static inline hh__redis_config *hh__conn_config(const hh__conn *c) { return c->cfg; }
static inline const hh__logger *hh__conn_logger(const hh__conn *c) { return c->log; }
/* The monotonic time after which every call on c fails at once (0: none),
 * and setting it (the stop's push-back must end by its deadline). */
static inline double hh__conn_deadline(const hh__conn *c) { return c->deadline; }
static inline void hh__conn_set_deadline(hh__conn *c, double deadline) { c->deadline = deadline; }

void hh__conn_init(hh__conn *c, hh__redis_config *cfg, const hh__logger *log, const char *name,
                   const atomic_int *cancel);
/* Closes the socket (and TLS); c stays initialised, ready to open again. */
void hh__conn_close(hh__conn *c);

/* Reads what the server sent into the connection's reader (for callers
 * that poll the socket themselves, then take replies with
 * redisGetReplyFromReader). Returns REDIS_OK or REDIS_ERR (errstr set). */
int hh__conn_read_some(hh__conn *c);

/* Opens a TCP connection to host:port (TLS too when the
 * configuration says rediss://) into c->ctx/c->ssl, with the connect
 * timeout, close-on-exec and the command timeout set. Returns 0, or -1
 * with the cause in c->last_error (c left closed). */
int hh__conn_open(hh__conn *c, const char *host, int port);
/* One command on an open connection, without reconnect or error
 * classification (redisCommand over either transport). */
redisReply *hh__conn_raw(hh__conn *c, const char *fmt, ...);
redisReply *hh__conn_vraw(hh__conn *c, const char *fmt, va_list ap);
redisReply *hh__conn_rawargv(hh__conn *c, int argc, const char **argv, const size_t *lens);

/* Whether ctx's last error is a reply that did not come in time (hiredis
 * words it as EAGAIN's text). */
int hh__conn_timed_out(const redisContext *ctx);
/* Appends to why (size len) the hint that a plain-text connection was
 * dropped before any reply as a TLS server does, when c is plain TCP, its
 * error is an EOF or reset (not a timeout), and no connection of this
 * configuration ever worked: a server that answered plain text before is
 * no TLS port, and a cut link (a partition, a proxy) gives the same EOF. */
void hh__conn_tls_hint(const hh__conn *c, char *why, size_t len);

/* Writes what is queued in c->ctx->obuf, whole. REDIS_OK or REDIS_ERR. */
int hh__conn_flush(hh__conn *c);
/* redisGetReply over either transport: a reply already parsed, else writes
 * what is queued and reads until one is complete. REDIS_OK or REDIS_ERR. */
int hh__conn_get_reply(hh__conn *c, void **reply);

/* The timeout for the next wait on c: `configured`, or what is left before
 * c->deadline when that is less (at least 1 ms: 0 means "forever" to the
 * socket). 0 once the deadline has passed. */
double hh__conn_time_left(const hh__conn *c, double configured);
struct timeval hh__timeval(double seconds);

#endif
