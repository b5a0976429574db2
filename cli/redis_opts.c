/* redis_opts.c -- the connection options every subcommand that talks to
 * Redis shares (see cli.h): -r/--redis, --redis-password-file,
 * --namespace, the --tls-* settings of a rediss:// URL and the
 * --sentinel* ones; their getopt entries, their help and their handler,
 * one place for all commands. Touches no Redis key. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"

/* --sentinel, repeated, joined with commas; reachable until exit. */
static char *sentinels;
static char *sentinel_password;

/* clang-format off */ /* one entry a line or two: the table reads as one */
const cli_redis_opt cli_redis_opts[] = {
    {"redis", 'r', "URL", NULL},
    {"redis-password-file", CLI_OPT_PASSWORD_FILE, "FILE", NULL},
    {"namespace", CLI_OPT_NAMESPACE, "NS", NULL},
    {"tls-ca-file", CLI_OPT_TLS_CA_FILE, "FILE", "rediss://: CA bundle (PEM) to verify the server with (default:\nthe system's CA store) [$HIREDHAND_TLS_CA_FILE]"},
    {"tls-ca-dir", CLI_OPT_TLS_CA_DIR, "DIR", "rediss://: hashed CA directory [$HIREDHAND_TLS_CA_DIR]"},
    {"tls-cert", CLI_OPT_TLS_CERT, "FILE", "rediss://: client certificate for mutual TLS [$HIREDHAND_TLS_CERT]"},
    {"tls-key", CLI_OPT_TLS_KEY, "FILE", "rediss://: its private key [$HIREDHAND_TLS_KEY]"},
    {"tls-server-name", CLI_OPT_TLS_SERVER_NAME, "NAME", "rediss://: the name the certificate must match, and SNI\n(default: the URL's host) [$HIREDHAND_TLS_SERVER_NAME]"},
    {"tls-insecure", CLI_OPT_TLS_INSECURE, NULL, "rediss://: no certificate check (logged) [$HIREDHAND_TLS_INSECURE=1]"},
    {"sentinel", CLI_OPT_SENTINEL, "HOST:PORT", "find the master through Redis Sentinel; repeatable\n[$HIREDHAND_SENTINELS=h:p,h:p]. The URL gives db, user, password"},
    {"sentinel-master", CLI_OPT_SENTINEL_MASTER, "NAME", "the master's name (default: the URL's host) [$HIREDHAND_SENTINEL_MASTER]"},
    /* said in --sentinel-password-file's help: a password in argv shows in ps */
    {"sentinel-password", CLI_OPT_SENTINEL_PASSWORD, "PW", NULL},
    {"sentinel-password-file", CLI_OPT_SENTINEL_PASSWORD_FILE, "FILE", "the sentinels' password, apart from the master's\n(or --sentinel-password PW, or $HIREDHAND_SENTINEL_PASSWORD)"},
    {NULL, 0, NULL, NULL},
};
/* clang-format on */
#define NREDIS_OPTS (sizeof(cli_redis_opts) / sizeof(*cli_redis_opts) - 1)

/* The most options a command of its own has (work's are about 50). */
#define CLI_OWN_OPTIONS_MAX 128

const struct option *cli_longopts(const struct option *own) {
    static struct option table[CLI_OWN_OPTIONS_MAX + NREDIS_OPTS + 1];
    size_t n = 0;
    for (; own[n].name; n++) {
        assert(n < CLI_OWN_OPTIONS_MAX); /* a programming error: raise the cap */
        table[n] = own[n];
    }
    size_t mine = n;
    for (const cli_redis_opt *r = cli_redis_opts; r->name; r++) {
        size_t i = 0;
        while (i < mine && table[i].val != r->id) i++;
        if (i == mine) table[n++] = (struct option){r->name, r->arg ? required_argument : no_argument, NULL, r->id};
    }
    table[n] = (struct option){0, 0, 0, 0};
    return table;
}

/* The column the help starts at: work --help's (scripts/manpage.sh reads
 * it there); a longer left part is followed by two spaces. */
#define CLI_HELP_COLUMN 29

void cli_redis_help(FILE *f) {
    for (const cli_redis_opt *r = cli_redis_opts; r->name; r++) {
        if (!r->help) continue;
        int n = r->id < 128 ? fprintf(f, "  -%c, --%s", r->id, r->name) : fprintf(f, "      --%s", r->name);
        if (r->arg) n += fprintf(f, " %s", r->arg);
        fprintf(f, "%*s", n < CLI_HELP_COLUMN ? CLI_HELP_COLUMN - n : 2, "");
        for (const char *p = r->help; *p;) {
            size_t len = strcspn(p, "\n");
            fprintf(f, "%.*s\n", (int)len, p);
            p += len;
            if (*p == '\n' && *++p) fprintf(f, "%*s", CLI_HELP_COLUMN, "");
        }
    }
}

int cli_redis_option(int opt, const char *arg, hh_redis_options *o) {
    switch (opt) {
    case 'r':
        if (cli_redis_url(arg, &o->url)) return CLI_EXIT_USAGE;
        break;
    case CLI_OPT_PASSWORD_FILE:
        if (!(o->password = cli_password_file(arg))) return CLI_EXIT_USAGE;
        break;
    case CLI_OPT_NAMESPACE:
        if (*arg && cli_check_name(HH_NAME_NAMESPACE, arg)) return CLI_EXIT_USAGE;
        o->ns = arg;
        break;
    case CLI_OPT_TLS_CA_FILE: o->tls_ca_file = arg; break;
    case CLI_OPT_TLS_CA_DIR: o->tls_ca_dir = arg; break;
    case CLI_OPT_TLS_CERT: o->tls_cert = arg; break;
    case CLI_OPT_TLS_KEY: o->tls_key = arg; break;
    case CLI_OPT_TLS_SERVER_NAME: o->tls_server_name = arg; break;
    case CLI_OPT_TLS_INSECURE: o->tls_insecure = 1; break;
    case CLI_OPT_SENTINEL: {
        size_t n = sentinels ? strlen(sentinels) : 0;
        char *joined = realloc(sentinels, n + strlen(arg) + 2);
        if (!joined) return cli_usage_error("out of memory");
        sprintf(joined + n, "%s%s", n ? "," : "", arg);
        sentinels = joined;
        o->sentinels = sentinels;
        break;
    }
    case CLI_OPT_SENTINEL_MASTER: o->sentinel_master = arg; break;
    case CLI_OPT_SENTINEL_PASSWORD: o->sentinel_password = arg; break;
    case CLI_OPT_SENTINEL_PASSWORD_FILE: {
        /* its own buffer: cli_password_file's holds the master's password */
        FILE *f = fopen(arg, "re");
        if (!f) return cli_usage_error("cannot open --sentinel-password-file %s: %s", arg, strerror(errno));
        size_t cap = 0;
        free(sentinel_password);
        sentinel_password = NULL;
        ssize_t n = getline(&sentinel_password, &cap, f);
        fclose(f);
        while (n > 0 && (sentinel_password[n - 1] == '\n' || sentinel_password[n - 1] == '\r'))
            sentinel_password[--n] = '\0';
        if (n <= 0) return cli_usage_error("--sentinel-password-file %s: no password on its first line", arg);
        o->sentinel_password = sentinel_password;
        break;
    }
    default: return -1;
    }
    return 0;
}

hh_client *cli_client_open(const hh_redis_options *o, int redis_exit, int *rc) {
    if (hh_redis_options_check(o, NULL, 0) != HH_OK) {
        *rc = cli_usage_error("%s", hh_last_error());
        return NULL;
    }
    /* A client logs nothing of its own: the warning --tls-insecure owes the
     * user is said here. */
    const char *env = getenv("HIREDHAND_TLS_INSECURE");
    if (o->url && !strncmp(o->url, "rediss://", 9) &&
        (o->tls_insecure || (env && (!strcmp(env, "1") || !strcasecmp(env, "true") || !strcasecmp(env, "yes")))))
        fprintf(stderr,
                "hiredhand: warning: TLS certificate checks are off (--tls-insecure): "
                "anyone on the path can read and change the traffic\n");
    int e;
    hh_client *cl = hh_client_new(o, &e);
    if (!cl) {
        fprintf(stderr, "hiredhand: %s\n", hh_last_error()); /* the URL (password masked) and why */
        *rc = e == HH_ERR_REFUSED || e == HH_ERR_INVALID ? CLI_EXIT_USAGE : redis_exit;
    }
    return cl;
}
