/* fuzz_redis_url.c -- Redis URL parsing and masking (redis.c), through the
 * interfaces the worker uses: hh_redis_url_check (CLI, C API) and
 * hh__redis_config_parse (manager). Any input: no memory error, a message
 * on failure. Input 'P' NUL prefix NUL password NUL suffix builds
 * prefix:password@suffix, and neither the error nor the masked display
 * may contain that password, whatever the URL's shape.
 * (-DHH_FUZZ_URL_SECRETS=0 turns the password checks off.) */
#include "fuzz.h"
#include "hiredhand.h"
#include "redis.h"

#ifndef HH_FUZZ_URL_SECRETS
#define HH_FUZZ_URL_SECRETS 1
#endif

/* What the worker may show about url: the check's error, and the parse's
 * error or masked display, joined. Asserts what holds for any input. */
static char *shown(const char *url) {
    char err[1024], err2[1024];
    err[0] = err2[0] = '\0';
    int rc = hh_redis_url_check(url, err, sizeof(err));
    FUZZ_ASSERT(rc == HH_OK || err[0], "a refused URL gets a message");
    hh__redis_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    hh_redis_options o;
    hh_redis_options_init(&o);
    o.url = url;
    const char *second = err2;
    if (hh__redis_config_parse(&cfg, &o, err2, sizeof(err2)) == 0) {
        FUZZ_ASSERT(cfg.display != NULL, "a parsed URL has a display form");
        second = cfg.display;
    } else {
        FUZZ_ASSERT(err2[0], "a refused URL gets a message");
    }
    size_t n = strlen(err) + strlen(second) + 2;
    char *out = malloc(n);
    if (!out) abort();
    snprintf(out, n, "%s\n%s", err, second);
    hh__redis_config_free(&cfg);
    return out;
}

/* Whether text shows the password, or a piece of it that a cut left
 * (its first or last 8 bytes). */
static int leaks(const char *text, const char *pw) {
    size_t n = strlen(pw), t = strlen(text);
    if (strstr(text, pw)) return 1;
    return n > 8 && (memmem(text, t, pw, 8) || memmem(text, t, pw + n - 8, 8));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 && data[0] == 'P' && data[1] == 0) {
        char *f[4];
        fuzz_fields(data, size, f, 4);
        const char *prefix = f[1], *pw = f[2], *suffix = f[3];
        /* a password the URL syntax cannot cut short, found nowhere else,
         * in the user info: after "://" the prefix is still the authority
         * (in "unix:///a:b@" the ":b@" is part of the socket's path) */
        const char *auth = strstr(prefix, "://");
        int usable = strlen(pw) >= 4 && !strpbrk(pw, "@/:?#") && !strstr(prefix, pw) && !strstr(suffix, pw) &&
                     (!auth || !strpbrk(auth + 3, "/?#@"));
        size_t n = strlen(prefix) + strlen(pw) + strlen(suffix) + 3;
        char *url = malloc(n);
        if (!url) abort();
        snprintf(url, n, "%s:%s@%s", prefix, pw, suffix);
        char *text = shown(url);
        if (HH_FUZZ_URL_SECRETS && usable && leaks(text, pw)) {
            /* the same URL with another password of the same length: if
             * that shows this one too, it is in the message's own words */
            char *url2 = strdup(url), *other = strdup(pw);
            if (!url2 || !other) abort();
            memset(other, strchr(pw, 'Q') ? 'Z' : 'Q', strlen(pw));
            memcpy(url2 + strlen(prefix) + 1, other, strlen(pw));
            char *text2 = shown(url2);
            FUZZ_ASSERT(leaks(text2, pw), "the password is shown: %s", text);
            free(text2);
            free(url2);
            free(other);
        }
        free(text);
        free(url);
        fuzz_fields_free(f, 4);
        return 0;
    }
    char *f[1];
    fuzz_fields(data, size, f, 1);
    free(shown(f[0]));
    fuzz_fields_free(f, 1);
    return 0;
}
