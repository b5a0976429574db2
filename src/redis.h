/* redis.h -- connections to Redis (TCP, TLS for rediss://, unix sockets;
 * the master found through Sentinel): URL parsing, connect with timeouts, AUTH
 * and SELECT, reconnect with capped backoff, connection-level error
 * detection (READONLY, UNBLOCKED, LOADING...), pipelines
 * and Lua scripts by EVALSHA. One hh__conn belongs to one thread (hiredis
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
const char *hh__redis_refused(hh__redis_config *cfg);

/* Parses a redis://, rediss:// (TLS) or unix:// URL (NULL: $REDIS_URL, else the default).
 * A URL without a password takes o->password, else $REDIS_PASSWORD.
 * Returns 0, or -1 with a message in err (never the password, whatever
 * the URL's shape or length). */
int hh__redis_config_parse(hh__redis_config *cfg, const hh_redis_options *o, char *err, size_t errlen);
void hh__redis_config_free(hh__redis_config *cfg);

/* Connects if needed. Returns 0 when connected; -1 when not, after waiting
 * out the current backoff (interrupted by *cancel). Never exits. */
int hh__conn_ready(hh__conn *c);

/* Marks the connection broken with a reason; the next hh__conn_ready()
 * reconnects. */
void hh__conn_fail(hh__conn *c, const char *why);

/* Runs one command (hiredis format string, %b for binary-safe payloads).
 * Returns the reply (freeReplyObject it), or NULL when the connection failed
 * or Redis answered a connection-level error (then the connection is
 * dropped). Ordinary error replies (WRONGTYPE...) are returned as replies. */
redisReply *hh__conn_cmd(hh__conn *c, const char *fmt, ...);
redisReply *hh__conn_cmdargv(hh__conn *c, int argc, const char **argv, const size_t *lens);
/* Like hh__conn_cmdargv for a command that blocks up to block_s seconds: the
 * socket timeout is block_s + command_timeout for this call only. */
redisReply *hh__conn_cmdargv_blocking(hh__conn *c, double block_s, int argc, const char **argv, const size_t *lens);

/* Pipelines: append commands, then read all replies at once. */
typedef struct hh__pipe {
    hh__conn *c;
    int n;
    int failed;
} hh__pipe;
void hh__pipe_begin(hh__pipe *p, hh__conn *c);
void hh__pipe_add(hh__pipe *p, const char *fmt, ...);
void hh__pipe_addargv(hh__pipe *p, int argc, const char **argv, const size_t *lens);
/* Appends a command already in RESP form, taking ownership of cmd (NULL
 * marks the pipeline failed): a big value can be written straight into its
 * command, and that buffer is what goes to Redis, without another copy. */
void hh__pipe_add_formatted(hh__pipe *p, sds cmd);
/* Returns an array of p->n replies (hh__replies_free it), or NULL when the
 * connection failed (nothing to free). Connection-level errors anywhere in
 * the replies, EXEC's nested ones included, also give NULL. */
redisReply **hh__pipe_exec(hh__pipe *p);
void hh__replies_free(redisReply **r, int n);

/* Checks replies r[from..to) for error replies (a NULL element counts as
 * one). Returns the index of the first, with its text in why, or -1 when
 * none failed. */
int hh__replies_check(redisReply **r, int from, int to, char *why, size_t len);

/* Checks a transaction inside a pipeline's replies, element by element:
 * MULTI at r[multi], the queued commands, EXEC at r[exec]. Returns 0 when
 * every command succeeded; else -1 with Redis' own message in why: a
 * command refused when queued (OOM...; EXEC then aborts and writes
 * nothing), EXECABORT, or the error of a command inside EXEC's array (the
 * others were applied: MULTI is no rollback), whose index in that array
 * goes to *failed_at (else -1; failed_at may be NULL). */
int hh__tx_check(redisReply **r, int multi, int exec, char *why, size_t len, int *failed_at);

/* EVALSHA of a script from scripts.h, loading it on first use and again on
 * NOSCRIPT (after a Redis restart). A script flagged to run over maxmemory
 * (HH_LUA_ALLOW_OOM) is loaded without its flags when the server refuses
 * them (Redis before 7.0; hh__script_flags_refused), and stays so on this
 * connection until it reconnects. Returns a reply or NULL as hh__conn_cmd. */
/* The text of script id: whole, or (plain non-zero) without its shebang
 * line, for servers without script flags. Static storage. */
const char *hh__script_source(hh__script_id id, int plain);
/* Whether c runs scripts without their flags: its server is older than
 * Redis 7.0, or refused them. For EVAL of a script's text in a pipeline
 * (hh__script_source(id, hh__conn_plain_scripts(c))). */
int hh__conn_plain_scripts(const hh__conn *c);
/* Whether r, the reply to SCRIPT LOAD of a flagged script, says the server
 * does not take its shebang (an ERR reply: a compile error on Redis 6, an
 * unknown flag on 7.x), so the script without it is to be loaded instead;
 * 0 for a transient refusal (LOADING, BUSY), an ACL one, or no error. */
int hh__script_flags_refused(const redisReply *r);
redisReply *hh__conn_eval(hh__conn *c, hh__script_id id, int nkeys, const char **keys, const size_t *keylens, int nargs,
                          const char **args, const size_t *arglens);

/* Whether a reply is an error, and is a connection-level one. */
int hh__reply_is_error(const redisReply *r);
int hh__error_is_connection_level(const char *msg);

/* Formats a sorted-set score or float timestamp with 17 significant
 * digits (round-trips a double exactly). buf needs 32 bytes. */
void hh__fmt_double(char *buf, size_t len, double v);

#endif
