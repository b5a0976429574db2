#!/bin/sh
# MxJob handler (test_job_metrics_sidekiq), as tests/ruby/job_metrics_app.rb's MxJob: args
# [SECONDS, MODE]: fails at once when MODE is "fail", else sleeps 2.6 s (the SECONDS the test
# gives). Builtins only before the sleep: a loaded machine adds little to its run time.
IFS= read -r p
case "$p" in *'"fail"'*) echo "failing on purpose" >&2; exit 1 ;; esac
exec sleep 2.6
