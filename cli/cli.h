/* cli.h -- the hiredhand command line: the subcommands main.c dispatches
 * to (work.c, inspect.c, init.c, admin.c for job management) and the --exec handlers (exec_handler.c,
 * exec_split.c). Their shared helpers are in common.h. The CLI uses only
 * the public API of include/hiredhand.h. */
#ifndef HH_CLI_H
#define HH_CLI_H

#include "common.h"
#include "hiredhand.h"

int cli_work(int argc, char **argv);

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

#endif
