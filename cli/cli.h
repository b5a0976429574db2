/* cli.h -- the hiredhand command line: shared option handling for the
 * subcommands in main.c (dispatch), work.c, exec_handler.c and inspect.c.
 * The CLI uses only the public API of include/hiredhand.h. */
#ifndef HH_CLI_H
#define HH_CLI_H

#include "hiredhand.h"

#define CLI_EXIT_USAGE 2

/* Prints "hiredhand: <msg>" on stderr and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Parses a non-negative number of seconds; returns 0 or -1. */
int cli_parse_seconds(const char *s, double *out);
/* Parses an integer in [lo, hi]; returns 0 or -1. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* 0 when hh_name_check() accepts the name, else prints why and returns
 * CLI_EXIT_USAGE. */
int cli_check_name(hh_name_kind kind, const char *name);

/* Reads a --redis-password-file: its first line, without the line end.
 * Returns the password (owned here, valid until the next call), or NULL
 * after printing a clear error (file missing or unreadable, first line
 * empty); the password itself is never printed. */
const char *cli_password_file(const char *path);
#define CLI_PASSWORD_FILE_HELP \
    "      --redis-password-file FILE  Redis password from FILE's first line, when the URL has\n" \
    "                             none (else $REDIS_PASSWORD): kept out of ps and /proc\n"

int cli_work(int argc, char **argv);

/* As PID 1 only: forks; the parent stays an init that forwards signals to
 * the child, reaps orphans and exits with the child's status (it never
 * returns). Returns 0 in the child, or when not PID 1 (init.c). */
int cli_init_split(void);
int cli_push(int argc, char **argv);
int cli_stats(int argc, char **argv);
int cli_processes(int argc, char **argv);
int cli_signal(int argc, char **argv, const char *signal);

/* --exec CLASS=COMMAND handlers. */
typedef struct cli_exec cli_exec;
/* Parses "CLASS=COMMAND" (split on blanks, no shell) and checks that the
 * program exists and is executable. Returns NULL with a message in err. */
cli_exec *cli_exec_new(const char *spec, double timeout, char *err, size_t errlen);
void cli_exec_free(cli_exec *e);
/* COMMAND split at spaces and tabs into a NULL-terminated argv (*argc words,
 * 0 for a blank command); NULL when out of memory. */
char **cli_exec_split(const char *command, size_t *argc);
void cli_exec_split_free(char **argv);
const char *cli_exec_class(const cli_exec *e);
/* Handlers' environment: the worker's without REDIS_URL, REDIS_PASSWORD
 * and the names given to cli_exec_env_drop, except the names given to
 * cli_exec_env_pass. Call before the worker starts. Return 0, or -1 for a
 * bad name (empty or with '=') or out of memory. */
int cli_exec_env_pass(const char *name);
int cli_exec_env_drop(const char *name);
/* The hh_handler_fn running the command; udata is the cli_exec. */
int cli_exec_handler(hh_job *job, void *udata);
/* Shared with serve.c: the handlers' environment (the worker's, filtered
 * as above) plus extra "NAME=value" strings; free() the array only (its
 * strings are environ's and extra's). NULL when out of memory. */
char **cli_exec_environ(char *const *extra, size_t nextra);
/* fork + exec of argv with env: in_fd as stdin, out_fd as stdout (-1: the
 * worker's), err_fd as stderr, in a process group of its own, killed with
 * the worker. Returns 0 (pid in *out) or an errno (exec failure included). */
int cli_exec_spawn(char *const *argv, char *const *env, int in_fd, int out_fd, int err_fd, pid_t *out);
/* Whether prog (a path, or a name looked up in $PATH) can be executed. */
int cli_executable(const char *prog);
/* Ruby's name for an errno ("Errno::ENOENT"), as Sidekiq reports it. */
const char *cli_errno_class(int err);
double cli_mono(void);

/* --serve CLASS=COMMAND: long-lived handler processes (serve.c), a pool
 * per class speaking a line protocol (README, "Long-lived handlers"). */
typedef struct cli_serve cli_serve;
/* Parses "CLASS=COMMAND" as cli_exec_new does; pool: processes at most
 * (started as jobs need them), max_jobs: recycle after so many (0: never),
 * timeout: per job, as --exec-timeout (0: none). NULL with err set. */
cli_serve *cli_serve_new(const char *spec, double timeout, int pool, long max_jobs, char *err, size_t errlen);
const char *cli_serve_class(const cli_serve *s);
/* Where stderr lines and process events are logged; before start. */
void cli_serve_set_manager(cli_serve *s, hh_manager *m);
/* Starts n processes (at most the pool) and reads their hellos: the eager
 * start of --serve-pool. A process that fails is logged; its slot starts
 * lazily later. Returns how many run. Before the worker starts. */
int cli_serve_prestart(cli_serve *s, int n);
/* The hh_handler_fn; udata is the cli_serve. */
int cli_serve_handler(hh_job *job, void *udata);
/* After the worker stopped: closes every process's stdin, waits up to
 * grace seconds for them to exit, then kills what is left. */
void cli_serve_shutdown(cli_serve *s, double grace);
void cli_serve_free(cli_serve *s);

#endif
