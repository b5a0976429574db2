/* hiredhand.h -- the public API of libhiredhand, a Sidekiq-compatible job
 * client and worker written in C.
 *
 * Jobs live in Redis in Sidekiq's data model (docs/protocol.md): a job
 * pushed here runs in Sidekiq, a job pushed by Sidekiq's Ruby client runs
 * here, and retries, scheduled jobs, the dead set, stats and
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
#include "hiredhand_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HH_EXPORT marks the library's public functions: the only symbols the
 * shared library exports (it is built with -fvisibility=hidden, so every
 * other function stays internal). tests/abi/check_symbols.sh compares the
 * two lists. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define HH_EXPORT __attribute__((visibility("default")))
#else
#define HH_EXPORT
#endif

/* ------------------------------------------------------------- version
 *
 * hiredhand_version.h (generated) defines HH_VERSION_MAJOR, _MINOR, _PATCH,
 * the string HH_VERSION and HH_VERSION_NUM (0xMMmmpp): the version this
 * program was compiled against. hh_version() says which library it runs
 * with.
 *
 * ABI and SONAME policy. The shared library is libhiredhand.so.MAJOR
 * (SOVERSION = HH_VERSION_MAJOR). Within one major version a program built
 * against an older header runs with any newer library: functions are only
 * added, never removed or changed, and the option and stats structs only
 * grow at their end, by the struct_size rule below. The major version (and
 * with it the SONAME) goes up whenever that promise breaks: a function
 * removed or its signature or meaning changed, an enum value renumbered, a
 * struct field removed, moved or retyped. While the major version is 0,
 * the API is still settling: a minor release may break it, and says so in
 * CHANGELOG.md. Minor releases add API; patch releases only fix.
 *
 * Structs that can grow (hh_redis_options, hh_push_options,
 * hh_manager_options, hh_manager_stats). Each starts with
 *     size_t struct_size;
 * which the caller sets to sizeof the struct it was compiled with: the
 * *_options_init functions do it (for hh_manager_stats, set it yourself:
 * `hh_manager_stats st = {.struct_size = sizeof st};`). New fields are only ever appended
 * at the end. The library reads (or, for stats, writes) only the first
 * struct_size bytes; a field beyond them takes its default, so a program
 * built against an older header keeps working with a newer library.
 * struct_size 0 (a zeroed struct) means the first layout with this rule,
 * that of version 0.1. hh_redis_options embedded in hh_manager_options is
 * read by its own struct_size, so it can grow too. Arrays the library
 * fills are the caller's, with their length (hh_manager_stats.queues);
 * elements of such arrays (hh_queue_stats) never grow: new per-item
 * figures would come with a new function. */

/* The library's "MAJOR.MINOR.PATCH" at run time (HH_VERSION is the
 * header's at compile time). Static; thread-safe. */
HH_EXPORT const char *hh_version(void);

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
                           * NOAUTH, NOPERM, db out of range, a master name
                           * no sentinel knows. Permanent. */
} hh_err;

/* Returns a static English description of an hh_err code. Never NULL.
 * Thread-safe. */
HH_EXPORT const char *hh_strerror(int err);

/* ------------------------------------------------------ errors that say why
 *
 * Every public call that fails (returns an hh_err, or NULL with *err set)
 * first records a reason for people: what was wrong and where, as
 * "concurrency 5000: want 1 to 1000 threads", "args_json: '[1,' is not
 * JSON: unexpected end of input near line 1, column 3", "http: cannot
 * listen on 127.0.0.1:8080: Address already in use". The reason is kept
 * per thread, as errno and dlerror() are: read it right after the failing
 * call, on the same thread. A call that succeeds leaves it as it was.
 * That covers every call with an error to return, a NULL client, manager
 * or output pointer included. The calls without one leave it as it was
 * too: the *_init functions, the frees, quiet/stop/dump, hh_manager_log
 * and the job's void setters; accessors and flags (hh_job_*,
 * hh_manager_identity, hh_manager_has_handler, hh_manager_detached);
 * hh_chain_next, which returns the handler's result; and the functions
 * whose NULL means "absent" or out of memory (hh_jobset_entry_get,
 * hh_job_get, hh_log_format_line). Errors reach a caller through up to
 * three channels: the returned code (or *err), this reason, and, for a
 * client, hh_client_last_error(), which keeps what Redis said to that
 * client (also on success: a queue cleared that held another type). The
 * checks that take an errbuf (hh_name_check, hh_redis_url_check,
 * hh_redis_options_check, hh_manager_options_check) write the same reason
 * there.
 *
 * The habit to follow: test the returned code (or NULL), then read
 * hh_last_error(). Deprecated, kept working for the whole of ABI 1 and
 * gone in the next major version: the errbuf/errlen arguments of those four
 * checks (pass NULL, 0; the reason is in hh_last_error() all the same).
 * The *err of the constructors stays: it is the only way to the code of a
 * call that returns NULL. The library never writes to stderr or stdout itself: what it
 * logs goes to the log callback (hh_manager_options.log; a NULL log there
 * means stderr). */

/* The reason the last failing hiredhand call on this thread failed. Never
 * NULL; "" before any failure. Valid until this thread's next failing
 * call. Thread-safe. */
HH_EXPORT const char *hh_last_error(void);

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
    size_t struct_size; /* sizeof(hh_redis_options); see "Structs that can grow" */
    /* "redis://[user:password@]host:port/db",
     * "rediss://[user:password@]host:port/db" (TLS, see the tls_ fields) or
     * "unix://[user:password@]/path?db=N" (user info percent-decoded; see
     * the Redis URLs of docs/redis.md).
     * NULL: $REDIS_URL, else "redis://127.0.0.1:6379/0". */
    const char *url;
    /* Prefix for every key, as redis-namespace does ("ns" gives "ns:queues").
     * NULL or "": no prefix. */
    const char *ns;
    double connect_timeout;   /* seconds; default 5 */
    double command_timeout;   /* seconds for non-blocking commands; default 5.
                             * Blocking fetches add their block time to it. */
    hh_timestamps timestamps; /* default HH_TS_FLOAT */
    /* Password for AUTH when the URL holds none, so that it need not appear
     * on a command line (ps, /proc/<pid>/cmdline). NULL or "": the
     * REDIS_PASSWORD environment variable when set and non-empty. A
     * password in the URL wins over both; the user name, if any, is the
     * URL's. Copied when the options are used. */
    const char *password;

    /* TLS, for rediss:// URLs (ignored otherwise). Each NULL (or 0) field
     * falls back to its environment variable, named in brackets. Files are
     * PEM. Certificate and host name verification are on unless
     * tls_insecure. Copied or read when the options are used. */
    const char *tls_ca_file;     /* CA bundle [HIREDHAND_TLS_CA_FILE]; with
                                  * neither this nor tls_ca_dir, the system's
                                  * CA store */
    const char *tls_ca_dir;      /* hashed CA directory [HIREDHAND_TLS_CA_DIR] */
    const char *tls_cert;        /* client certificate for mutual TLS
                                  * [HIREDHAND_TLS_CERT], with tls_key */
    const char *tls_key;         /* its private key [HIREDHAND_TLS_KEY] */
    const char *tls_server_name; /* SNI and the name the certificate must
                                  * match; NULL: the URL's host
                                  * [HIREDHAND_TLS_SERVER_NAME] */
    int tls_insecure;            /* 1: skip certificate and host name checks
                                  * (logged as a warning)
                                  * [HIREDHAND_TLS_INSECURE=1] */

    /* Redis Sentinel: the master is whatever the sentinels name, checked
     * with ROLE after every connect and asked again after a connection
     * loss, a READONLY error or a +switch-master event. The URL still
     * gives the master's db, user and password (its host and port are not
     * used); rediss:// means TLS to the sentinels and the master. NULL
     * fields fall back to the environment variable in brackets. */
    const char *sentinels;         /* "host:port,host:port..." ("[::1]:26379"
                                    * for IPv6) [HIREDHAND_SENTINELS]; NULL
                                    * or "": no Sentinel */
    const char *sentinel_master;   /* the master's name; NULL: the URL's host,
                                    * as redis-rb reads it
                                    * [HIREDHAND_SENTINEL_MASTER] */
    const char *sentinel_password; /* AUTH for the sentinels, apart from the
                                    * master's [HIREDHAND_SENTINEL_PASSWORD] */
} hh_redis_options;

/* Fills *o with the defaults documented above and sets struct_size.
 * Thread-safe. */
HH_EXPORT void hh_redis_options_init(hh_redis_options *o);

/* Checks a Redis URL without connecting. Returns HH_OK or HH_ERR_INVALID
 * with a message (never containing the password) in hh_last_error() and,
 * when errbuf (deprecated) is non-NULL, in errbuf. Thread-safe. */
HH_EXPORT int hh_redis_url_check(const char *url, char *errbuf, size_t errlen);

/* Checks redis options without connecting: the URL as hh_redis_url_check
 * does, and for rediss:// the TLS settings (each file readable and valid,
 * a certificate with its key). Returns HH_OK or HH_ERR_INVALID with a
 * message naming the file and OpenSSL's reason in hh_last_error() (and in
 * errbuf, deprecated, when non-NULL). Thread-safe. */
HH_EXPORT int hh_redis_options_check(const hh_redis_options *o, char *errbuf, size_t errlen);

/* What a name given to hiredhand is used for (see hh_name_check()). */
typedef enum hh_name_kind {
    HH_NAME_IDENTITY = 0,  /* a process identity: keys <id>, <id>:work,
                            * <id>:workers, <id>-signals */
    HH_NAME_NAMESPACE = 1, /* a key prefix: "<ns>:" before every key */
    HH_NAME_QUEUE = 2,     /* a queue: queue:<name> */
    HH_NAME_TAG = 3,       /* the Busy page tag (names no key) */
    HH_NAME_LABEL = 4      /* a Busy page label (names no key) */
} hh_name_kind;

#define HH_NAME_MAX 200        /* bytes, for identities and namespaces */
#define HH_NAME_QUEUE_MAX 1024 /* bytes, for queue names */

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
 * Returns HH_OK or HH_ERR_INVALID with the reason in hh_last_error() and
 * in errbuf (deprecated, may be NULL). hh_manager_new() and hh_client_new()
 * apply it. Thread-safe. */
HH_EXPORT int hh_name_check(hh_name_kind kind, const char *name, char *errbuf, size_t errlen);

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
    size_t struct_size;     /* sizeof(hh_push_options): see "Structs that can grow" */
    const char *queue;      /* NULL: "default" */
    hh_retry_policy retry;  /* default HH_RETRY_DEFAULT */
    int retry_max;          /* with HH_RETRY_COUNT: N >= 0 */
    double at;              /* epoch seconds to run at; 0 = now. A time not in
                            * the future is pushed now, as perform_at does. */
    const char *extra_json; /* NULL, or a JSON object whose keys are copied
                             * into the payload (tags, backtrace, custom...) */
} hh_push_options;

/* Fills *o with queue "default", retry true, at 0, no extra keys, and sets
 * struct_size. */
HH_EXPORT void hh_push_options_init(hh_push_options *o);

/* Length of a jid including its NUL: 24 lowercase hex characters + 1. */
#define HH_JID_SIZE 25

/* Connects to Redis and returns a client, or NULL with *err set
 * (HH_ERR_INVALID for a bad URL or a namespace hh_name_check() refuses,
 * HH_ERR_REDIS when Redis cannot be reached,
 * HH_ERR_REFUSED when it refused the password, user or db, or when every
 * sentinel that answered does not know the master's name, HH_ERR_NOMEM;
 * hh_last_error() says where and why). It tries to connect once and
 * writes nothing to stderr: retrying is the caller's choice. opts may be
 * NULL for the defaults. Free with hh_client_free(). A client reconnects
 * by itself after a lost connection.
 * Not thread-safe: use one client per thread. */
HH_EXPORT hh_client *hh_client_new(const hh_redis_options *opts, int *err);

/* Closes the connection and frees the client. NULL is a no-op. */
HH_EXPORT void hh_client_free(hh_client *c);

/* The last error Redis or the connection reported to this client (for
 * example "ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
 * "" when none. Owned by the client; valid until its next call. */
HH_EXPORT const char *hh_client_last_error(const hh_client *c);

/* Pushes one job of class `klass` with `args_json` (a JSON array; NULL means
 * "[]"), like Sidekiq::Client.push (6.4 lib/sidekiq/client.rb): a fresh jid,
 * created_at, enqueued_at, SADD queues + LPUSH queue:<q> pipelined, or ZADD
 * schedule when opts->at is in the future. The jid is written to jid_out
 * (may be NULL). Errors: HH_ERR_INVALID (klass empty, args not a JSON array,
 * extra_json not an object, bad queue), HH_ERR_REDIS (Redis error, including
 * a payload over proto-max-bulk-len), HH_ERR_NOMEM. */
HH_EXPORT int hh_client_push(hh_client *c, const char *klass, const char *args_json, const hh_push_options *opts,
                             char jid_out[HH_JID_SIZE]);

/* Pushes a complete job item given as JSON, like Sidekiq::Client.push(hash):
 * "class" and "args" are required; "queue", "retry", "at", "jid" and any other
 * key are honoured and kept in order. Errors as hh_client_push(). */
HH_EXPORT int hh_client_push_item(hh_client *c, const char *item_json, char jid_out[HH_JID_SIZE]);

/* Pushes n jobs of one class in one pipelined round trip, like
 * Sidekiq::Client.push_bulk: one SADD and one LPUSH (or one ZADD) for all,
 * sharing one enqueued_at. args_json[i] is job i's argument array. jids_out,
 * when non-NULL, receives n jids. Nothing is pushed if any args are invalid.
 * Errors as hh_client_push(). */
HH_EXPORT int hh_client_push_bulk(hh_client *c, const char *klass, const char *const *args_json, size_t n,
                                  const hh_push_options *opts, char (*jids_out)[HH_JID_SIZE]);

/* Reads what Sidekiq::Stats shows (6.4 lib/sidekiq/api.rb) and returns it as
 * a JSON object string in *json_out (free with free()): processed, failed,
 * scheduled_size, retry_size, dead_size, processes_size, workers_size,
 * enqueued, default_queue_latency and "queues": [{name, size, latency}].
 * Latency is seconds (float) from the oldest job's enqueued_at, which is read
 * in either encoding. A key a client wrote with another type (WRONGTYPE)
 * gives its figure as null, and "errors": {field: "key schedule holds a
 * string, not a zset"} names it (a queue: "size" null and its own
 * "error"); the other figures are read as usual. Errors: HH_ERR_REDIS (the
 * processes or queues set unreadable: hh_last_error() names the key),
 * HH_ERR_NOMEM. */
HH_EXPORT int hh_client_stats(hh_client *c, char **json_out);

/* Lists live processes as Sidekiq::ProcessSet does (pruning members whose
 * heartbeat hash expired) and returns a JSON array string in *json_out (free
 * with free()): identity, hostname, pid, tag, concurrency, queues, busy,
 * beat, beat_age (seconds), quiet (bool), rss (KB), started_at, version.
 * Errors: HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_client_processes(hh_client *c, char **json_out);

/* Sends a signal to a process through <identity>-signals exactly as the Web
 * UI's buttons do (MULTI, LPUSH, EXPIRE 60, EXEC). signal is
 * "TSTP" (quiet), "TERM" (stop) or "TTIN" (dump). Errors: HH_ERR_INVALID
 * (other signal names), HH_ERR_NOTFOUND (identity not in processes or its
 * hash expired), HH_ERR_REDIS. */
HH_EXPORT int hh_client_signal(hh_client *c, const char *identity, const char *signal);

/* Moves a job into the dead set like Sidekiq::DeadSet#kill: in one MULTI,
 * ZADD dead now payload, then trims by age and size (dead_timeout seconds,
 * dead_max_jobs entries; 0 for Sidekiq's 15552000 s and 10000). payload is
 * stored byte for byte. Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
HH_EXPORT int hh_client_kill(hh_client *c, const char *payload, size_t len, double dead_timeout, long dead_max_jobs);

/* ------------------------------------------------------ job management */

/* The same operations as Sidekiq's Ruby API (6.4 lib/sidekiq/api.rb:
 * ScheduledSet, RetrySet, DeadSet, SortedEntry, Queue, WorkSet), on an
 * hh_client. Every move of one entry is one Lua script that acts only if
 * the exact member is still in its set, writing first and removing last:
 * two operators, or an operator and a scheduler, never move one job twice
 * and never lose one. Sets and queues are read in pages, never whole. */

/* The three sorted sets of Sidekiq's data model. */
typedef enum hh_jobset {
    HH_JOBSET_SCHEDULED = 0, /* "schedule": score = when it is due */
    HH_JOBSET_RETRY = 1,     /* "retry": score = when it is retried */
    HH_JOBSET_DEAD = 2       /* "dead": score = when it died */
} hh_jobset;

/* Which entries an operation applies to; zero it for "all". */
typedef struct hh_jobset_filter {
    const char *klass; /* NULL, or "class", Active Job's "wrapped" or the
                        * class the Web UI shows (display_class) equal;
                        * "" finds the entries whose class is empty or
                        * missing, as queue "" does for the queue */
    const char *queue; /* NULL, or "queue" equal */
    const char *error; /* NULL, or a substring of error_class or
                        * error_message (case-sensitive, over the
                        * whole string: text after a NUL too); ""
                        * would match everything and is HH_ERR_INVALID */
    size_t limit;      /* at most this many entries; 0: no limit */
} hh_jobset_filter;

/* One entry, as handed to an hh_jobset_fn. Strings are valid during the
 * call only; the ones read from the payload are "" when absent (and
 * error_class/error_message NULL when absent). A payload whose bytes are
 * not UTF-8 is valid 0 (no JSON parser takes it), and its fields are read
 * from its text with U+FFFD for each such byte, as a browser decodes it
 * (hh_queue_page does the same): such an entry has its jid and class, is
 * found by that jid (hh_jobset_act, hh_jobset_find) and is acted on by its
 * exact bytes (payload); a retry or enqueue of it is refused, a delete or
 * kill moves those bytes. */
typedef struct hh_jobset_entry {
    hh_jobset set;
    double score;        /* SortedEntry#score: epoch seconds (#at) */
    const char *payload; /* the member, byte for byte */
    size_t len;
    int valid; /* 0 when the payload is not a JSON object (or not UTF-8) */
    const char *jid;
    const char *klass;
    const char *queue;
    const char *error_class;
    const char *error_message;
    int retry_count;    /* -1 when absent or not an int (hh_jobset_entry_get) */
    double enqueued_at; /* epoch seconds, either encoding; 0 absent */
    double created_at;
    double failed_at;
    double retried_at;
    /* The class Sidekiq's Web UI shows (Job#display_class): the payload's
     * "display_class", Active Job's wrapped class, "Mailer#method" for
     * Action Mailer's delivery jobs, else "class"; display_class_len bytes
     * (NUL bytes may be inside). "" when the payload is not a job. */
    const char *display_class;
    size_t display_class_len;
} hh_jobset_entry;

/* Called once per entry; return 0 to go on, non-zero to stop. */
typedef int (*hh_jobset_fn)(const hh_jobset_entry *e, void *udata);

/* Limits of the dead set for kills (DeadSet#kill trims by age and size). */
typedef struct hh_jobset_options {
    double dead_timeout; /* seconds; 0: Sidekiq's 15552000 (180 days) */
    long dead_max_jobs;  /* 0: Sidekiq's 10000 */
} hh_jobset_options;

/* What to do with an entry: SortedEntry's methods. */
typedef enum hh_jobset_action {
    HH_JOBSET_RETRY_NOW = 0, /* #retry: retry_count - 1 when present, then
                              * pushed as Sidekiq::Client.push does (retry
                              * and queue defaults, jid and created_at when
                              * absent, enqueued_at now) to its queue */
    HH_JOBSET_ENQUEUE = 1,   /* #add_to_queue: the same, retry_count kept */
    HH_JOBSET_DELETE = 2,    /* #delete: ZREM */
    HH_JOBSET_KILL = 3       /* #kill: into the dead set, bytes unchanged,
                              * score now, trimmed (not from the dead set) */
} hh_jobset_action;

/* The JSON text of the entry's top-level field `key` exactly as stored (an
 * integer beyond 64 bits keeps its digits, where retry_count above is -1):
 * malloc'd, free with free(); NULL when absent, when the entry is not a
 * JSON object, or out of memory. An entry whose bytes are not UTF-8 gives
 * the field of its text with U+FFFD (see hh_jobset_entry). Reads e only: thread-safe while e lives
 * (inside the callback that got it). */
HH_EXPORT char *hh_jobset_entry_get(const hh_jobset_entry *e, const char *key);

/* One page of a set by rank, as the Web UI's paged tables read it: calls fn
 * for at most count entries (1..1000) from rank start (0-based) in
 * hh_jobset_each's order (by score ascending, the dead set descending), or
 * the reverse order when reverse is non-zero. One ZRANGE/ZREVRANGE by
 * index: the cost does not grow with the set (a page of a set of a million
 * entries reads count entries). Entries moved meanwhile shift the ranks,
 * as with Sidekiq's paginator. Errors: HH_ERR_INVALID (no client, no fn,
 * start < 0, count 0 or over 1000), HH_ERR_REDIS (the key holds another
 * type: hh_last_error() names it). */
HH_EXPORT int hh_jobset_page(hh_client *c, hh_jobset set, long long start, size_t count, int reverse, hh_jobset_fn fn,
                             void *udata);

/* ZCARD. Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
HH_EXPORT int hh_jobset_size(hh_client *c, hh_jobset set, long long *size_out);

/* Calls fn for the entries matching f (NULL: all) in the Web UI's order:
 * by score ascending, the dead set descending (newest first), read in
 * pages of a few hundred entries. Entries moved meanwhile may be missed
 * or seen twice, as with Sidekiq's JobSet#each. Errors: HH_ERR_INVALID,
 * HH_ERR_REDIS. */
HH_EXPORT int hh_jobset_each(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_fn fn, void *udata);

/* Calls fn for every entry whose "jid" equals jid (JobSet#find_job, by
 * ZSCAN MATCH), in hh_jobset_each's order (lowest score first, the dead
 * set highest first), whatever order ZSCAN found them in. Errors:
 * HH_ERR_INVALID (empty jid), HH_ERR_NOTFOUND, HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_jobset_find(hh_client *c, hh_jobset set, const char *jid, hh_jobset_fn fn, void *udata);

/* Applies action to the entry with this jid; when several share it, to
 * the one hh_jobset_each lists first (the retry and scheduled sets' lowest
 * score, the dead set's highest), as Sidekiq's find_job finds the lowest
 * score in a small set. opts may be NULL. Errors: HH_ERR_INVALID (empty jid; KILL on the dead
 * set; RETRY_NOW/ENQUEUE of a payload that is not a job object with a
 * "class" string, an "args" array and a queue name without NUL, which Sidekiq would
 * drop: it stays where it is), HH_ERR_NOTFOUND (no such jid, or another
 * client moved it first), HH_ERR_REDIS. */
HH_EXPORT int hh_jobset_act(hh_client *c, hh_jobset set, const char *jid, hh_jobset_action action,
                            const hh_jobset_options *opts);

/* Applies action to every entry matching f (NULL: all), one atomic move
 * each, scanning the set with ZSCAN (RetrySet#retry_all, #kill_all,
 * DeadSet#retry_all). With f->limit, to the first f->limit matching
 * entries in hh_jobset_each's order instead (the ones a list with that
 * filter shows), read by rank; those that cannot be pushed count among
 * them. Entries another
 * client moved first are skipped; entries that cannot be pushed are left
 * and counted in *skipped. *done and *skipped (either may be NULL) are set
 * even on error. Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
HH_EXPORT int hh_jobset_act_all(hh_client *c, hh_jobset set, const hh_jobset_filter *f, hh_jobset_action action,
                                const hh_jobset_options *opts, size_t *done, size_t *skipped);

/* SortedSet#clear: UNLINK the set; *removed (may be NULL) gets how many
 * entries it held (-1 for a key of another type, deleted all the same, as
 * hh_queue_clear). Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
HH_EXPORT int hh_jobset_clear(hh_client *c, hh_jobset set, long long *removed);

/* Sidekiq::Queue.all, sorted by name, each {"name","size","latency"
 * (Queue#latency),"paused" (false: pausing is Sidekiq Pro's),"head":
 * {class: count} over the next 10 jobs to run}. A queue whose key holds
 * another type has "size" null and "error" ("key queue:q holds a string,
 * not a list"); the others are listed. A JSON array in *json_out (free
 * with free()). Errors: HH_ERR_INVALID, HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_queues_list(hh_client *c, char **json_out);

/* One queue: {"name","size","latency","jobs":[...]} with the next n jobs
 * to run (each {"jid","class","enqueued_at","item"}; "payload", the text
 * as stored, in place of "item" when it cannot be read without loss, and
 * "valid": false too when it is no job object: not JSON, or an array).
 * An entry holding bytes that are not UTF-8 (JSON cannot carry them; a
 * fetch buries it as no job) has "valid": false, "payload" with U+FFFD in
 * place of each such byte, "jid" and "class" read from that text, and its
 * exact bytes in "payload_base64" (standard base64) and their count in
 * "bytes". Errors:
 * HH_ERR_INVALID (a name longer than HH_NAME_QUEUE_MAX; control
 * characters, '|' and the empty name, whose key is `queue:`, are taken,
 * as other clients write them), HH_ERR_REDIS, HH_ERR_NOMEM. A queue that
 * does not exist shows size 0. */
HH_EXPORT int hh_queue_show(hh_client *c, const char *name, size_t n, char **json_out);

/* ---- Periodic jobs: sidekiq-cron's data model (docs/periodic-jobs.md) ----
 * Jobs live in Redis as sidekiq-cron 2.x saves them: the set
 * cron_jobs:<namespace> names the hash cron_job:<namespace>:<name>; the
 * 1.x layout (cron_jobs, cron_job:<name>) is read too in the namespace
 * "default". A NULL namespace means "default"; "" is refused with
 * HH_ERR_INVALID by every hh_cron_* call (hh_last_error() says so), as
 * sidekiq-cron would key a namespace "" of its own (cron_jobs:) where a
 * caller meant "default". Every call is on a client (thread safety as
 * the client's: one thread at a time). */

/* A job to save (hh_cron_save). Set struct_size to sizeof(hh_cron_spec). */
typedef struct hh_cron_spec {
    size_t struct_size;
    const char *name;           /* required: 1-255 bytes */
    const char *cron;           /* required: as fugit reads it (5 or 6 fields, aliases, a zone) */
    const char *klass;          /* required: the job class Sidekiq runs */
    const char *queue;          /* NULL: "default"; "" is refused */
    const char *args_json;      /* a JSON array; NULL: [] */
    const char *description;    /* NULL: none */
    const char *cron_namespace; /* NULL: "default"; "" is refused */
    const char *retry_json;     /* the message's "retry": true, false or a count (an integer >= 0);
                                 * NULL or "null": Sidekiq's default */
    int active_job;             /* 1: pushed in ActiveJob's envelope (JobWrapper) */
    int date_as_argument;       /* 1: each run gets its enqueue time (a float) as last argument */
    int disabled;               /* 1: saved disabled; 0: keeps the saved status, else enabled */
    int from_schedule;          /* 1: source "schedule" (a schedule file); 0: "dynamic" */
    int layout;                 /* sidekiq-cron's layout to save in: 0 (default) the rule of
                                 * hh_cron_save; 1: 1.x's (cron_jobs, cron_job:<name>; namespace
                                 * "default" only), for a fleet on sidekiq-cron 1.x (Debian 12's
                                 * 1.8) whose Redis holds no job yet; 2: 2.x's */
} hh_cron_spec;

/* Saves a job as sidekiq-cron's Job#save does: SADD to its namespace's
 * set, the hash with every field sidekiq-cron writes (JSON strings for
 * args and message, "1"/"0" flags, status, source), keeping a saved
 * last_enqueue_time, and, when the job is new, the guard of the tick just
 * past so that it does not run at once. In namespace "default" it saves
 * sidekiq-cron 1.x's layout (cron_jobs, cron_job:<name>) when a 1.x job
 * of that name exists (updated, not doubled) or the Redis holds 1.x jobs
 * and no cron_jobs:default set (a 1.x fleet reads nothing else); else
 * 2.x's; spec->layout 1 or 2 chooses instead. Errors: HH_ERR_INVALID (a field
 * missing, the queue "", the namespace "", "*" or holding ':', layout not 0, 1 or 2, layout 1 outside namespace "default",
 * a layout given while the other layout holds a job of that name in
 * "default" (both would run each tick), args not a JSON array, retry not true, false, null or an
 * integer >= 0 (Sidekiq reads a string or a fraction as 25 retries, a
 * negative count as none), or an expression the parser refuses:
 * hh_last_error() gives its reason), HH_ERR_REDIS,
 * HH_ERR_NOMEM. */
HH_EXPORT int hh_cron_save(hh_client *c, const hh_cron_spec *spec);

/* The jobs of a namespace as a JSON array sorted by name (caller frees
 * with free()): each {"name","namespace","cron","class","queue","status",
 * "source","description","args","last_enqueue_time" (as stored, or null),
 * "next" (the next tick, Unix seconds, or null), "error" (why hiredhand
 * cannot run it, or null), "layout" (1: sidekiq-cron 1.x's keys, 2:
 * 2.x's), and "also_in_layout" (1 or 2) on a job of namespace "default"
 * saved in both layouts, each copy running each tick}. A field holding
 * bytes that are not UTF-8 shows each as the text \xNN; a name that is not
 * UTF-8 also has its exact bytes as "name_base64" (standard base64): its
 * "name" text then names no job, or another job whose name is that text,
 * so a caller acting on a job must not pass it on. A set member naming a
 * key that is no job's
 * hash (another type, or no key) lists with its "error" and null fields,
 * where sidekiq-cron's Job.all fails whole. So does a namespace's set
 * whose key is of another type (a string, a list: sidekiq-cron fails on
 * it too): one entry named as the key, with "key" (the key, a field no
 * job entry has) and "error" ("key cron_jobs:default is a string, not a
 * set: ..."). cron_namespace "*": every
 * namespace, those of the cron_jobs:<namespace> keys in Redis and
 * "default" (Job.all('*') under available_namespaces = :auto).
 * Errors: HH_ERR_INVALID (the namespace ""), HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_cron_list(hh_client *c, const char *cron_namespace, char **json_out);

/* Sets a job's status "enabled" (enabled 1) or "disabled", as the Web
 * UI's buttons do. Errors: HH_ERR_INVALID (the namespace "" or "*"),
 * HH_ERR_NOTFOUND, HH_ERR_REDIS. */
HH_EXPORT int hh_cron_set_enabled(hh_client *c, const char *cron_namespace, const char *name, int enabled);

/* Deletes a job as Job#destroy: its set entry, guard set, jid_history and
 * hash. A set member hh_cron_list shows as broken (its key missing, or
 * not a hash) is taken out of its set, and the key left alone.
 * Errors: HH_ERR_INVALID (the namespace "" or "*"), HH_ERR_NOTFOUND (no
 * job nor member of that name), HH_ERR_REDIS. */
HH_EXPORT int hh_cron_delete(hh_client *c, const char *cron_namespace, const char *name);

/* A job's jid history (cron_job:...:<name>:jid_history, the last 10 runs
 * sidekiq-cron and the poller remember), newest first, as a JSON array
 * (caller frees with free()): each entry as written, {"jid","enqueued"},
 * or a JSON string when an entry is not a JSON object. Bytes that are not
 * UTF-8, here and in hh_cron_list's fields, are shown as the text \xNN.
 * Errors: HH_ERR_INVALID (the namespace "" or "*"), HH_ERR_NOTFOUND (no
 * such job), HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_cron_history(hh_client *c, const char *cron_namespace, const char *name, char **json_out);

/* Runs a job now, as the Web UI's "Enqueue now" (Job#enqueue!): pushes
 * its job whatever its status and schedule, and writes last_enqueue_time
 * and jid_history, in one script. jid_out (HH_JID_SIZE bytes, may be
 * NULL) gets the jid. Errors: HH_ERR_NOTFOUND, HH_ERR_INVALID (its saved
 * message is no job; the namespace "" or "*"), HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_cron_enqueue_now(hh_client *c, const char *cron_namespace, const char *name, char *jid_out);

/* Which of sidekiq-cron's layouts the single-job calls on c
 * (hh_cron_set_enabled, hh_cron_delete, hh_cron_enqueue_now,
 * hh_cron_history) act on in namespace "default", where one name may be
 * saved twice: 1.x's (cron_job:<name>) and 2.x's
 * (cron_job:default:<name>; sidekiq-cron 1.8 saves its own copy of a job
 * it cannot see there). layout 0 (a new client's): the one that exists,
 * and a name in both is refused with HH_ERR_INVALID (acting on one copy
 * would leave the other running); 1 or 2: that layout's copy only.
 * Applies to later calls on c; not thread-safe, as c itself.
 * Errors: HH_ERR_INVALID (NULL c, layout not 0, 1 or 2). */
HH_EXPORT int hh_cron_use_layout(hh_client *c, int layout);

/* Queue#clear: UNLINK queue:<name> and SREM queues <name> in one
 * transaction; *removed (may be NULL) gets the jobs it held. A key a
 * client wrote with another type is deleted all the same, as Queue#clear
 * deletes it: HH_OK with *removed -1, and hh_client_last_error() says what
 * it held ("key queue:q held a string, not a list"). Names as for
 * hh_queue_show. Errors: HH_ERR_INVALID, HH_ERR_REDIS. */
HH_EXPORT int hh_queue_clear(hh_client *c, const char *name, long long *removed);

/* The running jobs of every live process (Sidekiq::WorkSet, the Busy
 * page's table), oldest first: a JSON array of {"identity","thread",
 * "queue","class","jid","run_at","run_time"} read from <identity>:work
 * (or <identity>:workers, what Sidekiq 6.4 writes). Errors: HH_ERR_REDIS,
 * HH_ERR_NOMEM. */
HH_EXPORT int hh_busy(hh_client *c, char **json_out);

/* What the Web UI's dashboard reads besides hh_client_stats: the daily
 * counters stat:processed:<date> and stat:failed:<date> of the last `days`
 * UTC days (1..180, today first), and Redis's INFO figures it shows. A JSON
 * object in *json_out (free with free()): {"history": [{"date":
 * "YYYY-MM-DD", "processed": n, "failed": n}, ...], "redis": {
 * "redis_version", "uptime_in_days", "connected_clients",
 * "used_memory_human", "used_memory_peak_human"}} (a figure INFO lacks is
 * absent; a daily key that is not an integer counts 0, as Sidekiq's
 * History does). Errors: HH_ERR_INVALID, HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_stats_history(hh_client *c, int days, char **json_out);

/* What the Web UI's Metrics tab sums, per class, over the last `minutes`
 * UTC minutes (1..480, the 8 hours the per-minute keys live): runs
 * ("processed", Sidekiq's "p"), failures ("failed", "f") and run time in
 * milliseconds ("ms") from the per-minute hashes job metrics write
 * (Sidekiq 8.x's j|YYMMDD|H:MM, else 7.x's j|YYYYMMDD|H:M for a minute the
 * 8.x layout lacks: a worker writing both layouts is counted once). A JSON
 * object in *json_out (free with free()): {"minutes": n, "classes":
 * [{"class","processed","failed","ms","avg_ms"}, ...]} sorted by processed,
 * most first. Errors: HH_ERR_INVALID, HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_job_metrics_summary(hh_client *c, int minutes, char **json_out);

/* Deletes one job from queue:<name>, as the Web UI's Delete button of a
 * queue page does (Sidekiq::JobRecord#delete: LREM queue 1 <payload>):
 * payload must be the entry's exact bytes (len of them), so a job that
 * ran or moved meanwhile is not touched. Errors: HH_ERR_INVALID (names as
 * for hh_queue_show, empty payload), HH_ERR_NOTFOUND (no such entry any
 * more), HH_ERR_REDIS. */
HH_EXPORT int hh_queue_delete_job(hh_client *c, const char *name, const char *payload, size_t len);

/* One page of queue:<name> by rank, the next to run first: like
 * hh_queue_show's object but with the jobs from rank start (0-based) to
 * start + count - 1 (count 1..1000), each job also holding "payload" (the
 * entry's bytes as stored, for hh_queue_delete_job; for an entry that is
 * not UTF-8 the text with U+FFFD, its bytes being "payload_base64"'s
 * decoding). Errors: as
 * hh_queue_show, and HH_ERR_INVALID for start < 0 or count out of range. */
HH_EXPORT int hh_queue_page(hh_client *c, const char *name, long long start, size_t count, char **json_out);

/* Decodes a payload's "error_backtrace" as Sidekiq's Web UI does
 * (Job#error_backtrace: strict base64, then zlib inflate, then a JSON array
 * of lines): encoded is the string's len bytes. Returns the JSON array
 * text (malloc'd, free with free()), at most 16 MiB inflated, or NULL when
 * it is not such an encoding (hh_last_error() says which step failed) or
 * out of memory. Sidekiq 6.4 and older wrote a plain JSON array instead:
 * pass that through json yourself. Thread-safe. */
HH_EXPORT char *hh_backtrace_decode(const char *encoded, size_t len);

/* Where a jid is: a JSON array of {"where": "queue"|"in progress"|
 * "scheduled"|"retry"|"dead"|"running", ...} ("queue" and "position" from
 * the next to run; for "in progress", the "identity" whose reliable-fetch
 * list holds it, running or left by a dead process until a recovery; "score";
 * or "identity" and "thread" of a running job), empty when nowhere. Lists
 * are read in pages. The caller frees *json_out. Errors: HH_ERR_INVALID
 * (empty jid), HH_ERR_REDIS, HH_ERR_NOMEM. */
HH_EXPORT int hh_jobs_find(hh_client *c, const char *jid, char **json_out);

/* --------------------------------------------------------------- the job */

typedef struct hh_job hh_job;

/* Accessors for the job a handler or middleware is given. The returned
 * strings are owned by the job and valid until the handler returns.
 * hh_job_payload() is the job JSON exactly as fetched (len in *len if non-NULL);
 * hh_job_args() is the "args" array as compact JSON (integers beyond 64
 * bits, which Ruby allows, appear there as reals: read hh_job_payload() for
 * the exact text). Thread-safe for the thread running the job. */
HH_EXPORT const char *hh_job_jid(const hh_job *job);
HH_EXPORT const char *hh_job_class(const hh_job *job);
HH_EXPORT const char *hh_job_queue(const hh_job *job);
HH_EXPORT const char *hh_job_args(const hh_job *job);
HH_EXPORT const char *hh_job_payload(const hh_job *job, size_t *len);
/* retry_count from the payload, -1 when absent (the job never failed). */
HH_EXPORT int hh_job_retry_count(const hh_job *job);
/* Reads a top-level payload key as compact JSON; free with free(). NULL when
 * absent or on allocation failure. */
HH_EXPORT char *hh_job_get(const hh_job *job, const char *key);

/* Records why the job failed: error_class (NULL: "StandardError") and a
 * printf-style message, both stored in the retry/dead entry as Sidekiq's
 * error_class and error_message (message truncated to 10,000 bytes on a
 * UTF-8 boundary; a byte that is not UTF-8 stored as the text \xNN, as the
 * log shows it). Call before returning
 * non-zero from a handler; the last call wins. Only from the thread running
 * the job; on allocation failure the message is left out. */
HH_EXPORT void hh_job_fail(hh_job *job, const char *error_class, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Sets the backtrace lines stored as error_backtrace when the payload asks
 * for one ("backtrace": true or N), compressed as Sidekiq does.
 * lines are copied. Only from the thread running the job. */
HH_EXPORT void hh_job_set_backtrace(hh_job *job, const char *const *lines, size_t n);

/* 1 once the stop's grace period ended with this job still running (it is
 * being pushed back to its queue, or left for recovery) or, with lease_lost
 * HH_LEASE_LOST_STOP, once another process recovered it: the handler's
 * outcome will be ignored, so a long-running handler should poll this and
 * return early. Thread-safe. */
HH_EXPORT int hh_job_cancelled(const hh_job *job);

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
HH_EXPORT const char *hh_job_handler_class(const hh_job *job, size_t *len);

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
HH_EXPORT int hh_chain_next(hh_chain *chain, hh_job *job);

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

typedef enum hh_log_level { HH_LOG_DEBUG = 0, HH_LOG_INFO = 1, HH_LOG_WARN = 2, HH_LOG_ERROR = 3 } hh_log_level;

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

/* What a worker does with a job of a Sidekiq Pro batch (a "bid" in its
 * payload). Pro keeps each batch's books (pending counts, callbacks) in a
 * closed layout hiredhand cannot update: either way the first job of each
 * batch is logged at WARN and every such job is counted
 * (hh_manager_stats.batch_jobs). */
typedef enum hh_batch_jobs {
    HH_BATCH_JOBS_RUN = 0, /* run it (the batch's callbacks never fire) */
    HH_BATCH_JOBS_SKIP = 1 /* do not run it: it goes, unchanged, into the
                            * schedule set 5 s later, back to its queue then,
                            * for a Ruby (Pro) process serving that queue */
} hh_batch_jobs;

typedef struct hh_manager_options {
    size_t struct_size;            /* sizeof(hh_manager_options): see "Structs
                                * that can grow" */
    hh_redis_options redis;        /* read by its own struct_size */
    const hh_queue_weight *queues; /* NULL/0: the single queue "default" */
    size_t nqueues;
    int concurrency;              /* worker threads; default 10 */
    double shutdown_timeout;      /* seconds to let jobs finish on stop; 25 */
    const char *tag;              /* Busy page tag; default "" */
    const char *const *labels;    /* Busy page labels; NULL-terminated, or NULL */
    const char *identity;         /* NULL: "<hostname>:<pid>:<12 hex>" with
                                * $DYNO or gethostname(); fixed: a stable name
                                * whose in-progress lists are recovered at
                                * start. Checked as hh_name_check() says:
                                * e.g. "queue:default", "retry" or "queue"
                                * are refused. tag, labels, queue names and
                                * redis.ns are checked too. */
    hh_fetch_mode fetch;          /* default HH_FETCH_RELIABLE */
    double heartbeat_interval;    /* seconds between beats; default 5 */
    int max_retries;              /* for "retry": true; default 25 */
    long dead_max_jobs;           /* default 10000 */
    double dead_timeout;          /* seconds; default 15552000 (180 days) */
    double poll_interval_average; /* scheduler, seconds (0.1 or more); 0: average_scheduled_poll_interval
                                   * x processes */
    double recovery_interval;     /* orphan scan period, seconds; default 60 */
    int max_recoveries;           /* recoveries before a job goes dead; 3 */
    const char *version;          /* "version" shown to 7.x/8.x Web UIs; "6.4.1" */
    hh_log_fn log;                /* NULL: lines to stderr */
    void *log_udata;
    hh_log_level log_level;          /* default HH_LOG_INFO */
    const char *http_bind;           /* "HOST:PORT" or "PORT" (127.0.0.1) to serve
                                * /healthz, /stats and /metrics; NULL: off */
    double liveness_max_age;         /* /healthz is 503 once the last acknowledged
                                * heartbeat is older than this; default 30 s */
    hh_lease_lost_policy lease_lost; /* default HH_LEASE_LOST_STOP */
    const char *http_token;          /* NULL (default): /stats and /metrics are
                                * open to whoever reaches http_bind. Else
                                * they answer 401 unless the request has
                                * "Authorization: Bearer <http_token>"
                                * (1-4096 visible ASCII characters, no
                                * space; copied). /healthz stays open and
                                * tells only the status and heartbeat age. */
    /* Sidekiq's average_scheduled_poll_interval: seconds per process, scaled
     * by the number of processes in the fleet when poll_interval_average is
     * 0, so the fleet polls the scheduled and retry sets about this often
     * in all; 0.1 or more, 0: 5 */
    double average_scheduled_poll_interval;
    /* Which Sidekiq generations' Metrics tab (the Web UI's /metrics pages,
     * Sidekiq::Metrics::Query) shows the jobs this process runs: a bit set
     * of HH_JOB_METRICS_7 and HH_JOB_METRICS_8; 0: neither. Default both:
     * the two write different keys (7.x: j|<YYYYMMDD>|... and
     * <Class>-<DD>-<HH>:<M>; 8.x: j|<YYMMDD>|... and h|<Class>-...), so a
     * fleet mixing them shows every run in each. Per job class ("wrapped",
     * else "class"), as Sidekiq's metrics middleware counts: every run, its
     * failures, and the milliseconds and a 26-bucket histogram of the
     * successful runs. Written at each heartbeat and at the stop, as Sidekiq
     * does; best-effort as Sidekiq's: a write Redis refuses is dropped
     * (logged), and never holds a job. */
    int job_metrics;
    hh_batch_jobs batch_jobs; /* default HH_BATCH_JOBS_RUN */
    /* The periodic-job poller (sidekiq-cron's Poller, on its keys; see
     * docs/periodic-jobs.md): average seconds between polls, each wait
     * drawn in [0.5, 1.5) x this as Sidekiq's pollers draw it. Default 30,
     * sidekiq-cron's cron_poll_interval; 0 turns the poller off (as 0
     * does in sidekiq-cron); else 0.1 or more. Each due tick of an enabled
     * job is enqueued once however many processes, Ruby or hiredhand,
     * poll. */
    double cron_poll_interval;
    /* sidekiq-cron 2.x namespaces polled (cron_jobs:<namespace>), copied;
     * NULL or 0 of them: "default" only, sidekiq-cron's own default
     * (available_namespaces = ["default"]). The 1.x set cron_jobs is read
     * too, whatever this says. Names are 1-255 bytes without ':' or
     * spaces; "*" is refused. "auto" stands for every namespace of a
     * cron_jobs:<namespace> key in Redis at each poll, and "default"
     * (sidekiq-cron 2.x's available_namespaces = :auto, found by SCAN). */
    const char *const *cron_namespaces;
    size_t ncron_namespaces;
} hh_manager_options;

#define HH_JOB_METRICS_7 1 /* hh_manager_options.job_metrics: Sidekiq 7.x's layout */
#define HH_JOB_METRICS_8 2 /* Sidekiq 8.x's layout */

/* Fills *o (and o->redis) with the defaults documented above and sets
 * struct_size. Thread-safe. */
HH_EXPORT void hh_manager_options_init(hh_manager_options *o);

/* The limits hh_manager_options_check() applies, public so that a caller
 * (the CLI) can state the accepted range in its own words. */
#define HH_CONCURRENCY_LIMIT 1000         /* concurrency: 1 to this */
#define HH_WEIGHT_LIMIT 1000000           /* a queue's weight: 0 to this */
#define HH_HEARTBEAT_INTERVAL_MIN 0.1     /* seconds */
#define HH_HEARTBEAT_INTERVAL_MAX 30.0    /* seconds */
#define HH_RETRIES_LIMIT 1000000          /* max_retries and max_recoveries: 0 to this */
#define HH_DEAD_MAX_JOBS_LIMIT 100000000L /* dead_max_jobs: at most this */

/* Checks options without creating anything, as hh_manager_new() does
 * first: concurrency 1 to 1000, heartbeat_interval 0.1 to 30 s,
 * shutdown_timeout >= 0, at most HH_QUEUES_LIMIT queues with weights 0 to
 * 1000000, max_retries and max_recoveries at most 1000000, dead_max_jobs
 * at most 100000000, the enums in range, job_metrics a set of
 * HH_JOB_METRICS_7 and HH_JOB_METRICS_8, the Redis URL, and the identity,
 * namespace, queue names, tag and labels as hh_name_check() says, and
 * http_bind: parsed, then bound and closed at once, so that a port in use
 * is refused here rather than at hh_manager_start() (hh_manager_new()
 * parses it only: the port is taken at start). Returns
 * HH_OK, or HH_ERR_INVALID with the reason in hh_last_error() (and in
 * errbuf, deprecated, when non-NULL). The CLI prints this reason: one set
 * of limits.
 * Thread-safe. */
HH_EXPORT int hh_manager_options_check(const hh_manager_options *o, char *errbuf, size_t errlen);

/* Creates a manager (no threads, no connection yet). Returns NULL with *err
 * set: HH_ERR_INVALID (options hh_manager_options_check() refuses, but
 * for a port in use, which hh_manager_start() finds; the
 * reason is in hh_last_error() and logged through opts->log at
 * HH_LOG_ERROR), HH_ERR_NOMEM. Free with hh_manager_free(). */
HH_EXPORT hh_manager *hh_manager_new(const hh_manager_options *opts, int *err);

/* Stops (if running, waiting for the stop to finish) and frees. NULL is a
 * no-op. If the stop left threads behind (a C handler still running, which
 * cannot be killed safely, or a Redis call that outlived the deadline), the
 * manager is deliberately not freed, so they never touch freed memory:
 * exit the process instead. */
HH_EXPORT void hh_manager_free(hh_manager *m);

/* Registers the handler for jobs whose "class" equals klass exactly (case
 * and "::" included; the whole JSON string: a class holding "\u0000", such
 * as "T\u0000Evil", is not "T" and matches no handler). Active Job payloads
 * match by their "wrapped" class (hh_job_handler_class()). klass "*" is the
 * catch-all: it takes every class without a handler of its own (an exact
 * handler wins; then "*"; then the default handler below; then NameError).
 * Before hh_manager_start() only. Errors:
 * HH_ERR_INVALID, HH_ERR_EXISTS (already registered: hh_last_error() names
 * the file each of the two handlers' code is in, so two plug-ins claiming
 * one class are told apart), HH_ERR_NOMEM, HH_ERR_STATE (started). The
 * manager remembers the first of these errors but HH_ERR_STATE:
 * hh_manager_start() then refuses to start, returning HH_ERR_INVALID with
 * that error's reason, so a plug-in that ignores the return value does not
 * run with another handler (or none) in place of its own. */
HH_EXPORT int hh_manager_register(hh_manager *m, const char *klass, hh_handler_fn fn, void *udata);

/* Registers a handler for every class without one of its own (the CLI uses
 * it to report unknown classes). Without it, such a job fails with Sidekiq's
 * NameError. Before start only. Errors: HH_ERR_STATE. */
HH_EXPORT int hh_manager_register_default(hh_manager *m, hh_handler_fn fn, void *udata);

/* Whether `klass` has a handler of its own. Thread-safe. */
HH_EXPORT int hh_manager_has_handler(const hh_manager *m, const char *klass);

/* Appends a server middleware. Before start only. Errors: HH_ERR_INVALID,
 * HH_ERR_STATE, HH_ERR_NOMEM. */
HH_EXPORT int hh_manager_use(hh_manager *m, hh_middleware_fn fn, void *udata);

/* Connects, recovers this identity's leftover in-progress jobs, and starts
 * the worker, heartbeat, scheduler and recovery threads, then returns.
 * Redis being down is not an error: the threads keep reconnecting with
 * backoff. Errors: HH_ERR_STATE (started twice), HH_ERR_INVALID (an
 * hh_manager_register() failed before, or http_bind's port is in use),
 * HH_ERR_EXISTS (a fixed identity that has a live heartbeat from another
 * process), HH_ERR_IO (threads could not be created), HH_ERR_REFUSED
 * (Redis refused the password, user or db, or no sentinel that answered
 * knows the master's name: a permanent error, logged with the reason). */
HH_EXPORT int hh_manager_start(hh_manager *m);

/* Quiet: stop fetching and scheduling, finish running jobs, keep beating
 * with quiet "true" (Sidekiq's TSTP). Irreversible. Thread-safe and
 * async-signal-safe. */
HH_EXPORT void hh_manager_quiet(hh_manager *m);

/* Stop: quiet, wait up to shutdown_timeout for running jobs, then cancel
 * those still running (hh_job_cancelled()), push them back to their queues
 * (exact bytes), leave the processes set, then let hh_manager_wait() return
 * (Sidekiq's TERM). The Redis work after the grace period shares one budget
 * of min(command_timeout, 3 s) whatever Redis does, so the stop ends within
 * shutdown_timeout + that budget + a moment; threads still in a handler or
 * a Redis call then are left behind (hh_manager_detached()). Thread-safe
 * and async-signal-safe; returns at once. */
HH_EXPORT void hh_manager_stop(hh_manager *m);

/* Logs every worker thread and the job it runs (Sidekiq's TTIN).
 * Thread-safe and async-signal-safe; the dump happens on the heartbeat thread. */
HH_EXPORT void hh_manager_dump(hh_manager *m);

/* Blocks until the manager stopped (by hh_manager_stop, a TERM from Redis or
 * the Web UI). Returns HH_OK, or HH_ERR_EXISTS when it stopped because its
 * fixed identity proved live in another process once Redis answered (Redis
 * was down at start) or a newer process took that identity over (this one
 * was paused or cut off past its heartbeat's expiry; see lease_lost), or HH_ERR_REFUSED when Redis, once reachable, refused
 * the password, user or db (or the sentinels, once reachable, did not know
 * the master's name) before any connection had worked (later refusals, as
 * when a password is rotated, keep the reconnect backoff instead). timeout < 0 waits forever; otherwise returns
 * HH_ERR_STATE if still running after timeout seconds. */
HH_EXPORT int hh_manager_wait(hh_manager *m, double timeout);

/* After hh_manager_wait(): how many threads the stop left behind at its
 * deadline, still inside a handler (a C handler cannot be killed safely)
 * or a Redis call (Redis hung). When non-zero, hh_manager_free() leaves the
 * manager allocated, and whatever those threads may still use (handlers'
 * udata, the log sink) must stay valid until the process exits. */
HH_EXPORT int hh_manager_detached(const hh_manager *m);

/* The identity this manager beats under (valid for the manager's life). */
HH_EXPORT const char *hh_manager_identity(const hh_manager *m);

/* A worker takes at most this many queues (hh_manager_new refuses more,
 * with a log line); there is no smaller cap. */
#define HH_QUEUES_LIMIT 10000
/* One queue in a stats snapshot (an array element: never grows). */
typedef struct hh_queue_stats {
    const char *name; /* without "queue:"; valid for the manager's life */
    uint64_t fetched; /* jobs this process took from the queue */
    int64_t size;     /* LLEN at the last heartbeat; -1 before, and always
                        * -1 unless http_bind or a heartbeat hook is set
                        * (nobody reads them otherwise), and for queues past
                        * the first 64 (reading thousands of queues every
                        * beat would cost thousands of commands) */
    double latency;   /* seconds since the oldest job's enqueued_at, read
                        * at the last heartbeat (as size) */
} hh_queue_stats;

/* A snapshot of the manager's state; no Redis round trip. Set struct_size
 * (and queues, queues_cap) before hh_manager_get_stats(). */
typedef struct hh_manager_stats {
    size_t struct_size; /* sizeof(hh_manager_stats), set by the caller */
    char identity[256];
    double started_at; /* epoch seconds */
    int concurrency;
    int busy;           /* jobs running now */
    int quiet;          /* 1 once quiet or stopping */
    int stopping;       /* 1 once stop began */
    uint64_t processed; /* jobs finished since start, failed included */
    uint64_t failed;
    uint64_t recovered;              /* orphaned jobs this process pushed back */
    size_t nqueues;                  /* how many queues the worker has */
    hh_queue_stats *queues;          /* the caller's array (or NULL): the first
                               * min(nqueues, queues_cap) entries are
                               * filled, in configuration order */
    size_t queues_cap;               /* entries in queues */
    double heartbeat_last_pushed_at; /* epoch s of the last beat Redis
                                      * acknowledged (EXEC ok); 0 before */
    char heartbeat_last_error[256];  /* "" when the last beat succeeded */
    int redis_connected;             /* 1 when the heartbeat connection is up */
    uint64_t lease_lost;             /* jobs of this process that another process
                               * recovered while this one still had them
                               * (paused or cut off past the heartbeat TTL) */
    uint64_t reconciled;             /* entries of this process's in-progress lists
                               * that no thread held (a fetch reply was lost),
                               * pushed back to their queues */

    /* Readiness (/readyz) without waiting for a heartbeat. */
    int redis_reachable; /* 0 from the moment any Redis call of the worker
                          * (fetch, heartbeat, scheduler, ...) fails to reach
                          * Redis until calls go through again; 1 otherwise */

    /* Failed jobs whose outcome (retry or dead entry, or removal) Redis
     * refuses now (a wrong-typed retry or dead key, OOM, an outage): each
     * is retried until written, and its thread counts as busy meanwhile.
     * Not ready (/readyz) while above 0. */
    int outcomes_refused;

    /* Jobs basic fetch took out of Redis that Redis did not take back
     * (pushed back at a stop that reached its deadline, or when no memory
     * was left to run them): no longer in Redis, each logged at ERROR with
     * its whole payload to push again. Always 0 with reliable fetch, whose
     * jobs stay in the in-progress list. `hiredhand work` exits with
     * status 4 when this is above 0 at its end. */
    uint64_t not_pushed_back;

    /* "" when ready as far as the handlers know; else "SOURCE: REASON" of
     * the oldest problem a handler reported with hh_manager_set_unready()
     * and has not cleared (/readyz answers 503 with it). */
    char unready[256];

    /* Jobs of Sidekiq Pro batches (with a "bid") fetched since start: run
     * or skipped as hh_manager_options.batch_jobs says. */
    uint64_t batch_jobs;

    /* Periodic jobs (sidekiq-cron's), as the last poll of this process saw
     * them (all 0 while the poller is off or has not polled): the jobs,
     * those disabled, those it cannot run (an expression the parser
     * refuses, a message that is no job), and the earliest next tick of an
     * enabled job (Unix seconds; 0: none). cron_enqueued counts the ticks
     * this process enqueued since start. */
    long cron_jobs, cron_disabled, cron_broken;
    int64_t cron_next;
    uint64_t cron_enqueued;
} hh_manager_stats;

/* Copies a consistent snapshot into *out (its first out->struct_size
 * bytes; the queues into out->queues, up to out->queues_cap). Thread-safe,
 * lock-brief, no I/O, no allocation. Errors: HH_ERR_INVALID (NULL
 * argument). */
HH_EXPORT int hh_manager_get_stats(hh_manager *m, hh_manager_stats *out);

/* Called on the heartbeat thread after every heartbeat attempt: ok is 1 when
 * Redis acknowledged the beat, stats is the snapshot after it (its queues
 * array holds the first 64 queues, valid during the call). Must not
 * block for long (it delays the next beat). Set before start. */
typedef void (*hh_heartbeat_hook_fn)(int ok, const hh_manager_stats *stats, void *udata);
HH_EXPORT int hh_manager_on_heartbeat(hh_manager *m, hh_heartbeat_hook_fn fn, void *udata);

/* For handlers and plug-ins whose own resources are down (a program none
 * of whose processes starts, a database they cannot reach): marks the
 * worker not ready, so /readyz answers 503 with "SOURCE: REASON" and
 * hh_manager_stats.unready holds it, until the same source calls again with
 * reason NULL. Fetching goes on (the jobs that fail take the retry path as
 * any failure): it is a signal for the operator and the orchestrator, as
 * the Redis-side reasons of /readyz are. Each source holds one problem (a
 * new reason replaces its old one); at most 16 sources at once. source and
 * reason are copied (cut at 63 and 189 bytes). Sidekiq has no readiness of
 * its own. Thread-safe; any time between hh_manager_new and
 * hh_manager_free. Errors: HH_ERR_INVALID (m or source NULL, source
 * empty), HH_ERR_NOMEM (a 17th source). Clearing a source that holds no
 * problem is HH_OK. */
HH_EXPORT int hh_manager_set_unready(hh_manager *m, const char *source, const char *reason);

/* Logs through the manager's sink (for handlers and plug-ins). Thread-safe. */
HH_EXPORT void hh_manager_log(hh_manager *m, hh_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------ log lines */

/* The layouts of Sidekiq 6.4's log formatters (lib/sidekiq/logger.rb). */
typedef enum hh_log_format {
    HH_LOG_FORMAT_TEXT = 0, /* Pretty: "2026-11-30T22:35:01.123Z pid=42 tid=3kq
                             * class=HardWorker jid=0a1b... elapsed=0.012
                             * INFO: done" (class, jid and elapsed only on a
                             * line logged while a job runs; elapsed only on
                             * its done/fail line) */
    HH_LOG_FORMAT_JSON = 1  /* JSON: {"ts":"...Z","pid":42,"tid":"3kq",
                             * "lvl":"INFO","msg":"done","ctx":{"class":..,
                             * "jid":..,"elapsed":0.012}} ("ctx" only with a
                             * job) */
} hh_log_format;

/* Formats one log line for a log sink (hh_log_fn) in Sidekiq's layout,
 * with the context of the job the calling thread runs: call it from the
 * sink itself. Every job logs "start" at HH_LOG_INFO before its middleware
 * and handler run, and "done" or "fail" after, with the elapsed seconds
 * (rounded to ms) in the context, as Sidekiq's JobLogger does; the class
 * is "wrapped" for ActiveJob jobs. Control characters in the context are
 * escaped as in msg. Returns a malloc'd line without a newline (free with
 * free()), NULL when out of memory. Thread-safe. */
HH_EXPORT char *hh_log_format_line(hh_log_level level, const char *msg, hh_log_format format);

/* ---------------------------------------------------------- plug-ins */

/* A shared object loaded with `hiredhand work --require x.so` exports this
 * symbol; it registers its handlers/middleware and returns 0 (non-zero
 * aborts start-up). It gets the manager only (no arguments). */
#define HH_PLUGIN_INIT_SYMBOL "hh_plugin_init"
typedef int (*hh_plugin_init_fn)(hh_manager *m);

#ifdef __cplusplus
}
#endif
#endif /* HIREDHAND_H */
