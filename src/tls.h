/* tls.h -- the TLS transport for rediss:// connections: OpenSSL contexts
 * (CA store, client certificate, verification), the handshake on a socket
 * hiredis opened, and reads and writes of whole buffers. The protocol stays
 * hiredis' (its reader and formatter); this file only moves bytes. Touches
 * no key. */
#ifndef HH_TLS_H
#define HH_TLS_H

#include <stddef.h>

typedef struct hh__tls_settings {
    const char *ca_file; /* NULL: ca_dir, else the system's store */
    const char *ca_dir;
    const char *cert; /* client certificate (mutual TLS), with key */
    const char *key;
    const char *server_name; /* NULL: the URL's host */
    int insecure;            /* 1: no certificate or host name check */
} hh__tls_settings;

/* An SSL_CTX with the settings' CA store and client certificate loaded.
 * Returns NULL with a message naming the file and OpenSSL's reason in err. */
void *hh__tls_ctx_new(const hh__tls_settings *s, char *err, size_t errlen);
void hh__tls_ctx_free(void *ctx);

/* Handshake over fd (connected, blocking, with SO_RCVTIMEO/SO_SNDTIMEO set
 * to the connect timeout). name is what SNI sends and the certificate must
 * match (a host name or an IP literal). Returns the SSL, or NULL with the
 * cause in err: verify failure with OpenSSL's reason, host name mismatch,
 * handshake timeout, a plain-text server. */
void *hh__tls_connect(void *ctx, int fd, const char *name, int verify, double timeout, char *err, size_t errlen);
void hh__tls_free(void *ssl);

/* Writes all of buf. Returns 0, or -1 with the cause in err ("Resource
 * temporarily unavailable" on a socket timeout, as hiredis says it). */
int hh__tls_write(void *ssl, const char *buf, size_t len, char *err, size_t errlen);
/* Reads what is available, at least one byte (waits up to the socket's
 * timeout). Returns the count, 0 when the server closed, -1 on error. */
long hh__tls_read(void *ssl, char *buf, size_t len, char *err, size_t errlen);
/* Decrypted bytes OpenSSL holds that a poll() on the socket cannot see. */
int hh__tls_pending(void *ssl);

#endif
