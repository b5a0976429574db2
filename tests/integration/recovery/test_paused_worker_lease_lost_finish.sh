#!/usr/bin/env bash
# test_paused_worker_lease_lost.sh with --lease-lost finish: after the pause, A logs and counts the lease
# loss but lets its handler run to its end; still no outcome is written for the job.
exec bash "$(dirname "$0")/test_paused_worker_lease_lost.sh" finish
