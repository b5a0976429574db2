/* main.c -- `hiredhand` entry point: dispatches to the subcommands. It
 * depends on them; they depend on common.c, never on this file. */
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "web.h"

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
    "  cron        periodic jobs (sidekiq-cron's): list, show, add, enable, disable, delete,\n"
    "              enqueue (see hiredhand cron --help)\n"
    "  web         a web dashboard: --http [HOST:]PORT (see hiredhand web --help)\n"
    "  version     print the version\n"
    "\n"
    "Every command takes -r/--redis URL (default $REDIS_URL, else redis://127.0.0.1:6379/0),\n"
    "--redis-password-file FILE (used when the URL has no password; else $REDIS_PASSWORD)\n"
    "and --namespace NS; a rediss:// (TLS) URL takes --tls-ca-file FILE, --tls-ca-dir DIR,\n"
    "--tls-cert FILE and --tls-key FILE (mutual TLS), --tls-server-name NAME and --tls-insecure;\n"
    "--sentinel HOST:PORT (repeatable), --sentinel-master NAME and --sentinel-password-file FILE\n"
    "find the master through Redis Sentinel (see hiredhand work --help).\n"
    "\n"
    "hiredhand help COMMAND (or COMMAND --help): that command's options.\n"
    "\n"
    "Exit status of every command but work: 0 done, 1 not found (no such jid, queue entry\n"
    "or process; cron: 4, see hiredhand cron --help), 2 usage error (a password, user or db\n"
    "Redis refuses, or a master name no sentinel knows, included) or not confirmed,\n"
    "3 Redis unreachable or failing.\n";
/* clang-format on */

/* 2 if ARG is a connection option (cli_redis_opts: the options every
 * command takes, and the only ones that may also come before the command,
 * as git allows: `hiredhand -r URL retries`) whose value is the next word,
 * 1 if it is one complete in itself (--redis=URL, -rURL, --tls-insecure),
 * 0 if it is no connection option. */
static int global_option(const char *arg) {
    for (const cli_redis_opt *r = cli_redis_opts; r->name; r++) {
        size_t n = strlen(r->name);
        if (arg[0] == '-' && arg[1] == '-' && !strncmp(arg + 2, r->name, n)) {
            if (!arg[2 + n]) return r->arg ? 2 : 1;
            if (arg[2 + n] == '=' && r->arg) return 1;
        }
        if (r->id < 128 && arg[0] == '-' && arg[1] == r->id) return arg[2] ? 1 : 2;
    }
    return 0;
}

typedef int (*command_fn)(int argc, char **argv);
static int cmd_quiet(int argc, char **argv) { return cli_signal(argc, argv, "TSTP"); }
static int cmd_stop(int argc, char **argv) { return cli_signal(argc, argv, "TERM"); }
static int cmd_dump(int argc, char **argv) { return cli_signal(argc, argv, "TTIN"); }
static int cmd_retries(int argc, char **argv) { return cli_jobset(argc, argv, HH_JOBSET_RETRY); }
static int cmd_scheduled(int argc, char **argv) { return cli_jobset(argc, argv, HH_JOBSET_SCHEDULED); }
static int cmd_dead(int argc, char **argv) { return cli_jobset(argc, argv, HH_JOBSET_DEAD); }
static int cmd_version(int argc, char **argv) {
    /* no words: `version foo` is refused as every command refuses a word
     * it does not take; the connection options, which may come before any
     * command (and main hands over), are passed over */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: hiredhand version (also --version, -V): print the version\n");
            return 0;
        }
        int kind = global_option(argv[i]);
        if (!kind) return cli_usage_error("%s: unexpected argument '%s' (it takes none)", argv[0], argv[i]);
        i += kind - 1;
    }
    printf("hiredhand %s\n", hh_version()); /* the library's, at run time */
    return 0;
}

static const struct {
    const char *name;
    command_fn fn;
} commands[] = {
    {"work", cli_work},           {"push", cli_push}, {"stats", cli_stats},     {"processes", cli_processes},
    {"quiet", cmd_quiet},         {"stop", cmd_stop}, {"dump", cmd_dump},       {"retries", cmd_retries},
    {"scheduled", cmd_scheduled}, {"dead", cmd_dead}, {"queues", cli_queues},   {"busy", cli_busy},
    {"jobs", cli_jobs},           {"top", cli_top},   {"version", cmd_version}, {"--version", cmd_version},
    {"-V", cmd_version},          {"cron", cli_cron}, {"web", cli_web},
};

static command_fn find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name)) return commands[i].fn;
    return NULL;
}

static int unknown_command(const char *name) {
    return cli_usage_error("unknown command '%s' (the commands: hiredhand help)", name);
}

static int is_help(const char *w) { return !strcmp(w, "help") || !strcmp(w, "--help") || !strcmp(w, "-h"); }

/* `help [COMMAND]` (words after "help"): the general help, or that
 * command's, as `COMMAND --help` prints it, so both spellings agree. */
static int help(int n, char **words) {
    if (!n) {
        fputs(usage, stdout);
        return 0;
    }
    if (n > 1) return cli_usage_error("help takes one command ('%s' is a second)", words[1]);
    command_fn fn = find_command(words[0]);
    if (!fn) return unknown_command(words[0]);
    char *av[] = {words[0], "--help", NULL};
    return fn(2, av);
}

int main(int argc, char **argv) {
#ifdef __GLIBC__
    /* Job payloads can be tens of MB. glibc raises its mmap threshold to
     * the size of each big block freed (up to 32 MiB), after which such
     * blocks come from the heap and their pages stay resident when freed,
     * and growing buffers are copied instead of remapped. A fixed threshold
     * keeps every big buffer mmapped: returned to the system when freed. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_EXIT_USAGE;
    }
    /* Global options before the command: skip them to find the command,
     * then hand the command its words with those options first, right
     * after its name: every command takes its options anywhere among its
     * words, so an option given again after the command wins (the last
     * value, as everywhere), and a trailing option missing its value is
     * refused rather than taking a leading option as its value. */
    int lead = 1;
    while (lead < argc && argv[lead][0] == '-' && !find_command(argv[lead]) && !is_help(argv[lead])) {
        int kind = global_option(argv[lead]);
        if (!kind)
            return cli_usage_error("%s before the command: only the Redis options (-r URL, --namespace NS, "
                                   "--tls-*, --sentinel*) may come first; give it after the command: "
                                   "hiredhand COMMAND %s ...",
                                   argv[lead], argv[lead]);
        if (kind == 2 && lead + 1 == argc) return cli_usage_error("%s needs a value", argv[lead]);
        lead += kind;
    }
    if (lead == argc) return cli_usage_error("no command after the options (the commands: hiredhand help)");
    /* help, --help, -h: after the connection options too (-r URL --help) */
    if (is_help(argv[lead])) return help(strcmp(argv[lead], "help") ? 0 : argc - lead - 1, argv + lead + 1);
    command_fn fn = find_command(argv[lead]);
    if (!fn) return unknown_command(argv[lead]);
    if (lead == 1) return fn(argc - 1, argv + 1);
    /* the command's argv: its name, the leading options, then its words */
    int nopts = lead - 1, rest = argc - lead - 1;
    char **words = malloc(sizeof *words * (size_t)argc + sizeof *words);
    if (!words) return cli_usage_error("out of memory");
    int n = 0;
    words[n++] = argv[lead];
    for (int i = 1; i <= nopts; i++) words[n++] = argv[i];
    for (int i = 1; i <= rest; i++) words[n++] = argv[lead + i];
    words[n] = NULL;
    int rc = fn(n, words);
    free(words);
    return rc;
}
