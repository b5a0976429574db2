#!/usr/bin/env bash
# scripts/check_doc_refs.sh [ROOT] -- the code explains itself from inside the
# repository: every docs/... path named in src/, include/, cli/ and tests/
# must exist, and nothing there may cite documents a reader does not have
# (a ../shared path, a "§" section number, an issue number). Run by ctest
# (unit_doc_refs) and so by make check and make test.
set -uo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root" || exit 2
dirs=(src include cli tests)
bad=0

# Every docs/ path mentioned must resolve (trailing punctuation dropped; a
# path may name a folder, or a file with an #anchor).
while IFS=: read -r file line ref; do
    ref="${ref%%#*}"
    ref="${ref%/}"
    if [ ! -e "$ref" ]; then
        echo "$file:$line: $ref does not exist" >&2
        bad=1
    fi
done < <(grep -rnoE --include='*.[ch]' --include='*.sh' --include='*.rb' --include='*.txt' \
             'docs/[A-Za-z0-9_./#-]*[A-Za-z0-9_/#-]' "${dirs[@]}" | grep -v ':docs/$')

# No citations of what is not in the repository.
if grep -rnE --include='*.[ch]' --include='*.sh' --include='*.rb' --include='*.txt' \
        '\.\./shared|§|\b[Ii]ssues? #?[0-9]+' "${dirs[@]}" >&2; then
    echo "check_doc_refs: the lines above cite ../shared, a § section or an issue number:" \
         "say the fact, or point into docs/" >&2
    bad=1
fi
[ "$bad" = 0 ] && echo "check_doc_refs: ok"
exit "$bad"
