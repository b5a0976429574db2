#!/usr/bin/env bash
# scripts/check_doc_functions.sh [ROOT] -- every function that the "Life of
# a job" section of docs/design.md names (written `name()` in backticks)
# is defined in src/: a line of a src/*.c file that starts a definition
# (`type name(` at the start of a line, static or not). A rename that
# leaves the section naming a function that is gone fails it. Run by ctest
# (unit_doc_functions); `--self-test` shows on a temporary copy that a
# name with no definition fails it.
set -uo pipefail
if [ "${1:-}" = "--self-test" ]; then
    t="$(mktemp -d)"
    trap 'rm -rf "$t"' EXIT
    mkdir -p "$t/docs" "$t/src"
    printf 'static int real_one(void) {\n    return 0;\n}\nvoid *hh_x(void *a) {\n    return a;\n}\n' >"$t/src/a.c"
    printf '# D\n\n## Life of a job\n\n`real_one()`, then `hh_x()`.\n\n## Next\n\n`gone()`\n' >"$t/docs/design.md"
    bash "$0" "$t" >/dev/null 2>&1 || { echo "self-test: a good tree fails" >&2; exit 1; }
    sed -i 's/then `hh_x()`/then `hh_gone()`/' "$t/docs/design.md"
    bash "$0" "$t" >/dev/null 2>&1 && { echo "self-test: a missing function passes" >&2; exit 1; }
    echo "check_doc_functions: self-test ok"
    exit 0
fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
doc="$root/docs/design.md"
[ -f "$doc" ] || { echo "check_doc_functions: no $doc" >&2; exit 2; }
section=$(awk '/^## Life of a job/ { on = 1; next } on && /^## / { exit } on' "$doc")
[ -n "$section" ] || { echo "check_doc_functions: no 'Life of a job' section in docs/design.md" >&2; exit 1; }
names=$(printf '%s\n' "$section" | grep -o '`[A-Za-z_][A-Za-z0-9_]*()`' | tr -d '`()' | sort -u)
[ -n "$names" ] || { echo "check_doc_functions: the section names no function" >&2; exit 1; }
bad=0
for n in $names; do
    if ! grep -Eq "^[A-Za-z].*[^A-Za-z0-9_]\*?$n\(" "$root"/src/*.c; then
        echo "docs/design.md, Life of a job: \`$n()\` is not defined in src/" >&2
        bad=1
    fi
done
[ "$bad" = 0 ] && echo "check_doc_functions: $(printf '%s\n' "$names" | wc -l) functions named, all defined"
exit "$bad"
