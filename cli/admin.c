/* admin.c -- job management from the command line: `hiredhand retries`,
 * `scheduled`, `dead`, `queues`, `busy` and `jobs find`, what Sidekiq's
 * Web UI and Ruby API do, through the public API only (the job management
 * block of hiredhand.h).
 *
 * Exit status: 0 done, 1 not found (no such jid or queue entry), 2 usage
 * (bad option, or a destructive action on many jobs without --yes when
 * stdin is not a terminal, or refused at the prompt), 3 Redis error. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

#define EXIT_NOTFOUND 1
#define EXIT_REDIS CLI_EXIT_REDIS

enum { O_JSON = 1000, O_CLASS, O_QUEUE, O_ERROR, O_LIMIT, O_ALL, O_YES, O_DEADMAX, O_DEADTIMEOUT, O_TS, O_HELP };

typedef struct adm {
    hh_redis_options redis;
    int json, all, yes;
    hh_jobset_filter filter;
    hh_jobset_options opts;
    long limit;
    int limit_set;
} adm;

/* A --queue or --class name in the form list prints it (cli_name_escape:
 * "a\x1bb" is the queue a<ESC>b), which a shell argument can always hold;
 * raw bytes pass as they are. Decoded over arg itself: the name only
 * shrinks. Returns 0, or CLI_EXIT_USAGE (a bad escape, said why). */
static int unescape_in_place(char *arg) {
    char *raw = cli_name_unescape(arg);
    if (!raw) return CLI_EXIT_USAGE;
    memcpy(arg, raw, strlen(raw) + 1);
    free(raw);
    return 0;
}

/* Options shared by every command here. Returns 0, -1 after --help, or
 * CLI_EXIT_USAGE. */
static int parse(int argc, char **argv, adm *a, const char *usage) {
    static const struct option own[] = {{"json", no_argument, 0, O_JSON},
                                        {"class", required_argument, 0, O_CLASS},
                                        {"queue", required_argument, 0, O_QUEUE},
                                        {"error", required_argument, 0, O_ERROR},
                                        {"limit", required_argument, 0, O_LIMIT},
                                        {"all", no_argument, 0, O_ALL},
                                        {"yes", no_argument, 0, O_YES},
                                        {"dead-max-jobs", required_argument, 0, O_DEADMAX},
                                        {"dead-timeout", required_argument, 0, O_DEADTIMEOUT},
                                        {"timestamps", required_argument, 0, O_TS},
                                        {"help", no_argument, 0, O_HELP},
                                        {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    hh_redis_options_init(&a->redis);
    int ch;
    long n;
    double d;
    optind = 1;
    const struct option *lo = cli_longopts(own);
    int w = 1;
    while ((ch = getopt_long(argc, argv, "-r:y", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &a->redis);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
        case 1: argv[w++] = optarg; break; /* a word: cli_words_end */
        case O_JSON: a->json = 1; break;
        case O_CLASS:
        case O_QUEUE:
            /* one of each: a second would replace the first, and `--class A
             * --class B` read as "A or B" would then act on B's alone */
            if (ch == O_CLASS ? a->filter.klass != NULL : a->filter.queue != NULL)
                return cli_usage_error("--%s given twice: give one (a filter is one exact name)",
                                       ch == O_CLASS ? "class" : "queue");
            if (unescape_in_place(optarg)) return CLI_EXIT_USAGE;
            if (ch == O_CLASS) a->filter.klass = optarg;
            else a->filter.queue = optarg;
            break;
        case O_ERROR:
            /* every text holds the empty one: --error "$E" with E unset
             * would act on the whole set */
            if (!*optarg) return cli_usage_error("--error '': an empty text matches every entry; give a text");
            if (a->filter.error) return cli_usage_error("--error given twice: give one text");
            a->filter.error = optarg;
            break;
        case O_LIMIT:
            if (cli_option_int("--limit", optarg, 1, 1000000000L, &n)) return CLI_EXIT_USAGE;
            a->limit = n, a->limit_set = 1;
            a->filter.limit = (size_t)n;
            break;
        case O_ALL: a->all = 1; break;
        case 'y':
        case O_YES: a->yes = 1; break;
        case O_DEADMAX:
            if (cli_option_int("--dead-max-jobs", optarg, 1, HH_DEAD_MAX_JOBS_LIMIT, &n)) return CLI_EXIT_USAGE;
            a->opts.dead_max_jobs = n;
            break;
        case O_DEADTIMEOUT:
            if (cli_option_seconds("--dead-timeout", optarg, 0, 1, CLI_SECONDS_MAX, &d)) return CLI_EXIT_USAGE;
            a->opts.dead_timeout = d;
            break;
        case O_TS:
            if (cli_option_timestamps(optarg, &a->redis.timestamps)) return CLI_EXIT_USAGE;
            break;
        case O_HELP: fputs(usage, stdout); return -1;
        default: fputs(usage, stderr); return CLI_EXIT_USAGE;
        }
    }
    optind = cli_words_end(argc, argv, w);
    return 0;
}

/* "SUBCOMMAND [VERB] [OPERAND]" with the options anywhere among them, as
 * git's and redis-cli's: parse() leaves the words that are not options at
 * the end of argv, in their order (cli_words_end), so the verb (default
 * "list") and at most one operand (a jid or a queue name, else NULL) are
 * those words, wherever the options were (`retries -r URL list`). Returns
 * 0, -1 after --help, or an exit status. */
static int parse_verb(int argc, char **argv, adm *a, const char *usage, const char **verb, const char **operand) {
    int rc = parse(argc, argv, a, usage);
    if (rc) return rc;
    *verb = optind < argc ? argv[optind++] : "list";
    *operand = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return cli_usage_error("%s %s: unexpected argument '%s' (after '%s')\n%s", argv[0], *verb, argv[optind],
                               *operand, usage);
    return 0;
}

/* Commands that filter nothing refuse the filters rather than ignore them:
 * `busy --class X` printing every job would read as "all of them are X". */
static int no_filters(const adm *a, const char *cmd) {
    if (a->filter.klass || a->filter.queue || a->filter.error || a->all)
        return cli_usage_error("%s takes no --class, --queue, --error or --all", cmd);
    return 0;
}

static hh_client *open_client(adm *a, int *rc) { return cli_client_open(&a->redis, EXIT_REDIS, rc); }

/* Maps an API error to an exit status, saying why on stderr. */
static int failed(hh_client *cl, const char *what, int e) {
    const char *why = cl ? hh_client_last_error(cl) : "";
    if (e == HH_ERR_NOTFOUND) {
        fprintf(stderr, "hiredhand: %s: not found\n", what);
        return EXIT_NOTFOUND;
    }
    fprintf(stderr, "hiredhand: %s: %s%s%s\n", what, hh_strerror(e), *why ? ": " : "", why);
    return e == HH_ERR_INVALID ? CLI_EXIT_USAGE : EXIT_REDIS;
}

/* A destructive action on more than one job: --yes, or a "y" typed at a
 * terminal. Returns 0 to go ahead, else CLI_EXIT_USAGE. */
static int confirm(const adm *a, const char *what) {
    if (a->yes) return 0;
    if (!isatty(STDIN_FILENO))
        return cli_usage_error("%s: this acts on many jobs; pass --yes (stdin is not a terminal)", what);
    fprintf(stderr, "%s? [y/N] ", what);
    fflush(stderr);
    char line[16];
    if (!fgets(line, sizeof(line), stdin) || (line[0] != 'y' && line[0] != 'Y')) {
        fprintf(stderr, "hiredhand: nothing done\n");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* confirm() will ask: only then is it worth a count for the question. */
static int will_ask(const adm *a) { return !a->yes && isatty(STDIN_FILENO); }

static int count_cb(const hh_jobset_entry *e, void *udata) {
    (void)e;
    ++*(size_t *)udata;
    return 0;
}

/* " (N entries)" for a prompt: how many the action would reach, counted
 * as a list with the same filters would count them; empty when Redis
 * cannot say (the action then reports its own error). */
static void entries_note(hh_client *cl, hh_jobset set, const hh_jobset_filter *f, int filters, char *out, size_t n) {
    out[0] = '\0';
    long long size = 0;
    if (filters) {
        size_t k = 0;
        if (hh_jobset_each(cl, set, f, count_cb, &k) != HH_OK) return;
        size = (long long)k;
    } else if (hh_jobset_size(cl, set, &size) != HH_OK) {
        return;
    }
    snprintf(out, n, " (%lld %s)", size, size == 1 ? "entry" : "entries");
}

/* Text from payloads and Redis for a terminal, escaped as the logs and
 * `queues list` escape names (cli_shown). */
static const char *clean(const char *s) { return cli_shown_str(s); }

static void put_clean(const char *s, size_t len) { cli_put_payload(s, len, stdout); }

/* The entry's class, whole: hh_jobset_entry's klass is a C string, cut at
 * a NUL, but "T\u0000Evil" is not T. Read again from the payload, with its
 * length. A new reference (a JSON string), or NULL. */
/* A string field of the payload whole (the entry's C strings end at a
 * NUL: "T\u0000Evil" is not T); NULL when absent or not a string. */
static json_t *entry_field(const hh_jobset_entry *e, const char *key) {
    json_t *k = NULL;
    if (e->valid) {
        json_t *item = json_loadb(e->payload, e->len, JSON_ALLOW_NUL, NULL);
        json_t *c = json_object_get(item, key);
        if (json_is_string(c)) k = json_stringn(json_string_value(c), json_string_length(c));
        json_decref(item);
    }
    return k;
}

static json_t *entry_class(const hh_jobset_entry *e) {
    json_t *k = entry_field(e, "class");
    return k ? k : json_string(e->klass);
}

/* error_message whole: an unknown class's NameError holds the class as it is */
static json_t *entry_error_message(const hh_jobset_entry *e) {
    json_t *m = e->error_message ? entry_field(e, "error_message") : NULL;
    return m ? m : e->error_message ? json_string(e->error_message) : NULL;
}

/* The class as Sidekiq's Web UI shows it (display_class: Active Job's
 * wrapped class, not its wrapper), whole. */
static const char *class_shown(const hh_jobset_entry *e) {
    if (!e->valid) return clean(e->klass);
    return cli_shown(e->display_class, e->display_class_len);
}

/* t as an ISO 8601 UTC time when its year has four digits (1000-9999),
 * else the number itself ("score 1e+300", "score inf"): a cast of such a
 * double to time_t is undefined, and printed as garbage. */
static void time_text(char *buf, size_t n, double t) {
    if (!(t >= -30610224000.0 && t < 253402300800.0)) { /* NaN too */
        char num[26];                                   /* "-1.7976931348623157e+308" */
        snprintf(num, sizeof(num), "%.15g", t);
        if (strtod(num, NULL) != t && t == t) snprintf(num, sizeof(num), "%.17g", t);
        snprintf(buf, n, "score %s", num);
        return;
    }
    time_t s = (time_t)t;
    if ((double)s > t) s--; /* down, not toward 0: -0.5 is 1969-12-31T23:59:59Z */
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(buf, n, "score %.17g", t);
}

/* A payload's time (enqueued_at, failed_at): 0 or less is "absent", "-". */
static void iso_time(char *buf, size_t n, double t) {
    if (t <= 0) snprintf(buf, n, "-");
    else time_text(buf, n, t);
}

/* A sorted set's score, the time Sidekiq reads from it (SortedEntry#at):
 * any value, a negative one (before 1970) included, as Redis holds it. */
static void score_time(char *buf, size_t n, double score) { time_text(buf, n, score); }

/* A clear whose key held another type (removed -1; note says which): it
 * was deleted all the same, as Sidekiq's Queue#clear and SortedSet#clear
 * delete any key, so the clear is done and says what went. */
static void cleared_other_type(int json, const char *note, const char *what) {
    if (json) {
        json_t *o = json_pack("{s:i,s:s?}", "removed", 0, "deleted", note);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        printf("%s\n", s ? s : "{\"removed\":0}");
        free(s);
        json_decref(o);
    } else {
        printf("removed %s: %s (no jobs in it)\n", what, clean(note));
    }
}

/* ---------------------------------------------------------- the sets */

typedef struct out_ctx {
    int json;
    size_t n;
    hh_jobset set;    /* for list's header row */
    cli_table *table; /* list's rows, sized to their content */
} out_ctx;

/* retry_count's text when it is an integer that does not fit the entry's
 * int (one beyond 64 bits, which jansson cannot hold): its digits as
 * stored, malloc'd; NULL otherwise. */
static char *retry_count_integer(const hh_jobset_entry *e) {
    char *t = hh_jobset_entry_get(e, "retry_count");
    size_t i = t && t[0] == '-' ? 1 : 0;
    if (t && !t[i]) i = 0; /* "-" alone is no number */
    for (; t && t[i]; i++)
        if (t[i] < '0' || t[i] > '9') break;
    if (t && (t[i] || !*t)) {
        free(t);
        t = NULL;
    }
    return t;
}

/* One entry as a JSON object; the payload itself, when it is JSON, is
 * embedded as it is ("item"), so integers beyond 64 bits keep their digits. */
static void print_entry_json(const hh_jobset_entry *e) {
    json_t *o = json_object();
    char at[32];
    score_time(at, sizeof(at), e->score);
    json_object_set_new(o, "jid", json_string(e->jid));
    json_object_set_new(o, "class", entry_class(e));
    json_object_set_new(o, "queue", json_string(e->queue));
    json_object_set_new(o, "score", json_real(e->score));
    json_object_set_new(o, "at", json_string(at));
    char *digits = e->retry_count >= 0 ? NULL : retry_count_integer(e);
    /* an integer beyond 64 bits goes out as its digits: a placeholder here,
     * the digits in its place below */
    json_object_set_new(o, "retry_count", e->retry_count >= 0 ? json_integer(e->retry_count) : json_null());
    json_object_set_new(o, "error_class", e->error_class ? json_string(e->error_class) : json_null());
    json_t *em = entry_error_message(e);
    json_object_set_new(o, "error_message", em ? em : json_null());
    json_object_set_new(o, "enqueued_at", e->enqueued_at > 0 ? json_real(e->enqueued_at) : json_null());
    json_object_set_new(o, "failed_at", e->failed_at > 0 ? json_real(e->failed_at) : json_null());
    json_object_set_new(o, "display_class", json_stringn(e->display_class, e->display_class_len));
    if (!e->valid) json_object_set_new(o, "payload", json_stringn(e->payload, e->len));
    char *s = json_dumps(o, CLI_JSON_FLAGS);
    json_decref(o);
    if (!s) {
        free(digits);
        return;
    }
    char *at_rc = digits ? strstr(s, ",\"retry_count\":null,") : NULL;
    if (at_rc) { /* the keys before it are fixed ones, so this is the member itself */
        at_rc += strlen(",\"retry_count\":");
        size_t tail = strlen(at_rc + 4), head = (size_t)(at_rc - s);
        char *w = malloc(head + strlen(digits) + tail + 1);
        if (w) {
            memcpy(w, s, head);
            memcpy(w + head, digits, strlen(digits));
            memcpy(w + head + strlen(digits), at_rc + 4, tail + 1);
            free(s);
            s = w;
        }
    }
    free(digits);
    if (e->valid) { /* s ends with '}': the item goes in before it */
        s[strlen(s) - 1] = '\0';
        fputs(s, stdout);
        fputs(",\"item\":", stdout);
        fwrite(e->payload, 1, e->len, stdout);
        fputc('}', stdout);
    } else {
        fputs(s, stdout);
    }
    free(s);
}

/* retry_count as Sidekiq's Web UI shows it (Ruby's to_s of the value as
 * stored): a string "3" (Ruby clients that stored one) shows as 3, not as
 * missing; only an absent or null field is "-". */
static void retry_count_text(const hh_jobset_entry *e, char *buf, size_t n) {
    snprintf(buf, n, "-");
    if (e->retry_count >= 0) {
        snprintf(buf, n, "%d", e->retry_count);
        return;
    }
    if (!e->valid) return;
    char *digits = retry_count_integer(e);
    if (digits) { /* beyond an int, or a bignum: its digits, cut with "..." past the column */
        if (strlen(digits) < n) snprintf(buf, n, "%s", digits);
        else snprintf(buf, n, "%.*s...", (int)(n - 4), digits);
        free(digits);
        return;
    }
    json_t *item = json_loadb(e->payload, e->len, JSON_ALLOW_NUL, NULL);
    json_t *v = json_object_get(item, "retry_count");
    if (json_is_string(v)) snprintf(buf, n, "%s", clean(json_string_value(v)));
    else if (json_is_real(v)) { /* Ruby's Float#to_s: 3.0, not 3 */ double d = json_real_value(v);
        snprintf(buf, n, d > -1e15 && d < 1e15 && d == (double)(long long)d ? "%.1f" : "%.17g", d);
    } else if (json_is_boolean(v)) snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    json_decref(item);
}

static void add_header(cli_table *t, hh_jobset set) {
    const char *h[] = {set == HH_JOBSET_SCHEDULED   ? "AT"
                           : set == HH_JOBSET_RETRY ? "NEXT RETRY"
                                                    : "DIED",
                       "JID",
                       "CLASS",
                       "QUEUE",
                       "RETRIES",
                       "ERROR"};
    cli_table_row(t, h);
}

/* What an entry that is no job (not JSON, or no object) shows in place of
 * its fields: the same mark in every listing. Returns the text's length. */
static size_t not_a_job(char *buf, size_t n, size_t len) {
    int w = snprintf(buf, n, "(not a job: %zu bytes)", len);
    return w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
}

static void add_row(cli_table *t, const hh_jobset_entry *e) {
    char at[32], rc[32], err[80];
    score_time(at, sizeof(at), e->score);
    retry_count_text(e, rc, sizeof(rc));
    size_t n;
    if (!e->valid) n = not_a_job(err, sizeof(err), e->len);
    else if (e->error_class) {
        /* class and message as bytes (the message may hold NUL), cut to the column */
        json_t *em = entry_error_message(e);
        n = (size_t)snprintf(err, sizeof(err), "%s: ", e->error_class);
        if (n >= sizeof(err)) n = sizeof(err) - 1;
        size_t ml = em ? json_string_length(em) : 0;
        if (ml > sizeof(err) - 1 - n) { /* cut to the column, on a character's start */
            ml = sizeof(err) - 1 - n;
            while (ml > 0 && ((unsigned char)json_string_value(em)[ml] & 0xc0) == 0x80) ml--;
        }
        if (ml) memcpy(err + n, json_string_value(em), ml);
        n += ml;
        json_decref(em);
    } else n = (size_t)snprintf(err, sizeof(err), "-");
    const char *row[] = {at, clean(e->jid), class_shown(e), clean(e->queue), rc, cli_shown_text(err, n)};
    cli_table_row(t, row);
}

static int list_cb(const hh_jobset_entry *e, void *udata) {
    out_ctx *o = udata;
    if (o->json) {
        /* the "[" with the first entry: a listing Redis fails before any
         * entry prints nothing on stdout, not a "[]" a script would read
         * as an empty set */
        fputs(o->n ? ",\n" : "[\n", stdout);
        print_entry_json(e);
    } else {
        if (o->table) add_row(o->table, e);
    }
    o->n++;
    return 0;
}

static int show_cb(const hh_jobset_entry *e, void *udata) {
    out_ctx *o = udata;
    if (o->json) return list_cb(e, udata);
    char at[32], ea[32], fa[32];
    score_time(at, sizeof(at), e->score);
    iso_time(ea, sizeof(ea), e->enqueued_at);
    iso_time(fa, sizeof(fa), e->failed_at);
    if (o->n++) fputc('\n', stdout);
    printf("jid:           %s\nclass:         %s\nqueue:         %s\nat:            %s", clean(e->jid), class_shown(e),
           clean(e->queue), at);
    if (strncmp(at, "score ", 6) != 0) printf(" (score %.6f)", e->score); /* else at is the score */
    fputc('\n', stdout);
    char rc[256];
    retry_count_text(e, rc, sizeof(rc));
    if (strcmp(rc, "-")) printf("retry_count:   %s\n", rc);
    printf("enqueued_at:   %s\nfailed_at:     %s\n", ea, fa);
    if (e->error_class) {
        json_t *em = entry_error_message(e);
        printf("error:         %s: %s\n", cli_shown_text(e->error_class, strlen(e->error_class)),
               em ? cli_shown_text(json_string_value(em), json_string_length(em)) : "");
        json_decref(em);
    }
    printf("payload:       ");
    put_clean(e->payload, e->len);
    fputc('\n', stdout);
    return 0;
}

static const char *set_word(hh_jobset s) {
    return s == HH_JOBSET_SCHEDULED ? "scheduled" : s == HH_JOBSET_RETRY ? "retries" : "dead";
}

static const char *set_title(hh_jobset s) {
    return s == HH_JOBSET_SCHEDULED ? "scheduled set" : s == HH_JOBSET_RETRY ? "retry set" : "dead set";
}

int cli_jobset(int argc, char **argv, hh_jobset set) {
    char usage[2048];
    const char *verbs = set == HH_JOBSET_SCHEDULED ? "list|show|enqueue|delete|kill"
        : set == HH_JOBSET_RETRY                   ? "list|show|retry|delete|kill"
                                                   : "list|show|retry|delete|clear";
    snprintf(usage, sizeof(usage),
             "usage: hiredhand %s [%s] [JID|--all] [options]\n"
             "  list [--class C] [--queue Q] [--error TEXT] [--limit N] [--json]\n"
             "                 entries in the Web UI's order%s\n"
             "  show JID       one entry, its payload included\n"
             "%s"
             "  delete JID|--all   remove (with --all, the filters apply; none: the whole set)\n"
             "%s"
             "%s"
             "  --all --limit N    acts on the first N entries list --limit N shows\n"
             "options: -r URL, --redis-password-file FILE, --namespace NS, --yes (needed for\n"
             "  --all and clear when stdin is not a terminal), --dead-max-jobs N and\n"
             "  --dead-timeout S (the dead set's trims on kill; Sidekiq's 10000, 180 days),\n"
             "  --timestamps float|millis (enqueued_at as Sidekiq 6/7 or 8 reads it; float)\n"
             "exit status: 0 done, 1 not found, 2 usage or not confirmed, 3 Redis error\n",
             set_word(set), verbs, set == HH_JOBSET_DEAD ? " (newest first)" : " (next first)",
             set == HH_JOBSET_SCHEDULED
                 ? "  enqueue JID|--all  push to its queue now (ScheduledSet add_to_queue)\n"
                 : "  retry JID|--all    push to its queue now, retry_count - 1 (SortedEntry#retry)\n",
             set != HH_JOBSET_DEAD ? "  kill JID|--all     move to the dead set (SortedEntry#kill)\n" : "",
             set == HH_JOBSET_DEAD ? "  clear          empty the dead set (DeadSet#clear)\n" : "");
    const char *verb, *jid;
    adm a;
    int rc = parse_verb(argc, argv, &a, usage, &verb, &jid);
    if (rc) return rc < 0 ? 0 : rc;
    if (jid && !*jid) return cli_usage_error("%s %s: the JID is empty (an unset variable?)", set_word(set), verb);

    hh_jobset_action action;
    int is_list = !strcmp(verb, "list"), is_show = !strcmp(verb, "show"), is_clear = !strcmp(verb, "clear");
    if (!strcmp(verb, "retry") && set != HH_JOBSET_SCHEDULED) action = HH_JOBSET_RETRY_NOW;
    else if (!strcmp(verb, "enqueue") && set == HH_JOBSET_SCHEDULED) action = HH_JOBSET_ENQUEUE;
    else if (!strcmp(verb, "delete")) action = HH_JOBSET_DELETE;
    else if (!strcmp(verb, "kill") && set != HH_JOBSET_DEAD) action = HH_JOBSET_KILL;
    else if (!is_list && !is_show && !(is_clear && set == HH_JOBSET_DEAD))
        return cli_usage_error("%s: unknown verb '%s'\n%s", set_word(set), verb, usage);
    else action = HH_JOBSET_DELETE; /* unused */

    int filters = a.filter.klass || a.filter.queue || a.filter.error || a.limit_set;
    if ((is_list || is_clear) && jid) return cli_usage_error("%s %s takes no JID ('%s')", set_word(set), verb, jid);
    if (is_show && (!jid || a.all)) return cli_usage_error("%s show needs one JID", set_word(set));
    if (is_clear && (a.all || filters))
        return cli_usage_error("%s clear takes no filter (use delete --all)", set_word(set));
    if (!is_list && !is_show && !is_clear) {
        if (!!jid == !!a.all)
            return cli_usage_error(jid ? "%s %s takes a JID or --all, not both" : "%s %s needs a JID or --all",
                                   set_word(set), verb);
        if (jid && filters) return cli_usage_error("--class, --queue, --error and --limit go with --all or list");
    }
    /* --queue with an action takes any name list can show: a queue with a
     * control character (Sidekiq's clients write one) is one to act on,
     * as the scheduler pushes to it too */

    hh_client *cl = open_client(&a, &rc);
    if (!cl) return rc;
    int e = HH_OK;
    out_ctx o = {a.json, 0, set, NULL};
    if (is_list) {
        /* the header row even when nothing matches, as queues and busy
         * print theirs: an empty set reads as empty, not as no output */
        if (!a.json && (o.table = cli_table_new("llllrl", NULL, NULL)) != NULL) add_header(o.table, set);
        e = hh_jobset_each(cl, set, &a.filter, list_cb, &o);
        cli_table_end(o.table);
        /* after a failure midway the array stays open: not valid JSON */
        if (a.json && e == HH_OK) fputs(o.n ? "\n]\n" : "[]\n", stdout);
        if (e != HH_OK) rc = failed(cl, "list", e);
    } else if (is_show) {
        e = hh_jobset_find(cl, set, jid, show_cb, &o);
        if (a.json && (e == HH_OK || e == HH_ERR_NOTFOUND)) fputs(o.n ? "\n]\n" : "[]\n", stdout);
        if (e != HH_OK) rc = failed(cl, jid, e);
    } else if (is_clear) {
        char what[96], note[48] = "";
        if (will_ask(&a)) entries_note(cl, set, NULL, 0, note, sizeof(note));
        snprintf(what, sizeof(what), "empty the %s%s", set_title(set), note);
        long long removed = 0;
        if ((rc = confirm(&a, what)) == 0) {
            e = hh_jobset_clear(cl, set, &removed);
            if (e != HH_OK) rc = failed(cl, "clear", e);
            else if (removed < 0) {
                char gone[64];
                snprintf(gone, sizeof(gone), "the %s", set_title(set));
                cleared_other_type(a.json, hh_client_last_error(cl), gone);
            } else if (a.json) printf("{\"removed\":%lld}\n", removed);
            else printf("removed %lld entries from the %s\n", removed, set_title(set));
        }
    } else if (jid) {
        e = hh_jobset_act(cl, set, jid, action, &a.opts);
        if (e != HH_OK) rc = failed(cl, jid, e);
        else if (a.json) printf("{\"jid\":\"%s\",\"done\":1}\n", jid);
        else
            printf("%s %s\n",
                   !strcmp(verb, "delete")      ? "deleted"
                       : !strcmp(verb, "kill")  ? "killed"
                       : !strcmp(verb, "retry") ? "retried"
                                                : "enqueued",
                   clean(jid));
    } else {
        char what[200], note[48] = "";
        if (will_ask(&a)) entries_note(cl, set, &a.filter, filters, note, sizeof(note));
        snprintf(what, sizeof(what), "%s every entry of the %s%s%s", verb, set_title(set),
                 filters ? " matching the filters" : "", note);
        size_t done = 0, skipped = 0;
        if ((rc = confirm(&a, what)) == 0) {
            long long removed = -1;
            if (action == HH_JOBSET_DELETE && !filters) {
                /* RetrySet#clear / ScheduledSet#clear, what the Web UI's Delete All does */
                e = hh_jobset_clear(cl, set, &removed);
                done = removed > 0 ? (size_t)removed : 0;
                if (e == HH_OK && removed < 0) /* the set's key held another type: gone all the same */
                    fprintf(stderr, "hiredhand: %s: deleted\n", clean(hh_client_last_error(cl)));
            } else {
                e = hh_jobset_act_all(cl, set, &a.filter, action, &a.opts, &done, &skipped);
            }
            if (e != HH_OK) rc = failed(cl, verb, e);
            if (a.json) printf("{\"done\":%zu,\"skipped\":%zu}\n", done, skipped);
            else printf("%s: %zu done%s", verb, done, skipped ? "" : "\n");
            if (!a.json && skipped) printf(", %zu left in place (not a job that can be pushed)\n", skipped);
        }
    }
    hh_client_free(cl);
    return rc;
}

/* ------------------------------------------------------------ queues */

static void human_latency(char *buf, size_t n, double s) {
    if (s < 1) snprintf(buf, n, "%.0f ms", s * 1000);
    else if (s < 120) snprintf(buf, n, "%.1f s", s);
    else if (s < 7200) snprintf(buf, n, "%.0f min", s / 60);
    else snprintf(buf, n, "%.1f h", s / 3600);
}

static int queues_run(adm *a, const char *verb, const char *name, const char *shown, int is_list, int is_clear);

int cli_queues(int argc, char **argv) {
    /* clang-format off */ /* the help text keeps its layout */
    static const char usage[] =
        "usage: hiredhand queues [list|show NAME|clear NAME] [--json] [--limit N] [--yes]\n"
        "  list         every queue: size, latency, the classes of the next 10 jobs to run\n"
        "  show NAME    one queue and its next jobs to run (--limit N, default 10)\n"
        "  clear NAME   delete the queue and its jobs (Sidekiq::Queue#clear; --yes when\n"
        "               stdin is not a terminal)\n"
        "NAME as list prints it: a backslash as \\\\, control characters as \\n, \\t, \\xNN;\n"
        "'' is the queue with the empty name (key queue:, from a job whose queue is \"\")\n"
        "options: -r URL, --redis-password-file FILE, --namespace NS\n"
        "exit status: 0 done, 2 usage or not confirmed, 3 Redis error\n";
    /* clang-format on */
    const char *verb, *name;
    adm a;
    int rc = parse_verb(argc, argv, &a, usage, &verb, &name);
    if (rc) return rc < 0 ? 0 : rc;
    int is_list = !strcmp(verb, "list"), is_show = !strcmp(verb, "show"), is_clear = !strcmp(verb, "clear");
    if (!is_list && !is_show && !is_clear) return cli_usage_error("queues: unknown verb '%s'\n%s", verb, usage);
    if (is_list && name) return cli_usage_error("queues list takes no NAME ('%s')", name);
    if (!is_list && !name) return cli_usage_error("queues %s needs a queue NAME", verb);
    if ((rc = no_filters(&a, "queues"))) return rc;
    /* NAME as list prints it: control characters escaped (Sidekiq's clients
     * write such queues; a shell argument cannot hold some of them) */
    char *raw = name ? cli_name_unescape(name) : NULL, *shown = NULL;
    if (name && !raw) return CLI_EXIT_USAGE;
    if (raw && strlen(raw) > HH_NAME_QUEUE_MAX) {
        free(raw);
        return cli_usage_error("bad queue name \"%.80s...\": longer than %d bytes", name, HH_NAME_QUEUE_MAX);
    }
    /* the empty name (given as '') is a queue too: a job whose "queue" is
     * "" lands in `queue:`, and nothing else can reach it */
    if (raw && !(shown = *raw ? cli_name_escape(raw, strlen(raw)) : strdup("''"))) {
        free(raw);
        return cli_usage_error("out of memory");
    }
    name = raw;
    rc = queues_run(&a, verb, name, shown, is_list, is_clear);
    free(raw);
    free(shown);
    return rc;
}

/* queues list|show|clear once NAME (raw: the queue's own bytes; shown:
 * escaped for the terminal) is known. */
static int queues_run(adm *a, const char *verb, const char *name, const char *shown, int is_list, int is_clear) {
    int rc = 0;
    hh_client *cl = open_client(a, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e;
    if (is_clear) {
        char what[256], note[48] = "";
        char *info = NULL;
        if (will_ask(a) && hh_queue_show(cl, name, 0, &info) == HH_OK) {
            json_t *v = json_loads(info, 0, NULL);
            json_t *size = json_object_get(v, "size");
            if (json_is_integer(size))
                snprintf(note, sizeof(note), " (%lld %s)", (long long)json_integer_value(size),
                         json_integer_value(size) == 1 ? "job" : "jobs");
            json_decref(v);
        }
        free(info);
        snprintf(what, sizeof(what), "delete queue %.150s and every job in it%s", shown, note);
        if ((rc = confirm(a, what)) == 0) {
            long long removed = 0;
            e = hh_queue_clear(cl, name, &removed);
            if (e != HH_OK) rc = failed(cl, "clear", e);
            else if (removed < 0) {
                char gone[200];
                snprintf(gone, sizeof(gone), "queue %.150s", shown);
                cleared_other_type(a->json, hh_client_last_error(cl), gone);
            } else if (a->json) printf("{\"removed\":%lld}\n", removed);
            else printf("removed queue %s (%lld jobs)\n", shown, removed);
        }
        hh_client_free(cl);
        return rc;
    }
    e = is_list ? hh_queues_list(cl, &out) : hh_queue_show(cl, name, a->limit_set ? (size_t)a->limit : 10, &out);
    if (e != HH_OK) {
        rc = failed(cl, verb, e);
        hh_client_free(cl);
        return rc;
    }
    hh_client_free(cl);
    if (a->json) {
        printf("%s\n", out);
        free(out);
        return 0;
    }
    json_t *v = json_loads(out, 0, NULL);
    free(out);
    char lat[32];
    if (is_list) {
        json_t *q;
        size_t i;
        cli_table *t = cli_table_new("lrll", NULL, NULL);
        const char *h[] = {"QUEUE", "SIZE", "LATENCY", "NEXT CLASSES"};
        cli_table_row(t, h);
        json_array_foreach(v, i, q) {
            char size[32], *heads = NULL;
            size_t hl = 0;
            FILE *hf = open_memstream(&heads, &hl);
            human_latency(lat, sizeof(lat), json_real_value(json_object_get(q, "latency")));
            snprintf(size, sizeof(size), "%lld", (long long)json_integer_value(json_object_get(q, "size")));
            const char *k;
            json_t *n;
            json_object_foreach(json_object_get(q, "head"), k, n) if (hf)
                fprintf(hf, "%s%s x%lld", ftell(hf) ? " " : "", clean(k), (long long)json_integer_value(n));
            if (hf) fclose(hf);
            json_t *jn = json_object_get(q, "name"), *why = json_object_get(q, "error");
            const char *qn = json_string_value(jn);
            /* a queue key of another type: the problem where its size would be */
            const char *row[] = {qn && !*qn ? "''" : cli_shown_json(jn), why ? cli_shown_json(why) : size,
                                 why ? "-" : lat, heads};
            cli_table_row(t, row);
            free(heads);
        }
        cli_table_end(t);
    } else {
        human_latency(lat, sizeof(lat), json_real_value(json_object_get(v, "latency")));
        printf("queue %s: %lld jobs, latency %s\n", shown, (long long)json_integer_value(json_object_get(v, "size")),
               lat);
        json_t *j;
        size_t i;
        cli_table *t = cli_table_new("rlll", NULL, NULL);
        json_array_foreach(json_object_get(v, "jobs"), i, j) {
            char ea[32], pos[32];
            iso_time(ea, sizeof(ea),
                     json_is_number(json_object_get(j, "enqueued_at"))
                         ? json_number_value(json_object_get(j, "enqueued_at"))
                         : 0);
            snprintf(pos, sizeof(pos), "%zu", i);
            char mark[48];
            json_t *bytes = json_object_get(j, "bytes");    /* the real length of an entry that is not UTF-8 */
            if (json_is_false(json_object_get(j, "valid"))) /* marked as retries list marks it */
                not_a_job(mark, sizeof(mark),
                          json_is_integer(bytes) ? (size_t)json_integer_value(bytes)
                                                 : json_string_length(json_object_get(j, "payload")));
            const char *row[] = {
                pos, cli_shown_json(json_object_get(j, "jid")),
                json_is_false(json_object_get(j, "valid")) ? mark : cli_shown_json(json_object_get(j, "class")), ea};
            cli_table_row(t, row);
        }
        cli_table_end(t);
    }
    json_decref(v);
    return 0;
}

/* -------------------------------------------------------- busy, find */

int cli_busy(int argc, char **argv) {
    /* clang-format off */ /* the help text keeps its layout */
    static const char usage[] = "usage: hiredhand busy [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n"
                                "The running jobs of every process, oldest first (the Busy page's table).\n";
    /* clang-format on */
    adm a;
    int rc = parse(argc, argv, &a, usage);
    if (rc) return rc < 0 ? 0 : rc;
    if (optind < argc) return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if ((rc = no_filters(&a, "busy"))) return rc;
    hh_client *cl = open_client(&a, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_busy(cl, &out);
    if (e != HH_OK) rc = failed(cl, "busy", e);
    hh_client_free(cl);
    if (e != HH_OK) return rc;
    if (a.json) {
        printf("%s\n", out);
    } else {
        json_t *v = json_loads(out, 0, NULL), *w;
        size_t i;
        cli_table *t = cli_table_new("llllll", NULL, NULL);
        const char *h[] = {"PROCESS", "THREAD", "CLASS", "JID", "QUEUE", "RUNNING"};
        cli_table_row(t, h);
        json_array_foreach(v, i, w) {
            char rt[32], *id = strdup(cli_shown_json(json_object_get(w, "identity")));
            human_latency(rt, sizeof(rt), json_real_value(json_object_get(w, "run_time")));
            /* five names: more than cli_shown's four slots */
            const char *row[] = {id,
                                 cli_shown_json(json_object_get(w, "thread")),
                                 cli_shown_json(json_object_get(w, "class")),
                                 cli_shown_json(json_object_get(w, "jid")),
                                 cli_shown_json(json_object_get(w, "queue")),
                                 rt};
            cli_table_row(t, row);
            free(id);
        }
        cli_table_end(t);
        json_decref(v);
    }
    free(out);
    return 0;
}

int cli_jobs(int argc, char **argv) {
    /* clang-format off */ /* the help text keeps its layout */
    static const char usage[] = "usage: hiredhand jobs find JID [--json] [-r URL] [--redis-password-file FILE] [--namespace NS]\n"
                                "Where a jid is: queue (and position, 0 runs next), scheduled, retry, dead, running.\n"
                                "exit status: 0 found, 1 not found, 2 usage, 3 Redis error\n";
    /* clang-format on */
    adm a;
    int rc = parse(argc, argv, &a, usage);
    if (rc) return rc < 0 ? 0 : rc;
    /* the words that are not options, wherever the options were: find JID */
    if (optind == argc || strcmp(argv[optind], "find") != 0)
        return cli_usage_error("jobs: expected 'find JID'%s%s%s\n%s", optind < argc ? ", not '" : "",
                               optind < argc ? argv[optind] : "", optind < argc ? "'" : "", usage);
    if (++optind == argc) return cli_usage_error("jobs find needs one JID");
    if (optind + 1 != argc) return cli_usage_error("jobs find needs one JID, not '%s' too", argv[optind + 1]);
    if ((rc = no_filters(&a, "jobs find"))) return rc;
    const char *jid = argv[optind];
    if (!*jid) return cli_usage_error("jobs find: the JID is empty (an unset variable?)");
    hh_client *cl = open_client(&a, &rc);
    if (!cl) return rc;
    char *out = NULL;
    int e = hh_jobs_find(cl, jid, &out);
    if (e != HH_OK) rc = failed(cl, jid, e);
    hh_client_free(cl);
    if (e != HH_OK) return rc;
    json_t *v = json_loads(out, 0, NULL), *w;
    size_t n = json_array_size(v), i;
    if (a.json) {
        printf("%s\n", out);
    } else {
        json_array_foreach(v, i, w) {
            const char *where = json_string_value(json_object_get(w, "where"));
            if (!where) where = "somewhere"; /* the library always names it; never strcmp NULL */
            if (!strcmp(where, "queue"))
                printf("queue %s, position %lld (0 runs next)\n", cli_shown_json(json_object_get(w, "queue")),
                       (long long)json_integer_value(json_object_get(w, "position")));
            else if (!strcmp(where, "in progress"))
                printf("in progress in %s's list for queue %s (fetched, not finished; recovery pushes it back if %s "
                       "is dead)\n",
                       cli_shown_json(json_object_get(w, "identity")), cli_shown_json(json_object_get(w, "queue")),
                       cli_shown_json(json_object_get(w, "identity")));
            else if (!strcmp(where, "running"))
                printf("running on %s thread %s\n", cli_shown_json(json_object_get(w, "identity")),
                       cli_shown_json(json_object_get(w, "thread")));
            else {
                char at[32];
                json_t *sc = json_object_get(w, "score"); /* absent: not finite, JSON holds no inf */
                if (json_is_number(sc)) score_time(at, sizeof(at), json_number_value(sc));
                else snprintf(at, sizeof(at), "score not finite");
                printf("%s, at %s\n", where, at);
            }
        }
        if (!n) fprintf(stderr, "hiredhand: %s: not found\n", jid);
    }
    json_decref(v);
    free(out);
    return n ? 0 : EXIT_NOTFOUND;
}
