/* web.c -- `hiredhand web`: a dashboard for Sidekiq's data model without
 * Ruby. Serves the pages compiled into the binary (cli/web/assets/, through
 * web_assets.c) and the JSON API of web_api.c over libmicrohttpd, loaded
 * when the command starts as src/http.c loads it for --http.
 *
 * Security model (docs/web-dashboard.md):
 *   - binds 127.0.0.1 unless told otherwise; connections are limited per
 *     client address and in total, idle ones cut after a few seconds;
 *   - access: --web-auth FILE (HTTP basic, user:password) and/or
 *     --http-token-file FILE (Authorization: Bearer), compared in
 *     constant time (CRYPTO_memcmp);
 *   - every answer carries a strict Content-Security-Policy (scripts only
 *     from this server, none inline) and nosniff; the pages build their
 *     DOM with textContent only, so job data is never markup;
 *   - every POST needs the per-process CSRF token (RAND_bytes) both in the
 *     SameSite=Strict cookie the page got and in X-CSRF-Token, and an
 *     Origin / Sec-Fetch-Site of this very site when the browser sends
 *     them: else 403. --read-only refuses every POST.
 * Keys: none itself; web_api.c's library calls read and write them. One
 * hh_client, used by MHD's single polling thread only. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <microhttpd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "cli.h"
#include "web.h"

#define WEB_DEFAULT_BIND "127.0.0.1:9292"
#define WEB_BODY_MAX (1u << 20) /* bytes of a POST body */
#define WEB_PER_IP_LIMIT 32
#define WEB_CONNECTION_LIMIT 256
#define WEB_CONNECTION_TIMEOUT 10 /* seconds an idle connection is kept */
#define WEB_SECRET_MAX 4096

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                          "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/* clang-format off */ /* the help text keeps its layout */
static const char usage[] =
    "usage: hiredhand web [--http [HOST:]PORT] [--web-auth FILE] [--read-only] [Redis options]\n"
    "A web dashboard (Sidekiq's Web UI pages: dashboard, busy, queues, retries, scheduled,\n"
    "dead, metrics, cron) served from the binary itself. See docs/web-dashboard.md.\n"
    "      --http [HOST:]PORT     where to listen (default " WEB_DEFAULT_BIND "; a bare PORT\n"
    "                             binds 127.0.0.1, [::1]:PORT for IPv6)\n"
    "      --web-auth FILE        HTTP basic authentication: FILE's first line is user:password\n"
    "      --http-token-file FILE or a bearer token (\"Authorization: Bearer <token>\"): FILE's first line\n"
    "      --read-only            refuse every change (retry, delete, kill, clear, quiet, stop, cron)\n"
    "      --allowed-host NAME    also answer requests for Host NAME (a proxy's name); by default\n"
    "                             only IP addresses and localhost, against DNS rebinding\n"
    "  -r, --redis URL            Redis (default $REDIS_URL, else redis://127.0.0.1:6379/0)\n"
    "      --redis-password-file FILE  the password, when the URL has none\n"
    "      --namespace NS         the key namespace (redis-namespace)\n"; /* then cli_redis_help's lines */
/* clang-format on */

typedef struct mhd_api {
    void *so;
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
    int (*get_connection_values_n)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIteratorN, void *);
} mhd_api;

typedef struct web {
    mhd_api api;
    hh_client *client;
    char csrf[65]; /* hex of 32 random bytes */
    char *basic;   /* "user:password", or NULL */
    char *bearer;  /* the token, or NULL */
    int read_only;
    const char *allowed_host; /* --allowed-host NAME, or NULL */
} web;

/* The body of one request being read. */
typedef struct web_req {
    char *body;
    size_t len;
    int too_big;
} web_req;

static int mhd_load(mhd_api *api) {
    api->so = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!api->so)
        return cli_usage_error("cannot load libmicrohttpd.so.12 (Debian package libmicrohttpd12): %s", dlerror());
#define SYM(field, name) \
    if (!(*(void **)(&api->field) = dlsym(api->so, name))) return cli_usage_error("libmicrohttpd.so.12 lacks %s", name);
    SYM(start_daemon, "MHD_start_daemon")
    SYM(stop_daemon, "MHD_stop_daemon")
    SYM(create_response_from_buffer, "MHD_create_response_from_buffer")
    SYM(add_response_header, "MHD_add_response_header")
    SYM(queue_response, "MHD_queue_response")
    SYM(destroy_response, "MHD_destroy_response")
    SYM(lookup_connection_value, "MHD_lookup_connection_value")
    SYM(get_connection_values_n, "MHD_get_connection_values_n")
#undef SYM
    return 0;
}

/* A secret file's first line (without its line end), malloc'd, or NULL
 * after saying why. A file, not an argument: it never shows in ps. */
static char *read_secret(const char *opt, const char *path, int need_colon) {
    FILE *f = fopen(path, "re");
    if (!f) {
        cli_usage_error("cannot read %s %s: %s", opt, path, strerror(errno));
        return NULL;
    }
    char *buf = calloc(1, WEB_SECRET_MAX + 2);
    size_t n = buf ? fread(buf, 1, WEB_SECRET_MAX + 1, f) : 0;
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!*buf || strlen(buf) > WEB_SECRET_MAX || (need_colon && (!strchr(buf, ':') || buf[0] == ':'))) {
        cli_usage_error("%s %s: want one line of 1-4096 characters%s", opt, path, need_colon ? ", user:password" : "");
        free(buf);
        return NULL;
    }
    if (need_colon && !strchr(buf, ':')[1]) { /* "user:": anyone knowing the name would get in */
        cli_usage_error("%s %s: the password (after ':') is empty", opt, path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Whether given (glen bytes) is want, in time independent of where they
 * differ (lengths are not secret). */
static int secret_eq(const char *given, size_t glen, const char *want) {
    size_t wlen = strlen(want);
    if (glen != wlen) return 0;
    return CRYPTO_memcmp(given, want, wlen) == 0;
}

/* Whether the Authorization header passes: open when neither --web-auth
 * nor --http-token-file is given. */
static int authorized(const web *w, const char *auth) {
    if (!w->basic && !w->bearer) return 1;
    if (!auth) return 0;
    if (w->bearer && !strncasecmp(auth, "Bearer ", 7)) return secret_eq(auth + 7, strlen(auth + 7), w->bearer);
    if (w->basic && !strncasecmp(auth, "Basic ", 6)) {
        const char *b = auth + 6;
        size_t bl = strlen(b);
        if (!bl || bl % 4 || bl > 2 * WEB_SECRET_MAX) return 0;
        unsigned char dec[3 * WEB_SECRET_MAX / 2 + 4];
        int n = EVP_DecodeBlock(dec, (const unsigned char *)b, (int)bl);
        if (n < 0) return 0;
        if (b[bl - 1] == '=') n--;
        if (b[bl - 2] == '=') n--;
        return secret_eq((const char *)dec, (size_t)n, w->basic);
    }
    return 0;
}

/* The value of cookie `name` in a Cookie header: a pointer into it and its
 * length, or NULL. */
static const char *cookie_value(const char *cookies, const char *name, size_t *len) {
    size_t nl = strlen(name);
    for (const char *p = cookies; p && *p;) {
        while (*p == ' ' || *p == ';') p++;
        if (!strncmp(p, name, nl) && p[nl] == '=') {
            *len = strcspn(p + nl + 1, ";");
            return p + nl + 1;
        }
        p = strchr(p, ';');
    }
    return NULL;
}

/* Whether the Host header names this server: an IP literal, localhost, or
 * --allowed-host (the name a proxy forwards). Anything else may be a DNS
 * rebinding (a hostile name resolving to 127.0.0.1): the browser would
 * then treat that site's pages as this server's origin, cookie and all. */
static int host_ok(const web *w, const char *host) {
    if (!host || !*host) return 0;
    char name[256];
    size_t n = strlen(host);
    if (n >= sizeof name) return 0;
    memcpy(name, host, n + 1);
    if (name[0] == '[') return strchr(name, ']') != NULL; /* [v6]:port */
    char *colon = strrchr(name, ':');
    if (colon) *colon = '\0';
    if (!strcasecmp(name, "localhost") || (w->allowed_host && !strcasecmp(name, w->allowed_host))) return 1;
    struct in_addr a4;
    return inet_pton(AF_INET, name, &a4) == 1;
}

/* Why a POST is refused, or NULL: read-only, the CSRF token missing from
 * the cookie or the header or not this process's, a foreign Origin or a
 * cross-site Sec-Fetch-Site. An Origin is this site's when its host is
 * the request's Host (itself this host's or an --allowed-host), over http
 * or over https (a TLS-terminating proxy in front). */
static const char *post_refused(const web *w, struct MHD_Connection *conn) {
    if (w->read_only) return "read-only: this dashboard changes nothing (--read-only)";
    const char *hdr = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, "X-CSRF-Token");
    const char *cookies = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_COOKIE);
    size_t cl = 0;
    const char *ck = cookie_value(cookies, "hh_csrf", &cl);
    if (!hdr || !ck || !secret_eq(hdr, strlen(hdr), w->csrf) || !secret_eq(ck, cl, w->csrf))
        return "CSRF token missing or wrong (reload the page)";
    const char *site = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") != 0) return "cross-site request refused";
    const char *origin = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    const char *host = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (origin) { /* https: the page came through a TLS-terminating proxy */
        size_t skip = !strncmp(origin, "http://", 7) ? 7 : !strncmp(origin, "https://", 8) ? 8 : 0;
        if (!host || !skip || strcmp(origin + skip, host) != 0) return "foreign Origin refused";
    }
    return NULL;
}

static enum MHD_Result respond(web *w, struct MHD_Connection *conn, unsigned int status, const char *type, void *body,
                               size_t len, enum MHD_ResponseMemoryMode mode, int set_cookie) {
    struct MHD_Response *r = w->api.create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE) free(body);
        return MHD_NO;
    }
    w->api.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    w->api.add_response_header(r, "Content-Security-Policy", csp);
    w->api.add_response_header(r, "X-Content-Type-Options", "nosniff");
    w->api.add_response_header(r, "X-Frame-Options", "DENY");
    w->api.add_response_header(r, "Referrer-Policy", "no-referrer");
    w->api.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_UNAUTHORIZED && w->basic)
        w->api.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"hiredhand\", charset=\"UTF-8\"");
    if (set_cookie) {
        char c[128];
        snprintf(c, sizeof c, "hh_csrf=%s; Path=/; SameSite=Strict", w->csrf);
        w->api.add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, c);
    }
    enum MHD_Result rc = w->api.queue_response(conn, status, r);
    w->api.destroy_response(r);
    return rc;
}

static enum MHD_Result send_json(web *w, struct MHD_Connection *conn, cli_web_reply *rp) {
    if (!rp->body) {
        static const char oom[] = "{\"error\":\"out of memory\"}";
        return respond(w, conn, 500, "application/json", (void *)(uintptr_t)oom, sizeof oom - 1, MHD_RESPMEM_PERSISTENT,
                       0);
    }
    return respond(w, conn, rp->status, "application/json", rp->body, strlen(rp->body), MHD_RESPMEM_MUST_FREE, 0);
}

static enum MHD_Result send_error(web *w, struct MHD_Connection *conn, unsigned int status, const char *why) {
    json_t *v = json_pack("{s:s}", "error", why);
    cli_web_reply rp = {status, json_dumps(v, JSON_COMPACT)};
    json_decref(v);
    return send_json(w, conn, &rp);
}

/* What query_arg() reads the arguments of. */
typedef struct web_query {
    web *w;
    struct MHD_Connection *c;
} web_query;

static const char *type_of(const char *path) {
    const char *dot = strrchr(path, '.');
    if (dot && !strcmp(dot, ".js")) return "text/javascript; charset=utf-8";
    if (dot && !strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (dot && !strcmp(dot, ".svg")) return "image/svg+xml";
    return "text/html; charset=utf-8";
}

/* MHD_KeyValueIteratorN: stops (MHD_NO) at a query argument whose name or
 * value holds a NUL byte (%00). MHD's lookup gives C strings, which would
 * cut such a value at the NUL and answer for another argument than sent. */
static enum MHD_Result no_nul(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value,
                              size_t value_size) {
    (void)kind;
    int *bad = cls;
    if ((key && memchr(key, '\0', key_size)) || (value && memchr(value, '\0', value_size))) *bad = 1;
    return *bad ? MHD_NO : MHD_YES;
}

static const char *query_arg(void *ctx, const char *name) {
    const web_query *q = ctx;
    return q->w->api.lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    web *w = cls;
    web_req *req = *con_cls;
    if (!req) { /* headers are in: answer later, once a body is read */
        if (!(req = calloc(1, sizeof *req))) return MHD_NO;
        *con_cls = req;
        return MHD_YES;
    }
    if (*upload_data_size) { /* a piece of the body */
        if (req->too_big || req->len + *upload_data_size > WEB_BODY_MAX) {
            req->too_big = 1;
        } else {
            char *b = realloc(req->body, req->len + *upload_data_size + 1);
            if (!b) return MHD_NO;
            memcpy(b + req->len, upload_data, *upload_data_size);
            req->body = b;
            req->len += *upload_data_size;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!host_ok(w, w->api.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)))
        return send_error(w, conn, MHD_HTTP_MISDIRECTED_REQUEST,
                          "unknown Host (name it with --allowed-host to reach this dashboard by that name)");
    const char *auth = w->api.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!authorized(w, auth)) return send_error(w, conn, MHD_HTTP_UNAUTHORIZED, "unauthorized");
    int get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    int post = !strcmp(method, MHD_HTTP_METHOD_POST);
    if (!strncmp(url, "/api/", 5)) {
        cli_web_reply rp = {500, NULL};
        if (get) {
            int bad = 0;
            w->api.get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, no_nul, &bad);
            if (bad) return send_error(w, conn, MHD_HTTP_BAD_REQUEST, "a query argument holds a NUL byte (%00)");
            web_query q = {w, conn};
            cli_web_api_get(w->client, url + 5, query_arg, &q, &rp);
        } else if (post) {
            const char *why = post_refused(w, conn);
            if (why) return send_error(w, conn, MHD_HTTP_FORBIDDEN, why);
            if (req->too_big) return send_error(w, conn, MHD_HTTP_CONTENT_TOO_LARGE, "the body is over 1 MiB");
            cli_web_api_post(w->client, url + 5, req->body ? req->body : "", req->len, &rp);
        } else {
            return send_error(w, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or POST");
        }
        return send_json(w, conn, &rp);
    }
    if (!get) return send_error(w, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
    const char *path = !strcmp(url, "/") ? "/index.html" : url;
    for (size_t i = 0; i < cli_web_assets_count; i++)
        if (!strcmp(cli_web_assets[i].path, path))
            return respond(w, conn, MHD_HTTP_OK, type_of(path), (void *)(uintptr_t)cli_web_assets[i].data,
                           cli_web_assets[i].len, MHD_RESPMEM_PERSISTENT, !strcmp(path, "/index.html"));
    return send_error(w, conn, MHD_HTTP_NOT_FOUND, "not found");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)conn, (void)toe;
    web_req *req = *con_cls;
    if (req) free(req->body);
    free(req);
    *con_cls = NULL;
}

/* [HOST:]PORT, [V6]:PORT into ss. Returns 0 or CLI_EXIT_USAGE. */
static int parse_bind(const char *arg, struct sockaddr_storage *ss, socklen_t *sl, int *v6) {
    char host[256] = "127.0.0.1";
    const char *port = arg;
    const char *colon = strrchr(arg, ':');
    if (colon) {
        const char *h = arg;
        size_t hl = (size_t)(colon - arg);
        if (hl && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2;
        if (!hl || hl >= sizeof host) return cli_usage_error("--http %s: want [HOST:]PORT", arg);
        memcpy(host, h, hl);
        host[hl] = '\0';
        port = colon + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 1 || p > 65535) return cli_usage_error("--http %s: the port is 1..65535", arg);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    int e = getaddrinfo(host, port, &hints, &ai);
    if (e || !ai) return cli_usage_error("--http %s: %s", arg, gai_strerror(e));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *sl = ai->ai_addrlen;
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return 0;
}

enum { O_HTTP = 1000, O_AUTH, O_TOKEN, O_RO, O_HOST, O_HELP };

int cli_web(int argc, char **argv) {
    static const struct option own[] = {{"http", required_argument, 0, O_HTTP},
                                        {"web-auth", required_argument, 0, O_AUTH},
                                        {"http-token-file", required_argument, 0, O_TOKEN},
                                        {"read-only", no_argument, 0, O_RO},
                                        {"allowed-host", required_argument, 0, O_HOST},
                                        {"help", no_argument, 0, O_HELP},
                                        {0, 0, 0, 0}};
    static web w;
    memset(&w, 0, sizeof w);
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    const char *bind = WEB_DEFAULT_BIND;
    int ch;
    optind = 1;
    const struct option *lo = cli_longopts(own);
    while ((ch = getopt_long(argc, argv, "r:", lo, NULL)) != -1) {
        int rc = cli_redis_option(ch, optarg, &ro);
        if (rc >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (ch) {
        case O_HTTP: bind = optarg; break;
        case O_AUTH:
            free(w.basic);
            if (!(w.basic = read_secret("--web-auth", optarg, 1))) return CLI_EXIT_USAGE;
            break;
        case O_TOKEN:
            free(w.bearer);
            if (!(w.bearer = read_secret("--http-token-file", optarg, 0))) return CLI_EXIT_USAGE;
            break;
        case O_RO: w.read_only = 1; break;
        case O_HOST: w.allowed_host = optarg; break;
        case O_HELP:
            fputs(usage, stdout);
            cli_redis_help(stdout);
            return 0;
        default:
            fputs(usage, stderr);
            cli_redis_help(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        cli_usage_error("web takes no operand ('%s')\n%s", argv[optind], usage);
        cli_redis_help(stderr);
        return CLI_EXIT_USAGE;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    int v6 = 0, rc = 0;
    if (parse_bind(bind, &ss, &sl, &v6)) return CLI_EXIT_USAGE;
    unsigned char rnd[32];
    if (RAND_bytes(rnd, sizeof rnd) != 1) return cli_usage_error("no random bytes for the CSRF token");
    for (size_t i = 0; i < sizeof rnd; i++) snprintf(w.csrf + 2 * i, 3, "%02x", rnd[i]);
    if (mhd_load(&w.api)) return CLI_EXIT_USAGE;
    if (!(w.client = cli_client_open(&ro, CLI_EXIT_REDIS, &rc))) return rc;
    /* SIGINT/SIGTERM are waited for below: blocked first, so MHD's thread
     * inherits the mask and never takes them */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct MHD_Daemon *d = w.api.start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, on_request, &w,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)WEB_CONNECTION_LIMIT,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)WEB_PER_IP_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)WEB_CONNECTION_TIMEOUT, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &w, MHD_OPTION_END);
    if (!d) {
        hh_client_free(w.client);
        return cli_usage_error("cannot listen on %s (in use, or not an address of this host)", bind);
    }
    int bare_port = bind[0] && strspn(bind, "0123456789") == strlen(bind); /* binds 127.0.0.1 */
    printf("hiredhand web: listening on http://%s%s/%s%s\n", bare_port ? "127.0.0.1:" : "", bind,
           w.read_only ? " (read-only)" : "", w.basic || w.bearer ? " (authentication required)" : "");
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    w.api.stop_daemon(d);
    hh_client_free(w.client);
    free(w.basic);
    free(w.bearer);
    return 0;
}
