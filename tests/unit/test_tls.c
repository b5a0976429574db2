/* test_tls.c -- the TLS context of src/tls.c (hh__tls_ctx_new): every file
 * it cannot use is refused with a message that names the file and the
 * cause (a CA file missing or not PEM, a client certificate without its
 * key or the other way round, a key that is not the certificate's), and a
 * good certificate and key load. Certificates are made here by the openssl
 * CLI (a self-signed EC pair, twice). The handshake, host name checks and
 * reads over a real TLS Redis are tests/integration/redis/test_tls_*.sh's. */
#include "unit_helpers.h"

#include "tls.h"

static char dir[64];
static char cert1[128], key1[128], key2[128], notpem[128];

static int make_pair(const char *cert, const char *key) {
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
             "-subj /CN=hh-unit -keyout '%s' -out '%s' >/dev/null 2>&1",
             key, cert);
    return system(cmd) == 0 ? 0 : -1;
}

static int group_setup(void **s) {
    (void)s;
    snprintf(dir, sizeof(dir), "/tmp/hh-unit-tls-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char cert2[128];
    snprintf(cert1, sizeof(cert1), "%s/c1.pem", dir);
    snprintf(key1, sizeof(key1), "%s/k1.pem", dir);
    snprintf(cert2, sizeof(cert2), "%s/c2.pem", dir);
    snprintf(key2, sizeof(key2), "%s/k2.pem", dir);
    snprintf(notpem, sizeof(notpem), "%s/not.pem", dir);
    FILE *f = fopen(notpem, "w");
    if (!f) return -1;
    fputs("this is no certificate\n", f);
    fclose(f);
    if (make_pair(cert1, key1) != 0 || make_pair(cert2, key2) != 0) {
        fprintf(stderr, "test_tls: the openssl CLI could not make a certificate\n");
        return -1;
    }
    return 0;
}

static int group_teardown(void **s) {
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* hh__tls_ctx_new refuses s with `want` and `file` (when given) in the
 * message. */
static void expect_refused(const hh__tls_settings *s, const char *want, const char *file) {
    char err[512] = "";
    void *ctx = hh__tls_ctx_new(s, err, sizeof(err));
    if (ctx) {
        hh__tls_ctx_free(ctx);
        fail_msg("accepted, want '%s'", want);
    }
    if (!strstr(err, want)) fail_msg("said '%s', want '%s'", err, want);
    if (file && !strstr(err, file)) fail_msg("said '%s', want the file %s named", err, file);
}

static void test_ca_refused(void **st) {
    (void)st;
    hh__tls_settings s = {0};
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/nosuch.pem", dir);
    s.ca_file = missing;
    expect_refused(&s, "TLS: cannot load the CA file", missing);
    s.ca_file = notpem;
    expect_refused(&s, "TLS: cannot load the CA file", notpem);
}

static void test_client_cert_refused(void **st) {
    (void)st;
    hh__tls_settings s = {0};
    s.ca_file = cert1;
    s.cert = cert1;
    expect_refused(&s, "needs both --tls-cert and --tls-key", NULL);
    s.cert = NULL;
    s.key = key1;
    expect_refused(&s, "needs both --tls-cert and --tls-key", NULL);
    s.cert = notpem;
    expect_refused(&s, "TLS: cannot load the certificate", notpem);
    s.cert = cert1;
    s.key = notpem;
    expect_refused(&s, "TLS: cannot use the key", notpem);
    /* another certificate's key */
    s.key = key2;
    expect_refused(&s, "TLS: cannot use the key", key2);
}

static void test_good_files_load(void **st) {
    (void)st;
    char err[256] = "";
    hh__tls_settings s = {0};
    s.ca_file = cert1;
    s.cert = cert1;
    s.key = key1;
    void *ctx = hh__tls_ctx_new(&s, err, sizeof(err));
    if (!ctx) fail_msg("refused: %s", err);
    hh__tls_ctx_free(ctx);
    /* a CA directory, and none (the system's store) */
    hh__tls_settings d = {0};
    d.ca_dir = dir;
    ctx = hh__tls_ctx_new(&d, err, sizeof(err));
    if (!ctx) fail_msg("refused: %s", err);
    hh__tls_ctx_free(ctx);
    hh__tls_settings none = {0};
    ctx = hh__tls_ctx_new(&none, err, sizeof(err));
    if (!ctx) fail_msg("refused: %s", err);
    hh__tls_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_refused),
        cmocka_unit_test(test_client_cert_refused),
        cmocka_unit_test(test_good_files_load),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
