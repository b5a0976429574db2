/* redis.h -- connections to Redis (TCP, TLS for rediss://, unix sockets;
 * the master found through Sentinel): URL parsing, connect with timeouts, AUTH
 * and SELECT, reconnect with capped backoff, connection-level error
 * detection (READONLY, UNBLOCKED, LOADING...), pipelines
 * and Lua scripts by EVALSHA. One hh_conn belongs to one thread (hiredis
 * contexts are not thread-safe). Touches no key by itself. */
#ifndef HH_REDIS_H
#define HH_REDIS_H

#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <stdatomic.h>
#include "conn.h"
#include "scripts.h"
#include "util.h"

/* Whether Redis refused this configuration before any connection ever
 * succeeded: a permanent error (wrong password or user, NOAUTH, NOPERM, db
 * out of range) that retrying the same settings cannot fix. A refusal once
 * a connection has worked is not reported here: it may be a password being
 * rotated, and the connections keep their backoff. Returns the reason (with
 * Redis' own text, never the password), or NULL. Thread-safe. */
const char *hh_redis_refused(hh_redis_config *cfg);

/* Parses a redis://, rediss:// (TLS) or unix:// URL (NULL: $REDIS_URL, else the default).
 * A URL without a password takes o->password, else $REDIS_PASSWORD.
 * Returns 0, or -1 with a message in err (never the password, whatever
 * the URL's shape or length). */
int hh_redis_config_parse(hh_redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen);
void hh_redis_config_free(hh_redis_config *cfg);

/* Connects if needed. Returns 0 when connected; -1 when not, after waiting
 * out the current backoff (interrupted by *cancel). Never exits. */
int hh_conn_ready(hh_conn *c);

/* Marks the connection broken with a reason; the next hh_conn_ready()
 * reconnects. */
void hh_conn_fail(hh_conn *c, const char *why);

/* Runs one command (hiredis format string, %b for binary-safe payloads).
 * Returns the reply (freeReplyObject it), or NULL when the connection failed
 * or Redis answered a connection-level error (then the connection is
 * dropped). Ordinary error replies (WRONGTYPE...) are returned as replies. */
redisReply *hh_conn_cmd(hh_conn *c, const char *fmt, ...);
redisReply *hh_conn_cmdargv(hh_conn *c, int argc, const char **argv, const size_t *lens);
/* Like hh_conn_cmdargv for a command that blocks up to block_s seconds: the
 * socket timeout is block_s + command_timeout for this call only. */
redisReply *hh_conn_cmdargv_blocking(hh_conn *c, double block_s, int argc, const char **argv, const size_t *lens);

/* Pipelines: append commands, then read all replies at once. */
typedef struct hh_pipe {
    hh_conn *c;
    int n;
    int failed;
} hh_pipe;
void hh_pipe_begin(hh_pipe *p, hh_conn *c);
void hh_pipe_add(hh_pipe *p, const char *fmt, ...);
void hh_pipe_addargv(hh_pipe *p, int argc, const char **argv, const size_t *lens);
/* Appends a command already in RESP form, taking ownership of cmd (NULL
 * marks the pipeline failed): a big value can be written straight into its
 * command, and that buffer is what goes to Redis, without another copy. */
void hh_pipe_add_formatted(hh_pipe *p, sds cmd);
/* Returns an array of p->n replies (hh_replies_free it), or NULL when the
 * connection failed (nothing to free). Connection-level errors anywhere in
 * the replies, EXEC's nested ones included, also give NULL. */
redisReply **hh_pipe_exec(hh_pipe *p);
void hh_replies_free(redisReply **r, int n);

/* Checks replies r[from..to) for error replies (a NULL element counts as
 * one). Returns the index of the first, with its text in why, or -1 when
 * none failed. */
int hh_replies_check(redisReply **r, int from, int to, char *why, size_t len);

/* Checks a transaction inside a pipeline's replies, element by element:
 * MULTI at r[multi], the queued commands, EXEC at r[exec]. Returns 0 when
 * every command succeeded; else -1 with Redis' own message in why: a
 * command refused when queued (OOM...; EXEC then aborts and writes
 * nothing), EXECABORT, or the error of a command inside EXEC's array (the
 * others were applied: MULTI is no rollback), whose index in that array
 * goes to *failed_at (else -1; failed_at may be NULL). */
int hh_tx_check(redisReply **r, int multi, int exec, char *why, size_t len, int *failed_at);

/* EVALSHA of a script from scripts.h, loading it on first use and again on
 * NOSCRIPT (after a Redis restart). A script flagged to run over maxmemory
 * (HH_LUA_ALLOW_OOM) is loaded without its flags when the server refuses
 * them (Redis before 7.0; hh_script_flags_refused), and stays so on this
 * connection until it reconnects. Returns a reply or NULL as hh_conn_cmd. */
/* The text of script id: whole, or (plain non-zero) without its shebang
 * line, for servers without script flags. Static storage. */
const char *hh_script_source(hh_script_id id, int plain);
/* Whether c runs scripts without their flags: its server is older than
 * Redis 7.0, or refused them. For EVAL of a script's text in a pipeline
 * (hh_script_source(id, hh_conn_plain_scripts(c))). */
int hh_conn_plain_scripts(const hh_conn *c);
/* Whether r, the reply to SCRIPT LOAD of a flagged script, says the server
 * does not take its shebang (an ERR reply: a compile error on Redis 6, an
 * unknown flag on 7.x), so the script without it is to be loaded instead;
 * 0 for a transient refusal (LOADING, BUSY), an ACL one, or no error. */
int hh_script_flags_refused(const redisReply *r);
redisReply *hh_conn_eval(hh_conn *c, hh_script_id id, int nkeys, const char **keys, const size_t *keylens, int nargs,
                         const char **args, const size_t *arglens);

/* Whether a reply is an error, and is a connection-level one. */
int hh_reply_is_error(const redisReply *r);
int hh_error_is_connection_level(const char *msg);

/* Formats a sorted-set score or float timestamp with 17 significant
 * digits (round-trips a double exactly). buf needs 32 bytes. */
void hh_fmt_double(char *buf, size_t len, double v);

#endif
