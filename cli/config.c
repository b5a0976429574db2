/* config.c -- `hiredhand work -C FILE`: reads a YAML file in the subset of
 * Sidekiq's config/sidekiq.yml that applies to hiredhand, plus hiredhand's
 * own keys, and turns it into (option, argument) pairs: the caller runs
 * them through the very code that parses the command line, so a value in
 * the file meets the same checks and limits as the same flag. Touches no
 * Redis key.
 *
 * Keys: Sidekiq's (`:concurrency:`, `:queues:` with names or [name, weight]
 * pairs, `:timeout:`, `:tag:`, `:labels:`, ...) with or without the leading
 * colon (a queue, tag or label given as a Ruby Symbol, `:mailers`, names it
 * without the colon, as Sidekiq reads it), and every long option of `hiredhand work`, `_` and `-` alike. A
 * mapping groups options: `redis: {url: ..., namespace: ...}`,
 * `http: {bind: ..., token_file: ...}`, `exec: {Class: command}`,
 * `handlers: {exec: {...}, serve: {...}}`. A top-level mapping under any
 * other name is an environment section, as in Sidekiq: the one named by
 * $APP_ENV, $RAILS_ENV or $RACK_ENV (default development) applies over the
 * top level; the others are skipped (with a warning unless named
 * development, test, staging or production: a typo such as `htttp:` or a
 * plug-in's `:schedule:` must not pass unseen). Sidekiq's keys that have
 * nothing to apply to here (`:environment:`, `:strict:`, `:pidfile:`, the
 * Ruby hooks) are accepted with a warning, and so is a `:require:` naming
 * Ruby code. An unknown key is ignored with a warning, as Sidekiq ignores
 * it (a plug-in's setting), unless it is a near miss of a known key (a
 * typo: refused) or sits in one of hiredhand's own groups (refused).
 *
 * YAML merge keys (`<<: *defaults`) apply, as in Ruby's YAML.
 *
 * The YAML itself is libyaml's to parse. Sidekiq runs the file through ERB
 * first; hiredhand evaluates the subset Rails files use (values from ENV,
 * erb_render) and refuses any other tag rather than take it literally. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <yaml.h>
#include "cli.h"
#include "config.h"

typedef struct loader {
    const char *path;
    const struct option *longopts;
    yaml_document_t *doc;
    cli_config_item *items;
    size_t n, cap;
    int group; /* 0: top level, 1: the environment section */
    int logfile_warned;
    int *groups;
} loader;

/* The items outlive the load: the options parsed from them point into them. */
static cli_config_item *config_items;
static int *config_groups;

static int fail(const loader *l, const yaml_node_t *node, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hiredhand: %s:%lu:%lu: ", l->path, node ? (unsigned long)node->start_mark.line + 1 : 0UL,
            node ? (unsigned long)node->start_mark.column + 1 : 0UL);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return -1;
}

static void warn(const loader *l, const yaml_node_t *node, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hiredhand: %s:%lu:%lu: warning: ", l->path, (unsigned long)node->start_mark.line + 1,
            (unsigned long)node->start_mark.column + 1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int is_null(const yaml_node_t *n) {
    const char *s = scalar(n);
    return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

static const char *kind(const yaml_node_t *n) {
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    return is_null(n) ? "empty" : "a scalar";
}

/* Sidekiq's names for what hiredhand calls otherwise. */
static const char *const aliases[][2] = {
    {"queues", "queue"},
    {"labels", "label"},
    {"dead-timeout-in-seconds", "dead-timeout"},
    {"poll-interval-average", "poll-interval"},
    {"handlers", NULL},
};

/* A key as written (":max_retries") into an option name ("max-retries"). */
static void normalize(const char *key, char *out, size_t size) {
    if (*key == ':') key++;
    size_t i = 0;
    for (; key[i] && i + 1 < size; i++) out[i] = key[i] == '_' ? '-' : key[i];
    out[i] = '\0';
    for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]); k++)
        if (aliases[k][1] && !strcmp(out, aliases[k][0])) snprintf(out, size, "%s", aliases[k][1]);
}

/* Keys Sidekiq 6.4 to 8 read from sidekiq.yml that hiredhand has nothing
 * to apply to: a Sidekiq app's file must run as it is, so each is accepted
 * with a warning saying what it would have done, rather than refused as a
 * typo would be. (The ones hiredhand honours are options or aliases.) */
static const char *const sidekiq_only[][2] = {
    {"environment",
     "as in Sidekiq, the environment section that applies is chosen by -e, APP_ENV, RAILS_ENV or "
     "RACK_ENV, not by this key"},
    {"strict",
     "as in Sidekiq 6 and later, queues without weights are taken in strict order and weighted ones "
     "in weighted random order"},
    {"pidfile", "hiredhand writes no PID file (nor does Sidekiq since 6.0): let the supervisor track the process"},
    {"error-handlers", "Ruby code, which hiredhand does not load"},
    {"death-handlers", "Ruby code, which hiredhand does not load"},
    {"lifecycle-events", "Ruby code, which hiredhand does not load"},
    {"reloader", "Ruby code, which hiredhand does not load"},
    {"backtrace-cleaner", "Ruby code, which hiredhand does not load"},
    {"job-logger", "Ruby code, which hiredhand does not load; see --log-format"},
    {"on-complex-arguments", "it checks the arguments of jobs pushed from Ruby"},
    {"iteration", "it drives Sidekiq's iterable Ruby jobs"},
    {"max-iteration-runtime", "it drives Sidekiq's iterable Ruby jobs"},
    {"logged-job-attributes", "hiredhand logs class and jid, as Sidekiq 6.4 does"},
    {"redis-idle-timeout", "hiredhand keeps its connections open; see docs/redis.md"},
    {"capsules",
     "hiredhand runs one set of queues per process: run one more `hiredhand work -q ... -c N` per "
     "capsule, or its queues are not fetched here"},
};

static const char *sidekiq_only_reason(const char *name) {
    for (size_t i = 0; i < sizeof(sidekiq_only) / sizeof(sidekiq_only[0]); i++)
        if (!strcmp(name, sidekiq_only[i][0])) return sidekiq_only[i][1];
    return NULL;
}

/* Sidekiq's `require` names the Ruby code to boot: a Rails app's folder or
 * a .rb file. hiredhand's names a C plug-in; only that one is kept. */
static int names_ruby(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return (n >= 3 && !strcmp(path + n - 3, ".rb")) || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
}

static const struct option *find_option(const loader *l, const char *name) {
    if (!strcmp(name, "help") || !strcmp(name, "config")) return NULL;
    for (const struct option *o = l->longopts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

static int repeatable(const char *name) {
    static const char *const r[] = {"queue", "label", "exec", "serve", "require", "exec-env", "exec-env-drop"};
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        if (!strcmp(r[i], name)) return 1;
    return 0;
}

/* A handler's program (`exec:`/`serve:` CLASS: COMMAND, or CLASS=COMMAND)
 * written as a relative path with a slash (bin/hard_job) names a file
 * beside the config file, wherever the worker starts: it is rewritten
 * against the file's folder, as docker compose reads paths in its file.
 * A bare name (ruby, php) is looked up in $PATH, as on the command line.
 * The program must be there and executable, else the file is refused with
 * the place of the value: a start from another folder (a service) fails
 * here, not with a --exec error that names no file. *out: malloc'd, or
 * NULL when value is used as it is; 0 or -1 after printing why. */
static int handler_program(const loader *l, const struct option *o, const char *value, const yaml_node_t *at,
                           char **out) {
    *out = NULL;
    if (strcmp(o->name, "exec") && strcmp(o->name, "serve")) return 0;
    const char *eq = value ? strchr(value, '=') : NULL;
    if (!eq) return 0; /* the option's own check names what is missing */
    const char *prog = eq + 1 + strspn(eq + 1, " \t");
    size_t plen = strcspn(prog, " \t");
    if (!plen || !memchr(prog, '/', plen)) return 0;
    const char *slash = strrchr(l->path, '/');
    size_t dlen = slash ? (size_t)(slash - l->path) + 1 : 0; /* "config/" with its slash; "/" for a root file */
    int rel = prog[0] != '/' && dlen;
    if (rel && strcspn(l->path, " \t") < dlen)
        return fail(l, at,
                    "'%s' %.*s: a relative program path is resolved against the config file's folder, "
                    "whose name has a space (commands are split at spaces): write the program's absolute path",
                    o->name, (int)(eq - value), value);
    size_t len = strlen(value) + (rel ? dlen : 0) + 1;
    char *v = malloc(len);
    if (!v) return fail(l, at, "out of memory");
    size_t head = (size_t)(prog - value);
    memcpy(v, value, head);
    if (rel) memcpy(v + head, l->path, dlen);
    memcpy(v + head + (rel ? dlen : 0), prog, strlen(prog) + 1);
    char *path = strndup(v + head, plen + (rel ? dlen : 0));
    if (!path) {
        free(v);
        return fail(l, at, "out of memory");
    }
    struct stat st;
    const char *why = stat(path, &st) != 0 ? strerror(errno)
        : !S_ISREG(st.st_mode)             ? "is not a file"
        : access(path, X_OK) != 0          ? "is not executable"
                                           : NULL;
    if (why) {
        char hint[512] = "";
        char *plain = strndup(prog, plen);
        if (rel && plain && access(plain, X_OK) == 0)
            snprintf(hint, sizeof(hint),
                     "; %s exists from the current folder: write its path from the config "
                     "file's folder, or an absolute one",
                     plain);
        fail(l, at, "'%s' %.*s: program %s: %s%s%s", o->name, (int)(eq - value), value, path, why,
             rel ? " (a relative program path is resolved against the config file's folder)" : "", hint);
        free(plain);
        free(path);
        free(v);
        return -1;
    }
    free(path);
    *out = v;
    return 0;
}

static int add(loader *l, const struct option *o, const char *key, const char *value, const yaml_node_t *at) {
    char *resolved;
    if (handler_program(l, o, value, at, &resolved)) return -1;
    if (resolved) {
        int rc = add(l, o, key, NULL, at);
        if (rc == 0) l->items[l->n - 1].value = resolved;
        else free(resolved);
        return rc;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        cli_config_item *items = realloc(l->items, cap * sizeof(*items));
        if (items) l->items = config_items = items;
        int *groups = items ? realloc(l->groups, cap * sizeof(*groups)) : NULL;
        if (groups) l->groups = config_groups = groups;
        if (!items || !groups) return fail(l, at, "out of memory");
        l->cap = cap;
    }
    char *k = strdup(key), *v = value ? strdup(value) : NULL;
    if (!k || (value && !v)) {
        free(k);
        free(v);
        return fail(l, at, "out of memory");
    }
    l->groups[l->n] = l->group;
    cli_config_item *it = &l->items[l->n++];
    it->id = o->val;
    it->name = o->name;
    it->value = v; /* the item owns both copies now */
    it->key = k;
    it->line = (int)at->start_mark.line + 1;
    it->column = (int)at->start_mark.column + 1;
    return 0;
}

/* Options whose value Sidekiq turns into a string with to_s (queue names,
 * the tag, labels): there a plain scalar such as `:mailers` is a Symbol to
 * Ruby's YAML and names `mailers`; taken with its colon it would name a
 * queue no one pushes to. Other options keep the text as written (an
 * address such as `:7433` is no Symbol to hiredhand). */
static int takes_symbol(const struct option *o) {
    return !strcmp(o->name, "queue") || !strcmp(o->name, "tag") || !strcmp(o->name, "label");
}

/* A scalar's text as Ruby's YAML (Psych) reads it for such an option: a
 * plain one that starts with ':' and one more character is a Symbol,
 * named without that colon (`:"a b"` without the quotes too); a quoted
 * one (":mailers") is a string, kept whole. Points into the node or buf. */
static const char *symbol_text(const yaml_node_t *n, char *buf, size_t size) {
    const char *s = scalar(n);
    size_t len = s ? strlen(s) : 0;
    if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || len < 2 || s[0] != ':') return s;
    if (len >= 4 && (s[1] == '"' || s[1] == '\'') && s[len - 1] == s[1] && len - 3 < size) {
        memcpy(buf, s + 2, len - 3);
        buf[len - 3] = '\0';
        return buf;
    }
    return s + 1;
}

/* One scalar for option o; true/false for an option without argument. */
static int add_scalar(loader *l, const struct option *o, const char *key, const yaml_node_t *v) {
    if (v->type != YAML_SCALAR_NODE || is_null(v))
        return fail(l, v, "'%s' wants %s, not %s", key, o->has_arg == no_argument ? "true or false" : "a value",
                    kind(v));
    char sym[1024];
    const char *s = takes_symbol(o) ? symbol_text(v, sym, sizeof(sym)) : scalar(v);
    if (o->has_arg == no_argument) {
        if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")) return add(l, o, key, NULL, v);
        if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off")) return 0;
        return fail(l, v, "'%s' wants true or false, not '%s'", key, s);
    }
    if (!strcmp(o->name, "require") && names_ruby(s)) {
        warn(l, v,
             "'%s' %s skipped: it names Ruby code (Sidekiq's meaning) and hiredhand does not load Ruby; jobs run "
             "through --exec, --serve or a C plug-in (a .so file)",
             key, s);
        return 0;
    }
    return add(l, o, key, s, v);
}

/* A queue: a name, or Sidekiq's [name, weight] pair. */
static int add_queue(loader *l, const struct option *o, const char *key, const yaml_node_t *v) {
    if (v->type != YAML_SEQUENCE_NODE) return add_scalar(l, o, key, v);
    yaml_node_item_t *it = v->data.sequence.items.start, *end = v->data.sequence.items.top;
    yaml_node_t *name = it < end ? yaml_document_get_node(l->doc, it[0]) : NULL;
    yaml_node_t *weight = end - it == 2 ? yaml_document_get_node(l->doc, it[1]) : NULL;
    if (end - it < 1 || end - it > 2 || !scalar(name) || is_null(name) ||
        (weight && (!scalar(weight) || is_null(weight))))
        return fail(l, v, "'%s': a queue is a name or a [name, weight] pair", key);
    char sym[1024], buf[1024];
    const char *qname = symbol_text(name, sym, sizeof(sym)); /* [:mailers, 2] serves mailers */
    if (!weight) return add(l, o, key, qname, name);
    if ((size_t)snprintf(buf, sizeof(buf), "%s,%s", qname, scalar(weight)) >= sizeof(buf))
        return fail(l, v, "'%s': queue name too long", key);
    return add(l, o, key, buf, name);
}

/* An option's value: a scalar, or a list of them for a repeatable one. */
static int add_value(loader *l, const struct option *o, const char *key, const yaml_node_t *v) {
    if (v->type == YAML_SEQUENCE_NODE && repeatable(o->name)) {
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(l->doc, *it);
            int rc = !strcmp(o->name, "queue") ? add_queue(l, o, key, e) : add_scalar(l, o, key, e);
            if (rc) return rc;
        }
        return 0;
    }
    if (v->type == YAML_MAPPING_NODE && (!strcmp(o->name, "exec") || !strcmp(o->name, "serve"))) {
        /* Class: command, as --exec Class=command */
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(l->doc, p->key), *c = yaml_document_get_node(l->doc, p->value);
            if (!scalar(k) || is_null(k)) return fail(l, k, "'%s': a class name, not %s", key, kind(k));
            if (!scalar(c) || is_null(c))
                return fail(l, c, "'%s': %s wants a command, not %s", key, scalar(k), kind(c));
            size_t len = strlen(scalar(k)) + strlen(scalar(c)) + 2;
            char *s = malloc(len);
            if (!s) return fail(l, c, "out of memory");
            snprintf(s, len, "%s=%s", scalar(k), scalar(c));
            int rc = add(l, o, key, s, c);
            free(s);
            if (rc) return rc;
        }
        return 0;
    }
    if (v->type != YAML_SCALAR_NODE)
        return fail(l, v, "'%s' wants %s, not %s", key, repeatable(o->name) ? "a value or a list" : "a value", kind(v));
    return add_scalar(l, o, key, v);
}

static int load_mapping(loader *l, const yaml_node_t *map, const char *parent, int top);

/* A YAML node as JSON, with the types Ruby's YAML gives plain scalars
 * (null, true/false, integers, floats); quoted scalars stay strings. */
static json_t *node_json(const loader *l, const yaml_node_t *n, int depth) {
    if (!n || depth > 32) return json_null();
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
            json_array_append_new(a, node_json(l, yaml_document_get_node(l->doc, *i), depth + 1));
        return a;
    }
    if (n->type == YAML_MAPPING_NODE) {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            const char *k = scalar(yaml_document_get_node(l->doc, p->key));
            if (k)
                json_object_set_new(o, *k == ':' ? k + 1 : k,
                                    node_json(l, yaml_document_get_node(l->doc, p->value), depth + 1));
        }
        return o;
    }
    const char *s = scalar(n);
    if (!s) return json_null();
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return json_string(s);
    if (is_null(n)) return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
    char *end;
    long long i = strtoll(s, &end, 10);
    if (*s && !*end) return json_integer(i);
    double d = strtod(s, &end);
    if (*s && !*end && strpbrk(s, ".eE")) return json_real(d);
    return json_string(s);
}

/* One job of the cron: section, as the item of the hidden option
 * --cron-job with the job's JSON ({"name": NAME, ...its keys}). */
static int add_cron_job(loader *l, const char *key, const yaml_node_t *v) {
    const struct option *o = find_option(l, "cron-job");
    if (!o) return fail(l, v, "cron jobs are not taken here");
    json_t *j = node_json(l, v, 0);
    json_object_set_new(j, "name", json_string(*key == ':' ? key + 1 : key));
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) return fail(l, v, "out of memory");
    int rc = add(l, o, key, s, v);
    free(s);
    return rc;
}

/* Whether a mapping under this name groups options: handlers, and a name
 * that options share as a prefix (redis, http, tls, sentinel...). */
static int is_group(const loader *l, const char *name) {
    size_t n = strlen(name);
    if (!strcmp(name, "handlers") || !strcmp(name, "redis") || !strcmp(name, "http")) return 1;
    for (const struct option *o = l->longopts; o->name; o++)
        if (!strncmp(o->name, name, n) && o->name[n] == '-') return 1;
    return 0;
}

/* A group: redis: {url: ...}, http: {bind: ...}, handlers: {exec: ...}. */
static int load_group(loader *l, const char *gname, const char *key, const yaml_node_t *v) {
    (void)key;
    return load_mapping(l, v, strcmp(gname, "handlers") ? gname : "", 0);
}

/* Environment names a Rails app's sidekiq.yml holds sections for: the
 * ones not in use are skipped quietly, any other section with a warning. */
static int conventional_env(const char *name) {
    static const char *const envs[] = {"development", "test", "staging", "production"};
    for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++)
        if (!strcmp(name, envs[i])) return 1;
    return 0;
}

/* YAML's merge key: `<<: *defaults` (or a list of such aliases) in a
 * mapping gives it the keys of the mapping(s) named, except the ones it
 * sets itself; the first of a list wins over the next. Ruby's YAML, which
 * Sidekiq reads the file with, does the same. libyaml's document loader
 * has already turned each alias into the anchored node. */
typedef struct pair_list {
    yaml_node_pair_t *p;
    size_t n, cap;
} pair_list;

static int is_merge_key(const yaml_node_t *k) {
    const char *s = scalar(k);
    return s && !strcmp(s, "<<");
}

static int same_key(const loader *l, const yaml_node_pair_t *a, const yaml_node_pair_t *b) {
    const char *ka = scalar(yaml_document_get_node(l->doc, a->key)),
               *kb = scalar(yaml_document_get_node(l->doc, b->key));
    char na[256], nb[256];
    if (!ka || !kb) return 0;
    normalize(ka, na, sizeof(na));
    normalize(kb, nb, sizeof(nb));
    return !strcmp(na, nb);
}

static int push_pair(const loader *l, pair_list *pl, const yaml_node_pair_t *p, const yaml_node_t *at) {
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 16;
        yaml_node_pair_t *np = realloc(pl->p, cap * sizeof(*np));
        if (!np) return fail(l, at, "out of memory");
        pl->p = np;
        pl->cap = cap;
    }
    pl->p[pl->n++] = *p;
    return 0;
}

/* map's pairs into pl, merges applied. own: map is the mapping being
 * read, whose keys given twice stay in for load_mapping to name; in a
 * merged mapping the last of them counts at once. */
static int expand_merges(const loader *l, const yaml_node_t *map, pair_list *pl, int own, int depth) {
    if (depth > 16) return fail(l, map, "'<<' merges nested too deep (a mapping that merges itself?)");
    size_t first = pl->n, nwarned = 0;
    int warned[32];
    const yaml_node_pair_t *start = map->data.mapping.pairs.start, *top = map->data.mapping.pairs.top;
    for (const yaml_node_pair_t *p = start; p < top; p++) {
        if (is_merge_key(yaml_document_get_node(l->doc, p->key))) continue;
        int later = 0;
        for (const yaml_node_pair_t *q = p + 1; !own && q < top && !later; q++) later = same_key(l, p, q);
        if (!later && push_pair(l, pl, p, map)) return -1;
    }
    for (const yaml_node_pair_t *p = start; p < top; p++) {
        if (!is_merge_key(yaml_document_get_node(l->doc, p->key))) continue;
        yaml_node_t *v = yaml_document_get_node(l->doc, p->value);
        yaml_node_item_t one = p->value, *it = &one, *end = &one + 1;
        if (v->type == YAML_SEQUENCE_NODE) it = v->data.sequence.items.start, end = v->data.sequence.items.top;
        for (; it < end; it++) {
            yaml_node_t *m = yaml_document_get_node(l->doc, *it);
            if (m->type != YAML_MAPPING_NODE)
                return fail(l, m, "'<<' merges a mapping (an alias such as *defaults) or a list of them, not %s",
                            kind(m));
            pair_list sub = {0};
            int rc = expand_merges(l, m, &sub, 0, depth + 1);
            for (size_t i = 0; rc == 0 && i < sub.n; i++) {
                size_t set = first;
                while (set < pl->n && !same_key(l, &pl->p[set], &sub.p[i])) set++;
                if (set == pl->n) {
                    rc = push_pair(l, pl, &sub.p[i], m);
                } else if (own) {
                    /* Ruby's YAML applies a merge where it stands: a key
                     * set above the `<<` takes the merged value there */
                    const yaml_node_pair_t *o = start;
                    while (o < top && o->key != pl->p[set].key) o++;
                    size_t w = 0;
                    while (w < nwarned && warned[w] != o->key) w++;
                    if (o >= p || w < nwarned) continue; /* once per key, not per merged mapping */
                    if (nwarned < sizeof(warned) / sizeof(warned[0])) warned[nwarned++] = o->key;
                    const yaml_node_t *k = yaml_document_get_node(l->doc, o->key);
                    warn(l, k,
                         "'%s' is set here and by the '<<' merge below it: hiredhand keeps this one, as YAML says, "
                         "but Sidekiq's YAML reader takes the merged value; put '<<' first to make them agree",
                         scalar(k));
                }
            }
            free(sub.p);
            if (rc) return rc;
        }
    }
    return 0;
}

/* Whether node is merged into a mapping somewhere (`<<: *it`): such an
 * anchored top-level mapping (`defaults: &defaults`) is no section. */
static int is_merged(const loader *l, const yaml_node_t *node) {
    int id = (int)(node - l->doc->nodes.start) + 1;
    for (const yaml_node_t *m = l->doc->nodes.start; m < l->doc->nodes.top; m++) {
        if (m->type != YAML_MAPPING_NODE) continue;
        for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
            if (!is_merge_key(yaml_document_get_node(l->doc, p->key))) continue;
            const yaml_node_t *v = yaml_document_get_node(l->doc, p->value);
            if (p->value == id) return 1;
            if (v->type != YAML_SEQUENCE_NODE) continue;
            for (const yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
                if (*it == id) return 1;
        }
    }
    return 0;
}

static int load_pairs(loader *l, const yaml_node_pair_t *pairs, size_t npairs, const char *parent, int top);

/* Edits (insert, delete, change, swap two neighbours) from a to b, or
 * more than max as soon as that is sure. */
static size_t edit_distance(const char *a, const char *b, size_t max) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return max + 1;
    if ((la > lb ? la - lb : lb - la) > max) return max + 1;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The known key an unknown one is a near miss of (`concurency`, `timout`,
 * `lables`), or NULL. Sidekiq ignores a key it does not know, and so does
 * hiredhand, with a warning: a plug-in's keys (sidekiq-scheduler's
 * `:dynamic:`, `:enabled:`) must not stop the worker. A key one edit from
 * a known one (two for longer names) is far likelier a typo whose value
 * would be lost, and is refused. */
static const char *near_miss(const loader *l, const char *name) {
    size_t max = strlen(name) <= 5 ? 1 : 2;
    for (const struct option *o = l->longopts; o->name; o++)
        if (strcmp(o->name, "help") && strcmp(o->name, "config") && edit_distance(name, o->name, max) <= max)
            return o->name;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (edit_distance(name, aliases[i][0], max) <= max) return aliases[i][0];
    for (size_t i = 0; i < sizeof(sidekiq_only) / sizeof(sidekiq_only[0]); i++)
        if (edit_distance(name, sidekiq_only[i][0], max) <= max) return sidekiq_only[i][0];
    return NULL;
}

/* The keys of one mapping, merges applied. parent: the group's name
 * ("redis"), "" for the handlers group, NULL at the top level. */
static int load_mapping(loader *l, const yaml_node_t *map, const char *parent, int top) {
    pair_list pl = {0};
    int rc = expand_merges(l, map, &pl, 1, 0);
    if (rc == 0) rc = load_pairs(l, pl.p, pl.n, parent, top);
    free(pl.p);
    return rc;
}

static int load_pairs(loader *l, const yaml_node_pair_t *pairs, size_t npairs, const char *parent, int top) {
    const char *env = getenv("APP_ENV");
    if (!env || !*env) env = getenv("RAILS_ENV");
    if (!env || !*env) env = getenv("RACK_ENV");
    if (!env || !*env) env = "development";
    const yaml_node_t *section = NULL;
    for (const yaml_node_pair_t *p = pairs; p < pairs + npairs; p++) {
        yaml_node_t *k = yaml_document_get_node(l->doc, p->key), *v = yaml_document_get_node(l->doc, p->value);
        const char *key = scalar(k);
        if (!key || !*key) return fail(l, k, "a key must be a name, not %s", kind(k));
        char name[256], full[512];
        normalize(key, name, sizeof(name));
        /* YAML (and Ruby's Psych) takes the last of a key given twice,
         * silently: this one is skipped, and said so (most often a
         * leftover; a list key such as queues would otherwise add up) */
        const yaml_node_t *again = NULL;
        for (const yaml_node_pair_t *q = p + 1; q < pairs + npairs && !again; q++) {
            const yaml_node_t *qn = yaml_document_get_node(l->doc, q->key);
            const char *qk = scalar(qn);
            char qname[256];
            if (!qk) continue;
            normalize(qk, qname, sizeof(qname));
            if (strcmp(qname, name) == 0) again = qn;
        }
        if (again) {
            warn(l, k, "'%s' is given again at line %lu: this one is skipped, as Sidekiq's YAML reader does", key,
                 (unsigned long)again->start_mark.line + 1);
            continue;
        }
        if (parent && !strcmp(parent, "cron") && v->type == YAML_MAPPING_NODE) {
            /* cron: {NAME: {cron: ..., class: ...}}: a periodic job in
             * sidekiq-cron's schedule-file shape (its poll options sit
             * beside them as scalars: cron: {poll_interval: 10}) */
            if (add_cron_job(l, key, v)) return -1;
            continue;
        }
        const struct option *o = NULL;
        const char *near, *why = parent ? NULL : sidekiq_only_reason(name);
        if (why) {
            warn(l, k, "'%s' has no effect in hiredhand: %s", key, why);
            continue;
        }
        if (parent && *parent) {
            /* redis: {namespace: x} is --namespace; {url: x} is --redis itself */
            snprintf(full, sizeof(full), "%s-%s", parent, name);
            if (!(o = find_option(l, full)) && !(o = find_option(l, name)) &&
                (!strcmp(name, "url") || !strcmp(name, "bind") || !strcmp(name, "address")))
                o = find_option(l, parent);
        } else {
            o = find_option(l, name);
        }
        if (o && !strcmp(o->name, "logfile") && !l->logfile_warned) {
            /* honoured, but a Sidekiq 6+ user expects stdout: the one
             * place a migrated file's key changes where the logs go */
            l->logfile_warned = 1;
            warn(l, k,
                 "'%s' is honoured: hiredhand appends its log to that file; Sidekiq 6 and later ignore this key and "
                 "log to stdout",
                 key);
        }
        if (o && !(v->type == YAML_MAPPING_NODE && strcmp(o->name, "exec") && strcmp(o->name, "serve"))) {
            if (add_value(l, o, key, v)) return -1;
        } else if ((top || (l->group == 1 && !parent)) && v->type == YAML_MAPPING_NODE && is_group(l, name)) {
            /* at the top level, or in the environment section (production:
             * {redis: {url: ...}}): its keys then replace the top level's */
            if (load_group(l, name, key, v)) return -1;
        } else if (top && v->type == YAML_MAPPING_NODE && !o) {
            const char *bare = *key == ':' ? key + 1 : key;
            if (!strcmp(bare, env)) section = v;
            else if (!conventional_env(bare) &&
                     !is_merged(l, v)) /* a typo (htttp:) or a plug-in's section (schedule:) */
                fprintf(stderr,
                        "hiredhand: %s:%lu:%lu: warning: section '%s' skipped: not an option group, and not "
                        "this environment's ('%s', from APP_ENV, RAILS_ENV or RACK_ENV)\n",
                        l->path, (unsigned long)k->start_mark.line + 1, (unsigned long)k->start_mark.column + 1, key,
                        env);
        } else if (o) {
            return fail(l, v, "'%s' wants a value, not %s", key, kind(v));
        } else if ((top || (l->group == 1 && !parent)) && is_group(l, name)) {
            return fail(l, v, "'%s' groups options: it wants a mapping, not %s", key, kind(v));
        } else if (parent) {
            /* a group is hiredhand's own: no plug-in writes there */
            return fail(l, k, "unknown key '%s'%s%s (see `hiredhand work --help` for the options a key may name)", key,
                        *parent ? " in " : "", parent);
        } else if ((near = near_miss(l, name)) != NULL) {
            return fail(l, k,
                        "unknown key '%s': did you mean '%s'? (a key this close to a known one is taken for a typo; "
                        "see `hiredhand work --help` for the options a key may name)",
                        key, near);
        } else {
            warn(l, k, "unknown key '%s' ignored, as Sidekiq ignores keys it does not know (a plug-in's setting?)",
                 key);
        }
    }
    if (section) {
        l->group = 1;
        if (load_mapping(l, section, NULL, 0)) return -1;
        l->group = 0;
    }
    return 0;
}

/* Sidekiq runs the file through ERB before YAML. What Rails apps write
 * there is a value from the environment; that subset is evaluated here:
 *
 *   <%= ENV["X"] %>  <%= ENV['X'] %>          nil (no text) when X is unset
 *   <%= ENV.fetch("X") %>                     an error when X is unset
 *   <%= ENV.fetch("X", 5) %>  <%= ENV.fetch("X") { 5 } %>   5 when unset
 *   A || B  (the first that is not nil)  (A)  .to_i  .to_s  "text" 'text' 12 1.5 nil
 *   <%# a comment %>
 *
 * The result replaces the tag as text, as ERB does (nil as ""). Anything
 * else (Ruby code, <% %> without =, <%- -%>) stops the load with the
 * tag's FILE:LINE:COLUMN and a way out, rather than take it literally. */
typedef struct erb_value {
    int nil;
    char *text; /* malloc'd when !nil */
} erb_value;

typedef struct erb {
    const loader *l;
    yaml_node_t at; /* the tag's place, for errors */
    const char *p, *end;
    const char *why; /* set on failure */
    int unset;       /* why is a variable ENV.fetch wants, not an unsupported tag */
    char whybuf[256];
} erb;

static void erb_skip(erb *e) {
    while (e->p < e->end && (*e->p == ' ' || *e->p == '\t')) e->p++;
}

static int erb_eat(erb *e, const char *tok) {
    erb_skip(e);
    size_t n = strlen(tok);
    if ((size_t)(e->end - e->p) < n || strncmp(e->p, tok, n)) return 0;
    e->p += n;
    return 1;
}

static int erb_set(erb_value *v, const char *s, size_t n) {
    v->nil = 0;
    v->text = strndup(s, n);
    return v->text ? 0 : -1;
}

/* "text" or 'text' (no escapes but \" and \\ in double quotes) */
static int erb_string(erb *e, erb_value *v) {
    erb_skip(e);
    char q = e->p < e->end ? *e->p : 0;
    if (q != '"' && q != '\'') return 1;
    const char *s = ++e->p;
    size_t n = 0;
    char *buf = malloc((size_t)(e->end - s) + 1);
    if (!buf) return -1;
    while (e->p < e->end && *e->p != q) {
        if (*e->p == '\\' && e->p + 1 < e->end && (e->p[1] == q || e->p[1] == '\\')) e->p++;
        else if (q == '"' && (*e->p == '#' || *e->p == '\\')) {
            free(buf);
            e->why = "a double-quoted string with \\ or # (escapes, interpolation)";
            return -1;
        }
        buf[n++] = *e->p++;
    }
    if (e->p == e->end) {
        free(buf);
        e->why = "a string without its closing quote";
        return -1;
    }
    e->p++;
    buf[n] = '\0';
    v->nil = 0;
    v->text = buf;
    return 0;
}

static int erb_expr(erb *e, erb_value *v);

/* A literal: a string, a number or nil. 1 when there is none here. */
static int erb_literal(erb *e, erb_value *v) {
    int rc = erb_string(e, v);
    if (rc <= 0) return rc;
    erb_skip(e);
    const char *s = e->p;
    if (e->p < e->end && (*e->p == '-' || *e->p == '+')) e->p++;
    const char *digits = e->p;
    while (e->p < e->end &&
           ((*e->p >= '0' && *e->p <= '9') || *e->p == '_' ||
            (*e->p == '.' && e->p + 1 < e->end && e->p[1] >= '0' && e->p[1] <= '9')))
        e->p++;
    if (e->p > digits) {
        /* Ruby writes 1_000 for 1000: the text without the underscores */
        char buf[64];
        size_t n = 0;
        for (const char *c = s; c < e->p && n + 1 < sizeof(buf); c++)
            if (*c != '_') buf[n++] = *c;
        return erb_set(v, buf, n);
    }
    e->p = s;
    if (erb_eat(e, "nil")) {
        v->nil = 1;
        v->text = NULL;
        return 0;
    }
    return 1;
}

/* ENV["X"], ENV.fetch("X"), ENV.fetch("X", default), ENV.fetch("X") { default } */
static int erb_env(erb *e, erb_value *v) {
    erb_value name = {0};
    int fetch;
    if (erb_eat(e, "ENV[")) fetch = 0;
    else if (erb_eat(e, "ENV.fetch(")) fetch = 1;
    else return 1;
    if (erb_string(e, &name) != 0) {
        if (!e->why) e->why = "ENV with a name that is not a quoted string";
        return -1;
    }
    erb_value def = {.nil = 1};
    int has_def = 0;
    if (fetch && erb_eat(e, ",")) {
        if (erb_expr(e, &def)) goto bad;
        has_def = 1;
    }
    if (!erb_eat(e, fetch ? ")" : "]")) goto bad;
    if (fetch && erb_eat(e, "{")) {
        if (has_def || erb_expr(e, &def) || !erb_eat(e, "}")) goto bad;
        has_def = 1;
    }
    const char *val = getenv(name.text);
    if (val) {
        free(def.text);
        free(name.text);
        return erb_set(v, val, strlen(val));
    }
    if (fetch && !has_def) {
        snprintf(e->whybuf, sizeof(e->whybuf),
                 "%s is not set, and ENV.fetch without a default stops Sidekiq too (KeyError): set it, or give "
                 "a default: ENV.fetch(\"%s\", VALUE)",
                 name.text, name.text);
        e->why = e->whybuf;
        e->unset = 1;
        free(name.text);
        return -1;
    }
    free(name.text);
    *v = def; /* nil for ENV["X"] */
    return 0;
bad:
    free(def.text);
    free(name.text);
    if (!e->why) e->why = "an ENV call this reader does not take";
    return -1;
}

/* A primary with its .to_i / .to_s calls */
static int erb_postfix(erb *e, erb_value *v) {
    int rc;
    if (erb_eat(e, "(")) {
        if ((rc = erb_expr(e, v))) return rc;
        if (!erb_eat(e, ")")) {
            free(v->text);
            e->why = "a '(' without its ')'";
            return -1;
        }
    } else if ((rc = erb_env(e, v)) == 1 && (rc = erb_literal(e, v)) == 1) {
        return 1;
    }
    if (rc) return rc;
    for (;;) {
        if (erb_eat(e, ".to_i")) {
            /* String#to_i: the leading integer, else 0; nil.to_i is 0 */
            long long n = v->nil ? 0 : strtoll(v->text, NULL, 10);
            char buf[32];
            free(v->text);
            snprintf(buf, sizeof(buf), "%lld", n);
            if (erb_set(v, buf, strlen(buf))) return -1;
        } else if (erb_eat(e, ".to_s")) {
            if (v->nil && erb_set(v, "", 0)) return -1;
        } else {
            return 0;
        }
    }
}

/* A || B || ...: the first that is not nil (Ruby: "" counts as set) */
static int erb_expr(erb *e, erb_value *v) {
    int rc = erb_postfix(e, v);
    if (rc) return rc;
    while (erb_eat(e, "||")) {
        erb_value next = {0};
        if ((rc = erb_postfix(e, &next))) {
            free(v->text);
            return rc;
        }
        if (v->nil) {
            *v = next;
        } else {
            free(next.text);
        }
    }
    return 0;
}

/* The tag's line and column in text, for its errors. */
static void erb_place(const char *text, const char *tag, yaml_node_t *at) {
    size_t line = 0, col = 0;
    for (const char *s = text; s < tag; s++) {
        if (*s == '\n') line++, col = 0;
        else col++;
    }
    at->start_mark.line = line;
    at->start_mark.column = col;
}

/* text with each ERB tag replaced by its value: malloc'd, or NULL after
 * printing why (with the tag's place). */
static char *erb_render(const loader *l, const char *text, size_t *len) {
    size_t cap = *len + 1, n = 0;
    char *out = malloc(cap);
    if (!out) {
        fprintf(stderr, "hiredhand: out of memory\n");
        return NULL;
    }
    const char *p = text, *tag;
    while ((tag = strstr(p, "<%"))) {
        erb e = {.l = l};
        erb_place(text, tag, &e.at);
        const char *close = strstr(tag + 2, "%>");
        erb_value v = {.nil = 1};
        int rc = -1;
        if (!close) {
            e.why = "a tag without its closing %>";
        } else if (tag[2] == '#') {
            rc = 0; /* a comment: no text */
        } else if (tag[2] != '=' || tag[3] == '=' || close[-1] == '-') {
            e.why = tag[2] == '-' || close[-1] == '-' ? "<%- -%> (trim mode; Sidekiq's ERB has none)"
                                                      : "Ruby code in <% %> (only <%= value %> is read)";
        } else {
            e.p = tag + 3;
            e.end = close;
            rc = erb_expr(&e, &v);
            erb_skip(&e);
            if (rc == 1 || (rc == 0 && e.p != e.end)) {
                if (rc == 0) free(v.text);
                rc = -1;
                e.why = NULL;
            }
        }
        int tl = close ? (int)(close + 2 - tag) : (int)strcspn(tag, "\n");
        if (rc && e.unset) {
            fail(l, &e.at, "ERB %.*s: %s", tl > 80 ? 80 : tl, tag, e.why);
            free(out);
            return NULL;
        }
        if (rc) {
            fail(l, &e.at,
                 "ERB %.*s: %s is not supported; hiredhand reads the ERB Rails files use: ENV[\"X\"], "
                 "ENV.fetch(\"X\"), ENV.fetch(\"X\", default) or ENV.fetch(\"X\") { default }, with || default, "
                 ".to_i, .to_s and string or number literals. Write the value itself, or start with -C naming "
                 "another file (-C /dev/null for none) and give these options as flags",
                 tl > 80 ? 80 : tl, tag, e.why ? e.why : "this expression");
            free(out);
            return NULL;
        }
        size_t vl = v.nil ? 0 : strlen(v.text), head = (size_t)(tag - p);
        if (n + head + vl + 1 > cap) {
            size_t ncap = (n + head + vl + 1) * 2;
            char *t = realloc(out, ncap);
            if (!t) {
                free(v.text);
                free(out);
                fprintf(stderr, "hiredhand: out of memory\n");
                return NULL;
            }
            out = t, cap = ncap;
        }
        memcpy(out + n, p, head), n += head;
        if (vl) memcpy(out + n, v.text, vl), n += vl;
        free(v.text);
        p = close + 2;
    }
    size_t rest = strlen(p);
    if (n + rest + 1 > cap) {
        char *t = realloc(out, n + rest + 1);
        if (!t) {
            free(out);
            fprintf(stderr, "hiredhand: out of memory\n");
            return NULL;
        }
        out = t;
    }
    memcpy(out + n, p, rest + 1);
    *len = n + rest;
    return out;
}

const cli_config_item *cli_config_load(const char *path, const struct option *longopts, size_t *n) {
    loader l = {.path = path, .longopts = longopts};
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "hiredhand: cannot read --config %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            char *t = realloc(text, cap = cap ? cap * 2 : 8192);
            if (!t) break;
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f), err = errno; /* EISDIR for a folder: fopen takes it, fread refuses */
    fclose(f);
    if (!text || bad) {
        free(text);
        fprintf(stderr, "hiredhand: cannot read --config %s: %s\n", path, bad ? strerror(err) : "out of memory");
        return NULL;
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        fprintf(stderr, "hiredhand: %s: a NUL byte: not a YAML text file\n", path);
        return NULL;
    }
    if (strstr(text, "<%")) {
        char *rendered = erb_render(&l, text, &len);
        free(text);
        if (!rendered) return NULL;
        text = rendered;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(text);
        fprintf(stderr, "hiredhand: out of memory\n");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_mark_t m = parser.problem_mark;
        fprintf(stderr, "hiredhand: %s:%lu:%lu: YAML %s error: %s%s%s\n", path, (unsigned long)m.line + 1,
                (unsigned long)m.column + 1, parser.error == YAML_SCANNER_ERROR ? "syntax" : "structure",
                parser.problem ? parser.problem : "malformed", parser.context ? " " : "",
                parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        free(text);
        return NULL;
    }
    l.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || is_null(root)) {
        *n = 0; /* an empty file: nothing set */
    } else if (root->type != YAML_MAPPING_NODE) {
        rc = fail(&l, root, "the file must be a mapping of keys (concurrency: 10, ...), not %s", kind(root));
    } else {
        rc = load_mapping(&l, root, NULL, 1);
    }
    if (rc == 0) {
        /* the environment section's keys replace the top level's (lists too) */
        size_t w = 0;
        for (size_t i = 0; i < l.n; i++) {
            int over = 0;
            for (size_t k = 0; l.groups[i] == 0 && k < l.n; k++)
                if (l.groups[k] == 1 && l.items[k].id == l.items[i].id) over = 1;
            if (!over) {
                l.items[w++] = l.items[i];
            } else {
                free((char *)l.items[i].key);
                free((char *)l.items[i].value);
            }
        }
        l.n = w;
        *n = l.n;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(text);
    if (rc) return NULL;
    static const cli_config_item none;
    return l.items ? l.items : &none;
}
