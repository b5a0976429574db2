#!/bin/sh
# scripts/manpage.sh BINARY -- prints the hiredhand(1) man page (roff) made from
# the binary's own `hiredhand --help`, `hiredhand work --help` and `hiredhand web --help`, so the page
# cannot drift from the help: the build runs this on the binary it just built.
set -eu
bin="$1"
version="$("$bin" --version | sed 's/^hiredhand //')"
top="$("$bin" --help)"
work="$("$bin" work --help)"
web="$("$bin" web --help)"

# One help text into roff: "  -x, --opt ARG   text" and "  word   text" lines become tagged
# paragraphs, deeper-indented lines continue them, other lines are paragraphs of their own.
to_roff() {
    awk '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function text(s) { gsub(/\\/, "\\e", s); sub(/^[.\047]/, "\\\\\\&&", s); return s }
    /^usage:/ || /^commands:/ { next }
    /^$/ { print ".PP"; next }
    /^          / { sub(/^ +/, ""); print text($0); next }
    /^  / {
        line = $0; head = ""; desc = ""
        if (line ~ /^ +-/ && substr(line, 29, 1) == " " && substr(line, 30, 1) != " " && length(line) > 29) {
            head = substr(line, 1, 28); desc = substr(line, 30)
        } else if (match(line, /[^ ]  +[^ ]/)) {
            head = substr(line, 1, RSTART); desc = substr(line, RSTART + 1)
        } else { head = line }
        sub(/^ +/, "", head); sub(/ +$/, "", head); sub(/^ +/, "", desc)
        print ".TP"
        print "\\fB" esc(head) "\\fR"
        if (desc != "") print text(desc)
        next
    }
    { print text($0) }
    '
}

cat <<ROFF
.TH HIREDHAND 1 "" "hiredhand $version" "User Commands"
.SH NAME
hiredhand \\- Sidekiq\\-compatible background\\-job worker and job management CLI
.SH SYNOPSIS
.B hiredhand
.I command
[\\fIoptions\\fR]
.br
.B hiredhand work
[\\fB\\-C\\fR \\fIFILE\\fR] [\\fIoptions\\fR]
.SH COMMANDS
ROFF
printf '%s\n' "$top" | to_roff
printf '.SH "WORK OPTIONS"\n'
printf '%s\n' "$work" | to_roff
printf '.SH "WEB OPTIONS"\n'
printf '%s\n' "$web" | to_roff
cat <<ROFF
.SH "SEE ALSO"
The README and docs/ of hiredhand; Sidekiq's documentation for the data model it shares.
ROFF
