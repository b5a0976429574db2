# shellcheck shell=bash
# tests/lib/tls_helpers.sh -- certificates and a TLS redis-server for the
# rediss:// tests. Source after harness.sh.
#
#   tls_make_certs DIR     makes with the openssl CLI, in DIR:
#                            ca.crt/ca.key           the test CA
#                            server.crt/server.key   for 127.0.0.1 and localhost, by the CA
#                            client.crt/client.key   a client certificate by the CA (mutual TLS)
#                            other-ca.crt            an unrelated CA (the "wrong CA")
#                            wronghost.crt/.key      by the CA, but only for wrong.example
#                            named.crt/.key          by the CA, only for redis.test (--tls-server-name)
#                            expired.crt/.key        by the CA, for 127.0.0.1, already expired
#   hh_redis_start_tls [ARGS...]  hh_redis_start with a TLS port too (server.crt, clients not
#                          asked for certificates unless ARGS say --tls-auth-clients yes);
#                          exports TLS_PORT and TLS_URL (rediss://127.0.0.1:$TLS_PORT/0). The plain
#                          port stays for the harness' own checks (R, PING); hiredhand uses TLS_URL.
#   tls_set_server_cert NAME  the running server presents NAME.crt/NAME.key from now on
#                          (CONFIG SET on the plain port; new connections only)
#   RS ARGS...             redis-cli over TLS to TLS_PORT

tls_make_certs() {
    local d="$1"
    mkdir -p "$d"
    (
        cd "$d" || exit 1
        set -e
        q() { "$@" >/dev/null 2>&1 || { echo "tls_make_certs: failed: $*" >&2; exit 1; }; }
        q openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3 -subj /CN=hiredhand-test-ca
        q openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 3 -subj /CN=other-ca
        leaf() {  # NAME CN SAN DAYS
            printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
            q openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
            q openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
                -days "$4" -extfile "$1.ext"
        }
        leaf server localhost 'DNS:localhost,IP:127.0.0.1' 3
        leaf client hiredhand-client 'DNS:hiredhand-client' 3
        leaf wronghost wrong.example 'DNS:wrong.example' 3
        leaf named redis.test 'DNS:redis.test' 3
        leaf expired localhost 'DNS:localhost,IP:127.0.0.1' 0
        chmod 600 ./*.key
    ) || fail "could not make test certificates in $d"
    TLS_DIR="$d"
    export TLS_DIR
}

hh_redis_start_tls() {
    [ -n "${TLS_DIR:-}" ] || tls_make_certs "$(hh_tmp)"
    TLS_PORT="$(hh_pick_free_port)"
    hh_redis_start --tls-port "$TLS_PORT" --tls-cert-file "$TLS_DIR/server.crt" \
        --tls-key-file "$TLS_DIR/server.key" --tls-ca-cert-file "$TLS_DIR/ca.crt" \
        --tls-auth-clients no "$@"
    TLS_URL="rediss://127.0.0.1:$TLS_PORT/0"
    must_wait 20 'RS ping 2>/dev/null | grep -q PONG' "redis-server does not answer on its TLS port $TLS_PORT"
    export TLS_PORT TLS_URL
}

RS() {
    redis-cli --tls --cacert "$TLS_DIR/ca.crt" --cert "$TLS_DIR/client.crt" --key "$TLS_DIR/client.key" \
        -h 127.0.0.1 -p "$TLS_PORT" "$@"
}

tls_set_server_cert() {
    R config set tls-cert-file "$TLS_DIR/$1.crt" tls-key-file "$TLS_DIR/$1.key" >/dev/null ||
        fail "could not switch the server certificate to $1"
}
