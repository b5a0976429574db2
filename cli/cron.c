/* cron.c -- `hiredhand cron`: sidekiq-cron's periodic jobs listed, shown,
 * added, switched, deleted and run now, through the hh_cron_* API (which
 * writes what sidekiq-cron writes). No Redis key of its own. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "cli.h"
#include "common.h"

#define HH_CRON_NS_AUTO "auto" /* as the poller's --cron-namespace auto */

enum {
    C_NS = 1000,
    C_JSON,
    C_CRON,
    C_CLASS,
    C_QUEUE,
    C_ARGS,
    C_DESC,
    C_AJ,
    C_DATE,
    C_RETRY,
    C_DISABLED,
    C_LAYOUT,
    C_HELP
};

/* clang-format off */ /* the help text keeps its layout */
static const char usage[] =
    "usage: hiredhand cron [list|show NAME|add NAME|enable NAME|disable NAME|delete NAME|enqueue NAME] [options]\n"
    "  list          the periodic jobs (sidekiq-cron's) of a namespace: status, cron, class,\n"
    "                queue, next tick, last enqueue, and why a job cannot run\n"
    "  show NAME     one job, as JSON\n"
    "  add NAME      save a job as sidekiq-cron does (source dynamic); an expression\n"
    "                the parser refuses is refused with its reason:\n"
    "      --cron EXPR         required: 5 or 6 fields, an alias, an optional zone\n"
    "      --class K           required: the job class\n"
    "      --queue Q           default: default\n"
    "      --args JSON         a JSON array (default [])\n"
    "      --description TEXT\n"
    "      --retry JSON        true, false or a count, 0 or more (default: Sidekiq's)\n"
    "      --active-job        push it in ActiveJob's envelope\n"
    "      --date-as-argument  each run gets its enqueue time as last argument\n"
    "      --disabled          save it disabled\n"
    "      --layout 1|2        save in sidekiq-cron 1.x's keys or 2.x's (default: 1.x's\n"
    "                          when Redis holds 1.x jobs and no 2.x ones, else 2.x's)\n"
    "  enable|disable NAME   switch it, as the Cron tab's buttons\n"
    "  delete NAME   delete it and its history\n"
    "  enqueue NAME  run it now, as the Cron tab's \"Enqueue now\"\n"
    "  show, enable, disable, delete, enqueue: --layout 1|2 picks the copy of a job\n"
    "                saved in both layouts (refused without it, exit 2)\n"
    "options: --cron-namespace NS (default: default; list: '*' or auto for every\n"
    "         namespace found in Redis; the other verbs refuse both), --json (list), -r URL,\n"
    "         --redis-password-file FILE, --namespace NS\n"
    "exit status: 0 done, 1 a namespace's cron_jobs key of another type (list), 2 usage\n"
    "or a refused job, 3 Redis error, 4 no such job\n";
/* clang-format on */

#define EXIT_REDIS 3
#define EXIT_NOTFOUND 4

static void when(char *buf, size_t len, json_t *v) {
    if (!json_is_integer(v)) {
        snprintf(buf, len, "-");
        return;
    }
    time_t t = (time_t)json_integer_value(v);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static const char *str(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* A field of a listed job as the terminal may show it (cli_name_escape:
 * a control byte in a name or class written by any client cannot drive
 * the terminal or break the table's rows). malloc'd; "-" when absent. */
static char *shown(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) return strdup("-");
    return cli_name_escape(json_string_value(v), json_string_length(v));
}

/* A namespace's set whose key is of another type (the entry with "key"):
 * its jobs cannot be read, so the listing is not whole. Each is named on
 * stderr with its type, and the status is 1 (0 when there is none). */
static int bad_sets(json_t *a) {
    size_t i;
    json_t *j;
    int rc = 0;
    json_array_foreach(a, i, j) {
        if (!json_is_string(json_object_get(j, "key"))) continue;
        char *why = shown(j, "error");
        fprintf(stderr, "hiredhand: cron: %s\n", why ? why : "?");
        free(why);
        rc = 1;
    }
    return rc;
}

/* all_ns: the listing of every namespace ('*'), a column of its own */
static int print_list(const char *json, int as_json, int all_ns) {
    json_t *a = json_loads(json, 0, NULL);
    if (as_json) {
        printf("%s\n", json);
        int rc = bad_sets(a);
        json_decref(a);
        return rc;
    }
    size_t i;
    json_t *j;
    if (all_ns) printf("%-16s ", "NAMESPACE");
    printf("%-24s %-9s %-20s %-24s %-12s %-24s %s\n", "NAME", "STATUS", "CRON", "CLASS", "QUEUE", "NEXT",
           "LAST ENQUEUE");
    json_array_foreach(a, i, j) {
        if (all_ns) {
            char *ns = shown(j, "namespace");
            printf("%-16s ", ns ? ns : "?");
            free(ns);
        }
        char next[40];
        when(next, sizeof(next), json_object_get(j, "next"));
        const char *keys[] = {"name", "status", "cron", "class", "queue", "last_enqueue_time", "error"};
        char *f[7];
        for (size_t n = 0; n < 7; n++) f[n] = shown(j, keys[n]);
        char *raw = NULL;
        size_t rl = 0;
        if (cli_base64_field(j, "name_base64", &raw, &rl) == 0) { /* not UTF-8: its bytes as \xNN, a \ as \\ */
            free(f[0]);
            f[0] = cli_name_escape(raw, rl);
            free(raw);
        }
        printf("%-24s %-9s %-20s %-24s %-12s %-24s %s\n", f[0] ? f[0] : "?", f[1] ? f[1] : "?", f[2] ? f[2] : "?",
               f[3] ? f[3] : "?", f[4] ? f[4] : "?", next, f[5] ? f[5] : "?");
        if (json_is_string(json_object_get(j, "error"))) printf("  ! cannot run: %s\n", f[6] ? f[6] : "?");
        json_int_t other = json_integer_value(json_object_get(j, "also_in_layout"));
        if (other)
            printf("  ! layout %d copy; also in layout %d: both run each tick (delete one: cron delete %s "
                   "--layout 1|2)\n",
                   (int)json_integer_value(json_object_get(j, "layout")), (int)other, f[0] ? f[0] : "?");
        for (size_t n = 0; n < 7; n++) free(f[n]);
    }
    if (!json_array_size(a)) printf("(no periodic jobs)\n");
    int rc = bad_sets(a);
    json_decref(a);
    return rc;
}

static int fail(int e) {
    fprintf(stderr, "hiredhand: cron: %s\n", hh_last_error());
    return e == HH_ERR_NOTFOUND ? EXIT_NOTFOUND : e == HH_ERR_INVALID ? CLI_EXIT_USAGE : EXIT_REDIS;
}

int cli_cron(int argc, char **argv) {
    static const struct option own[] = {{"cron-namespace", required_argument, 0, C_NS},
                                        {"json", no_argument, 0, C_JSON},
                                        {"cron", required_argument, 0, C_CRON},
                                        {"class", required_argument, 0, C_CLASS},
                                        {"queue", required_argument, 0, C_QUEUE},
                                        {"args", required_argument, 0, C_ARGS},
                                        {"description", required_argument, 0, C_DESC},
                                        {"retry", required_argument, 0, C_RETRY},
                                        {"active-job", no_argument, 0, C_AJ},
                                        {"date-as-argument", no_argument, 0, C_DATE},
                                        {"disabled", no_argument, 0, C_DISABLED},
                                        {"layout", required_argument, 0, C_LAYOUT},
                                        {"help", no_argument, 0, C_HELP},
                                        {0, 0, 0, 0}};
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    hh_cron_spec s;
    memset(&s, 0, sizeof(s));
    s.struct_size = sizeof(s);
    int as_json = 0, ch;
    optind = 1;
    const struct option *lo = cli_longopts(own);
    int w = 1;
    while ((ch = getopt_long(argc, argv, "-r:", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &ro);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
        case 1: argv[w++] = optarg; break; /* a word: cli_words_end */
        case C_NS:
            /* "" is no namespace (sidekiq-cron would key cron_jobs: by it):
             * an unset variable, refused rather than read as default */
            if (!*optarg)
                return cli_usage_error("cron: --cron-namespace '': the namespace is empty (an unset variable?); "
                                       "leave the option out for default");
            s.cron_namespace = optarg;
            break;
        case C_JSON: as_json = 1; break;
        case C_CRON:
        case C_CLASS:
        case C_QUEUE:
            /* "" is an unset variable, not "default" (nor a job of no class) */
            if (!*optarg)
                return cli_usage_error("cron: --%s '': empty (an unset variable?)%s",
                                       ch == C_CRON        ? "cron"
                                           : ch == C_CLASS ? "class"
                                                           : "queue",
                                       ch == C_QUEUE ? "; leave the option out for default" : "");
            *(ch == C_CRON ? &s.cron : ch == C_CLASS ? &s.klass : &s.queue) = optarg;
            break;
        case C_ARGS: s.args_json = optarg; break;
        case C_DESC: s.description = optarg; break;
        case C_RETRY: s.retry_json = optarg; break;
        case C_AJ: s.active_job = 1; break;
        case C_DATE: s.date_as_argument = 1; break;
        case C_DISABLED: s.disabled = 1; break;
        case C_LAYOUT:
            if (strcmp(optarg, "1") && strcmp(optarg, "2"))
                return cli_usage_error("cron: --layout %s: want 1 (sidekiq-cron 1.x) or 2 (2.x)", optarg);
            s.layout = optarg[0] - '0';
            break;
        case C_HELP: fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    /* the words that are not options, in their order: VERB [NAME],
     * wherever the options were */
    optind = cli_words_end(argc, argv, w);
    const char *verb = optind < argc ? argv[optind++] : "list";
    if (!strcmp(verb, "help")) { /* `cron help`, as `cron --help` and `hiredhand help cron` */
        fputs(usage, stdout);
        return 0;
    }
    const char *name = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("cron %s: unexpected argument '%s' (after '%s')\n%s", verb, argv[optind], name, usage);
    int is_list = !strcmp(verb, "list");
    if (!is_list && strcmp(verb, "show") && strcmp(verb, "add") && strcmp(verb, "enable") && strcmp(verb, "disable") &&
        strcmp(verb, "delete") && strcmp(verb, "enqueue"))
        return cli_usage_error("cron: unknown verb '%s'\n%s", verb, usage);
    if (is_list && name) return cli_usage_error("cron list takes no NAME ('%s')", name);
    /* `work --cron-namespace auto` polls every namespace found in Redis:
     * the same word here names them all (list) rather than a namespace
     * called auto, which add would create and no poller named auto reads
     * by that name */
    if (!is_list && s.cron_namespace && (!strcmp(s.cron_namespace, "*") || !strcmp(s.cron_namespace, HH_CRON_NS_AUTO)))
        return cli_usage_error("cron %s: --cron-namespace '%s' means every namespace, for list: name the job's "
                               "namespace",
                               verb, s.cron_namespace);
    if (is_list && s.cron_namespace && !strcmp(s.cron_namespace, HH_CRON_NS_AUTO)) s.cron_namespace = "*";
    if (!is_list && !name) return cli_usage_error("cron %s needs a job NAME", verb);
    if (strcmp(verb, "add") &&
        (s.cron || s.klass || s.queue || s.args_json || s.description || s.retry_json || s.active_job ||
         s.date_as_argument || s.disabled))
        return cli_usage_error("cron %s: --cron, --class, --queue, --args ... are for add", verb);
    if (is_list && s.layout) return cli_usage_error("cron list: --layout is for one job (list shows both layouts)");
    if (!strcmp(verb, "add") && (!s.cron || !s.klass)) return cli_usage_error("cron add needs --cron and --class");
    int rc = 0, e;
    hh_client *c = cli_client_open(&ro, EXIT_REDIS, &rc);
    if (!c) return rc;
    hh_cron_use_layout(c, s.layout); /* 1 or 2 checked above; 0: a name in both is refused */
    char *out = NULL;
    if (is_list || !strcmp(verb, "show")) {
        e = hh_cron_list(c, s.cron_namespace, &out);
        if (e) {
            rc = fail(e);
        } else if (is_list) {
            rc = print_list(out, as_json, s.cron_namespace && !strcmp(s.cron_namespace, "*"));
        } else {
            json_t *a = json_loads(out, 0, NULL), *j, *found = NULL;
            size_t i;
            int nfound = 0;
            json_array_foreach(a, i, j) {
                /* a name that is not UTF-8 shows as \xNN text: never the job of that literal name */
                if (json_object_get(j, "name_base64") || strcmp(str(j, "name"), name)) continue;
                if (s.layout && json_integer_value(json_object_get(j, "layout")) != s.layout) continue;
                found = j, nfound++;
            }
            if (nfound > 1) {
                fprintf(stderr,
                        "hiredhand: cron: periodic job %s is saved in both sidekiq-cron layouts, each run each "
                        "tick: choose one with --layout 1|2\n",
                        name);
                rc = CLI_EXIT_USAGE;
            } else if (found) {
                char *d = json_dumps(found, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                printf("%s\n", d ? d : "");
                free(d);
            } else {
                fprintf(stderr, "hiredhand: cron: no periodic job %s\n", name);
                rc = EXIT_NOTFOUND;
            }
            json_decref(a);
        }
        free(out);
    } else if (!strcmp(verb, "add")) {
        s.name = name;
        if ((e = hh_cron_save(c, &s))) rc = fail(e);
        else printf("saved %s\n", name);
    } else if (!strcmp(verb, "enable") || !strcmp(verb, "disable")) {
        if ((e = hh_cron_set_enabled(c, s.cron_namespace, name, !strcmp(verb, "enable")))) rc = fail(e);
        else printf("%sd %s\n", verb, name);
    } else if (!strcmp(verb, "delete")) {
        if ((e = hh_cron_delete(c, s.cron_namespace, name))) rc = fail(e);
        else printf("deleted %s\n", name);
    } else {
        char jid[HH_JID_SIZE];
        if ((e = hh_cron_enqueue_now(c, s.cron_namespace, name, jid))) rc = fail(e);
        else printf("enqueued %s: jid=%s\n", name, jid);
    }
    hh_client_free(c);
    return rc;
}

/* parse_args of sidekiq-cron: an array as is, a hash as [hash], a string
 * as JSON (or [string]), nothing as []. Returns new JSON text. */
static char *schedule_args(json_t *v) {
    json_t *a;
    if (!v || json_is_null(v)) a = json_array();
    else if (json_is_array(v)) a = json_incref(v);
    else if (json_is_string(v)) {
        json_t *p = json_loads(json_string_value(v), JSON_DECODE_ANY, NULL);
        a = json_is_array(p) ? p : json_array();
        if (!json_is_array(p)) {
            json_decref(p);
            json_array_append(a, v);
        }
    } else {
        a = json_array();
        json_array_append(a, v);
    }
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

static int flag(json_t *v) {
    if (json_is_true(v)) return 1;
    const char *s = json_string_value(v);
    return s &&
        (!strcasecmp(s, "true") || !strcasecmp(s, "t") || !strcasecmp(s, "yes") || !strcasecmp(s, "y") ||
         !strcmp(s, "1"));
}

/* A layout given in a schedule entry: 1 or 2 (a YAML scalar may come as
 * the number or the string); 0 when absent, -1 when anything else. */
static int schedule_layout(json_t *v) {
    if (!v) return 0;
    const char *s = json_string_value(v);
    json_int_t n = json_is_integer(v)               ? json_integer_value(v)
        : s && (!strcmp(s, "1") || !strcmp(s, "2")) ? s[0] - '0'
                                                    : -1;
    return n == 1 || n == 2 ? (int)n : -1;
}

int cli_cron_job_check(const char *json) {
    /* the keys cli_cron_load_schedule applies: any other one (a typo, or
     * a sidekiq-cron key hiredhand does not apply, as queue_name_prefix)
     * would change nothing and pass unseen, so it is refused, as an
     * unknown key in one of hiredhand's own groups of the config is */
    static const char *const known[] = {"name",   "cron",        "class",           "klass", "queue",
                                        "args",   "description", "namespace",       "retry", "active_job",
                                        "status", "layout",      "date_as_argument"};
    json_t *j = json_loads(json, 0, NULL);
    int rc = 0;
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "name"))) {
        rc = cli_usage_error("--cron-job '%.80s': want a JSON object with a \"name\"", json);
        json_decref(j);
        return rc;
    }
    const char *name = json_string_value(json_object_get(j, "name")), *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        size_t i = 0;
        while (i < sizeof(known) / sizeof(*known) && strcmp(key, known[i])) i++;
        if (i == sizeof(known) / sizeof(*known)) {
            rc = cli_usage_error("cron job %s: unknown key '%s' (known: name, cron, class, queue, args, description, "
                                 "namespace, retry, active_job, date_as_argument, status, layout)",
                                 name, key);
            break;
        }
    }
    if (!rc && schedule_layout(json_object_get(j, "layout")) < 0)
        rc = cli_usage_error("cron job %s: layout: want 1 (sidekiq-cron 1.x) or 2 (2.x)", name);
    json_decref(j);
    return rc;
}

int cli_cron_load_schedule(const hh_redis_options *ro, const char *const *jobs, size_t n, const char *const *ns,
                           size_t nns) {
    int rc = 0;
    hh_client *c = cli_client_open(ro, EXIT_REDIS, &rc);
    if (!c) return rc;
    json_t *names = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_loads(jobs[i], 0, NULL);
        const char *name = json_string_value(json_object_get(j, "name"));
        json_t *klass = json_object_get(j, "class");
        if (!klass) klass = json_object_get(j, "klass");
        json_t *retry = json_object_get(j, "retry");
        char *args = schedule_args(json_object_get(j, "args"));
        char *retry_s = retry && !json_is_null(retry) ? json_dumps(retry, JSON_ENCODE_ANY) : NULL;
        hh_cron_spec s = {.struct_size = sizeof(s),
                          .name = name,
                          .cron = json_string_value(json_object_get(j, "cron")),
                          .klass = json_string_value(klass),
                          .queue = json_string_value(json_object_get(j, "queue")),
                          .args_json = args,
                          .description = json_string_value(json_object_get(j, "description")),
                          .cron_namespace = json_string_value(json_object_get(j, "namespace")),
                          .retry_json = retry_s,
                          .active_job = flag(json_object_get(j, "active_job")),
                          .date_as_argument = flag(json_object_get(j, "date_as_argument")),
                          .disabled = json_is_string(json_object_get(j, "status")) &&
                              !strcmp(json_string_value(json_object_get(j, "status")), "disabled"),
                          .from_schedule = 1,
                          .layout = schedule_layout(json_object_get(j, "layout"))};
        if (name) json_object_set_new(names, name, json_true());
        /* as sidekiq-cron's loader: a job it refuses is reported and
         * left out; the others are saved */
        if (hh_cron_save(c, &s) != HH_OK)
            fprintf(stderr, "hiredhand: warning: cron job %s not saved: %s\n", name ? name : "?", hh_last_error());
        free(args);
        free(retry_s);
        json_decref(j);
    }
    /* destroy_removed_jobs: jobs the schedule saved before (source
     * "schedule") that left it go; those added at run time stay */
    static const char *const dflt[] = {"default"};
    if (!nns) ns = dflt, nns = 1;
    for (size_t i = 0; i < nns; i++) {
        char *out = NULL;
        if (hh_cron_list(c, ns[i], &out) != HH_OK) {
            fprintf(stderr, "hiredhand: warning: cron schedule: %s\n", hh_last_error());
            continue;
        }
        json_t *a = json_loads(out, 0, NULL), *j;
        size_t k;
        json_array_foreach(a, k, j) {
            const char *name = str(j, "name");
            if (strcmp(str(j, "source"), "schedule") || json_object_get(names, name) ||
                json_object_get(j, "name_base64"))
                continue; /* (a name that is not UTF-8 is in no schedule file; its text names another job) */
            if (hh_cron_delete(c, ns[i], name) == HH_OK)
                fprintf(stderr, "hiredhand: cron job %s deleted: it left the schedule\n", name);
        }
        json_decref(a);
        free(out);
    }
    json_decref(names);
    hh_client_free(c);
    return 0;
}
