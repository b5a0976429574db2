#!/usr/bin/env bash
# scripts/check_doc_links.sh [ROOT] -- every relative link of the user docs
# resolves: in README.md, CONTRIBUTING.md, bench/README.md and docs/*.md, a
# Markdown link [text](target) that is not a URL must name a file or folder
# that exists (relative to the page), and a #anchor must be the GitHub slug
# of a heading of the target page (lower case, punctuation dropped, spaces
# as '-', '-1', '-2' ... for repeats). Links inside code blocks and inline
# code are not links. Run by ctest (unit_doc_links); `--self-test` shows on a
# temporary copy that a broken file and a broken anchor both fail it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [ "${1:-}" = "--self-test" ]; then
    t="$(mktemp -d)"
    trap 'rm -rf "$t"' EXIT
    mkdir -p "$t/docs" "$t/bench"
    printf '# Top\n\nSee [a](docs/a.md#two-words-here) and [b](bench/README.md).\n' >"$t/README.md"
    printf '# A\n\n## Two words: here\n\n```\n[not a link](nowhere.md)\n```\n' >"$t/docs/a.md"
    printf '# Bench\n\n[up](../README.md#top), [self](#bench), `[code](gone.md)`\n' >"$t/bench/README.md"
    bash "$0" "$t" >/dev/null 2>&1 || { echo "self-test: a good tree fails" >&2; exit 1; }
    printf '\n[gone](docs/missing.md)\n' >>"$t/README.md"
    bash "$0" "$t" >/dev/null 2>&1 && { echo "self-test: a missing file passes" >&2; exit 1; }
    sed -i '$d' "$t/README.md"
    bash "$0" "$t" >/dev/null 2>&1 || { echo "self-test: the repaired tree fails" >&2; exit 1; }
    printf '\n[bad](docs/a.md#two-words)\n' >>"$t/README.md"
    bash "$0" "$t" >/dev/null 2>&1 && { echo "self-test: a missing anchor passes" >&2; exit 1; }
    echo "check_doc_links: self-test ok"
    exit 0
fi

root="${1:-$(cd "$here/.." && pwd)}"
cd "$root" || exit 2
files=()
for f in README.md CONTRIBUTING.md bench/README.md docs/*.md; do
    [ -f "$f" ] && files+=("$f")
done
python3 - "${files[@]}" <<'PY'
import os, re, sys

def strip_code(text):
    """The page without fenced code blocks (lines kept, blanked) and inline code."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return out

def heading_slugs(path):
    """GitHub's anchors of the page's headings (inline code in a heading is
    part of its text, so it is kept)."""
    seen, found = {}, set()
    fence = None
    for line in open(path, encoding="utf-8").read().split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not h:
            continue
        s = re.sub(r"[^\w\- ]", "", h.group(1).lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else "%s-%d" % (s, n))
    return found

bad = 0
link = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
for page in sys.argv[1:]:
    for no, line in enumerate(strip_code(open(page, encoding="utf-8").read()), 1):
        for target in link.findall(line):
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue   # URLs (http:, mailto:) are not checked here
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                print("%s:%d: %s: no such file %s" % (page, no, target, dest), file=sys.stderr)
                bad = 1
                continue
            if anchor and dest.endswith(".md") and anchor not in heading_slugs(dest):
                print("%s:%d: %s: no heading with the slug #%s in %s" % (page, no, target, anchor, dest),
                      file=sys.stderr)
                bad = 1
sys.exit(bad)
PY
rc=$?
[ "$rc" = 0 ] && echo "check_doc_links: ok"
exit "$rc"
