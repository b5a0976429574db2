#!/usr/bin/env bash
# Quick variant: as test_orphan_dynamic_identity.sh, but the dead worker's
# heartbeat hash is DELeted right after the kill instead of waiting for its 60 s TTL.
exec bash "$(dirname "$0")/test_orphan_dynamic_identity.sh" del
