#!/bin/sh
# SpanJob handler: span.sh SECONDS. Records "<jid> <start epoch> <end epoch>" in test:spans
# around a sleep, so a test can check that two runs did not overlap. Exit 0.
cat >/dev/null
start=$(date +%s.%N)
sleep "${1:-1}"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:spans "$HIREDHAND_JID $start $(date +%s.%N)" >/dev/null
