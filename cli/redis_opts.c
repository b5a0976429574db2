/* redis_opts.c -- the connection options every subcommand shares beyond
 * -r/--redis: the --tls-* settings of a rediss:// URL (see cli.h). */
#include "cli.h"

void cli_redis_option(int opt, const char *arg, hh_redis_options *o) {
    switch (opt) {
    case CLI_OPT_TLS_CA_FILE: o->tls_ca_file = arg; break;
    case CLI_OPT_TLS_CA_DIR: o->tls_ca_dir = arg; break;
    case CLI_OPT_TLS_CERT: o->tls_cert = arg; break;
    case CLI_OPT_TLS_KEY: o->tls_key = arg; break;
    case CLI_OPT_TLS_SERVER_NAME: o->tls_server_name = arg; break;
    case CLI_OPT_TLS_INSECURE: o->tls_insecure = 1; break;
    default: break;
    }
}
