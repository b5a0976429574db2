/* inspect.c -- the client-side commands: push, stats, processes, and the
 * Web UI's Quiet/Stop buttons (quiet, stop, dump). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

/* Options every client command takes. */
typedef struct common {
    hh_redis_options redis;
    int json;
} common;

enum { OPT_NS = 1000, OPT_JSON, OPT_IN, OPT_AT, OPT_RETRY, OPT_TS, OPT_HELP, OPT_PWFILE };

static hh_client *connect_or_explain(common *c, int *rc) { return cli_client_open(&c->redis, CLI_EXIT_REDIS, rc); }

int cli_push(int argc, char **argv) {
    static const struct option lo[] = {{"redis", required_argument, 0, 'r'},
                                       {"queue", required_argument, 0, 'q'},
                                       {"namespace", required_argument, 0, OPT_NS},
                                       {"in", required_argument, 0, OPT_IN},
                                       {"at", required_argument, 0, OPT_AT},
                                       {"retry", required_argument, 0, OPT_RETRY},
                                       {"timestamps", required_argument, 0, OPT_TS},
                                       {"redis-password-file", required_argument, 0, OPT_PWFILE},
                                       CLI_TLS_LONGOPTS,
                                       {"help", no_argument, 0, OPT_HELP},
                                       {0, 0, 0, 0}};
    /* clang-format off */ /* the help text keeps its layout */
    static const char usage[] =
        "usage: hiredhand push CLASS [ARGS_JSON] [-q QUEUE] [--in SECONDS | --at EPOCH]\n"
        "                      [--retry true|false|N] [-r URL] [--redis-password-file FILE]\n"
        "                      [--namespace NS] [--timestamps float|millis]\n"
        "Prints the jid. ARGS_JSON is a JSON array (default []).\n";
    /* clang-format on */
    common c = {0};
    hh_redis_options_init(&c.redis);
    hh_push_options po;
    hh_push_options_init(&po);
    double in = -1, at = -1;
    int ch;
    long n;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "r:q:", lo, NULL)) != -1) {
        switch (ch) {
        case 'r':
            c.redis.url = optarg;
            break;
        CLI_TLS_CASES:
            if (cli_redis_option(ch, optarg, &c.redis)) return CLI_EXIT_USAGE;
            break;
        case OPT_PWFILE:
            if (!(c.redis.password = cli_password_file(optarg))) return CLI_EXIT_USAGE;
            break;
        case 'q':
            if (cli_check_name(HH_NAME_QUEUE, optarg)) return CLI_EXIT_USAGE;
            po.queue = optarg;
            break;
        case OPT_NS:
            if (*optarg && cli_check_name(HH_NAME_NAMESPACE, optarg)) return CLI_EXIT_USAGE;
            c.redis.ns = optarg;
            break;
        case OPT_IN:
            if (cli_parse_seconds(optarg, &in)) return cli_usage_error("bad --in '%s'", optarg);
            break;
        case OPT_AT:
            if (cli_parse_seconds(optarg, &at)) return cli_usage_error("bad --at '%s'", optarg);
            break;
        case OPT_RETRY:
            if (!strcmp(optarg, "true")) po.retry = HH_RETRY_TRUE;
            else if (!strcmp(optarg, "false")) po.retry = HH_RETRY_FALSE;
            else if (cli_parse_int(optarg, 0, 1000000, &n) == 0) po.retry = HH_RETRY_COUNT, po.retry_max = (int)n;
            else return cli_usage_error("--retry is true, false or a count, not '%s'", optarg);
            break;
        case OPT_TS:
            if (!strcmp(optarg, "millis")) c.redis.timestamps = HH_TS_MILLIS;
            else if (strcmp(optarg, "float")) return cli_usage_error("--timestamps is float or millis");
            break;
        case OPT_HELP: fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (in >= 0 && at >= 0) return cli_usage_error("--in and --at exclude each other");
    if (optind >= argc) return cli_usage_error("push needs a CLASS\n%s", usage);
    const char *klass = argv[optind++];
    const char *args = optind < argc ? argv[optind++] : "[]";
    if (optind < argc) return cli_usage_error("unexpected argument '%s'", argv[optind]);
    json_t *parsed = json_loads(args, JSON_ALLOW_NUL, NULL);
    int is_array = json_is_array(parsed);
    json_decref(parsed);
    if (!is_array) return cli_usage_error("ARGS_JSON must be a JSON array, got '%s'", args);
    if (in >= 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        po.at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + in;
    } else if (at >= 0) {
        po.at = at;
    }
    int rc = 0;
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    char jid[HH_JID_SIZE];
    int e = hh_client_push(cl, klass, args, &po, jid);
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: %s\n", hh_last_error()); /* what and why, Redis' words included */
        hh_client_free(cl);
        return e == HH_ERR_INVALID ? CLI_EXIT_USAGE : e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    hh_client_free(cl);
    printf("%s\n", jid);
    return 0;
}

/* Shared option loop for stats/processes/quiet/stop/dump. */
static int parse_common(int argc, char **argv, common *c, const char *usage) {
    static const struct option lo[] = {{"redis", required_argument, 0, 'r'},
                                       {"namespace", required_argument, 0, OPT_NS},
                                       {"json", no_argument, 0, OPT_JSON},
                                       {"redis-password-file", required_argument, 0, OPT_PWFILE},
                                       CLI_TLS_LONGOPTS,
                                       {"help", no_argument, 0, OPT_HELP},
                                       {0, 0, 0, 0}};
    int ch;
    hh_redis_options_init(&c->redis);
    optind = 1;
    while ((ch = getopt_long(argc, argv, "r:", lo, NULL)) != -1) {
        switch (ch) {
        case 'r':
            c->redis.url = optarg;
            break;
        CLI_TLS_CASES:
            if (cli_redis_option(ch, optarg, &c->redis)) return CLI_EXIT_USAGE;
            break;
        case OPT_PWFILE:
            if (!(c->redis.password = cli_password_file(optarg))) return CLI_EXIT_USAGE;
            break;
        case OPT_NS:
            if (*optarg && cli_check_name(HH_NAME_NAMESPACE, optarg)) return CLI_EXIT_USAGE;
            c->redis.ns = optarg;
            break;
        case OPT_JSON: c->json = 1; break;
        case OPT_HELP: fputs(usage, stdout); return -1;
        default: fputs(usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static void human_latency(char *buf, size_t n, double s) {
    if (s < 1) snprintf(buf, n, "%.0f ms", s * 1000);
    else if (s < 120) snprintf(buf, n, "%.1f s", s);
    else if (s < 7200) snprintf(buf, n, "%.0f min", s / 60);
    else snprintf(buf, n, "%.1f h", s / 3600);
}

int cli_stats(int argc, char **argv) {
    common c = {0};
    int rc = parse_common(argc, argv, &c,
                          "usage: hiredhand stats [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n");
    if (rc) return rc < 0 ? 0 : rc;
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_client_stats(cl, &out);
    hh_client_free(cl);
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: stats failed: %s\n", hh_strerror(e));
        return e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    if (c.json) {
        printf("%s\n", out);
    } else {
        json_t *s = json_loads(out, 0, NULL);
        const char *rows[][2] = {{"Processed", "processed"},      {"Failed", "failed"},
                                 {"Busy", "workers_size"},        {"Enqueued", "enqueued"},
                                 {"Scheduled", "scheduled_size"}, {"Retries", "retry_size"},
                                 {"Dead", "dead_size"},           {"Processes", "processes_size"}};
        for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
            printf("%-10s %lld\n", rows[i][0], (long long)json_integer_value(json_object_get(s, rows[i][1])));
        json_t *qs = json_object_get(s, "queues"), *q;
        size_t i;
        if (json_array_size(qs)) printf("\n%-24s %10s  %s\n", "Queue", "Size", "Latency");
        json_array_foreach(qs, i, q) {
            char lat[32];
            human_latency(lat, sizeof(lat), json_real_value(json_object_get(q, "latency")));
            printf("%-24s %10lld  %s\n", json_string_value(json_object_get(q, "name")),
                   (long long)json_integer_value(json_object_get(q, "size")), lat);
        }
        json_decref(s);
    }
    free(out);
    return 0;
}

int cli_processes(int argc, char **argv) {
    common c = {0};
    int rc = parse_common(
        argc, argv, &c, "usage: hiredhand processes [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n");
    if (rc) return rc < 0 ? 0 : rc;
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_client_processes(cl, &out);
    hh_client_free(cl);
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: processes failed: %s\n", hh_strerror(e));
        return e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    if (c.json) {
        printf("%s\n", out);
    } else {
        json_t *arr = json_loads(out, 0, NULL), *p;
        size_t i;
        printf("%-44s %-10s %9s %8s %6s %10s\n", "IDENTITY", "TAG", "BUSY", "BEAT", "QUIET", "RSS");
        json_array_foreach(arr, i, p) {
            char busy[32];
            snprintf(busy, sizeof(busy), "%lld/%lld", (long long)json_integer_value(json_object_get(p, "busy")),
                     (long long)json_integer_value(json_object_get(p, "concurrency")));
            printf("%-44s %-10s %9s %7.1fs %6s %8lldKB\n", json_string_value(json_object_get(p, "identity")),
                   json_string_value(json_object_get(p, "tag")) ? json_string_value(json_object_get(p, "tag")) : "",
                   busy, json_real_value(json_object_get(p, "beat_age")),
                   json_is_true(json_object_get(p, "quiet")) ? "yes" : "no",
                   (long long)json_integer_value(json_object_get(p, "rss")));
        }
        json_decref(arr);
    }
    free(out);
    return 0;
}

int cli_signal(int argc, char **argv, const char *signal) {
    common c = {0};
    char usage[160];
    snprintf(usage, sizeof(usage),
             "usage: hiredhand %s IDENTITY [-r URL] [--redis-password-file FILE] [--namespace NS]\n",
             !strcmp(signal, "TSTP")       ? "quiet"
                 : !strcmp(signal, "TERM") ? "stop"
                                           : "dump");
    int rc = parse_common(argc, argv, &c, usage);
    if (rc) return rc < 0 ? 0 : rc;
    if (optind + 1 != argc) return cli_usage_error("expected one IDENTITY\n%s", usage);
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    int e = hh_client_signal(cl, argv[optind], signal);
    hh_client_free(cl);
    if (e == HH_ERR_NOTFOUND) {
        fprintf(stderr, "hiredhand: no live process %s\n", argv[optind]);
        return 1;
    }
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: %s\n", hh_strerror(e));
        return e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    printf("sent %s to %s\n", signal, argv[optind]);
    return 0;
}
