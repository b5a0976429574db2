#!/usr/bin/env bash
# scripts/check_doc_refs.sh [ROOT] -- the code explains itself from inside the
# repository: every docs/... path named in src/, include/, cli/ and tests/
# must exist, and nothing there may cite documents a reader does not have
# (a ../shared path, a "§" section number, an issue number, a report id such
# as B14 or a "field report", in a file's text or in its name). Run by ctest
# (unit_doc_refs) and so by make check and make test.
#
# scripts/check_doc_refs.sh --self-test plants each kind of citation in a
# scratch tree and checks that every one fails and that look-alikes (hex such
# as 0xB14 or \xB1, words such as AB12 or base64) pass (ctest
# unit_doc_refs_selftest).
set -uo pipefail

if [ "${1:-}" = --self-test ]; then
    self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
    scratch="$(mktemp -d)" || exit 2
    trap 'rm -rf "$scratch"' EXIT
    fails=0
    # plant DIR FILE TEXT WANT: a tree holding only FILE with TEXT; WANT is
    # "fail" or "pass".
    plant() {
        local tree="$scratch/t$RANDOM$RANDOM" rc
        mkdir -p "$tree/src" "$tree/include" "$tree/cli" "$tree/tests/$(dirname "$1")"
        printf '%s\n' "$2" >"$tree/tests/$1"
        bash "$self" "$tree" >/dev/null 2>&1
        rc=$?
        if { [ "$3" = fail ] && [ "$rc" = 0 ]; } || { [ "$3" = pass ] && [ "$rc" != 0 ]; }; then
            echo "check_doc_refs --self-test: tests/$1 with [$2] should $3 (exit $rc)" >&2
            fails=1
        fi
    }
    plant a.sh '# Field report B14: failover' fail
    plant a.c '/* the bound (B13) */' fail
    plant a.rb 'fail "B01 atomicity violation"' fail
    plant a.sh '# as field reports say' fail
    plant a.sh '# see issue #12' fail
    plant a.sh '# spec § 4.2' fail
    plant a.sh '# ../shared/spec/x.md' fail
    plant a.sh '# docs/missing.md' fail
    plant integration/test_rf_b14_readonly.sh '# failover' fail
    plant a.c 'static const unsigned char k[] = {0xB1, 0xB14}; /* "\xB12" AB12 B1 B123 */' pass
    plant a.sh 'echo dGVzdEIxMg== # base64; a B-tree; -b 12' pass
    plant integration/test_b64_decode.sh '# base64' pass
    [ "$fails" = 0 ] && echo "check_doc_refs --self-test: ok"
    exit "$fails"
fi

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

# No report ids: "B14" or "field report B13's bound" means nothing to a
# reader of the repository; name the behaviour. Case matters, and the id must
# stand alone, so hex (0xB14, \xB1) and longer words (AB12, B123) pass.
if grep -rnE --include='*.[ch]' --include='*.sh' --include='*.rb' --include='*.txt' \
        --include='*.py' --include='*.md' --include='*.in' \
        '\bB[0-9]{2}\b|[Ff]ield reports?\b' "${dirs[@]}" >&2; then
    echo "check_doc_refs: the lines above cite a report id or a field report:" \
         "say the behaviour it stands for" >&2
    bad=1
fi
# ... nor in file names (test_rf_b14_readonly.sh says nothing of what it
# checks); b16/b32/b58/b64/b85 name base encodings and pass.
if find "${dirs[@]}" -regextype posix-extended -regex '.*[_-][Bb][0-9]{2}([_.-][^/]*)?' \
        | grep -vE '[_-][Bb](16|32|58|64|85)([_.-][^/]*)?$' | grep . >&2; then
    echo "check_doc_refs: the files above carry a report id in their name:" \
         "name them after what they check" >&2
    bad=1
fi
[ "$bad" = 0 ] && echo "check_doc_refs: ok"
exit "$bad"
