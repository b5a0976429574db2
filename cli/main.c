/* main.c -- `hiredhand` entry point: dispatches to the subcommands. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const char usage[] =
    "usage: hiredhand <command> [options]\n"
    "\n"
    "commands:\n"
    "  work        run jobs from Redis (see hiredhand work --help)\n"
    "  push        push a job: hiredhand push CLASS [ARGS_JSON] [-q QUEUE] [--in S | --at EPOCH]\n"
    "  stats       what Sidekiq::Stats shows (--json for machines)\n"
    "  processes   live processes, as the Web UI's Busy page (--json)\n"
    "  quiet ID    quiet a process, as the Web UI's Quiet button\n"
    "  stop ID     stop a process, as the Web UI's Stop button\n"
    "  dump ID     ask a process to log what each thread runs (TTIN)\n"
    "  version     print the version\n"
    "\n"
    "Every command takes -r/--redis URL (default $REDIS_URL, else redis://127.0.0.1:6379/0),\n"
    "--redis-password-file FILE (used when the URL has no password; else $REDIS_PASSWORD)\n"
    "and --namespace NS; a rediss:// (TLS) URL takes --tls-ca-file FILE, --tls-ca-dir DIR,\n"
    "--tls-cert FILE and --tls-key FILE (mutual TLS), --tls-server-name NAME and --tls-insecure\n"
    "--sentinel HOST:PORT (repeatable), --sentinel-master NAME and --sentinel-password-file FILE\n"
    "find the master through Redis Sentinel (see hiredhand work --help).\n";

int cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("hiredhand: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

/* The last password read: reachable until exit (no leak reports). */
static char *password_read;

const char *cli_password_file(const char *path) {
    free(password_read);
    password_read = NULL;
    FILE *f = fopen(path, "re");
    if (!f) {
        cli_usage_error("cannot open --redis-password-file %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&password_read, &cap, f);
    int e = errno, failed = ferror(f);
    fclose(f);
    while (n > 0 && (password_read[n - 1] == '\n' || password_read[n - 1] == '\r')) password_read[--n] = '\0';
    if (n <= 0) {
        if (failed) cli_usage_error("cannot read --redis-password-file %s: %s", path, strerror(e ? e : EIO));
        else cli_usage_error("--redis-password-file %s: the first line is empty (want the password)", path);
        free(password_read);
        password_read = NULL;
        return NULL;
    }
    return password_read;
}

int cli_parse_seconds(const char *s, double *out) {
    char *end;
    if (!s || !*s) return -1;
    double v = strtod(s, &end);
    if (*end || v < 0 || v != v || v > 1e10) return -1;
    *out = v;
    return 0;
}

int cli_check_name(hh_name_kind kind, const char *name) {
    char why[512];
    if (hh_name_check(kind, name, why, sizeof(why)) == HH_OK) return 0;
    return cli_usage_error("%s", why);
}

int cli_parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    if (!s || !*s) return -1;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
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
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("hiredhand %s\n", HH_VERSION);
        return 0;
    }
    fputs(usage, stderr);
    return cli_usage_error("unknown command '%s'", cmd);
}
