/* cli.h -- the hiredhand command line: the subcommands main.c dispatches
 * to (work.c, inspect.c, init.c, admin.c for job management) and the --exec handlers (exec_handler.c,
 * exec_split.c). Their shared helpers are in common.h. The CLI uses only
 * the public API of include/hiredhand.h. */
#ifndef HH_CLI_H
#define HH_CLI_H

#include <getopt.h>
#include <stdio.h>
#include "common.h"
#include "hiredhand.h"

/* json_dumps flags for the JSON the CLI prints (top --json, the job sets'
 * --json): reals with 15 significant digits, the most a double carries
 * without the noise of its binary form (5.27505, not 5.2750500000000002),
 * which still keeps an epoch time to 10 us; the worker's /stats prints
 * them so too. Use with <jansson.h>. */
#define CLI_JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* The connection options every command that talks to Redis takes
 * (redis_opts.c): -r/--redis, --redis-password-file, --namespace, the
 * --tls-* settings of a rediss:// URL and the --sentinel* ones. Each is one
 * entry of cli_redis_opts: its getopt entry, and its --help line where the
 * commands share it (cli_redis_help). A command's getopt table is its own
 * entries with these appended (cli_longopts), and its option loop hands
 * every option to cli_redis_option first. main.c takes these (and only
 * these) before the command name too. A new connection option: a CLI_OPT_
 * constant, an entry of cli_redis_opts and a case in cli_redis_option. */
enum {
    CLI_OPT_REDIS_FIRST = 1900, /* the range of the ids below, with 'r' */
    CLI_OPT_NAMESPACE = CLI_OPT_REDIS_FIRST,
    CLI_OPT_PASSWORD_FILE,
    CLI_OPT_TLS_CA_FILE,
    CLI_OPT_TLS_CA_DIR,
    CLI_OPT_TLS_CERT,
    CLI_OPT_TLS_KEY,
    CLI_OPT_TLS_SERVER_NAME,
    CLI_OPT_TLS_INSECURE,
    CLI_OPT_SENTINEL,
    CLI_OPT_SENTINEL_MASTER,
    CLI_OPT_SENTINEL_PASSWORD,
    CLI_OPT_SENTINEL_PASSWORD_FILE,
    CLI_OPT_REDIS_END
};
typedef struct cli_redis_opt {
    const char *name; /* the long option, without -- */
    int id;           /* 'r' or a CLI_OPT_ constant */
    const char *arg;  /* the argument's name in --help; NULL: takes none */
    const char *help; /* its lines in cli_redis_help ('\n' between, continuation
                         lines from column 30); NULL: each command words it */
} cli_redis_opt;
/* Ended by an entry with a NULL name. */
extern const cli_redis_opt cli_redis_opts[];
/* getopt_long's table: own's entries (up to their zero entry), then each
 * connection option whose id own does not hold already, then a zero entry.
 * In one static table, which each call fills again: one command's per
 * process (work's second pass and its config file reuse it). */
const struct option *cli_longopts(const struct option *own);
/* Prints the help lines of the connection options that have one, in the
 * layout of `work --help` (the man page reads it). */
void cli_redis_help(FILE *f);
/* An option getopt_long returned: when it is a connection option, stores
 * arg into *o (checking it: an empty URL, a bad namespace, an unreadable
 * password file) and returns 0, or CLI_EXIT_USAGE after printing why;
 * returns -1 when opt is none of them (the command's own). */
int cli_redis_option(int opt, const char *arg, hh_redis_options *o);
/* Checks the options, warns about --tls-insecure and connects. NULL after
 * printing why, with *rc set: CLI_EXIT_USAGE for bad options or a refused
 * connection (wrong password, not a master), else redis_exit. */
hh_client *cli_client_open(const hh_redis_options *o, int redis_exit, int *rc);

int cli_work(int argc, char **argv);

/* systemd's notification protocol (notify.c). cli_notify_init: before
 * hh_manager_start(), a no-op without NOTIFY_SOCKET; returns 0.
 * cli_notify_tick: from the signal loop, often (READY=1, watchdog pings).
 * cli_notify_stopping: when a stop begins (STOPPING=1, once). */
int cli_notify_init(hh_manager *m, double heartbeat_interval);
void cli_notify_tick(hh_manager *m);
void cli_notify_stopping(void);

/* As PID 1 only: forks; the parent stays an init that forwards signals to
 * the child, reaps orphans and exits with the child's status (it never
 * returns). Returns 0 in the child, or when not PID 1 (init.c). */
int cli_init_split(void);
int cli_push(int argc, char **argv);
int cli_stats(int argc, char **argv);
int cli_processes(int argc, char **argv);
int cli_signal(int argc, char **argv, const char *signal);
/* Job management (admin.c). */
int cli_jobset(int argc, char **argv, hh_jobset set);
int cli_queues(int argc, char **argv);
int cli_busy(int argc, char **argv);
int cli_jobs(int argc, char **argv);
/* The live view (top.c). */
int cli_top(int argc, char **argv);
/* `hiredhand cron` (cron.c). */
int cli_cron(int argc, char **argv);
/* Checks one --cron-job JSON (a config file's cron: entry) before the
 * start: an object with a "name", only the keys hh_cron_spec takes
 * (name, cron, class/klass, queue, args, description, namespace, retry,
 * active_job, date_as_argument, status, layout), layout 1 or 2. 0, or
 * CLI_EXIT_USAGE with the reason on stderr, naming the key. */
int cli_cron_job_check(const char *json);
/* Saves the config file's cron: jobs (JSON objects, source "schedule") and
 * deletes the schedule's jobs that left it in namespaces ns, as
 * sidekiq-cron's schedule loader does. 0, or an exit status when Redis
 * cannot be reached; a job refused is reported and skipped. */
int cli_cron_load_schedule(const hh_redis_options *ro, const char *const *jobs, size_t n, const char *const *ns,
                           size_t nns);

/* --exec CLASS=COMMAND handlers. */
typedef struct cli_exec cli_exec;
/* Parses "CLASS=COMMAND" (split on blanks, no shell) and checks that no
 * word holds shell syntax (cli_exec_shell_syntax) and that the program
 * exists and is executable. Returns NULL with a message in err. */
cli_exec *cli_exec_new(const char *spec, double timeout, char *err, size_t errlen);
void cli_exec_free(cli_exec *e);
/* COMMAND split at spaces and tabs into a NULL-terminated argv (*argc words,
 * 0 for a blank command); NULL when out of memory. */
char **cli_exec_split(const char *command, size_t *argc);
void cli_exec_split_free(char **argv);
/* Whether a word of argv (cli_exec_split's) holds shell syntax: a quote, a
 * backslash, `$` or a backtick, a leading `~`, or an operator (`|`, `&&`,
 * `;`, `>`, `<` as a word, at a word's start or `;|&` at its end). No
 * shell ever sees COMMAND, so such a word reaches the program as written
 * (`sh -c "echo hi"` runs `"echo` and fails every job): 1 with the word and
 * the remedy in why, else 0. */
int cli_exec_shell_syntax(char *const *argv, char *why, size_t whylen);
const char *cli_exec_class(const cli_exec *e);
/* Handlers' environment: the worker's without REDIS_URL, REDIS_PASSWORD
 * and the names given to cli_exec_env_drop, except the names given to
 * cli_exec_env_pass. Call before the worker starts. Return 0, or -1 for a
 * bad name (empty or with '=') or out of memory. */
int cli_exec_env_pass(const char *name);
int cli_exec_env_drop(const char *name);
/* Where an --exec handler's stdout goes (--exec-stdout). */
typedef enum { CLI_EXEC_STDOUT_INHERIT = 0, CLI_EXEC_STDOUT_LOG, CLI_EXEC_STDOUT_DISCARD } cli_exec_stdout;
void cli_exec_set_stdout(cli_exec *e, cli_exec_stdout mode);
/* The manager its stderr lines (and stdout's, when logged) are logged to. */
void cli_exec_set_manager(cli_exec *e, hh_manager *m);
/* Bytes of those lines logged per job (--exec-log-max; 0: no cap;
 * default CLI_LOG_MAX_DEFAULT). */
void cli_exec_set_log_max(cli_exec *e, size_t bytes);
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
/* Raises the soft limit on open files to the hard one (at most 1,048,576)
 * for the worker: each running --exec job holds four pipe ends and each
 * --serve process three, and systemd's and most shells' soft limit of
 * 1,024 ran out at -c 300 (every job then failed with EMFILE and used up a
 * retry). Handlers get the limit the worker was started with back (a
 * program that select()s breaks past 1,024). Returns the soft limit now
 * (0 unknown, RLIM_INFINITY as is). */
unsigned long long cli_exec_raise_nofile(void);
/* Whether prog (a path, or a name looked up in $PATH) can be executed. */
int cli_executable(const char *prog);
/* Ruby's name for an errno ("Errno::ENOENT"), as Sidekiq reports it. */
const char *cli_errno_class(int err);
double cli_mono(void);

/* --serve CLASS=COMMAND: long-lived handler processes (serve.c), a pool
 * per class speaking a line protocol (docs/handlers.md). */
typedef struct cli_serve cli_serve;
/* Parses "CLASS=COMMAND" as cli_exec_new does; pool: processes at most
 * (started as jobs need them), max_jobs: recycle after so many (0: never),
 * timeout: per job, as --exec-timeout, from the job's start: its wait for
 * a process and that process's hello count (0: none). NULL with err set. */
cli_serve *cli_serve_new(const char *spec, double timeout, int pool, long max_jobs, char *err, size_t errlen);
const char *cli_serve_class(const cli_serve *s);
/* Where stderr lines and process events are logged; before start. */
void cli_serve_set_manager(cli_serve *s, hh_manager *m);
/* Starts the class's keeper thread, which reads idle processes' stderr and stdout
 * (a handler never blocks writing them between jobs), and with eager > 0
 * (--serve-pool) starts that many processes (at most the pool) at once,
 * reads their hellos while the worker runs, and starts each again (after
 * the backoff) when it fails its hello or ends; the class's jobs wait for
 * a process meanwhile. Returns at once: 0, or an errno when there is no
 * thread (processes then start lazily). */
int cli_serve_start(cli_serve *s, int eager);
/* Seconds a new process has to say hello (default 30). */
void cli_serve_set_hello_timeout(cli_serve *s, double seconds);
/* Bytes of a process's stderr logged per job, and between jobs
 * (--exec-log-max; 0: no cap; default CLI_LOG_MAX_DEFAULT). */
void cli_serve_set_log_max(cli_serve *s, size_t bytes);
/* The hh_handler_fn; udata is the cli_serve. */
int cli_serve_handler(hh_job *job, void *udata);
/* After the worker stopped: closes every process's stdin, waits up to
 * grace seconds for them to exit, then kills what is left. */
void cli_serve_shutdown(cli_serve *s, double grace);
void cli_serve_free(cli_serve *s);

#endif
