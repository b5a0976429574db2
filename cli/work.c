/* work.c -- `hiredhand work`: parses options into hh_manager_options,
 * registers --exec handlers and --require plug-ins, runs the manager and
 * turns OS signals into quiet/stop/dump (Sidekiq's INT, TERM, TSTP, TTIN),
 * and HUP into reopening the -l log file. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

static const char work_usage[] =
    "usage: hiredhand work [options]\n"
    "  -r, --redis URL            redis://[user:password@]host:port/db or\n"
    "                             unix://[user:password@]/path?db=N (percent-encoded user info)\n"
    "                             (default $REDIS_URL, else redis://127.0.0.1:6379/0)\n"
    CLI_PASSWORD_FILE_HELP
    "  -q, --queue NAME[,WEIGHT]  a queue to fetch from; repeatable (default: default).\n"
    "                             No weights: strict order; weights: weighted random order.\n"
    "                             At most " CLI_STR(HH_QUEUES_LIMIT) " queues\n"
    "  -c, --concurrency N        worker threads (default 10)\n"
    "  -t, --timeout SECONDS      shutdown grace period (default 25)\n"
    "  -v, --verbose              log every job (debug level)\n"
    "      --tag TAG              tag shown on the Web UI's Busy page\n"
    "      --label LABEL          extra Busy page label; repeatable\n"
    "  -l, --logfile FILE         append logs to FILE instead of stderr (SIGHUP reopens it)\n"
    "      --exec CLASS=COMMAND   run COMMAND for jobs of CLASS (job JSON on stdin); repeatable\n"
    "      --exec-timeout SECONDS fail an --exec job that runs longer (default: none)\n"
    "      --exec-env NAME        pass NAME to --exec handlers even if removed below; repeatable\n"
    "                             (handlers get the worker's environment without REDIS_URL,\n"
    "                             REDIS_PASSWORD and --exec-env-drop names; e.g. --exec-env REDIS_URL)\n"
    "      --exec-env-drop NAME   also remove NAME from handlers' environment; repeatable\n"
    "      --serve CLASS=COMMAND  run jobs of CLASS in long-lived COMMAND processes speaking\n"
    "                             hiredhand's line protocol (see README); repeatable.\n"
    "                             CLASS * (--exec or --serve) takes every class without its own\n"
    "      --serve-pool N         start N processes per --serve at once (at most --concurrency);\n"
    "                             default: up to --concurrency, each started when a job needs it\n"
    "      --serve-max-jobs N     replace a --serve process after N jobs (default: never)\n"
    "      --require PATH.so      load a plug-in that registers C handlers; repeatable\n"
    "      --namespace NS         prefix every key with NS: (redis-namespace)\n"
    "      --identity ID          stable process identity (default host:pid:random); not a\n"
    "                             name Sidekiq or hiredhand uses for keys (queue:..., retry, stat:...)\n"
    "      --fetch reliable|basic reliable (default) keeps fetched jobs in Redis until done\n"
    "      --timestamps float|millis  payload timestamps for Sidekiq 6/7 (float) or 8 (millis)\n"
    "      --sidekiq-version V    version shown to 7.x/8.x Web UIs (default 6.4.1)\n"
    "      --heartbeat-interval S seconds between heartbeats (default 5)\n"
    "      --poll-interval S      scheduler average poll interval (default 5 x processes)\n"
    "      --recovery-interval S  orphaned-job scan period (default 60)\n"
    "      --max-recoveries N     recoveries before a job goes dead (default 3)\n"
    "      --lease-lost stop|finish  a job another process recovered from this one (paused\n"
    "                             past the heartbeat TTL): stop its handler here (default)\n"
    "                             or let it finish; its outcome is not written either way\n"
    "      --max-retries N        retries for retry: true (default 25)\n"
    "      --dead-max-jobs N      dead set size limit (default 10000)\n"
    "      --dead-timeout S       dead set age limit (default 15552000)\n"
    "      --http [HOST:]PORT     serve /healthz, /stats, /metrics (bare port: 127.0.0.1)\n"
    "      --liveness-max-age S   /healthz fails once the last heartbeat is older (default 30)\n"
    "      --http-token-file FILE /stats and /metrics want \"Authorization: Bearer <token>\", the\n"
    "                             token being FILE's first line (or $HIREDHAND_HTTP_TOKEN)\n";

enum {
    OPT_TAG = 1000, OPT_LABEL, OPT_EXEC, OPT_EXEC_TIMEOUT, OPT_REQUIRE, OPT_NS, OPT_IDENTITY,
    OPT_FETCH, OPT_TS, OPT_VERSION, OPT_HB, OPT_POLL, OPT_RECOVERY, OPT_MAXREC, OPT_MAXRETRY,
    OPT_DEADMAX, OPT_DEADTIMEOUT, OPT_HTTP, OPT_LIVENESS, OPT_LEASE_LOST, OPT_HELP, OPT_EXEC_ENV, OPT_EXEC_ENV_DROP,
    OPT_PWFILE, OPT_HTTP_TOKEN_FILE, OPT_SERVE, OPT_SERVE_POOL, OPT_SERVE_MAX_JOBS
};

static const struct option longopts[] = {
    {"redis", required_argument, 0, 'r'},      {"queue", required_argument, 0, 'q'},
    {"concurrency", required_argument, 0, 'c'}, {"timeout", required_argument, 0, 't'},
    {"verbose", no_argument, 0, 'v'},          {"logfile", required_argument, 0, 'l'},
    {"tag", required_argument, 0, OPT_TAG},    {"label", required_argument, 0, OPT_LABEL},
    {"exec", required_argument, 0, OPT_EXEC},  {"exec-timeout", required_argument, 0, OPT_EXEC_TIMEOUT},
    {"require", required_argument, 0, OPT_REQUIRE}, {"namespace", required_argument, 0, OPT_NS},
    {"identity", required_argument, 0, OPT_IDENTITY}, {"fetch", required_argument, 0, OPT_FETCH},
    {"timestamps", required_argument, 0, OPT_TS}, {"sidekiq-version", required_argument, 0, OPT_VERSION},
    {"heartbeat-interval", required_argument, 0, OPT_HB}, {"poll-interval", required_argument, 0, OPT_POLL},
    {"recovery-interval", required_argument, 0, OPT_RECOVERY},
    {"max-recoveries", required_argument, 0, OPT_MAXREC}, {"max-retries", required_argument, 0, OPT_MAXRETRY},
    {"dead-max-jobs", required_argument, 0, OPT_DEADMAX}, {"dead-timeout", required_argument, 0, OPT_DEADTIMEOUT},
    {"http", required_argument, 0, OPT_HTTP}, {"liveness-max-age", required_argument, 0, OPT_LIVENESS},
    {"lease-lost", required_argument, 0, OPT_LEASE_LOST},
    {"exec-env", required_argument, 0, OPT_EXEC_ENV}, {"exec-env-drop", required_argument, 0, OPT_EXEC_ENV_DROP},
    {"redis-password-file", required_argument, 0, OPT_PWFILE},
    {"http-token-file", required_argument, 0, OPT_HTTP_TOKEN_FILE},
    {"serve", required_argument, 0, OPT_SERVE}, {"serve-pool", required_argument, 0, OPT_SERVE_POOL},
    {"serve-max-jobs", required_argument, 0, OPT_SERVE_MAX_JOBS},
    {"help", no_argument, 0, OPT_HELP},        {0, 0, 0, 0}};

/* The -l file; SIGHUP swaps it for a new one at the same path (logrotate),
 * so every write takes log_mu. */
static FILE *log_file;
static const char *log_path;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
/* A manager the stop left threads in is never freed: kept reachable here
 * until the process exits (for leak checkers). */
static hh_manager *left_manager;

static void log_line(hh_log_level level, const char *msg, void *udata) {
    (void)udata;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&log_mu);
    FILE *f = log_file ? log_file : stderr;
    fprintf(f, "%s.%03ldZ pid=%d %s: %s\n", when, ts.tv_nsec / 1000000, (int)getpid(),
            names[level <= HH_LOG_ERROR ? level : HH_LOG_ERROR], msg);
    fflush(f);
    pthread_mutex_unlock(&log_mu);
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
        hh_manager_log(m, HH_LOG_WARN, "SIGHUP: cannot reopen log file %s: %s; logging on to the old one", log_path,
                       strerror(errno));
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

static int read_token_file(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return cli_usage_error("cannot read --http-token-file %s: %s", path, strerror(errno));
    size_t n = fread(http_token, 1, sizeof(http_token) - 1, f);
    fclose(f);
    http_token[n] = '\0';
    http_token[strcspn(http_token, "\r\n")] = '\0';
    if (!token_valid(http_token))
        return cli_usage_error("--http-token-file %s: want one line of 1-4096 visible ASCII characters, no space", path);
    return 0;
}

int cli_work(int argc, char **argv) {
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.log = log_line;
    /* -q can appear at most argc times: no fixed cap below HH_QUEUES_LIMIT */
    queues = calloc((size_t)argc, sizeof(*queues));
    queue_names = calloc((size_t)argc, sizeof(*queue_names));
    size_t nq = 0;
    if (!queues || !queue_names) return cli_usage_error("out of memory");
    const char *labels[MAX_ITEMS + 1] = {0};
    size_t nlabels = 0;
    const char *execs[MAX_ITEMS], *requires[MAX_ITEMS];
    size_t nexec = 0, nreq = 0;
    const char *serves[MAX_ITEMS];
    size_t nserve = 0;
    long serve_pool = 0, serve_max_jobs = 0;
    double exec_timeout = 0;
    const char *logpath = NULL;
    long l;
    double d;
    int ch, rc = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "r:q:c:t:vl:", longopts, NULL)) != -1) {
        switch (ch) {
        case 'r': o.redis.url = optarg; break;
        case OPT_PWFILE:
            if (!(o.redis.password = cli_password_file(optarg))) return CLI_EXIT_USAGE;
            break;
        case 'q': {
            if (nq == HH_QUEUES_LIMIT) return cli_usage_error("too many queues: at most %d (-q)", HH_QUEUES_LIMIT);
            char *name = queue_names[nq] = strdup(optarg), *comma = name ? strrchr(name, ',') : NULL;
            if (!name) return cli_usage_error("out of memory");
            long w = 0;
            if (comma) {
                *comma = '\0';
                if (cli_parse_int(comma + 1, 0, 1000000, &w) != 0)
                    return cli_usage_error("bad queue weight in '%s'", optarg);
            }
            if (cli_check_name(HH_NAME_QUEUE, name)) return CLI_EXIT_USAGE;
            queues[nq].name = name;
            queues[nq++].weight = (int)w;
            break;
        }
        case 'c':
            if (cli_parse_int(optarg, 1, 1000, &l)) return cli_usage_error("bad --concurrency '%s' (1..1000)", optarg);
            o.concurrency = (int)l;
            break;
        case 't':
            if (cli_parse_seconds(optarg, &o.shutdown_timeout)) return cli_usage_error("bad --timeout '%s'", optarg);
            break;
        case 'v': o.log_level = HH_LOG_DEBUG; break;
        case 'l': logpath = optarg; break;
        case OPT_TAG:
            if (cli_check_name(HH_NAME_TAG, optarg)) return CLI_EXIT_USAGE;
            o.tag = optarg;
            break;
        case OPT_LABEL:
            if (nlabels == MAX_ITEMS) return cli_usage_error("too many --label");
            if (cli_check_name(HH_NAME_LABEL, optarg)) return CLI_EXIT_USAGE;
            labels[nlabels++] = optarg;
            break;
        case OPT_EXEC:
            if (nexec == MAX_ITEMS) return cli_usage_error("too many --exec");
            execs[nexec++] = optarg;
            break;
        case OPT_SERVE:
            if (nserve == MAX_ITEMS) return cli_usage_error("too many --serve");
            serves[nserve++] = optarg;
            break;
        case OPT_SERVE_POOL:
            if (cli_parse_int(optarg, 1, 1000, &serve_pool)) return cli_usage_error("bad --serve-pool '%s' (1..1000)", optarg);
            break;
        case OPT_SERVE_MAX_JOBS:
            if (cli_parse_int(optarg, 1, 1000000000, &serve_max_jobs))
                return cli_usage_error("bad --serve-max-jobs '%s' (1..1000000000)", optarg);
            break;
        case OPT_EXEC_TIMEOUT:
            if (cli_parse_seconds(optarg, &exec_timeout)) return cli_usage_error("bad --exec-timeout '%s'", optarg);
            break;
        case OPT_EXEC_ENV:
            if (cli_exec_env_pass(optarg)) return cli_usage_error("bad --exec-env '%s' (a variable name)", optarg);
            break;
        case OPT_EXEC_ENV_DROP:
            if (cli_exec_env_drop(optarg)) return cli_usage_error("bad --exec-env-drop '%s' (a variable name)", optarg);
            break;
        case OPT_REQUIRE:
            if (nreq == MAX_ITEMS) return cli_usage_error("too many --require");
            requires[nreq++] = optarg;
            break;
        case OPT_NS:
            if (*optarg && cli_check_name(HH_NAME_NAMESPACE, optarg)) return CLI_EXIT_USAGE;
            o.redis.ns = optarg;
            break;
        case OPT_IDENTITY:
            if (cli_check_name(HH_NAME_IDENTITY, optarg)) return CLI_EXIT_USAGE;
            o.identity = optarg;
            break;
        case OPT_FETCH:
            if (!strcmp(optarg, "reliable")) o.fetch = HH_FETCH_RELIABLE;
            else if (!strcmp(optarg, "basic")) o.fetch = HH_FETCH_BASIC;
            else return cli_usage_error("--fetch is reliable or basic, not '%s'", optarg);
            break;
        case OPT_TS:
            if (!strcmp(optarg, "float")) o.redis.timestamps = HH_TS_FLOAT;
            else if (!strcmp(optarg, "millis")) o.redis.timestamps = HH_TS_MILLIS;
            else return cli_usage_error("--timestamps is float or millis, not '%s'", optarg);
            break;
        case OPT_VERSION: o.version = optarg; break;
        case OPT_HB:
            if (cli_parse_seconds(optarg, &d) || d < 0.1 || d > 30) return cli_usage_error("bad --heartbeat-interval '%s' (0.1..30)", optarg);
            o.heartbeat_interval = d;
            break;
        case OPT_POLL:
            if (cli_parse_seconds(optarg, &d) || d <= 0) return cli_usage_error("bad --poll-interval '%s'", optarg);
            o.poll_interval_average = d;
            break;
        case OPT_RECOVERY:
            if (cli_parse_seconds(optarg, &d) || d <= 0) return cli_usage_error("bad --recovery-interval '%s'", optarg);
            o.recovery_interval = d;
            break;
        case OPT_MAXREC:
            if (cli_parse_int(optarg, 0, 1000000, &l)) return cli_usage_error("bad --max-recoveries '%s'", optarg);
            o.max_recoveries = (int)l;
            break;
        case OPT_MAXRETRY:
            if (cli_parse_int(optarg, 0, 1000000, &l)) return cli_usage_error("bad --max-retries '%s'", optarg);
            o.max_retries = (int)l;
            break;
        case OPT_DEADMAX:
            if (cli_parse_int(optarg, 1, 100000000, &l)) return cli_usage_error("bad --dead-max-jobs '%s'", optarg);
            o.dead_max_jobs = l;
            break;
        case OPT_DEADTIMEOUT:
            if (cli_parse_seconds(optarg, &o.dead_timeout) || o.dead_timeout <= 0) return cli_usage_error("bad --dead-timeout '%s'", optarg);
            break;
        case OPT_HTTP: o.http_bind = optarg; break;
        case OPT_LIVENESS:
            if (cli_parse_seconds(optarg, &d) || d <= 0) return cli_usage_error("bad --liveness-max-age '%s'", optarg);
            o.liveness_max_age = d;
            break;
        case OPT_LEASE_LOST:
            if (!strcmp(optarg, "stop")) o.lease_lost = HH_LEASE_LOST_STOP;
            else if (!strcmp(optarg, "finish")) o.lease_lost = HH_LEASE_LOST_FINISH;
            else return cli_usage_error("--lease-lost is stop or finish, not '%s'", optarg);
            break;
        case OPT_HTTP_TOKEN_FILE:
            if (read_token_file(optarg)) return CLI_EXIT_USAGE;
            o.http_token = http_token;
            break;
        case OPT_HELP: fputs(work_usage, stdout); return 0;
        default: fputs(work_usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) return cli_usage_error("unexpected argument '%s'", argv[optind]);
    /* The environment's token, unless a file gave one; taken out of the
     * environment so that --exec handlers do not inherit it. */
    const char *env_token = getenv("HIREDHAND_HTTP_TOKEN");
    if (env_token && *env_token && !o.http_token) {
        if (strlen(env_token) >= sizeof(http_token) || !token_valid(env_token))
            return cli_usage_error("HIREDHAND_HTTP_TOKEN: want 1-4096 visible ASCII characters, no space");
        snprintf(http_token, sizeof(http_token), "%s", env_token);
        o.http_token = http_token;
    }
    unsetenv("HIREDHAND_HTTP_TOKEN");
    char err[256];
    if (hh_redis_url_check(o.redis.url, err, sizeof(err)) != HH_OK) return cli_usage_error("%s", err);
    cli_init_split(); /* as PID 1: returns in the worker, a child of a minimal init */
    /* close-on-exec: --exec handlers must not hold the log open (logrotate) */
    if (logpath && !(log_file = fopen(logpath, "ae"))) return cli_usage_error("cannot open log file %s", logpath);
    log_path = logpath;
    o.queues = queues;
    o.nqueues = nq;
    o.labels = nlabels ? labels : NULL;

    cli_exec *handlers[MAX_ITEMS];
    for (size_t i = 0; i < nexec; i++) {
        if (!(handlers[i] = cli_exec_new(execs[i], exec_timeout, err, sizeof(err)))) {
            while (i--) cli_exec_free(handlers[i]);
            return cli_usage_error("%s", err);
        }
    }
    /* a pool larger than the threads that feed it would never fill */
    int pool = serve_pool > 0 && serve_pool < o.concurrency ? (int)serve_pool : o.concurrency;
    cli_serve *servers[MAX_ITEMS];
    for (size_t i = 0; i < nserve; i++) {
        if (!(servers[i] = cli_serve_new(serves[i], exec_timeout, pool, serve_max_jobs, err, sizeof(err)))) {
            while (i--) cli_serve_free(servers[i]);
            for (size_t k = 0; k < nexec; k++) cli_exec_free(handlers[k]);
            return cli_usage_error("%s", err);
        }
    }
    int e;
    hh_manager *m = hh_manager_new(&o, &e);
    if (!m) {
        for (size_t i = 0; i < nexec; i++) cli_exec_free(handlers[i]);
        for (size_t i = 0; i < nserve; i++) cli_serve_free(servers[i]);
        return cli_usage_error("cannot create the worker: %s", hh_strerror(e));
    }
    for (size_t i = 0; i < nserve && rc == 0; i++) {
        cli_serve_set_manager(servers[i], m);
        /* --serve-pool N: N processes from the start (no job pays for an
         * interpreter's boot); else each starts when a job needs it */
        if (serve_pool > 0) cli_serve_prestart(servers[i], pool);
        e = hh_manager_register(m, cli_serve_class(servers[i]), cli_serve_handler, servers[i]);
        if (e == HH_ERR_EXISTS) rc = cli_usage_error("--serve %s: the class has another --exec or --serve handler", cli_serve_class(servers[i]));
        else if (e != HH_OK) rc = cli_usage_error("--serve %s: %s", cli_serve_class(servers[i]), hh_strerror(e));
    }
    for (size_t i = 0; i < nexec && rc == 0; i++) {
        e = hh_manager_register(m, cli_exec_class(handlers[i]), cli_exec_handler, handlers[i]);
        if (e == HH_ERR_EXISTS) rc = cli_usage_error("--exec %s: the class has another --exec or --serve handler", cli_exec_class(handlers[i]));
        else if (e != HH_OK) rc = cli_usage_error("--exec %s: %s", cli_exec_class(handlers[i]), hh_strerror(e));
    }
    for (size_t i = 0; i < nreq && rc == 0; i++) {
        void *so = dlopen(requires[i], RTLD_NOW | RTLD_LOCAL);
        hh_plugin_init_fn init = so ? (hh_plugin_init_fn)(uintptr_t)dlsym(so, HH_PLUGIN_INIT_SYMBOL) : NULL;
        if (!so) rc = cli_usage_error("--require %s: %s", requires[i], dlerror());
        else if (!init) rc = cli_usage_error("--require %s: no %s function", requires[i], HH_PLUGIN_INIT_SYMBOL);
        else if (init(m) != 0) rc = cli_usage_error("--require %s: %s() failed", requires[i], HH_PLUGIN_INIT_SYMBOL);
    }
    if (rc == 0 && nexec == 0 && nreq == 0 && nserve == 0)
        hh_manager_log(m, HH_LOG_WARN, "no --exec, --serve or --require handlers: every job will fail with NameError");

    /* Signals are taken synchronously here; every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGTSTP);
    sigaddset(&set, SIGTTIN);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (rc == 0) {
        e = hh_manager_start(m);
        if (e == HH_ERR_INVALID || e == HH_ERR_REFUSED) rc = CLI_EXIT_USAGE; /* --http address in use; bad password or db */
        else if (e != HH_OK) rc = e == HH_ERR_EXISTS ? 3 : 1;
    }
    int w = HH_ERR_STATE;
    while (rc == 0 && (w = hh_manager_wait(m, 0)) == HH_ERR_STATE) {
        struct timespec ts = {0, 50 * 1000000L}; /* also how soon the end of a stop is seen */
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) hh_manager_stop(m);
        else if (sig == SIGTSTP) hh_manager_quiet(m);
        else if (sig == SIGTTIN) hh_manager_dump(m);
        else if (sig == SIGHUP) reopen_log(m);
    }
    if (rc == 0 && w == HH_ERR_EXISTS) rc = 3; /* as a refused start */
    if (rc == 0 && w == HH_ERR_REFUSED) rc = CLI_EXIT_USAGE;
    if (e == HH_ERR_REFUSED || w == HH_ERR_REFUSED)
        fprintf(stderr, "hiredhand: %s: giving up (a configuration error, not retried)\n",
                hh_strerror(HH_ERR_REFUSED));
    /* Threads the stop left behind (stuck in a Redis call or a handler) may
     * still log or use their --exec handler until the process exits: keep
     * those alive (the manager then is not freed either). */
    int left_behind = hh_manager_detached(m);
    /* every job is done (or pushed back): --serve processes get their stdin
     * closed, a moment to exit, then are killed */
    for (size_t i = 0; i < nserve; i++) cli_serve_shutdown(servers[i], 2.0);
    if (left_behind) left_manager = m;
    hh_manager_free(m);
    if (!left_behind) {
        for (size_t i = 0; i < nexec; i++) cli_exec_free(handlers[i]);
        for (size_t i = 0; i < nserve; i++) cli_serve_free(servers[i]);
    }
    for (size_t i = 0; i < nq; i++) free(queue_names[i]);
    free(queue_names);
    free(queues);
    queue_names = NULL;
    queues = NULL;
    if (log_file && !left_behind) fclose(log_file);
    return rc;
}
