/* tls.c -- the TLS transport for rediss:// (see tls.h): OpenSSL does the
 * cryptography and the certificate checks; this file turns its results into
 * errors that name the cause. Touches no key. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

/* OpenSSL's first queued error, with the library's reason text. */
static const char *ossl_reason(char *buf, size_t len) {
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, len, "%s", errno ? strerror(errno) : "unknown error");
    } else {
        ERR_error_string_n(e, buf, len);
        const char *r = ERR_reason_error_string(e);
        if (ERR_SYSTEM_ERROR(e)) snprintf(buf, len, "%s", strerror(ERR_GET_REASON(e)));
        else if (r) snprintf(buf, len, "%s", r);
    }
    ERR_clear_error();
    return buf;
}

void *hh__tls_ctx_new(const hh__tls_settings *s, char *err, size_t errlen) {
    char why[256];
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: cannot create a context: %s", ossl_reason(why, sizeof(why)));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* blocking sockets: a renegotiation or a session ticket must not
     * surface as WANT_READ in the middle of a reply */
    SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_verify(ctx, s->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (s->ca_file || s->ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, s->ca_file, s->ca_dir) != 1) {
            snprintf(err, errlen, "TLS: cannot load the CA %s %s: %s", s->ca_file ? "file" : "directory",
                     s->ca_file ? s->ca_file : s->ca_dir, ossl_reason(why, sizeof(why)));
            SSL_CTX_free(ctx);
            return NULL;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, errlen, "TLS: cannot load the system's CA store: %s", ossl_reason(why, sizeof(why)));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if ((s->cert != NULL) != (s->key != NULL)) {
        snprintf(err, errlen, "TLS: a client certificate needs both --tls-cert and --tls-key");
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (s->cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, s->cert) != 1) {
            snprintf(err, errlen, "TLS: cannot load the certificate %s: %s", s->cert, ossl_reason(why, sizeof(why)));
            SSL_CTX_free(ctx);
            return NULL;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, s->key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, errlen, "TLS: cannot use the key %s: %s", s->key, ossl_reason(why, sizeof(why)));
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

void hh__tls_ctx_free(void *ctx) { SSL_CTX_free(ctx); }

static int is_ip(const char *name) {
    unsigned char buf[16];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

/* Why a handshake failed, most specific first: what the certificate check
 * said, a timeout, a server that does not speak TLS, else OpenSSL's reason. */
static void handshake_error(SSL *ssl, int rc, int saved_errno, const char *name, double timeout, char *err,
                            size_t errlen) {
    char why[256];
    long v = SSL_get_verify_result(ssl);
    unsigned long e = ERR_peek_error();
    int sslerr = SSL_get_error(ssl, rc);
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        snprintf(err, errlen, "TLS host name mismatch: the server's certificate is not for %s", name);
    } else if (v != X509_V_OK) {
        snprintf(err, errlen, "TLS certificate verify failed: %s", X509_verify_cert_error_string(v));
    } else if (!e &&
               (sslerr == SSL_ERROR_WANT_READ || sslerr == SSL_ERROR_WANT_WRITE || saved_errno == EAGAIN ||
                saved_errno == EWOULDBLOCK)) {
        snprintf(err, errlen, "TLS handshake timed out after %gs (is this a plain, non-TLS port? then use redis://)",
                 timeout);
    } else if (e && ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER) {
        snprintf(err, errlen, "TLS handshake failed: the server does not speak TLS (a plain port? then use redis://)");
    } else if (!e && sslerr == SSL_ERROR_SYSCALL) {
        snprintf(err, errlen, "TLS handshake failed: %s",
                 saved_errno ? strerror(saved_errno) : "the server closed the connection");
    } else {
        snprintf(err, errlen, "TLS handshake failed: %s", ossl_reason(why, sizeof(why)));
    }
    ERR_clear_error();
}

void *hh__tls_connect(void *ctx, int fd, const char *name, int verify, double timeout, char *err, size_t errlen) {
    char why[256];
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        snprintf(err, errlen, "TLS: %s", ossl_reason(why, sizeof(why)));
        SSL_free(ssl);
        return NULL;
    }
    int ip = is_ip(name);
    /* SNI carries host names only (RFC 6066); an IP is checked against the
     * certificate's IP addresses. */
    if (!ip) SSL_set_tlsext_host_name(ssl, name);
    if (verify) {
        int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) : SSL_set1_host(ssl, name);
        if (ok != 1) {
            snprintf(err, errlen, "TLS: cannot check the host name %s: %s", name, ossl_reason(why, sizeof(why)));
            SSL_free(ssl);
            return NULL;
        }
    }
    errno = 0;
    int rc = SSL_connect(ssl);
    if (rc != 1) {
        handshake_error(ssl, rc, errno, name, timeout, err, errlen);
        SSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void hh__tls_free(void *ssl) { SSL_free(ssl); }

/* A failed read or write: a socket timeout reads as hiredis' own message. */
static void io_error(SSL *ssl, int rc, int saved_errno, const char *what, char *err, size_t errlen) {
    char why[256];
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ||
        (e == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)))
        snprintf(err, errlen, "%s", strerror(EAGAIN));
    else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !ERR_peek_error() && !saved_errno))
        snprintf(err, errlen, "Server closed the connection");
    else if (e == SSL_ERROR_SYSCALL && !ERR_peek_error()) snprintf(err, errlen, "%s", strerror(saved_errno));
    else snprintf(err, errlen, "TLS %s failed: %s", what, ossl_reason(why, sizeof(why)));
    ERR_clear_error();
}

int hh__tls_write(void *ssl, const char *buf, size_t len, char *err, size_t errlen) {
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        errno = 0;
        int n = SSL_write(ssl, buf, (int)chunk);
        if (n <= 0) {
            io_error(ssl, n, errno, "write", err, errlen);
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

long hh__tls_read(void *ssl, char *buf, size_t len, char *err, size_t errlen) {
    errno = 0;
    int n = SSL_read(ssl, buf, (int)(len > (1u << 30) ? (1u << 30) : len));
    if (n > 0) return n;
    int e = SSL_get_error(ssl, n);
    int saved = errno;
    io_error(ssl, n, saved, "read", err, errlen);
    return (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !saved)) ? 0 : -1;
}

int hh__tls_pending(void *ssl) { return SSL_pending(ssl); }
