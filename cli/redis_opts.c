/* redis_opts.c -- the connection options every subcommand shares beyond
 * -r/--redis: the --tls-* settings of a rediss:// URL and the --sentinel-*
 * ones (see cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"

/* --sentinel, repeated, joined with commas; reachable until exit. */
static char *sentinels;
static char *sentinel_password;

int cli_redis_option(int opt, const char *arg, hh_redis_options *o) {
    switch (opt) {
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
    default: break;
    }
    return 0;
}

hh_client *cli_client_open(const hh_redis_options *o, int redis_exit, int *rc) {
    char err[256];
    if (hh_redis_options_check(o, err, sizeof(err)) != HH_OK) {
        *rc = cli_usage_error("%s", err);
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
