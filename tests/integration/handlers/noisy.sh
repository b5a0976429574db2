#!/bin/sh
# Writes ~1 MB to stderr, then a final line, and exits 5.
cat >/dev/null
i=0
line="0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
while [ $i -lt 10000 ]; do echo "$line $i" >&2; i=$((i + 1)); done
echo "the very last line" >&2
exit 5
