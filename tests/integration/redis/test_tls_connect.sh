#!/usr/bin/env bash
# rediss:// against Debian's redis-server with a TLS port, certificates made here by the openssl
# CLI (tests/lib/tls_helpers.sh). Each case runs a CLI subcommand and checks its outcome and, for
# a refusal, that the error names the cause:
#   server-only TLS: push, stats, processes over TLS (CA by flag and by HIREDHAND_TLS_CA_FILE);
#   no CA given: the system's store, which does not know the test CA (verify failure);
#   wrong CA; expired server certificate; host name mismatch; --tls-server-name; --tls-insecure
#   (works, warns); mutual TLS (refused without a client certificate, works with one, by flags
#   and by environment); a plain redis:// client at the TLS port (a sentinel's too) and a rediss:// client at the
#   plain port; an unreadable CA file (usage error, exit 2).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/tls_helpers.sh"
hh_require_binary
hh_redis_start_tls
CA=(--tls-ca-file "$TLS_DIR/ca.crt")

expect_ok() {   # WHAT ARGS...
    local what="$1"; shift
    hh_cli "$@"
    [ "$HH_RC" = 0 ] || fail "$what: exit $HH_RC, stderr: $HH_ERR"
}
expect_refused() {   # WHAT NEEDLE ARGS...
    local what="$1" needle="$2"; shift 2
    hh_cli "$@"
    [ "$HH_RC" != 0 ] || fail "$what: succeeded, expected a refusal naming '$needle'"
    assert_contains "$HH_ERR" "$needle" "$what: the error names the cause"
}

# --- server-only TLS: every kind of subcommand
expect_ok "push over TLS" push TlsJob '[1,"two"]' -r "$TLS_URL" "${CA[@]}"
jid="$HH_OUT"
assert_eq "$(R llen queue:default)" 1 "the pushed job is in queue:default"
assert_contains "$(R lindex queue:default 0)" "\"jid\":\"$jid\"" "the job Redis holds is the one pushed"
expect_ok "stats over TLS" stats --json -r "$TLS_URL" "${CA[@]}"
assert_contains "$HH_OUT" '"enqueued":1' "stats over TLS read the queue"
expect_ok "processes over TLS" processes -r "$TLS_URL" "${CA[@]}"
HIREDHAND_TLS_CA_FILE="$TLS_DIR/ca.crt" expect_ok "CA from HIREDHAND_TLS_CA_FILE" stats -r "$TLS_URL"

# --- verification failures
expect_refused "no CA: the system store" "certificate verify failed" stats -r "$TLS_URL"
expect_refused "wrong CA" "certificate verify failed" stats -r "$TLS_URL" --tls-ca-file "$TLS_DIR/other-ca.crt"
tls_set_server_cert wronghost
expect_refused "host name mismatch" "host name mismatch" stats -r "$TLS_URL" "${CA[@]}"
tls_set_server_cert named
expect_refused "certificate for another name" "host name mismatch" stats -r "$TLS_URL" "${CA[@]}"
expect_ok "--tls-server-name" stats -r "$TLS_URL" "${CA[@]}" --tls-server-name redis.test
HIREDHAND_TLS_SERVER_NAME=redis.test expect_ok "HIREDHAND_TLS_SERVER_NAME" stats -r "$TLS_URL" "${CA[@]}"
expect_ok "--tls-insecure" stats -r "$TLS_URL" --tls-insecure
assert_contains "$HH_ERR" "--tls-insecure" "--tls-insecure is logged as a warning"
HIREDHAND_TLS_INSECURE=1 expect_ok "HIREDHAND_TLS_INSECURE" stats -r "$TLS_URL"
openssl x509 -checkend 0 -noout -in "$TLS_DIR/expired.crt" >/dev/null &&
    must_wait 5 '! openssl x509 -checkend 0 -noout -in "$TLS_DIR/expired.crt" >/dev/null' "the expired certificate is not expired yet"
tls_set_server_cert expired
expect_refused "expired certificate" "certificate has expired" stats -r "$TLS_URL" "${CA[@]}"
tls_set_server_cert server

# --- mutual TLS
R config set tls-auth-clients yes >/dev/null
expect_refused "mutual TLS without a client certificate" "client certificate" stats -r "$TLS_URL" "${CA[@]}"
expect_ok "mutual TLS" push TlsJob '[2]' -r "$TLS_URL" "${CA[@]}" --tls-cert "$TLS_DIR/client.crt" --tls-key "$TLS_DIR/client.key"
assert_eq "$(R llen queue:default)" 2 "the job pushed over mutual TLS is in queue:default"
HIREDHAND_TLS_CERT="$TLS_DIR/client.crt" HIREDHAND_TLS_KEY="$TLS_DIR/client.key" \
    expect_ok "mutual TLS by environment" stats -r "$TLS_URL" "${CA[@]}"
expect_refused "a certificate without its key" "--tls-key" stats -r "$TLS_URL" "${CA[@]}" --tls-cert "$TLS_DIR/client.crt"
assert_eq "$HH_RC" 2 "exit status of a usage error"
R config set tls-auth-clients no >/dev/null

# --- the wrong scheme for the port, bad files
expect_refused "redis:// at the TLS port" "use rediss://" stats -r "redis://127.0.0.1:$TLS_PORT/0"
expect_refused "a sentinel at the TLS port with redis://" "use rediss://" stats -r "redis://mymaster/0" --sentinel "127.0.0.1:$TLS_PORT"
expect_refused "rediss:// at the plain port" "TLS handshake" stats -r "rediss://127.0.0.1:$REDIS_PORT/0" "${CA[@]}"
assert_contains "$HH_ERR" "use redis://" "the handshake error suggests redis://"
expect_refused "unreadable CA file" "cannot load the CA file $HH_TMP/none.pem" stats -r "$TLS_URL" --tls-ca-file "$HH_TMP/none.pem"
assert_eq "$HH_RC" 2 "exit status of a bad CA file"
expect_refused "work with an unreadable CA file" "cannot load the CA file" work -r "$TLS_URL" --tls-ca-file "$HH_TMP/none.pem"
assert_eq "$HH_RC" 2 "work's exit status with a bad CA file"
assert_eq "$(R llen queue:default)" 2 "nothing was lost or added by the refused connections"
pass "rediss:// works with verification, and each refusal names its cause"
