/* hiredhand.h -- the public API of libhiredhand, a Sidekiq-compatible job
 * client and worker written in C.
 *
 * Jobs live in Redis in Sidekiq's data model (see docs/ and the protocol
 * spec): a job pushed here runs in Sidekiq, a job pushed by Sidekiq's Ruby
 * client runs here, and retries, scheduled jobs, the dead set, stats and
 * heartbeats land where Sidekiq's API and Web UI read them.
 *
 * Conventions used by every function below:
 *   - Times called "epoch" are seconds since the Unix epoch as a double
 *     (Ruby's Time#to_f), durations are seconds as a double, unless a name
 *     ends in _ms or _us.
 *   - Functions returning int return HH_OK (0) or a negative hh_err code;
 *     hh_strerror() names it. Nothing in the library calls exit().
 *   - Strings passed in are borrowed: the library copies what it keeps.
 *     Strings handed out are owned by the caller only where a function says
 *     "free with free()".
 *   - An hh_client is used by one thread at a time (wrap it in a lock or
 *     keep one per thread); an hh_manager is thread-safe where documented.
 *
 * Copyright (c) hiredhand authors. BSD-3-Clause. */
#ifndef HIREDHAND_H
#define HIREDHAND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HH_VERSION "0.1.0"

/* ---------------------------------------------------------------- errors */

typedef enum hh_err {
    HH_OK = 0,
    HH_ERR_INVALID = -1,  /* bad argument, bad JSON, bad URL, bad option */
    HH_ERR_REDIS = -2,    /* Redis unreachable or replied with an error */
    HH_ERR_NOMEM = -3,    /* allocation failed */
    HH_ERR_IO = -4,       /* a system call failed (errno is kept) */
    HH_ERR_STATE = -5,    /* call not allowed in the object's current state */
    HH_ERR_EXISTS = -6,   /* name already registered / identity already live */
    HH_ERR_NOTFOUND = -7, /* no such job, handler or process */
    HH_ERR_REFUSED = -8   /* Redis refused the connection settings before any
                           * connection ever worked: wrong password or user,
                           * NOAUTH, NOPERM, db out of range. Permanent. */
} hh_err;

/* Returns a static English description of an hh_err code. Never NULL.
 * Thread-safe. */
const char *hh_strerror(int err);

/* ------------------------------------------------------- shared settings */

/* Which Sidekiq generation the payload timestamps written are meant for.
 * Readers always accept both encodings. */
typedef enum hh_timestamps {
    HH_TS_FLOAT = 0, /* EPOCH_F float seconds: read right by 6.x, 7.x, 8.x */
    HH_TS_MILLIS = 1 /* EPOCH_MS integer milliseconds: Sidekiq 8.x only   */
} hh_timestamps;

/* Where Redis is and how keys are named; embedded in the client and the
 * manager options. Zero-initialise, or call hh_redis_options_init(). */
typedef struct hh_redis_options {
    /* "redis://[user:password@]host:port/db" or
     * "unix://[user:password@]/path?db=N" (user info percent-decoded; see
     * the README's Redis URLs).
     * NULL: $REDIS_URL, else "redis://127.0.0.1:6379/0". */
    const char *url;
    /* Prefix for every key, as redis-namespace does ("ns" gives "ns:queues").
     * NULL or "": no prefix. */
    const char *ns;
    double connect_timeout; /* seconds; default 5 */
    double command_timeout; /* seconds for non-blocking commands; default 5.
                             * Blocking fetches add their block time to it. */
    hh_timestamps timestamps; /* default HH_TS_FLOAT */
    /* Password for AUTH when the URL holds none, so that it need not appear
     * on a command line (ps, /proc/<pid>/cmdline). NULL or "": the
     * REDIS_PASSWORD environment variable when set and non-empty. A
     * password in the URL wins over both; the user name, if any, is the
     * URL's. Copied when the options are used. */
    const char *password;
} hh_redis_options;

/* Fills *o with the defaults documented above. Thread-safe. */
void hh_redis_options_init(hh_redis_options *o);

/* Checks a Redis URL without connecting. Returns HH_OK or HH_ERR_INVALID and,
 * when errbuf is non-NULL, writes a message (never containing the password)
 * into it. Thread-safe. */
int hh_redis_url_check(const char *url, char *errbuf, size_t errlen);

/* What a name given to hiredhand is used for (see hh_name_check()). */
typedef enum hh_name_kind {
    HH_NAME_IDENTITY = 0,  /* a process identity: keys <id>, <id>:work,
                            * <id>:workers, <id>-signals */
    HH_NAME_NAMESPACE = 1, /* a key prefix: "<ns>:" before every key */
    HH_NAME_QUEUE = 2,     /* a queue: queue:<name> */
    HH_NAME_TAG = 3,       /* the Busy page tag (names no key) */
    HH_NAME_LABEL = 4      /* a Busy page label (names no key) */
} hh_name_kind;

#define HH_NAME_MAX 200       /* bytes, for identities and namespaces */
#define HH_NAME_QUEUE_MAX 127 /* bytes, for queue names */

/* Checks a name before it is used, without connecting. Every kind must be
 * valid UTF-8 without control characters (they would reach logs and the
 * Web UI's JSON). Queue names, identities and namespaces must be non-empty
 * and hold no '|'; queue names are at most HH_NAME_QUEUE_MAX bytes.
 * Identities and namespaces, at most HH_NAME_MAX bytes and without spaces,
 * must not name or share the keys Sidekiq or hiredhand own: refused is a
 * name equal to one of queues, queue, schedule, retry, dead, processes,
 * process_cleanup, stat, dear-leader, paused, super_processes, profiles,
 * j, h, it, deploylock, hiredhand, or starting with one of them followed
 * by ':' or '|' (or '-' after it and deploylock, whose keys are it-<jid>
 * and deploylock-<label>). An identity must also not end with ":work",
 * ":workers" or "-signals" (another process's keys) nor have the shape of
 * Sidekiq 7/8's metrics keys (<Class>-<DD>-<HH>:<M>, <YYYYMMDD>-marks,
 * <token>-<24 hex>). So "queue:default", "retry" and "queue" are refused;
 * "host:1234:0123456789ab", "worker-0" and "myapp:prod" are accepted.
 * Returns HH_OK or HH_ERR_INVALID with the reason in errbuf (may be NULL).
 * hh_manager_new() and hh_client_new() apply it. Thread-safe. */
int hh_name_check(hh_name_kind kind, const char *name, char *errbuf, size_t errlen);

/* ---------------------------------------------------------------- client */

typedef struct hh_client hh_client;

/* Retry policy written into a payload's "retry" key. */
typedef enum hh_retry_policy {
    HH_RETRY_DEFAULT = 0, /* "retry": true (zeroed options mean this) */
    HH_RETRY_TRUE = 1,    /* "retry": true: max_retries (25) retries */
    HH_RETRY_FALSE = 2,   /* "retry": false: no retry set, no dead set */
    HH_RETRY_COUNT = 3    /* "retry": retry_max; 0 means straight to dead */
} hh_retry_policy;

typedef struct hh_push_options {
    const char *queue;     /* NULL: "default" */
    hh_retry_policy retry; /* default HH_RETRY_DEFAULT */
    int retry_max;         /* with HH_RETRY_COUNT: N >= 0 */
    double at;             /* epoch seconds to run at; 0 = now. A time not in
                            * the future is pushed now, as perform_at does. */
    const char *extra_json; /* NULL, or a JSON object whose keys are copied
                             * into the payload (tags, backtrace, custom...) */
} hh_push_options;

/* Fills *o with queue "default", retry true, at 0, no extra keys. */
void hh_push_options_init(hh_push_options *o);

/* Length of a jid including its NUL: 24 lowercase hex characters + 1. */
#define HH_JID_SIZE 25

/* Connects to Redis and returns a client, or NULL with *err set
 * (HH_ERR_INVALID for a bad URL or a namespace hh_name_check() refuses,
 * HH_ERR_REDIS when Redis cannot be reached,
 * HH_ERR_REFUSED when it refused the password, user or db, HH_ERR_NOMEM). opts may be NULL for the defaults. Free with
 * hh_client_free(). A client reconnects by itself after a lost connection.
 * Not thread-safe: use one client per thread. */
hh_client *hh_client_new(const hh_redis_options *opts, int *err);

/* Closes the connection and frees the client. NULL is a no-op. */
void hh_client_free(hh_client *c);

/* The last error Redis or the connection reported to this client (for
 * example "ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
 * "" when none. Owned by the client; valid until its next call. */
const char *hh_client_last_error(const hh_client *c);

/* Pushes one job of class `klass` with `args_json` (a JSON array; NULL means
 * "[]"), like Sidekiq::Client.push (6.4 lib/sidekiq/client.rb): a fresh jid,
 * created_at, enqueued_at, SADD queues + LPUSH queue:<q> pipelined, or ZADD
 * schedule when opts->at is in the future. The jid is written to jid_out
 * (may be NULL). Errors: HH_ERR_INVALID (klass empty, args not a JSON array,
 * extra_json not an object, bad queue), HH_ERR_REDIS (Redis error, including
 * a payload over proto-max-bulk-len), HH_ERR_NOMEM. */
int hh_client_push(hh_client *c, const char *klass, const char *args_json,
                   const hh_push_options *opts, char jid_out[HH_JID_SIZE]);

/* Pushes a complete job item given as JSON, like Sidekiq::Client.push(hash):
 * "class" and "args" are required; "queue", "retry", "at", "jid" and any other
 * key are honoured and kept in order. Errors as hh_client_push(). */
int hh_client_push_item(hh_client *c, const char *item_json,
                        char jid_out[HH_JID_SIZE]);

/* Pushes n jobs of one class in one pipelined round trip, like
 * Sidekiq::Client.push_bulk: one SADD and one LPUSH (or one ZADD) for all,
 * sharing one enqueued_at. args_json[i] is job i's argument array. jids_out,
 * when non-NULL, receives n jids. Nothing is pushed if any args are invalid.
 * Errors as hh_client_push(). */
int hh_client_push_bulk(hh_client *c, const char *klass,
                        const char *const *args_json, size_t n,
                        const hh_push_options *opts,
                        char (*jids_out)[HH_JID_SIZE]);

/* Reads what Sidekiq::Stats shows (6.4 lib/sidekiq/api.rb) and returns it as
 * a JSON object string in *json_out (free with free()): processed, failed,
 * scheduled_size, retry_size, dead_size, processes_size, workers_size,
 * enqueued, default_queue_latency and "queues": [{name, size, latency}].
 * Latency is seconds (float) from the oldest job's enqueued_at, which is read
 * in either encoding. Errors: HH_ERR_REDIS, HH_ERR_NOMEM. */
int hh_client_stats(hh_client *c, char **json_out);

/* Lists live processes as Sidekiq::ProcessSet does (pruning members whose
 * heartbeat hash expired) and returns a JSON array string in *json_out (free
 * with free()): identity, hostname, pid, tag, concurrency, queues, busy,
 * beat, beat_age (seconds), quiet (bool), rss (KB), started_at, version.
 * Errors: HH_ERR_REDIS, HH_ERR_NOMEM. */
int hh_client_processes(hh_client *c, char **json_out);

/* Sends a signal to a process through <identity>-signals exactly as the Web
 * UI's buttons do (MULTI, LPUSH, EXPIRE 60, EXEC). signal is
 * "TSTP" (quiet), "TERM" (stop) or "TTIN" (dump). Errors: HH_ERR_INVALID
 * (other signal names), HH_ERR_NOTFOUND (identity not in processes or its
 * hash expired), HH_ERR_REDIS. */
int hh_client_signal(hh_client *c, const char *identity, const char *signal);

/* Moves a job into the dead set like Sidekiq::DeadSet#kill: in one MULTI,
 * ZADD dead now payload, then trims by age and size (dead_timeout seconds,
 * dead_max_jobs entries; 0 for Sidekiq's 15552000 s and 10000). payload is
 * stored byte for byte. Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
int hh_client_kill(hh_client *c, const char *payload, size_t len,
                   double dead_timeout, long dead_max_jobs);

/* --------------------------------------------------------------- the job */

typedef struct hh_job hh_job;

/* Accessors for the job a handler or middleware is given. The returned
 * strings are owned by the job and valid until the handler returns.
 * hh_job_payload() is the job JSON exactly as fetched (len in *len if non-NULL);
 * hh_job_args() is the "args" array as compact JSON (integers beyond 64
 * bits, which Ruby allows, appear there as reals: read hh_job_payload() for
 * the exact text). Thread-safe for the thread running the job. */
const char *hh_job_jid(const hh_job *job);
const char *hh_job_class(const hh_job *job);
const char *hh_job_queue(const hh_job *job);
const char *hh_job_args(const hh_job *job);
const char *hh_job_payload(const hh_job *job, size_t *len);
/* retry_count from the payload, -1 when absent (the job never failed). */
int hh_job_retry_count(const hh_job *job);
/* Reads a top-level payload key as compact JSON; free with free(). NULL when
 * absent or on allocation failure. */
char *hh_job_get(const hh_job *job, const char *key);

/* Records why the job failed: error_class (NULL: "StandardError") and a
 * printf-style message, both stored in the retry/dead entry as Sidekiq's
 * error_class and error_message (message truncated to 10,000 bytes on a
 * UTF-8 boundary, invalid UTF-8 replaced by '?'). Call before returning
 * non-zero from a handler; the last call wins. Only from the thread running
 * the job; on allocation failure the message is left out. */
void hh_job_fail(hh_job *job, const char *error_class, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Sets the backtrace lines stored as error_backtrace when the payload asks
 * for one ("backtrace": true or N), compressed as Sidekiq does.
 * lines are copied. Only from the thread running the job. */
void hh_job_set_backtrace(hh_job *job, const char *const *lines, size_t n);

/* 1 once the stop's grace period ended with this job still running (it is
 * being pushed back to its queue, or left for recovery) or, with lease_lost
 * HH_LEASE_LOST_STOP, once another process recovered it: the handler's
 * outcome will be ignored, so a long-running handler should poll this and
 * return early. Thread-safe. */
int hh_job_cancelled(const hh_job *job);

/* A job handler: return 0 on success, non-zero on failure (call hh_job_fail
 * first to say why; otherwise the error is "hiredhand::JobFailed"). Runs on a
 * worker thread; several handlers run at once, up to the concurrency. */
typedef int (*hh_handler_fn)(hh_job *job, void *udata);

/* ------------------------------------------- routing: Active Job wrappers */

/* The class a handler is chosen by and logs show: for Rails' Active Job
 * payloads (class "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper" or
 * "Sidekiq::ActiveJob::Wrapper") the string in "wrapped", as Sidekiq's Web
 * UI shows it; for every other job hh_job_class(). Its length in *len if
 * non-NULL (a class may hold "\u0000"). The payload is never changed. */
const char *hh_job_handler_class(const hh_job *job, size_t *len);

/* ---------------------------------------------------------- middleware */

typedef struct hh_chain hh_chain;

/* Server middleware, run around every job in the order added, like
 * Sidekiq's server middleware chain (6.4 lib/sidekiq/middleware/chain.rb).
 * Call hh_chain_next(chain, job) to run the rest of the chain and the
 * handler, and return what it returned (or your own non-zero to fail the job;
 * not calling it skips the job, which then counts as done). */
typedef int (*hh_middleware_fn)(hh_job *job, hh_chain *chain, void *udata);

/* Runs the next middleware or, at the end, the handler, and returns its
 * result (0 success). With no handler for the class it fails the job with
 * Sidekiq's NameError and returns -1. Only from the thread running the job,
 * inside a middleware call. */
int hh_chain_next(hh_chain *chain, hh_job *job);

/* ------------------------------------------------------------ manager */

typedef struct hh_manager hh_manager;

typedef struct hh_queue_weight {
    const char *name; /* queue name without "queue:" */
    int weight;       /* 0: unweighted. All 0: strict order; any > 0: weighted
                       * random order (Sidekiq 6.4 lib/sidekiq/fetch.rb) */
} hh_queue_weight;

typedef enum hh_fetch_mode {
    HH_FETCH_RELIABLE = 0, /* LMOVE into a private in-progress list (default) */
    HH_FETCH_BASIC = 1     /* Sidekiq's BRPOP: a crash loses running jobs */
} hh_fetch_mode;

typedef enum hh_log_level {
    HH_LOG_DEBUG = 0, HH_LOG_INFO = 1, HH_LOG_WARN = 2, HH_LOG_ERROR = 3
} hh_log_level;

/* A log sink; msg is one line: no trailing newline, and every control
 * character in it escaped (a newline as \n, ESC as \x1b; bytes that are
 * not UTF-8 as \xNN), whatever a payload or Redis held. Called from any thread, possibly
 * at once from several: the function must be thread-safe. */
typedef void (*hh_log_fn)(hh_log_level level, const char *msg, void *udata);

/* What happens to a handler still running a job that another process
 * recovered (this process was paused or cut off past its heartbeat TTL and
 * a peer judged it dead). In both cases the outcome is not written here:
 * the job belongs to the process that recovered it. */
typedef enum hh_lease_lost_policy {
    HH_LEASE_LOST_STOP = 0,  /* hh_job_cancelled() turns 1 (--exec handlers:
                              * the process group gets SIGTERM, then SIGKILL),
                              * so the job stops running twice at once */
    HH_LEASE_LOST_FINISH = 1 /* let the handler run to its end */
} hh_lease_lost_policy;

typedef struct hh_manager_options {
    hh_redis_options redis;
    const hh_queue_weight *queues; /* NULL/0: the single queue "default" */
    size_t nqueues;
    int concurrency;           /* worker threads; default 10 */
    double shutdown_timeout;   /* seconds to let jobs finish on stop; 25 */
    const char *tag;           /* Busy page tag; default "" */
    const char *const *labels; /* Busy page labels; NULL-terminated, or NULL */
    const char *identity;      /* NULL: "<hostname>:<pid>:<12 hex>" with
                                * $DYNO or gethostname(); fixed: a stable name
                                * whose in-progress lists are recovered at
                                * start. Checked as hh_name_check() says:
                                * e.g. "queue:default", "retry" or "queue"
                                * are refused. tag, labels, queue names and
                                * redis.ns are checked too. */
    hh_fetch_mode fetch;       /* default HH_FETCH_RELIABLE */
    double heartbeat_interval; /* seconds between beats; default 5 */
    int max_retries;           /* for "retry": true; default 25 */
    long dead_max_jobs;        /* default 10000 */
    double dead_timeout;       /* seconds; default 15552000 (180 days) */
    double poll_interval_average; /* scheduler; 0: Sidekiq's 5 s x processes */
    double recovery_interval;  /* orphan scan period, seconds; default 60 */
    int max_recoveries;        /* recoveries before a job goes dead; 3 */
    const char *version;       /* "version" shown to 7.x/8.x Web UIs; "6.4.1" */
    hh_log_fn log;             /* NULL: lines to stderr */
    void *log_udata;
    hh_log_level log_level;    /* default HH_LOG_INFO */
    const char *http_bind;     /* "HOST:PORT" or "PORT" (127.0.0.1) to serve
                                * /healthz, /stats and /metrics; NULL: off */
    double liveness_max_age;   /* /healthz is 503 once the last acknowledged
                                * heartbeat is older than this; default 30 s */
    hh_lease_lost_policy lease_lost; /* default HH_LEASE_LOST_STOP */
    const char *http_token;    /* NULL (default): /stats and /metrics are
                                * open to whoever reaches http_bind. Else
                                * they answer 401 unless the request has
                                * "Authorization: Bearer <http_token>"
                                * (1-4096 visible ASCII characters, no
                                * space; copied). /healthz stays open and
                                * tells only the status and heartbeat age. */
} hh_manager_options;

/* Fills *o with the defaults documented above. Thread-safe. */
void hh_manager_options_init(hh_manager_options *o);

/* Creates a manager (no threads, no connection yet). Returns NULL with *err
 * set: HH_ERR_INVALID (bad option: concurrency < 1, a bad URL, an identity,
 * namespace, queue name, tag or label hh_name_check() refuses; the reason
 * is logged through opts->log at HH_LOG_ERROR), HH_ERR_NOMEM. Free with
 * hh_manager_free(). */
hh_manager *hh_manager_new(const hh_manager_options *opts, int *err);

/* Stops (if running, waiting for the stop to finish) and frees. NULL is a
 * no-op. If the stop left threads behind (a C handler still running, which
 * cannot be killed safely, or a Redis call that outlived the deadline), the
 * manager is deliberately not freed, so they never touch freed memory:
 * exit the process instead. */
void hh_manager_free(hh_manager *m);

/* Registers the handler for jobs whose "class" equals klass exactly (case
 * and "::" included; the whole JSON string: a class holding "\u0000", such
 * as "T\u0000Evil", is not "T" and matches no handler). Active Job payloads
 * match by their "wrapped" class (hh_job_handler_class()). klass "*" is the
 * catch-all: it takes every class without a handler of its own (an exact
 * handler wins; then "*"; then the default handler below; then NameError).
 * Before hh_manager_start() only. Errors:
 * HH_ERR_INVALID, HH_ERR_EXISTS (already registered), HH_ERR_STATE (started). */
int hh_manager_register(hh_manager *m, const char *klass, hh_handler_fn fn,
                        void *udata);

/* Registers a handler for every class without one of its own (the CLI uses
 * it to report unknown classes). Without it, such a job fails with Sidekiq's
 * NameError. Before start only. Errors: HH_ERR_STATE. */
int hh_manager_register_default(hh_manager *m, hh_handler_fn fn, void *udata);

/* Whether `klass` has a handler of its own. Thread-safe. */
int hh_manager_has_handler(const hh_manager *m, const char *klass);

/* Appends a server middleware. Before start only. Errors: HH_ERR_INVALID,
 * HH_ERR_STATE, HH_ERR_NOMEM. */
int hh_manager_use(hh_manager *m, hh_middleware_fn fn, void *udata);

/* Connects, recovers this identity's leftover in-progress jobs, and starts
 * the worker, heartbeat, scheduler and recovery threads, then returns.
 * Redis being down is not an error: the threads keep reconnecting with
 * backoff. Errors: HH_ERR_STATE (started twice), HH_ERR_EXISTS (a fixed
 * identity that has a live heartbeat from another process), HH_ERR_IO
 * (threads could not be created), HH_ERR_REFUSED (Redis refused the
 * password, user or db: a permanent error, logged with Redis' reason). */
int hh_manager_start(hh_manager *m);

/* Quiet: stop fetching and scheduling, finish running jobs, keep beating
 * with quiet "true" (Sidekiq's TSTP). Irreversible. Thread-safe and
 * async-signal-safe. */
void hh_manager_quiet(hh_manager *m);

/* Stop: quiet, wait up to shutdown_timeout for running jobs, then cancel
 * those still running (hh_job_cancelled()), push them back to their queues
 * (exact bytes), leave the processes set, then let hh_manager_wait() return
 * (Sidekiq's TERM). The Redis work after the grace period shares one budget
 * of min(command_timeout, 3 s) whatever Redis does, so the stop ends within
 * shutdown_timeout + that budget + a moment; threads still in a handler or
 * a Redis call then are left behind (hh_manager_detached()). Thread-safe
 * and async-signal-safe; returns at once. */
void hh_manager_stop(hh_manager *m);

/* Logs every worker thread and the job it runs (Sidekiq's TTIN).
 * Thread-safe and async-signal-safe; the dump happens on the heartbeat thread. */
void hh_manager_dump(hh_manager *m);

/* Blocks until the manager stopped (by hh_manager_stop, a TERM from Redis or
 * the Web UI). Returns HH_OK, or HH_ERR_EXISTS when it stopped because its
 * fixed identity proved live in another process once Redis answered (Redis
 * was down at start), or HH_ERR_REFUSED when Redis, once reachable, refused
 * the password, user or db before any connection had worked (later
 * refusals, as when a password is rotated, keep the reconnect backoff
 * instead). timeout < 0 waits forever; otherwise returns
 * HH_ERR_STATE if still running after timeout seconds. */
int hh_manager_wait(hh_manager *m, double timeout);

/* After hh_manager_wait(): how many threads the stop left behind at its
 * deadline, still inside a handler (a C handler cannot be killed safely)
 * or a Redis call (Redis hung). When non-zero, hh_manager_free() leaves the
 * manager allocated, and whatever those threads may still use (handlers'
 * udata, the log sink) must stay valid until the process exits. */
int hh_manager_detached(const hh_manager *m);

/* The identity this manager beats under (valid for the manager's life). */
const char *hh_manager_identity(const hh_manager *m);

/* A worker takes at most this many queues (hh_manager_new refuses more,
 * with a log line); there is no smaller cap. */
#define HH_QUEUES_LIMIT 10000
/* The stats snapshot lists the first HH_MAX_QUEUES queues (configuration
 * order) and counts them all in nqueues: a fixed size keeps the struct's
 * ABI. It does not limit the worker. */
#define HH_MAX_QUEUES 64

/* A snapshot of the manager's state; no Redis round trip. */
typedef struct hh_manager_stats {
    char identity[256];
    double started_at;        /* epoch seconds */
    int concurrency;
    int busy;                 /* jobs running now */
    int quiet;                /* 1 once quiet or stopping */
    int stopping;             /* 1 once stop began */
    uint64_t processed;       /* jobs finished since start, failed included */
    uint64_t failed;
    uint64_t recovered;       /* orphaned jobs this process pushed back */
    size_t nqueues;           /* every queue; queues[] holds the first
                               * HH_MAX_QUEUES of them */
    struct {
        char name[128];
        uint64_t fetched;  /* jobs this process took from the queue */
        int64_t size;      /* LLEN at the last heartbeat; -1 before, and
                            * always -1 unless http_bind or a heartbeat
                            * hook is set (nobody reads them otherwise) */
        double latency;    /* seconds since the oldest job's enqueued_at,
                            * read at the last heartbeat */
    } queues[HH_MAX_QUEUES];
    double heartbeat_last_pushed_at; /* epoch s of the last beat Redis
                                      * acknowledged (EXEC ok); 0 before */
    char heartbeat_last_error[256];  /* "" when the last beat succeeded */
    int redis_connected;      /* 1 when the heartbeat connection is up */
    uint64_t lease_lost;      /* jobs of this process that another process
                               * recovered while this one still had them
                               * (paused or cut off past the heartbeat TTL) */
    uint64_t reconciled;      /* entries of this process's in-progress lists
                               * that no thread held (a fetch reply was lost),
                               * pushed back to their queues */
} hh_manager_stats;

/* Copies a consistent snapshot into *out. Thread-safe, lock-brief, no I/O.
 * Errors: HH_ERR_INVALID (NULL argument). */
int hh_manager_get_stats(hh_manager *m, hh_manager_stats *out);

/* Called on the heartbeat thread after every heartbeat attempt: ok is 1 when
 * Redis acknowledged the beat, stats is the snapshot after it. Must not
 * block for long (it delays the next beat). Set before start. */
typedef void (*hh_heartbeat_hook_fn)(int ok, const hh_manager_stats *stats,
                                     void *udata);
int hh_manager_on_heartbeat(hh_manager *m, hh_heartbeat_hook_fn fn,
                            void *udata);

/* Logs through the manager's sink (for handlers and plug-ins). Thread-safe. */
void hh_manager_log(hh_manager *m, hh_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---------------------------------------------------------- plug-ins */

/* A shared object loaded with `hiredhand work --require x.so` exports this
 * symbol; it registers its handlers/middleware and returns 0 (non-zero
 * aborts start-up). argv is unused today and NULL. */
#define HH_PLUGIN_INIT_SYMBOL "hh_plugin_init"
typedef int (*hh_plugin_init_fn)(hh_manager *m);

#ifdef __cplusplus
}
#endif
#endif /* HIREDHAND_H */
