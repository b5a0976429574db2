/* work.c -- `hiredhand work`: parses options into hh_manager_options,
 * registers --exec handlers and --require plug-ins, runs the manager and
 * turns OS signals into quiet/stop/dump (Sidekiq's INT, TERM, TSTP, TTIN),
 * and HUP into reopening the -l log file. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "config.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

enum {
    OPT_TAG = 1000,
    OPT_LABEL,
    OPT_EXEC,
    OPT_EXEC_TIMEOUT,
    OPT_REQUIRE,
    OPT_IDENTITY,
    OPT_FETCH,
    OPT_TS,
    OPT_VERSION,
    OPT_HB,
    OPT_POLL,
    OPT_POLL_PER,
    OPT_RECOVERY,
    OPT_MAXREC,
    OPT_MAXRETRY,
    OPT_DEADMAX,
    OPT_DEADTIMEOUT,
    OPT_HTTP,
    OPT_LIVENESS,
    OPT_LEASE_LOST,
    OPT_BATCH_JOBS,
    OPT_CRON_POLL,
    OPT_NO_CRON,
    OPT_CRON_NS,
    OPT_CRON_JOB,
    OPT_HELP,
    OPT_EXEC_ENV,
    OPT_EXEC_ENV_DROP,
    OPT_HTTP_TOKEN_FILE,
    OPT_SERVE,
    OPT_SERVE_POOL,
    OPT_SERVE_MAX_JOBS,
    OPT_LOG_FORMAT = 1100,
    OPT_SERVE_HELLO_TIMEOUT = 1150, /* --serve options: their own range, for merges */
    OPT_LOG_LEVEL,                  /* log options: their own range, for merges */
    OPT_EXEC_STDOUT = 1200,
    OPT_EXEC_LOG_MAX = 1250, /* its own range, for merges */
    OPT_JOB_METRICS = 1300   /* its own range, for merges */
};

/* The -l file; SIGHUP swaps it for a new one at the same path (logrotate),
 * so every write takes log_mu. */
static FILE *log_file;
static const char *log_path;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
/* A manager the stop left threads in is never freed: kept reachable here
 * until the process exits (for leak checkers). */
static hh_manager *left_manager;

static hh_log_format log_format = HH_LOG_FORMAT_TEXT;

static void log_line(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    char *line = hh_log_format_line(level, msg, log_format); /* Sidekiq's layout */
    pthread_mutex_lock(&log_mu);
    FILE *f = log_file ? log_file : stderr;
    if (line) fprintf(f, "%s\n", line);
    else fprintf(f, "pid=%d: %s\n", (int)getpid(), msg); /* out of memory */
    fflush(f);
    pthread_mutex_unlock(&log_mu);
    free(line);
}

/* SIGHUP: logrotate moved the file away; open a new one at the same path.
 * Lines go on to the old file until the new one is open; if it cannot be
 * opened they keep going there. No -l: nothing to reopen. */
static void reopen_log(hh_manager *m) {
    if (!log_path) {
        hh_manager_log(m, HH_LOG_INFO, "SIGHUP ignored: no log file (-l) to reopen");
        return;
    }
    FILE *f = fopen(log_path, "ae");
    if (!f) {
        int e = errno;
        hh_manager_log(m, HH_LOG_WARN, "SIGHUP: cannot reopen log file %s: %s; logging on to the old one", log_path,
                       strerror(e));
        /* the old file is likely gone from view (its folder removed or
         * moved): stderr (the journal under systemd) says it too */
        fprintf(stderr, "hiredhand: SIGHUP: cannot reopen log file %s: %s; logging on to the old one\n", log_path,
                strerror(e));
        return;
    }
    pthread_mutex_lock(&log_mu);
    FILE *old = log_file;
    log_file = f;
    pthread_mutex_unlock(&log_mu);
    if (old) fclose(old);
    hh_manager_log(m, HH_LOG_INFO, "SIGHUP: log file %s reopened", log_path);
}

#define MAX_ITEMS 64

/* The -q names and weights: static so that a usage error may return at
 * any point without leaking them (leak checkers see them reachable). */
static hh_queue_weight *queues;
static char **queue_names;
/* Per -q: 1 when it gave weight 0 itself ("-q critical,0"), which reads
 * as "never fetch" but means no weight (warn_zero_weights). */
static unsigned char *queue_zero;

/* The bearer token of --http-token-file: the file's first line, without
 * its line end. A file, not an argument, so that it never shows in ps. */
static char http_token[4100];

/* As the library wants it (hiredhand.h, http_token). */
static int token_valid(const char *t) {
    size_t n = 0;
    for (; t[n]; n++)
        if ((unsigned char)t[n] <= 0x20 || (unsigned char)t[n] >= 0x7f) return 0;
    return n > 0 && n <= 4096;
}

/* --job-metrics: "7", "8", "7,8" (or "8,7") or "none". */
static int job_metrics_layouts(const char *arg, int *out) {
    if (!strcmp(arg, "none")) *out = 0;
    else if (!strcmp(arg, "7")) *out = HH_JOB_METRICS_7;
    else if (!strcmp(arg, "8")) *out = HH_JOB_METRICS_8;
    else if (!strcmp(arg, "7,8") || !strcmp(arg, "8,7")) *out = HH_JOB_METRICS_7 | HH_JOB_METRICS_8;
    else return cli_usage_error("--job-metrics is 7,8, 7, 8 or none, not '%s'", arg);
    return 0;
}

static int read_token_file(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return cli_usage_error("cannot read --http-token-file %s: %s", path, strerror(errno));
    size_t n = fread(http_token, 1, sizeof(http_token) - 1, f);
    fclose(f);
    http_token[n] = '\0';
    http_token[strcspn(http_token, "\r\n")] = '\0';
    if (!token_valid(http_token))
        return cli_usage_error("--http-token-file %s: want one line of 1-4096 visible ASCII characters, no space",
                               path);
    return 0;
}

/* What `hiredhand work` was asked: the manager's options and the CLI's own. */
typedef struct work_args {
    hh_manager_options o;
    size_t nq;
    const char *labels[MAX_ITEMS + 1];
    size_t nlabels;
    const char *cron_ns[MAX_ITEMS];
    size_t ncron_ns;
    const char *cron_jobs[MAX_ITEMS];
    size_t ncron_jobs;
    const char *execs[MAX_ITEMS], *requires[MAX_ITEMS], *serves[MAX_ITEMS];
    size_t nexec, nreq, nserve;
    long serve_pool, serve_max_jobs;
    double exec_timeout, serve_hello_timeout;
    cli_exec_stdout exec_stdout;
    int log_format; /* hh_log_format (--log-format) */
    long exec_log_max;
    const char *logpath;
    const char *logpath_file; /* the config file logpath came from, or NULL (a flag) */
    const char *reading;      /* the config file being applied, NULL for flags */
    int concurrency_set;      /* by -c or the file: RAILS_MAX_THREADS does not apply */
} work_args;

#define WORK_HELP (-1) /* --help printed: exit 0 */

/* The options of `hiredhand work`, one entry each, in --help's order: its
 * long name (also its key in the config file, with - or _), short letter
 * or OPT_ id, argument, kind, bounds or choices, where the value goes and
 * its help. The table drives getopt (longopts), the config file
 * (cli_config_load looks names up in longopts and runs values through
 * parse_option), the checks of numbers and choices (parse_option, with
 * the message naming the option and its range), and --help and so the
 * man page (scripts/manpage.sh reads --help). Defaults are the library's
 * (hh_manager_options_init, through work_args_defaults): a help that says
 * "(default {default})" prints the value its field starts from, so the
 * help and the library hold one default. A number's range is
 * hiredhand.h's, the one hh_manager_options_check applies to a C caller.
 * A WO_CUSTOM entry, and any entry that needs more than storing its value,
 * has a case in parse_option. docs/adding-an-option.md walks through it. */
typedef enum {
    WO_TEXT,    /* no option: lines of help shared with other commands */
    WO_CUSTOM,  /* parse_option's own case reads the argument */
    WO_SECONDS, /* a double in [lo, hi] (lo excluded when lo_excluded) */
    WO_INT,     /* an int in [lo, hi] */
    WO_LONG,    /* a long in [lo, hi] */
    WO_CHOICE,  /* one of choices' names: its value, into an int-sized field */
    WO_STRING   /* the argument as given */
} wo_kind;

typedef struct wo_choice {
    const char *name;
    int value;
} wo_choice;

typedef struct work_option {
    const char *name; /* NULL for WO_TEXT */
    int id;           /* the short letter, or an OPT_ constant */
    const char *arg;  /* the argument's name in --help; NULL: takes none */
    wo_kind kind;
    double lo, hi;
    int lo_excluded;
    size_t field; /* offsetof(work_args, ...) of the value */
    const wo_choice *choices;
    const char *help; /* lines without their indent, '\n' between; NULL: none */
} work_option;

/* The field's offset, when its type is the kind's (else no compile). */
#define WO_FIELD(f, type) _Generic(((work_args *)0)->f, type : offsetof(work_args, f))
#define WO_INT_SIZED(f) (offsetof(work_args, f) + 0 * sizeof(char[sizeof(((work_args *)0)->f) == sizeof(int) ? 1 : -1]))
#define WO_TEXT(text) \
    { NULL, 0, NULL, WO_TEXT, 0, 0, 0, 0, NULL, text }
#define WO_CUSTOM(name, id, arg, help) \
    { name, id, arg, WO_CUSTOM, 0, 0, 0, 0, NULL, help }
#define WO_SECONDS(name, id, arg, lo, lox, hi, f, help) \
    { name, id, arg, WO_SECONDS, lo, hi, lox, WO_FIELD(f, double), NULL, help }
#define WO_INT(name, id, arg, lo, hi, f, help) \
    { name, id, arg, WO_INT, lo, hi, 0, WO_FIELD(f, int), NULL, help }
#define WO_LONG(name, id, arg, lo, hi, f, help) \
    { name, id, arg, WO_LONG, lo, hi, 0, WO_FIELD(f, long), NULL, help }
#define WO_CHOICE(name, id, arg, choices, f, help) \
    { name, id, arg, WO_CHOICE, 0, 0, 0, WO_INT_SIZED(f), choices, help }
#define WO_STRING(name, id, arg, f, help) \
    { name, id, arg, WO_STRING, 0, 0, 0, WO_FIELD(f, const char *), NULL, help }

static const wo_choice log_levels[] = {
    {"debug", HH_LOG_DEBUG}, {"info", HH_LOG_INFO}, {"warn", HH_LOG_WARN}, {"error", HH_LOG_ERROR}, {NULL, 0}};
static const wo_choice log_formats[] = {{"text", HH_LOG_FORMAT_TEXT}, {"json", HH_LOG_FORMAT_JSON}, {NULL, 0}};
static const wo_choice exec_stdouts[] = {{"inherit", CLI_EXEC_STDOUT_INHERIT},
                                         {"log", CLI_EXEC_STDOUT_LOG},
                                         {"discard", CLI_EXEC_STDOUT_DISCARD},
                                         {NULL, 0}};
static const wo_choice fetch_modes[] = {{"reliable", HH_FETCH_RELIABLE}, {"basic", HH_FETCH_BASIC}, {NULL, 0}};
static const wo_choice lease_lost_policies[] = {
    {"stop", HH_LEASE_LOST_STOP}, {"finish", HH_LEASE_LOST_FINISH}, {NULL, 0}};
static const wo_choice batch_jobs_modes[] = {{"run", HH_BATCH_JOBS_RUN}, {"skip", HH_BATCH_JOBS_SKIP}, {NULL, 0}};

/* clang-format off */ /* one entry a line or two: the table reads as one */
static const work_option work_options[] = {
    WO_CUSTOM("config", 'C', "FILE", "read options from a YAML file (Sidekiq's config/sidekiq.yml\n" "keys and these options' names); flags override it\n" "(default ./config/sidekiq.yml when it exists, as in Sidekiq)"),
    WO_CUSTOM("environment", 'e', "ENV", "the config file's environment section to apply (as Sidekiq's\n" "-e; default $APP_ENV, $RAILS_ENV, $RACK_ENV, else development);\n" "exported as RAILS_ENV and RACK_ENV to handlers, as Sidekiq does"),
    WO_CUSTOM("redis", 'r', "URL", "redis[s]://[user:password@]host:port/db (rediss: TLS) or\n" "unix://[user:password@]/path?db=N (percent-encoded user info)\n" "(default $REDIS_URL, else redis://127.0.0.1:6379/0)"),
    WO_TEXT(CLI_PASSWORD_FILE_HELP),
    WO_CUSTOM("redis-password-file", CLI_OPT_PASSWORD_FILE, "FILE", NULL),
    WO_CUSTOM("queue", 'q', "NAME[,WEIGHT]", "a queue to fetch from; repeatable (default: default).\nNo weights: strict order; weights: weighted random order.\nAt most " CLI_STR(HH_QUEUES_LIMIT) " queues"),
    WO_INT("concurrency", 'c', "N", 1, HH_CONCURRENCY_LIMIT, o.concurrency, "worker threads (default $RAILS_MAX_THREADS, else 10)"),
    WO_SECONDS("timeout", 't', "SECONDS", 0, 0, CLI_SECONDS_MAX, o.shutdown_timeout, "shutdown grace period (default {default})"),
    WO_CUSTOM("verbose", 'v', NULL, "debug level (same as --log-level debug)"),
    WO_CHOICE("log-level", OPT_LOG_LEVEL, "LEVEL", log_levels, o.log_level, "debug, info (default: a start and a done/fail line per job),\n" "warn or error"),
    WO_CHOICE("log-format", OPT_LOG_FORMAT, "text|json", log_formats, log_format, "Sidekiq's layouts: text (default) or one JSON object per line"),
    WO_STRING("tag", 'g', "TAG", o.tag, "tag shown on the Web UI's Busy page"),
    WO_CUSTOM("label", OPT_LABEL, "LABEL", "extra Busy page label; repeatable"),
    WO_CUSTOM("logfile", 'l', "FILE", "append logs to FILE instead of stderr (SIGHUP reopens it)"),
    WO_CUSTOM("exec", OPT_EXEC, "CLASS=COMMAND", "run COMMAND for jobs of CLASS (job JSON on stdin); repeatable"),
    WO_SECONDS("exec-timeout", OPT_EXEC_TIMEOUT, "SECONDS", 0, 0, CLI_SECONDS_MAX, exec_timeout, "fail an --exec or --serve job that runs longer (default: none);\n" "a --serve job's wait for a process and its hello counts"),
    WO_CHOICE("exec-stdout", OPT_EXEC_STDOUT, "inherit|log|discard", exec_stdouts, exec_stdout, "an --exec handler's stdout: the worker's\n" "(default), logged with the job's class and jid, or dropped;\n" "its stderr lines are always logged so"),
    WO_LONG("exec-log-max", OPT_EXEC_LOG_MAX, "BYTES", 0, 1073741824, exec_log_max, "bytes of a handler's output logged per job (--exec stderr and\n" "logged stdout, --serve stderr); the rest is read and dropped,\n" "with one line saying how many bytes (default {default}; 0: no cap)"),
    WO_CUSTOM("exec-env", OPT_EXEC_ENV, "NAME", "pass NAME to --exec handlers even if removed below; repeatable\n" "(handlers get the worker's environment without REDIS_URL,\n" "REDIS_PASSWORD and --exec-env-drop names; e.g. --exec-env REDIS_URL)"),
    WO_CUSTOM("exec-env-drop", OPT_EXEC_ENV_DROP, "NAME", "also remove NAME from handlers' environment; repeatable"),
    WO_CUSTOM("serve", OPT_SERVE, "CLASS=COMMAND", "run jobs of CLASS in long-lived COMMAND processes speaking\n" "hiredhand's line protocol (docs/handlers.md); repeatable.\n" "CLASS * (--exec or --serve) takes every class without its own"),
    WO_LONG("serve-pool", OPT_SERVE_POOL, "N", 1, HH_CONCURRENCY_LIMIT, serve_pool, "start N processes per --serve at once (at most --concurrency),\n" "in the background: the worker fetches meanwhile; default: up to\n" "--concurrency, each started when a job needs it"),
    WO_LONG("serve-max-jobs", OPT_SERVE_MAX_JOBS, "N", 1, 1000000000, serve_max_jobs, "replace a --serve process after N jobs (default: never)"),
    WO_SECONDS("serve-hello-timeout", OPT_SERVE_HELLO_TIMEOUT, "S", 0, 1, CLI_SECONDS_MAX, serve_hello_timeout, "seconds a new --serve process has to say hello before it is\n" "killed and started again with backoff (default {default})"),
    WO_CUSTOM("require", OPT_REQUIRE, "PATH.so", "load a plug-in that registers C handlers; repeatable"),
    WO_CUSTOM("namespace", CLI_OPT_NAMESPACE, "NS", "prefix every key with NS: (redis-namespace)"),
    WO_STRING("identity", OPT_IDENTITY, "ID", o.identity, "stable process identity (default host:pid:random); not a\n" "name Sidekiq or hiredhand uses for keys (queue:..., retry, stat:...)"),
    WO_CHOICE("fetch", OPT_FETCH, "reliable|basic", fetch_modes, o.fetch, "reliable (default) keeps fetched jobs in Redis until done"),
    WO_CUSTOM("timestamps", OPT_TS, "float|millis", "payload timestamps for Sidekiq 6/7 (float) or 8 (millis)"),
    WO_STRING("sidekiq-version", OPT_VERSION, "V", o.version, "version shown to 7.x/8.x Web UIs (default {default})"),
    WO_CUSTOM("job-metrics", OPT_JOB_METRICS, "7,8|7|8|none", "whose Metrics tab shows this worker's jobs: Sidekiq\n" "7.x's keys, 8.x's, both (default) or none"),
    WO_SECONDS("heartbeat-interval", OPT_HB, "S", HH_HEARTBEAT_INTERVAL_MIN, 0, HH_HEARTBEAT_INTERVAL_MAX, o.heartbeat_interval, "seconds between heartbeats (default {default})"),
    WO_SECONDS("poll-interval", OPT_POLL, "S", 0.1, 0, CLI_SECONDS_MAX, o.poll_interval_average, "scheduler average poll interval (default 5 x processes)"),
    WO_SECONDS("average-scheduled-poll-interval", OPT_POLL_PER, "S", 0.1, 0, CLI_SECONDS_MAX, o.average_scheduled_poll_interval, "the 5 in that default: seconds per process"),
    WO_SECONDS("recovery-interval", OPT_RECOVERY, "S", 0, 1, CLI_SECONDS_MAX, o.recovery_interval, "orphaned-job scan period (default {default})"),
    WO_SECONDS("cron-poll-interval", OPT_CRON_POLL, "S", 0, 0, 86400, o.cron_poll_interval, "periodic jobs (sidekiq-cron's): average seconds between\n" "polls (default {default}; 0 turns the poller off)"),
    WO_CUSTOM("no-cron", OPT_NO_CRON, NULL, "do not poll periodic jobs (as --cron-poll-interval 0)"),
    WO_CUSTOM("cron-namespace", OPT_CRON_NS, "NS", "a sidekiq-cron namespace to poll, repeatable (default:\n" "default); auto: every namespace found in Redis at each\n" "poll, and default; the 1.x set cron_jobs is always read"),
    WO_CUSTOM("cron-job", OPT_CRON_JOB, "JSON", "a periodic job saved at start (source schedule): an object\n" "with name, cron, class, queue, args ...; repeatable\n" "(the config file's cron: entries are these)"),
    WO_INT("max-recoveries", OPT_MAXREC, "N", 0, HH_RETRIES_LIMIT, o.max_recoveries, "recoveries before a job goes dead (default {default})"),
    WO_CHOICE("lease-lost", OPT_LEASE_LOST, "stop|finish", lease_lost_policies, o.lease_lost, "a job another process recovered from this one (paused\n" "past the heartbeat TTL): stop its handler here (default)\n" "or let it finish; its outcome is not written either way"),
    WO_CHOICE("batch-jobs", OPT_BATCH_JOBS, "run|skip", batch_jobs_modes, o.batch_jobs, "jobs of Sidekiq Pro batches (a bid): run them, their\n" "batch's books not kept (default), or leave them to\n" "Ruby processes (back to their queue through the\n" "schedule set, 5 s later); either way WARN once a batch"),
    WO_INT("max-retries", OPT_MAXRETRY, "N", 0, HH_RETRIES_LIMIT, o.max_retries, "retries for retry: true (default {default})"),
    WO_LONG("dead-max-jobs", OPT_DEADMAX, "N", 1, HH_DEAD_MAX_JOBS_LIMIT, o.dead_max_jobs, "dead set size limit (default {default})"),
    WO_SECONDS("dead-timeout", OPT_DEADTIMEOUT, "S", 0, 1, CLI_SECONDS_MAX, o.dead_timeout, "dead set age limit (default {default})"),
    WO_STRING("http", OPT_HTTP, "[HOST:]PORT", o.http_bind, "serve /healthz, /readyz, /stats, /metrics (bare port: 127.0.0.1)"),
    WO_SECONDS("liveness-max-age", OPT_LIVENESS, "S", 0, 1, CLI_SECONDS_MAX, o.liveness_max_age, "/healthz fails once the last heartbeat is older (default {default})"),
    WO_CUSTOM("http-token-file", OPT_HTTP_TOKEN_FILE, "FILE", "/stats and /metrics want \"Authorization: Bearer <token>\", the\n" "token being FILE's first line (or $HIREDHAND_HTTP_TOKEN)"),
    WO_TEXT(NULL), /* the --tls-* and --sentinel* options' lines: cli_redis_help */
    WO_CUSTOM("help", OPT_HELP, NULL, NULL),
};
/* clang-format on */
#define NWORK_OPTIONS (sizeof(work_options) / sizeof(*work_options))

/* getopt's table: every named entry above, then the connection options
 * none of them is (the --tls-* and --sentinel* ones, cli_longopts). */
static const struct option *work_longopts(void) {
    static struct option own[NWORK_OPTIONS + 1];
    if (!own[0].name) {
        size_t n = 0;
        for (size_t i = 0; i < NWORK_OPTIONS; i++)
            if (work_options[i].name)
                own[n++] = (struct option){work_options[i].name, work_options[i].arg ? required_argument : no_argument,
                                           NULL, work_options[i].id};
        own[n] = (struct option){0, 0, 0, 0};
    }
    return cli_longopts(own);
}

static const work_option *find_work_option(int id) {
    for (size_t i = 0; i < NWORK_OPTIONS; i++)
        if (work_options[i].name && work_options[i].id == id) return &work_options[i];
    return NULL;
}

/* What `hiredhand work` starts from before any option: the library's
 * defaults (hh_manager_options_init) and the CLI's own. --help reads its
 * "(default ...)" figures from here, so they cannot disagree. */
static void work_args_defaults(work_args *a) {
    memset(a, 0, sizeof(*a));
    hh_manager_options_init(&a->o);
    a->exec_log_max = CLI_LOG_MAX_DEFAULT;
    a->serve_hello_timeout = CLI_SERVE_HELLO_TIMEOUT_DEFAULT;
    a->o.log = log_line;
}

#define WO_DEFAULT_TOKEN "{default}"

/* o's help with WO_DEFAULT_TOKEN replaced by the value its field starts
 * from in d (work_args_defaults), in buf; the help itself when it names
 * no default that way. */
static const char *help_text(const work_option *o, const work_args *d, char *buf, size_t len) {
    const char *t = strstr(o->help, WO_DEFAULT_TOKEN);
    if (!t) return o->help;
    const void *p = (const char *)d + o->field;
    char v[64];
    switch (o->kind) {
    case WO_SECONDS: snprintf(v, sizeof(v), "%.15g", *(const double *)p); break;
    case WO_INT: snprintf(v, sizeof(v), "%d", *(const int *)p); break;
    case WO_LONG: snprintf(v, sizeof(v), "%ld", *(const long *)p); break;
    case WO_STRING: snprintf(v, sizeof(v), "%s", *(const char *const *)p ? *(const char *const *)p : ""); break;
    default: return o->help; /* a kind without a field of its own */
    }
    snprintf(buf, len, "%.*s%s%s", (int)(t - o->help), o->help, v, t + strlen(WO_DEFAULT_TOKEN));
    return buf;
}

/* --help from the table: "  -c, --concurrency N" (or six spaces before a
 * long-only option) padded to column 30, where the help and each of its
 * continuation lines start (scripts/manpage.sh relies on that column); a
 * longer left part is followed by two spaces. */
#define WORK_HELP_COLUMN 29
static void print_work_usage(FILE *f) {
    work_args d;
    work_args_defaults(&d);
    char buf[1024];
    fputs("usage: hiredhand work [options]\n", f);
    for (size_t i = 0; i < NWORK_OPTIONS; i++) {
        const work_option *o = &work_options[i];
        if (o->kind == WO_TEXT) {
            if (o->help) fputs(o->help, f);
            else cli_redis_help(f);
            continue;
        }
        if (!o->help) continue;
        int n = o->id < 128 ? fprintf(f, "  -%c, --%s", o->id, o->name) : fprintf(f, "      --%s", o->name);
        if (o->arg) n += fprintf(f, " %s", o->arg);
        fprintf(f, "%*s", n < WORK_HELP_COLUMN ? WORK_HELP_COLUMN - n : 2, "");
        for (const char *p = help_text(o, &d, buf, sizeof(buf)); *p;) {
            size_t len = strcspn(p, "\n");
            fprintf(f, "%.*s\n", (int)len, p);
            p += len;
            if (*p == '\n' && *++p) fprintf(f, "%*s", WORK_HELP_COLUMN, "");
        }
    }
}

/* The argument of a table entry of a kind that stores it, checked and
 * stored; 0 or CLI_EXIT_USAGE. WO_CUSTOM: nothing to do here. */
static int store_option(work_args *a, const work_option *o, const char *arg) {
    char flag[64];
    snprintf(flag, sizeof(flag), "--%s", o->name);
    void *p = (char *)a + o->field;
    long l;
    switch (o->kind) {
    case WO_SECONDS: return cli_option_seconds(flag, arg, o->lo, o->lo_excluded, o->hi, (double *)p);
    case WO_INT:
        if (cli_option_int(flag, arg, (long)o->lo, (long)o->hi, &l)) return CLI_EXIT_USAGE;
        *(int *)p = (int)l;
        return 0;
    case WO_LONG: return cli_option_int(flag, arg, (long)o->lo, (long)o->hi, (long *)p);
    case WO_STRING: *(const char **)p = arg; return 0;
    case WO_CHOICE: {
        char names[128] = "";
        size_t n = 0;
        for (const wo_choice *c = o->choices; c->name; c++, n++) {
            if (!strcmp(arg, c->name)) {
                *(int *)p = c->value;
                return 0;
            }
        }
        for (size_t i = 0; i < n; i++) /* "a, b or c" */
            snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                     i == 0          ? ""
                         : i + 1 < n ? ", "
                                     : " or ",
                     o->choices[i].name);
        return cli_usage_error("%s is %s, not '%s'", flag, names, arg);
    }
    case WO_TEXT:
    case WO_CUSTOM: return 0;
    }
    return 0;
}

/* One option into *a. A number is checked against its range here, so
 * that the message names the option and the range (cli_option_int); the
 * worker's ranges are hiredhand.h's, the ones hh_manager_options_check
 * applies (in check_args, with the rest). Returns 0, WORK_HELP or an exit
 * status. */
static int parse_option(work_args *a, int ch, const char *arg) {
    const work_option *o = find_work_option(ch);
    if (o && store_option(a, o, arg)) return CLI_EXIT_USAGE;
    int rc = cli_redis_option(ch, arg, &a->o.redis);
    if (rc >= 0) {
        /* the URL checked here, not only at start: a config file's then
         * gets its FILE:LINE:COLUMN (apply_config) */
        if (!rc && ch == 'r' && hh_redis_url_check(arg, NULL, 0) != HH_OK)
            return cli_usage_error("%s", hh_last_error());
        return rc;
    }
    switch (ch) {
    case 'q': {
        char *name = queue_names[a->nq] = strdup(arg), *comma = name ? strrchr(name, ',') : NULL;
        if (!name) return cli_usage_error("out of memory");
        long w = 0;
        if (comma) {
            *comma = '\0';
            char what[HH_NAME_QUEUE_MAX + 32];
            snprintf(what, sizeof(what), "--queue %s weight", name);
            if (cli_option_int(what, comma + 1, 0, HH_WEIGHT_LIMIT, &w)) return CLI_EXIT_USAGE;
        }
        /* the library adds the weights of a repeated name; on the command
         * line a repeat is a slip, refused as Sidekiq's CLI refuses it */
        for (size_t j = 0; j < a->nq; j++)
            if (!strcmp(queues[j].name, name))
                return cli_usage_error("queue %s given twice (a weight goes with the name: -q %s,2)", name, name);
        queue_zero[a->nq] = comma && w == 0;
        queues[a->nq].name = name;
        queues[a->nq++].weight = (int)w;
        break;
    }
    case 'c': a->concurrency_set = 1; break;
    case 'v': a->o.log_level = HH_LOG_DEBUG; break;
    case OPT_LOG_FORMAT: log_format = (hh_log_format)a->log_format; break;
    case 'l':
        a->logpath = arg;
        a->logpath_file = a->reading;
        break;
    case 'C': /* read before every other option (parse_args) */
    case 'e': break;
    case OPT_LABEL:
        if (a->nlabels == MAX_ITEMS) return cli_usage_error("too many --label");
        a->labels[a->nlabels++] = arg;
        break;
    case OPT_EXEC:
        if (a->nexec == MAX_ITEMS) return cli_usage_error("too many --exec");
        a->execs[a->nexec++] = arg;
        break;
    case OPT_SERVE:
        if (a->nserve == MAX_ITEMS) return cli_usage_error("too many --serve");
        a->serves[a->nserve++] = arg;
        break;
    case OPT_EXEC_ENV:
        if (cli_exec_env_pass(arg)) return cli_usage_error("bad --exec-env '%s' (a variable name)", arg);
        break;
    case OPT_EXEC_ENV_DROP:
        if (cli_exec_env_drop(arg)) return cli_usage_error("bad --exec-env-drop '%s' (a variable name)", arg);
        break;
    case OPT_REQUIRE:
        if (a->nreq == MAX_ITEMS) return cli_usage_error("too many --require");
        a->requires[a->nreq++] = arg;
        break;
    case OPT_TS:
        if (cli_option_timestamps(arg, &a->o.redis.timestamps)) return CLI_EXIT_USAGE;
        break;
    case OPT_CRON_POLL:
        if (a->o.cron_poll_interval > 0 && a->o.cron_poll_interval < 0.1)
            return cli_usage_error("--cron-poll-interval %s: want 0 (off) or 0.1 seconds or more", arg);
        break;
    case OPT_NO_CRON: a->o.cron_poll_interval = 0; break;
    case OPT_CRON_NS:
        if (a->ncron_ns == MAX_ITEMS) return cli_usage_error("too many --cron-namespace");
        if (!strcmp(arg, "*"))
            return cli_usage_error("--cron-namespace '*': want a namespace, or auto for every one found in Redis");
        if (!*arg || strpbrk(arg, ": \t"))
            return cli_usage_error("--cron-namespace '%s': want a name without ':' or spaces", arg);
        a->cron_ns[a->ncron_ns++] = arg;
        break;
    case OPT_CRON_JOB: {
        int bad = cli_cron_job_check(arg);
        if (bad) return bad;
        if (a->ncron_jobs == MAX_ITEMS) return cli_usage_error("too many --cron-job");
        a->cron_jobs[a->ncron_jobs++] = arg;
        break;
    }
    case OPT_JOB_METRICS:
        if (job_metrics_layouts(arg, &a->o.job_metrics)) return CLI_EXIT_USAGE;
        break;
    case OPT_HTTP_TOKEN_FILE:
        if (read_token_file(arg)) return CLI_EXIT_USAGE;
        a->o.http_token = http_token;
        break;
    case OPT_HELP: print_work_usage(stdout); return WORK_HELP;
    default:
        if (o) break; /* a table entry: stored above */
        print_work_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

#define WORK_SHORTOPTS "r:q:c:t:vl:C:g:e:"

/* A list option (-q, --label, --exec, --serve, --require) the command
 * line gives replaces the file's list rather than adding to it. */
static void reset_list(work_args *a, int ch) {
    if (ch == 'q') {
        for (size_t i = 0; i < a->nq; i++) free(queue_names[i]);
        a->nq = 0;
    } else if (ch == OPT_LABEL) {
        a->nlabels = 0;
    } else if (ch == OPT_CRON_NS) {
        a->ncron_ns = 0;
    } else if (ch == OPT_CRON_JOB) {
        a->ncron_jobs = 0;
    } else if (ch == OPT_EXEC) {
        a->nexec = 0;
    } else if (ch == OPT_SERVE) {
        a->nserve = 0;
    } else if (ch == OPT_REQUIRE) {
        a->nreq = 0;
    }
}

/* Sidekiq's config file, read when no -C names one (cli.rb looks in
 * ./config for sidekiq.yml, then sidekiq.yml.erb; both go through ERB,
 * whose ENV subset config.c evaluates): a Rails app started in its folder
 * gets its queues without a flag. What was found is logged once the log
 * is set up (default_config_note). */
static const char default_config[] = "./config/sidekiq.yml";
static const char default_config_erb[] = "./config/sidekiq.yml.erb";
static const char *default_config_used; /* the one read, if any */

static const char *find_default_config(void) {
    if (access(default_config, F_OK) == 0) return default_config_used = default_config;
    if (access(default_config_erb, F_OK) == 0) return default_config_used = default_config_erb;
    return NULL;
}

static void default_config_note(hh_manager *m) {
    if (default_config_used)
        hh_manager_log(m, HH_LOG_INFO,
                       "config: read %s (no -C given: Sidekiq's default config file; -C FILE names another, "
                       "-C /dev/null reads none)",
                       default_config_used);
}

/* The -C file's options into *a, each through parse_option as if given
 * on the command line; 0 or an exit status. */
static int apply_config(work_args *a, const char *path, const cli_config_item *items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        a->reading = path;
        int rc = parse_option(a, items[i].id, items[i].value);
        a->reading = NULL;
        if (rc) {
            fprintf(stderr, "hiredhand: %s:%d:%d: in key '%s'\n", path, items[i].line, items[i].column, items[i].key);
            return rc == WORK_HELP ? CLI_EXIT_USAGE : rc;
        }
    }
    return 0;
}

/* Every option into *a: the -C file's (or ./config/sidekiq.yml's) first, then the command line's
 * over them (a flag wins; a list flag replaces the file's list); the
 * environment (REDIS_URL, REDIS_PASSWORD, HIREDHAND_TLS_*,
 * HIREDHAND_HTTP_TOKEN, RAILS_MAX_THREADS) only fills what neither set. 0, WORK_HELP or an
 * exit status. */
static int parse_args(work_args *a, int argc, char **argv) {
    work_args_defaults(a);
    int ch, rc = 0;
    const char *config = NULL;
    optind = 0; /* glibc: start afresh (a second pass follows) */
    opterr = 0;
    const char *environment = NULL;
    while ((ch = getopt_long(argc, argv, WORK_SHORTOPTS, work_longopts(), NULL)) != -1)
        if (ch == 'C') config = optarg;
        else if (ch == 'e') environment = optarg;
    opterr = 1;
    if (environment && !*environment) return cli_usage_error("-e/--environment wants a name");
    /* Sidekiq's environment: -e, else APP_ENV, RAILS_ENV, RACK_ENV, else
     * development, always exported as RAILS_ENV and RACK_ENV (cli.rb's
     * boot_application), so a Rails handler boots in the environment the
     * worker runs in; -e also wins over APP_ENV, which the config reads */
    const char *from = environment;
    if (!from) from = getenv("APP_ENV");
    if (!from || !*from) from = getenv("RAILS_ENV");
    if (!from || !*from) from = getenv("RACK_ENV");
    if (!from || !*from) from = "development";
    char *env = strdup(from); /* from may be the very variable replaced below */
    if (!env) return cli_usage_error("out of memory");
    if (environment && getenv("APP_ENV")) setenv("APP_ENV", env, 1);
    setenv("RAILS_ENV", env, 1);
    setenv("RACK_ENV", env, 1);
    free(env);
    if (!config) config = find_default_config();
    size_t nitems = 0, nfileq = 0;
    const cli_config_item *items = config ? cli_config_load(config, work_longopts(), &nitems) : NULL;
    if (config && !items) return CLI_EXIT_USAGE;
    for (size_t i = 0; i < nitems; i++) nfileq += items[i].id == 'q';
    /* -q can appear at most argc times: no fixed cap below HH_QUEUES_LIMIT */
    queues = calloc((size_t)argc + nfileq, sizeof(*queues));
    queue_names = calloc((size_t)argc + nfileq, sizeof(*queue_names));
    queue_zero = calloc((size_t)argc + nfileq, sizeof(*queue_zero));
    if (!queues || !queue_names || !queue_zero) return cli_usage_error("out of memory");
    if ((rc = apply_config(a, config, items, nitems))) return rc;
    int from_file[] = {'q', OPT_LABEL, OPT_EXEC, OPT_SERVE, OPT_REQUIRE, OPT_CRON_NS, OPT_CRON_JOB};
    optind = 0;
    while (rc == 0 && (ch = getopt_long(argc, argv, WORK_SHORTOPTS, work_longopts(), NULL)) != -1) {
        for (size_t i = 0; i < sizeof(from_file) / sizeof(from_file[0]); i++)
            if (from_file[i] == ch) {
                reset_list(a, ch);
                from_file[i] = 0;
            }
        rc = parse_option(a, ch, optarg);
    }
    if (rc == 0 && optind < argc) rc = cli_usage_error("unexpected argument '%s'", argv[optind]);
    return rc;
}

/* The environment's token, unless a file gave one; taken out of the
 * environment so that --exec handlers do not inherit it. */
static int env_token(work_args *a) {
    const char *env = getenv("HIREDHAND_HTTP_TOKEN");
    if (env && *env && !a->o.http_token) {
        if (strlen(env) >= sizeof(http_token) || !token_valid(env))
            return cli_usage_error("HIREDHAND_HTTP_TOKEN: want 1-4096 visible ASCII characters, no space");
        snprintf(http_token, sizeof(http_token), "%s", env);
        a->o.http_token = http_token;
    }
    unsetenv("HIREDHAND_HTTP_TOKEN");
    return 0;
}

/* Sidekiq 6.4+ takes RAILS_MAX_THREADS (the size Rails gives its
 * database pool) as the concurrency when neither -c nor the file sets
 * one, so that each worker thread gets a connection. A value that is no
 * number in range is refused, as Sidekiq's Integer() refuses it; an empty
 * one counts as unset. */
static int env_concurrency(work_args *a) {
    const char *env = getenv("RAILS_MAX_THREADS");
    long l;
    if (a->concurrency_set || !env || !*env) return 0;
    if (cli_option_int("RAILS_MAX_THREADS", env, 1, HH_CONCURRENCY_LIMIT, &l)) return CLI_EXIT_USAGE;
    a->o.concurrency = (int)l;
    return 0;
}

/* The library's one check of every limit and name: its reason, printed. */
static int check_args(work_args *a) {
    a->o.queues = queues;
    a->o.nqueues = a->nq;
    a->o.labels = a->nlabels ? a->labels : NULL;
    a->o.cron_namespaces = a->ncron_ns ? a->cron_ns : NULL;
    a->o.ncron_namespaces = a->ncron_ns;
    if (hh_manager_options_check(&a->o, NULL, 0) != HH_OK) return cli_usage_error("%s", hh_last_error());
    /* Sidekiq's rule: poll_interval_average, when set, is the interval */
    if (a->o.poll_interval_average > 0 && a->o.average_scheduled_poll_interval > 0)
        fprintf(stderr,
                "hiredhand: warning: --average-scheduled-poll-interval has no effect: --poll-interval (Sidekiq's "
                "poll_interval_average) is set and wins\n");
    return 0;
}

/* The handler processes a run needs: --exec (one process per job) and
 * --serve (pools of long-lived processes). */
typedef struct work_handlers {
    cli_exec *exec[MAX_ITEMS];
    cli_serve *serve[MAX_ITEMS];
} work_handlers;

static void free_handlers(const work_args *a, work_handlers *h) {
    for (size_t i = 0; i < a->nexec; i++) cli_exec_free(h->exec[i]);
    for (size_t i = 0; i < a->nserve; i++) cli_serve_free(h->serve[i]);
}

/* A pool larger than the threads that feed it would never fill. */
static int serve_pool_size(const work_args *a) {
    return a->serve_pool > 0 && a->serve_pool < a->o.concurrency ? (int)a->serve_pool : a->o.concurrency;
}

/* The --exec and --serve handlers, each program checked; 0 or an exit
 * status (nothing left allocated then). */
static int make_handlers(const work_args *a, work_handlers *h) {
    char err[1024];
    for (size_t i = 0; i < a->nexec; i++) {
        if (!(h->exec[i] = cli_exec_new(a->execs[i], a->exec_timeout, err, sizeof(err)))) {
            while (i--) cli_exec_free(h->exec[i]);
            return cli_usage_error("%s", err);
        }
        cli_exec_set_stdout(h->exec[i], a->exec_stdout);
        cli_exec_set_log_max(h->exec[i], (size_t)a->exec_log_max);
    }
    for (size_t i = 0; i < a->nserve; i++) {
        if (!(h->serve[i] = cli_serve_new(a->serves[i], a->exec_timeout, serve_pool_size(a), a->serve_max_jobs, err,
                                          sizeof(err)))) {
            while (i--) cli_serve_free(h->serve[i]);
            for (size_t k = 0; k < a->nexec; k++) cli_exec_free(h->exec[k]);
            return cli_usage_error("%s", err);
        }
        cli_serve_set_hello_timeout(h->serve[i], a->serve_hello_timeout);
        cli_serve_set_log_max(h->serve[i], (size_t)a->exec_log_max);
    }
    return 0;
}

/* One handler into the manager; 0 or an exit status naming the option. */
static int register_one(hh_manager *m, const char *opt, const char *klass, hh_handler_fn fn, void *udata) {
    int e = hh_manager_register(m, klass, fn, udata);
    if (e == HH_ERR_EXISTS)
        return cli_usage_error("%s %s: the class has another --exec or --serve handler", opt, klass);
    if (e != HH_OK) return cli_usage_error("%s %s: %s", opt, klass, hh_last_error());
    return 0;
}

/* "-q critical,0" reads as "never fetch critical", but weight 0 is no
 * weight, as in Sidekiq (its CLI takes max(weight, 1) copies of the name
 * and stays strict unless a weight is above 0): with no weighted queue
 * the queues are fetched in strict order, critical in its place. Among
 * weighted queues the library itself warns that it gets weight 1. */
static void warn_zero_weights(hh_manager *m, const work_args *a) {
    for (size_t i = 0; i < a->nq; i++)
        if (queues[i].weight > 0) return;
    for (size_t i = 0; i < a->nq; i++)
        if (queue_zero[i])
            hh_manager_log(m, HH_LOG_WARN,
                           "queue %s: weight 0 means no weight (as in Sidekiq), not a paused queue: with no queue "
                           "weighted, every queue is fetched in strict order and %s's jobs run in its turn",
                           queues[i].name, queues[i].name);
}

/* Handlers that run as programs hold pipes per job (--exec: four ends) or
 * per process (--serve: three); with the Redis connections and the HTTP
 * server on top, a limit on open files below that fails jobs with EMFILE,
 * each costing a retry. Said once at start, with what to raise. */
static void warn_nofile(hh_manager *m, const work_args *a, unsigned long long nofile) {
    if (!a->nexec && !a->nserve) return;
    unsigned long long need = (unsigned long long)a->o.concurrency * 6 + 64;
    if (nofile && nofile != (unsigned long long)RLIM_INFINITY && nofile < need)
        hh_manager_log(m, HH_LOG_WARN,
                       "open files: the limit is %llu and --concurrency %d with --exec/--serve handlers needs about "
                       "%llu (pipes per job, plus Redis connections): jobs may fail with EMFILE; raise the hard "
                       "limit (ulimit -Hn, LimitNOFILE= in systemd)",
                       nofile, a->o.concurrency, need);
}

/* Runs one plug-in's init. Its failure names the reason the library gave
 * during the call (a class registered twice says which class and which
 * files), not only that the call failed; a reason left from before the
 * call is not its own. */
static int plugin_init(hh_manager *m, const char *path, hh_plugin_init_fn init) {
    char before[1024];
    snprintf(before, sizeof(before), "%s", hh_last_error());
    int r = init(m);
    if (r == 0) return 0;
    const char *why = hh_last_error();
    if (*why && strcmp(why, before) != 0)
        return cli_usage_error("--require %s: %s() failed: %s", path, HH_PLUGIN_INIT_SYMBOL, why);
    return cli_usage_error("--require %s: %s() failed (returned %d, without a reason from hiredhand)", path,
                           HH_PLUGIN_INIT_SYMBOL, r);
}

/* Registers the --serve and --exec handlers and runs the --require
 * plug-ins' init. */
static int register_handlers(hh_manager *m, const work_args *a, work_handlers *h) {
    int rc = 0;
    if (a->nserve && a->serve_pool > a->o.concurrency)
        hh_manager_log(m, HH_LOG_WARN,
                       "--serve-pool %ld is clamped to --concurrency %d: a --serve class never needs "
                       "more processes than there are threads",
                       a->serve_pool, a->o.concurrency);
    for (size_t i = 0; i < a->nserve && rc == 0; i++) {
        cli_serve_set_manager(h->serve[i], m);
        /* --serve-pool N: N processes from the start (no job pays for an
         * interpreter's boot), started in the background (a slow or mute
         * one delays nothing but its class's jobs); else each starts when
         * a job needs it. Either way the keeper reads their stderr between
         * jobs. */
        cli_serve_start(h->serve[i], a->serve_pool > 0 ? serve_pool_size(a) : 0);
        rc = register_one(m, "--serve", cli_serve_class(h->serve[i]), cli_serve_handler, h->serve[i]);
    }
    for (size_t i = 0; i < a->nexec && rc == 0; i++) {
        cli_exec_set_manager(h->exec[i], m);
        rc = register_one(m, "--exec", cli_exec_class(h->exec[i]), cli_exec_handler, h->exec[i]);
    }
    void *loaded[MAX_ITEMS];
    for (size_t i = 0; i < a->nreq && rc == 0; i++) {
        void *so = loaded[i] = dlopen(a->requires[i], RTLD_NOW | RTLD_LOCAL);
        hh_plugin_init_fn init = so ? (hh_plugin_init_fn)(uintptr_t)dlsym(so, HH_PLUGIN_INIT_SYMBOL) : NULL;
        size_t same = 0; /* one file under two names gets one handle: its init would run twice */
        while (so && same < i && loaded[same] != so) same++;
        if (!so) rc = cli_usage_error("--require %s: %s", a->requires[i], dlerror());
        else if (same < i)
            rc = cli_usage_error("--require %s: the same plug-in as --require %s, given twice (its classes would "
                                 "be registered twice)",
                                 a->requires[i], a -> requires[same]);
        else if (!init) rc = cli_usage_error("--require %s: no %s function", a->requires[i], HH_PLUGIN_INIT_SYMBOL);
        else rc = plugin_init(m, a->requires[i], init);
    }
    if (rc == 0 && a->nexec == 0 && a->nreq == 0 && a->nserve == 0)
        hh_manager_log(m, HH_LOG_WARN, "no --exec, --serve or --require handlers: every job will fail with NameError");
    return rc;
}

/* Starts the manager and turns signals into quiet, stop, dump and log
 * reopening until it stopped. Returns the exit status: 0, 2 for a
 * configuration error (--http address in use, Redis refusing the
 * password or db), 3 when the identity is live elsewhere, 1 otherwise. */
/* Blocks the signals run() takes synchronously (every thread inherits the
 * mask). Done before anything starts: a TERM that comes while handlers
 * start waits for run(), which logs it and stops with the grace period,
 * instead of killing the process on the spot. */
static void block_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGTSTP);
    sigaddset(set, SIGTTIN);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
}

static int run(hh_manager *m) {
    sigset_t set;
    block_signals(&set);
    signal(SIGPIPE, SIG_IGN);
    int rc = 0, e = hh_manager_start(m);
    if (e == HH_ERR_INVALID || e == HH_ERR_REFUSED) rc = CLI_EXIT_USAGE; /* --http address in use; bad password or db */
    else if (e != HH_OK) rc = e == HH_ERR_EXISTS ? 3 : 1;
    int w = HH_ERR_STATE;
    while (rc == 0 && (w = hh_manager_wait(m, 0)) == HH_ERR_STATE) {
        struct timespec ts = {0, 50 * 1000000L}; /* also how soon the end of a stop is seen */
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            cli_notify_stopping();
            hh_manager_stop(m);
        } else if (sig == SIGTSTP) hh_manager_quiet(m);
        else if (sig == SIGTTIN) hh_manager_dump(m);
        else if (sig == SIGHUP) reopen_log(m);
        cli_notify_tick(m);
    }
    if (rc == 0 && w == HH_ERR_EXISTS) rc = 3; /* as a refused start */
    if (rc == 0 && w == HH_ERR_REFUSED) rc = CLI_EXIT_USAGE;
    hh_manager_stats st = {.struct_size = sizeof st};
    if (rc == 0 && hh_manager_get_stats(m, &st) == HH_OK && st.not_pushed_back > 0) {
        /* jobs gone from Redis: a supervisor (systemd, a script) must see it */
        fprintf(stderr,
                "hiredhand: %llu job(s) taken from Redis by basic fetch were not pushed back: each is in the log "
                "at ERROR with its payload, to push again\n",
                (unsigned long long)st.not_pushed_back);
        rc = CLI_EXIT_JOBS_LOST;
    }
    if (e == HH_ERR_REFUSED || w == HH_ERR_REFUSED)
        fprintf(stderr, "hiredhand: %s: giving up (a configuration error, not retried)\n", hh_strerror(HH_ERR_REFUSED));
    return rc;
}

/* Frees what the run used, unless the stop left threads behind (stuck in
 * a Redis call or a handler): they may still log or use their --exec
 * handler until the process exits, so those stay alive (and the manager
 * is not freed either). */
static void cleanup(hh_manager *m, const work_args *a, work_handlers *h) {
    int left_behind = m ? hh_manager_detached(m) : 0;
    /* every job is done (or pushed back): --serve processes get their stdin
     * closed, a moment to exit, then are killed */
    for (size_t i = 0; i < a->nserve; i++) cli_serve_shutdown(h->serve[i], 2.0);
    if (left_behind) left_manager = m;
    hh_manager_free(m);
    if (!left_behind) free_handlers(a, h);
    for (size_t i = 0; i < a->nq; i++) free(queue_names[i]);
    free(queue_names);
    free(queues);
    free(queue_zero);
    queue_names = NULL;
    queues = NULL;
    queue_zero = NULL;
    if (log_file && !left_behind) fclose(log_file);
}

int cli_work(int argc, char **argv) {
    work_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc == 0) rc = env_token(&a);
    if (rc == 0) rc = env_concurrency(&a);
    if (rc == 0) rc = check_args(&a);
    if (rc) return rc == WORK_HELP ? 0 : rc;
    cli_init_split(); /* as PID 1: returns in the worker, a child of a minimal init */
    /* close-on-exec: --exec handlers must not hold the log open (logrotate) */
    if (a.logpath && !(log_file = fopen(a.logpath, "ae"))) {
        if (!a.logpath_file) return cli_usage_error("cannot open log file %s: %s", a.logpath, strerror(errno));
        /* a migrated sidekiq.yml's :logfile: (Sidekiq 6 and later ignore
         * it): not worth refusing to start over; -l is */
        fprintf(stderr, "hiredhand: warning: %s: cannot open log file %s: %s: logging to stderr\n", a.logpath_file,
                a.logpath, strerror(errno));
    }
    log_path = a.logpath;
    unsigned long long nofile = cli_exec_raise_nofile();
    sigset_t set;
    block_signals(&set);
    work_handlers h;
    if ((rc = make_handlers(&a, &h))) return rc;
    int e;
    hh_manager *m = hh_manager_new(&a.o, &e);
    if (!m) {
        free_handlers(&a, &h);
        return cli_usage_error("cannot create the worker: %s", hh_last_error());
    }
    default_config_note(m);
    warn_zero_weights(m, &a);
    warn_nofile(m, &a, nofile);
    rc = register_handlers(m, &a, &h);
    if (rc == 0 && a.ncron_jobs)
        rc = cli_cron_load_schedule(&a.o.redis, a.cron_jobs, a.ncron_jobs, a.cron_ns, a.ncron_ns);
    if (rc == 0) rc = cli_notify_init(m, a.o.heartbeat_interval);
    if (rc == 0) rc = run(m);
    cleanup(m, &a, &h);
    return rc;
}
