/* inspect.c -- the client-side commands: push, stats, processes, and the
 * Web UI's Quiet/Stop buttons (quiet, stop, dump). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
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

enum { OPT_JSON = 1000, OPT_IN, OPT_AT, OPT_RETRY, OPT_TS, OPT_HELP, OPT_ARGS_FILE, OPT_BULK };

static hh_client *connect_or_explain(common *c, int *rc) { return cli_client_open(&c->redis, CLI_EXIT_REDIS, rc); }

/* ------------------------------------------------- push from a file */

/* FILE, or stdin for "-": opened for reading, or NULL after saying why. */
static FILE *open_input(const char *opt, const char *path) {
    if (!strcmp(path, "-")) return stdin;
    FILE *f = fopen(path, "re");
    if (!f) cli_usage_error("%s %s: %s", opt, path, strerror(errno));
    return f;
}

/* --args-file: the whole file is one JSON array. malloc'd, or NULL after
 * saying why. */
static char *read_args_file(const char *path) {
    FILE *f = open_input("--args-file", path);
    if (!f) return NULL;
    size_t len = 0, cap = 0;
    char *buf = NULL;
    for (;;) {
        if (cap - len < 65536) {
            char *b = realloc(buf, cap = cap ? cap * 2 : 65536 * 2);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = !buf || ferror(f);
    if (f != stdin) fclose(f);
    if (bad) {
        free(buf);
        cli_usage_error("--args-file %s: cannot read it", path);
        return NULL;
    }
    buf[len] = '\0';
    json_error_t je;
    json_t *v = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    int ok = json_is_array(v);
    json_decref(v);
    if (!ok) {
        if (v) cli_usage_error("--args-file %s: not a JSON array", path);
        else cli_usage_error("--args-file %s: not JSON: %s (line %d, column %d)", path, je.text, je.line, je.column);
        free(buf);
        return NULL;
    }
    return buf;
}

/* --bulk: the input's non-blank lines, each with its line number. */
typedef struct bulk_lines {
    char **line;
    size_t *no;
    size_t n, cap;
} bulk_lines;

static void bulk_free(bulk_lines *b) {
    for (size_t i = 0; i < b->n; i++) free(b->line[i]);
    free(b->line);
    free(b->no);
}

/* Checks one --bulk line: an args array (with CLASS on the command line)
 * or a job object as Sidekiq::Client.push takes it. 0, or -1 with why. */
static int bulk_check(const char *line, int items, char *why, size_t wlen) {
    json_error_t je;
    json_t *v = json_loads(line, JSON_ALLOW_NUL, &je);
    int rc = -1;
    if (!v) snprintf(why, wlen, "not JSON: %s (column %d)", je.text, je.column);
    else if (!items && !json_is_array(v)) snprintf(why, wlen, "not a JSON array of arguments");
    else if (items && !json_is_object(v))
        snprintf(why, wlen, "not a JSON object (a job: {\"class\":...,\"args\":[...]}, as Sidekiq::Client.push takes)");
    else if (items && !(json_is_string(json_object_get(v, "class")) && json_string_length(json_object_get(v, "class"))))
        snprintf(why, wlen, "no \"class\" string");
    else if (items && !json_is_array(json_object_get(v, "args"))) snprintf(why, wlen, "no \"args\" array");
    else if (items && json_object_get(v, "queue") &&
             (!json_is_string(json_object_get(v, "queue")) ||
              hh_name_check(HH_NAME_QUEUE, json_string_value(json_object_get(v, "queue")), why, wlen) != HH_OK)) {
        if (!json_is_string(json_object_get(v, "queue"))) snprintf(why, wlen, "\"queue\" is not a string");
    } else if (items && json_object_get(v, "at") && !json_is_number(json_object_get(v, "at")))
        snprintf(why, wlen, "\"at\" is not a number");
    else if (items && json_object_get(v, "at") &&
             !(json_number_value(json_object_get(v, "at")) >= 0 &&
               json_number_value(json_object_get(v, "at")) <= CLI_SECONDS_MAX))
        snprintf(why, wlen, "\"at\" is out of range, want a Unix time from 0 to %.0f seconds", CLI_SECONDS_MAX);
    else rc = 0;
    json_decref(v);
    return rc;
}

/* Reads and checks every line before anything is pushed: a bad line N
 * pushes nothing. 0, or an exit status after saying why. */
static int bulk_read(const char *path, int items, bulk_lines *b) {
    FILE *f = open_input("--bulk", path);
    if (!f) return CLI_EXIT_USAGE;
    char *line = NULL, why[300];
    size_t cap = 0, no = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        size_t sp = strspn(line, " \t");
        if (line[sp] == '\0') continue; /* blank */
        if (bulk_check(line, items, why, sizeof(why)) != 0) {
            rc = cli_usage_error("--bulk %s: line %zu: %s; nothing pushed", path, no, why);
            break;
        }
        if (b->n == b->cap) {
            size_t c = b->cap ? b->cap * 2 : 1024;
            char **l = realloc(b->line, c * sizeof(*l));
            if (l) b->line = l;
            size_t *n = l ? realloc(b->no, c * sizeof(*n)) : NULL;
            if (!n) {
                rc = cli_usage_error("--bulk %s: out of memory at line %zu; nothing pushed", path, no);
                break;
            }
            b->no = n;
            b->cap = c;
        }
        b->no[b->n] = no;
        b->line[b->n++] = line;
        line = NULL, cap = 0;
    }
    if (rc == 0 && ferror(f)) rc = cli_usage_error("--bulk %s: read error at line %zu; nothing pushed", path, no + 1);
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

#define BULK_BATCH 1000 /* args lines per hh_client_push_bulk round trip */

/* Pushes the checked lines, printing one jid per line. A failure midway
 * (Redis) says how many were pushed and from which line nothing was. */
static int bulk_push(hh_client *cl, const char *path, const char *klass, const hh_push_options *po,
                     const bulk_lines *b) {
    char(*jids)[HH_JID_SIZE] = malloc(BULK_BATCH * sizeof(*jids));
    if (!jids) return cli_usage_error("out of memory");
    size_t done = 0, n = 1;
    int e = HH_OK;
    while (done < b->n && e == HH_OK) {
        n = 1;
        if (klass) {
            n = b->n - done < BULK_BATCH ? b->n - done : BULK_BATCH;
            e = hh_client_push_bulk(cl, klass, (const char *const *)b->line + done, n, po, jids);
        } else {
            e = hh_client_push_item(cl, b->line[done], jids[0]);
        }
        if (e != HH_OK) break;
        for (size_t i = 0; i < n; i++) printf("%s\n", jids[i]);
        done += n;
    }
    free(jids);
    if (e == HH_OK) return 0;
    char where[64];
    if (n > 1) snprintf(where, sizeof(where), "lines %zu to %zu (one round trip)", b->no[done], b->no[done + n - 1]);
    else snprintf(where, sizeof(where), "line %zu", b->no[done]);
    fprintf(stderr,
            "hiredhand: --bulk %s: pushing %s: %s; %zu job%s pushed (their jids printed), none from line %zu on\n",
            path, where, hh_last_error(), done, done == 1 ? "" : "s", b->no[done]);
    return e == HH_ERR_INVALID ? CLI_EXIT_USAGE : e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
}

int cli_push(int argc, char **argv) {
    static const struct option own[] = {{"queue", required_argument, 0, 'q'},
                                        {"in", required_argument, 0, OPT_IN},
                                        {"at", required_argument, 0, OPT_AT},
                                        {"retry", required_argument, 0, OPT_RETRY},
                                        {"timestamps", required_argument, 0, OPT_TS},
                                        {"args-file", required_argument, 0, OPT_ARGS_FILE},
                                        {"bulk", required_argument, 0, OPT_BULK},
                                        {"help", no_argument, 0, OPT_HELP},
                                        {0, 0, 0, 0}};
    /* clang-format off */ /* the help text keeps its layout */
    static const char usage[] =
        "usage: hiredhand push CLASS [ARGS_JSON | --args-file FILE] [-q QUEUE] [--in SECONDS | --at EPOCH]\n"
        "                      [--retry true|false|N] [-r URL] [--redis-password-file FILE]\n"
        "                      [--namespace NS] [--timestamps float|millis]\n"
        "       hiredhand push [CLASS] --bulk FILE [options]\n"
        "Prints the jid. ARGS_JSON is a JSON array (default []).\n"
        "  --in SECONDS       run in SECONDS, -999999999 to 999999999 (not positive: pushed now)\n"
        "  --at EPOCH         run at this Unix time, 0 to 10000000000 (in the past: pushed now)\n"
        "  --retry true|false|N  N from 0 to 1000000\n"
        "  --args-file FILE   read ARGS_JSON from FILE (- for stdin): args too big for a command line\n"
        "  --bulk FILE        one job per line of FILE (- for stdin), one jid printed per job: with\n"
        "                     CLASS, each line is a JSON array of args (Sidekiq::Client.push_bulk;\n"
        "                     -q, --in, --at and --retry apply to all); without, each line is a job\n"
        "                     object as Sidekiq::Client.push takes it: {\"class\":\"HardWorker\",\n"
        "                     \"args\":[1],\"queue\":\"low\",\"at\":1767225600,\"retry\":3,...}.\n"
        "                     Every line is read and checked first: a bad line N pushes nothing.\n"
        "                     Blank lines are skipped.\n";
    /* clang-format on */
    common c = {0};
    hh_redis_options_init(&c.redis);
    hh_push_options po;
    hh_push_options_init(&po);
    double in = -1, at = -1;
    int in_set = 0;
    const char *args_file = NULL, *bulk = NULL;
    int ch, retry_set = 0;
    long n;
    optind = 1;
    const struct option *lo = cli_longopts(own);
    while ((ch = getopt_long(argc, argv, "r:q:", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &c.redis);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
        case 'q':
            if (cli_check_name(HH_NAME_QUEUE, optarg)) return CLI_EXIT_USAGE;
            po.queue = optarg;
            break;
        case OPT_IN:
            /* negative too: like perform_in, a time already past pushes
             * the job to its queue at once (as --at in the past does). The
             * bound: Sidekiq's perform_in reads 1e9 or more as a Unix time,
             * so such an --in would mean something else there (--at is for
             * that), and a job years away is a typo. */
            if (cli_option_seconds("--in", optarg, -CLI_PUSH_IN_MAX, 0, CLI_PUSH_IN_MAX, &in)) return CLI_EXIT_USAGE;
            in_set = 1;
            break;
        case OPT_AT:
            /* a Unix time; in the past (0 included): pushed now */
            if (cli_option_seconds("--at", optarg, 0, 0, CLI_SECONDS_MAX, &at)) return CLI_EXIT_USAGE;
            break;
        case OPT_ARGS_FILE: args_file = optarg; break;
        case OPT_BULK: bulk = optarg; break;
        case OPT_RETRY:
            retry_set = 1;
            if (!strcmp(optarg, "true")) po.retry = HH_RETRY_TRUE;
            else if (!strcmp(optarg, "false")) po.retry = HH_RETRY_FALSE;
            else if (cli_parse_int(optarg, 0, HH_RETRIES_LIMIT, &n) == 0)
                po.retry = HH_RETRY_COUNT, po.retry_max = (int)n;
            else
                return cli_usage_error("--retry: '%s' is not true, false or a count from 0 to %d", optarg,
                                       HH_RETRIES_LIMIT);
            break;
        case OPT_TS:
            if (cli_option_timestamps(optarg, &c.redis.timestamps)) return CLI_EXIT_USAGE;
            break;
        case OPT_HELP: fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    if (in_set && at >= 0) return cli_usage_error("--in and --at exclude each other");
    if (bulk && args_file) return cli_usage_error("--bulk and --args-file exclude each other");
    if (!bulk && optind >= argc) return cli_usage_error("push needs a CLASS\n%s", usage);
    const char *klass = optind < argc ? argv[optind++] : NULL;
    const char *args = !bulk && !args_file && optind < argc ? argv[optind++] : "[]";
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'%s", argv[optind],
                               bulk || args_file ? " (the args come from the file)" : "");
    if (bulk && !klass && (po.queue || in_set || at >= 0 || retry_set))
        return cli_usage_error("--bulk without CLASS: -q, --in, --at and --retry go in each line's job object");
    char *args_buf = NULL;
    if (args_file && !(args = args_buf = read_args_file(args_file))) return CLI_EXIT_USAGE;
    if (!args_file && !bulk) {
        json_error_t je;
        json_t *parsed = json_loads(args, JSON_ALLOW_NUL, &je);
        int is_array = json_is_array(parsed);
        json_decref(parsed);
        /* jansson has no lossless path for integers beyond 64 bits (as a
         * real they lose digits), so push refuses them and says so; the
         * worker still runs such jobs pushed by Ruby (outcome.h). */
        if (!parsed)
            return cli_usage_error("ARGS_JSON is not valid JSON: %s (line %d, column %d)%s", je.text, je.line,
                                   je.column,
                                   strstr(je.text, "too big integer")
                                       ? "; push takes integers from -9223372036854775808 to 9223372036854775807 "
                                         "(64 bits): pass a bigger one as a string"
                                       : "");
        if (!is_array) return cli_usage_error("ARGS_JSON must be a JSON array, got '%s'", args);
    }
    bulk_lines lines = {0};
    if (bulk) {
        int brc = bulk_read(bulk, !klass, &lines);
        if (brc) {
            bulk_free(&lines);
            return brc;
        }
    }
    if (in_set) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        po.at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + in;
    } else if (at >= 0) {
        po.at = at;
    }
    int rc = 0;
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) {
        free(args_buf);
        bulk_free(&lines);
        return rc;
    }
    if (bulk) {
        rc = bulk_push(cl, bulk, klass, &po, &lines);
        bulk_free(&lines);
        hh_client_free(cl);
        return rc;
    }
    char jid[HH_JID_SIZE];
    int e = hh_client_push(cl, klass, args, &po, jid);
    free(args_buf);
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: %s\n", hh_last_error()); /* what and why, Redis' words included */
        hh_client_free(cl);
        return e == HH_ERR_INVALID ? CLI_EXIT_USAGE : e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    hh_client_free(cl);
    printf("%s\n", jid);
    return 0;
}

/* Shared option loop for stats/processes/quiet/stop/dump. The words that
 * are not options are left at optind on (getopt permutes them there): each
 * command checks their count, so that `stats foo` is refused, not read as
 * `stats`. */
static int parse_common(int argc, char **argv, common *c, const char *usage) {
    static const struct option own[] = {
        {"json", no_argument, 0, OPT_JSON}, {"help", no_argument, 0, OPT_HELP}, {0, 0, 0, 0}};
    int ch;
    hh_redis_options_init(&c->redis);
    optind = 1;
    const struct option *lo = cli_longopts(own);
    while ((ch = getopt_long(argc, argv, "r:", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &c->redis);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
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

/* "Periodic  N (D disabled, B broken)" from hh_cron_list's JSON; nothing
 * when there are none (most fleets run no sidekiq-cron). */
static void print_cron_counts(const char *list) {
    json_t *jobs = list ? json_loads(list, 0, NULL) : NULL, *j;
    size_t i, disabled = 0, broken = 0;
    json_array_foreach(jobs, i, j) {
        const char *status = json_string_value(json_object_get(j, "status"));
        if (status && strcmp(status, "enabled") != 0) disabled++;
        if (json_is_string(json_object_get(j, "error"))) broken++;
    }
    if (json_array_size(jobs)) {
        printf("%-10s %zu", "Periodic", json_array_size(jobs));
        if (disabled || broken) printf(" (%zu disabled, %zu broken)", disabled, broken);
        fputc('\n', stdout);
    }
    json_decref(jobs);
}

int cli_stats(int argc, char **argv) {
    common c = {0};
    int rc = parse_common(argc, argv, &c,
                          "usage: hiredhand stats [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n");
    if (rc) return rc < 0 ? 0 : rc;
    if (optind < argc) return cli_usage_error("stats: unexpected argument '%s' (stats takes none)", argv[optind]);
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_client_stats(cl, &out);
    if (e != HH_OK) {
        hh_client_free(cl);
        fprintf(stderr, "hiredhand: %s\n", hh_last_error()); /* Redis's words and the key */
        return e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    /* The periodic jobs of sidekiq-cron's default namespace, when any:
     * best effort, the queue figures stand without them. */
    char *cron = NULL;
    if (!c.json && hh_cron_list(cl, NULL, &cron) != HH_OK) cron = NULL;
    hh_client_free(cl);
    if (c.json) {
        printf("%s\n", out);
    } else {
        json_t *s = json_loads(out, 0, NULL);
        const char *rows[][2] = {{"Processed", "processed"},      {"Failed", "failed"},
                                 {"Busy", "workers_size"},        {"Enqueued", "enqueued"},
                                 {"Scheduled", "scheduled_size"}, {"Retries", "retry_size"},
                                 {"Dead", "dead_size"},           {"Processes", "processes_size"}};
        for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
            json_t *v = json_object_get(s, rows[i][1]),
                   *why = json_object_get(json_object_get(s, "errors"), rows[i][1]);
            if (json_is_integer(v)) printf("%-10s %lld\n", rows[i][0], (long long)json_integer_value(v));
            else if (why) printf("%-10s ? (%s)\n", rows[i][0], cli_shown_json(why)); /* a key of another type */
        }
        print_cron_counts(cron);
        json_t *qs = json_object_get(s, "queues"), *q;
        size_t i;
        cli_table *t = NULL;
        if (json_array_size(qs) && (t = cli_table_new("lrl", NULL, NULL)) != NULL) {
            const char *h[] = {"Queue", "Size", "Latency"};
            fputc('\n', stdout);
            cli_table_row(t, h);
        }
        json_array_foreach(qs, i, q) {
            char lat[32], size[32];
            human_latency(lat, sizeof(lat), json_real_value(json_object_get(q, "latency")));
            snprintf(size, sizeof(size), "%lld", (long long)json_integer_value(json_object_get(q, "size")));
            json_t *why = json_object_get(q, "error"); /* a key of another type: no size to show */
            char *name = strdup(cli_shown_json(json_object_get(q, "name")));
            const char *row[] = {name ? name : "?", why ? cli_shown_json(why) : size, why ? "-" : lat};
            cli_table_row(t, row);
            free(name);
        }
        cli_table_end(t);
        json_decref(s);
    }
    free(out);
    free(cron);
    return 0;
}

int cli_processes(int argc, char **argv) {
    common c = {0};
    int rc = parse_common(
        argc, argv, &c, "usage: hiredhand processes [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n");
    if (rc) return rc < 0 ? 0 : rc;
    if (optind < argc)
        return cli_usage_error("processes: unexpected argument '%s' (processes takes none)", argv[optind]);
    hh_client *cl = connect_or_explain(&c, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_client_processes(cl, &out);
    hh_client_free(cl);
    if (e != HH_OK) {
        fprintf(stderr, "hiredhand: %s\n", hh_last_error()); /* Redis's words and the key */
        return e == HH_ERR_REDIS ? CLI_EXIT_REDIS : 1;
    }
    if (c.json) {
        printf("%s\n", out);
    } else {
        json_t *arr = json_loads(out, 0, NULL), *p;
        size_t i;
        cli_table *t = cli_table_new("llrrlr", NULL, NULL);
        const char *h[] = {"IDENTITY", "TAG", "BUSY", "BEAT", "QUIET", "RSS"};
        cli_table_row(t, h);
        json_array_foreach(arr, i, p) {
            char busy[48], beat[32], rss[32];
            snprintf(busy, sizeof(busy), "%lld/%lld", (long long)json_integer_value(json_object_get(p, "busy")),
                     (long long)json_integer_value(json_object_get(p, "concurrency")));
            snprintf(beat, sizeof(beat), "%.1fs", json_real_value(json_object_get(p, "beat_age")));
            snprintf(rss, sizeof(rss), "%lldKB", (long long)json_integer_value(json_object_get(p, "rss")));
            const char *row[] = {cli_shown_json(json_object_get(p, "identity")),
                                 cli_shown_json(json_object_get(p, "tag")),
                                 busy,
                                 beat,
                                 json_is_true(json_object_get(p, "quiet")) ? "yes" : "no",
                                 rss};
            cli_table_row(t, row);
        }
        cli_table_end(t);
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
