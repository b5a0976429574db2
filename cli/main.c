/* main.c -- `hiredhand` entry point: dispatches to the subcommands. It
 * depends on them; they depend on common.c, never on this file. */
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include "cli.h"

/* clang-format off */ /* the help text keeps its layout */
static const char usage[] =
    "usage: hiredhand <command> [options]\n"
    "\n"
    "commands:\n"
    "  work        run jobs from Redis (see hiredhand work --help)\n"
    "  push        push a job: hiredhand push CLASS [ARGS_JSON] [-q QUEUE] [--in S | --at EPOCH];\n"
    "              args from a file: --args-file FILE; one job per line: --bulk FILE (- is stdin)\n"
    "  stats       what Sidekiq::Stats shows (--json for machines)\n"
    "  processes   live processes, as the Web UI's Busy page (--json)\n"
    "  quiet ID    quiet a process, as the Web UI's Quiet button\n"
    "  stop ID     stop a process, as the Web UI's Stop button\n"
    "  dump ID     ask a process to log what each thread runs (TTIN)\n"
    "  retries     list, show, retry, delete or kill jobs of the retry set\n"
    "  scheduled   list, show, enqueue, delete or kill scheduled jobs\n"
    "  dead        list, show, retry, delete or clear dead jobs\n"
    "  queues      list queues, show one, clear one\n"
    "  busy        the running jobs of every process\n"
    "  jobs find JID  where a job is: queue, scheduled, retry, dead, running\n"
    "  top         a live view: rates, queues, processes (see hiredhand top --help)\n"
    "  version     print the version\n"
    "\n"
    "Every command takes -r/--redis URL (default $REDIS_URL, else redis://127.0.0.1:6379/0),\n"
    "--redis-password-file FILE (used when the URL has no password; else $REDIS_PASSWORD)\n"
    "and --namespace NS; a rediss:// (TLS) URL takes --tls-ca-file FILE, --tls-ca-dir DIR,\n"
    "--tls-cert FILE and --tls-key FILE (mutual TLS), --tls-server-name NAME and --tls-insecure;\n"
    "--sentinel HOST:PORT (repeatable), --sentinel-master NAME and --sentinel-password-file FILE\n"
    "find the master through Redis Sentinel (see hiredhand work --help).\n"
    "\n"
    "Exit status of every command but work: 0 done, 1 not found (no such jid, queue entry\n"
    "or process), 2 usage error (a password, user or db Redis refuses, or a master name no\n"
    "sentinel knows, included) or not confirmed, 3 Redis unreachable or failing.\n";
/* clang-format on */

int main(int argc, char **argv) {
#ifdef __GLIBC__
    /* Job payloads can be tens of MB. glibc raises its mmap threshold to
     * the size of each big block freed (up to 32 MiB), after which such
     * blocks come from the heap and their pages stay resident when freed,
     * and growing buffers are copied instead of remapped. A fixed threshold
     * keeps every big buffer mmapped: returned to the system when freed. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    const char *cmd = argv[1];
    argc--, argv++;
    if (!strcmp(cmd, "work")) return cli_work(argc, argv);
    if (!strcmp(cmd, "push")) return cli_push(argc, argv);
    if (!strcmp(cmd, "stats")) return cli_stats(argc, argv);
    if (!strcmp(cmd, "processes")) return cli_processes(argc, argv);
    if (!strcmp(cmd, "quiet")) return cli_signal(argc, argv, "TSTP");
    if (!strcmp(cmd, "stop")) return cli_signal(argc, argv, "TERM");
    if (!strcmp(cmd, "dump")) return cli_signal(argc, argv, "TTIN");
    if (!strcmp(cmd, "retries")) return cli_jobset(argc, argv, HH_JOBSET_RETRY);
    if (!strcmp(cmd, "scheduled")) return cli_jobset(argc, argv, HH_JOBSET_SCHEDULED);
    if (!strcmp(cmd, "dead")) return cli_jobset(argc, argv, HH_JOBSET_DEAD);
    if (!strcmp(cmd, "queues")) return cli_queues(argc, argv);
    if (!strcmp(cmd, "busy")) return cli_busy(argc, argv);
    if (!strcmp(cmd, "jobs")) return cli_jobs(argc, argv);
    if (!strcmp(cmd, "top")) return cli_top(argc, argv);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("hiredhand %s\n", hh_version()); /* the library's, at run time */
        return 0;
    }
    fputs(usage, stderr);
    return cli_usage_error("unknown command '%s'", cmd);
}
