/* common.h -- helpers shared by the hiredhand subcommands (common.c):
 * usage errors, number parsing, name checks, --redis-password-file,
 * handler output cut into log lines within a per-job budget. */
#ifndef HH_CLI_COMMON_H
#define HH_CLI_COMMON_H

#include <jansson.h>
#include <stdio.h>
#include "hiredhand.h"

#define CLI_EXIT_USAGE 2
/* Every command's exit status when Redis cannot be reached or fails a
 * call (docs/job-management.md, "Exit status"): 0 done, 1 not found, 2 usage, 3 Redis. */
#define CLI_EXIT_REDIS 3
/* `work` only: it stopped, but basic fetch could not give every job it
 * took back to Redis (each payload is in the log at ERROR). */
#define CLI_EXIT_JOBS_LOST 4

/* Prints "hiredhand: <msg>" on stderr and returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Parses a non-negative number of seconds; returns 0 or -1. */
int cli_parse_seconds(const char *s, double *out);
/* Parses an integer in [lo, hi]; returns 0 or -1. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
/* The number of an option (opt: how the message names it, e.g.
 * "--concurrency"): 0, or CLI_EXIT_USAGE after printing the accepted range,
 * "--concurrency: 0 is out of range, want 1 to 1000" (or "'x' is not a
 * number, want ..."), so every numeric option says it the same way.
 * cli_option_seconds wants lo to hi seconds; lo itself is refused when
 * lo_excluded ("more than 0"). */
int cli_option_int(const char *opt, const char *arg, long lo, long hi, long *out);
int cli_option_seconds(const char *opt, const char *arg, double lo, int lo_excluded, double hi, double *out);
/* --timestamps float|millis into *out: 0, or CLI_EXIT_USAGE after saying
 * what it takes. */
int cli_option_timestamps(const char *arg, hh_timestamps *out);
/* The largest number of seconds cli_parse_seconds takes. */
#define CLI_SECONDS_MAX 1e10
/* push --in takes -CLI_PUSH_IN_MAX to CLI_PUSH_IN_MAX seconds: Sidekiq's
 * perform_in reads an interval of 1e9 or more as a Unix time. */
#define CLI_PUSH_IN_MAX 999999999.0
/* 0 when hh_name_check() accepts the name, else prints why and returns
 * CLI_EXIT_USAGE. */
int cli_check_name(hh_name_kind kind, const char *name);

/* Queue names as `queues list` prints them and `queues show/clear` take
 * them (docs/job-management.md): Sidekiq's clients accept any
 * name, control characters included, and such a name must stay nameable
 * from a shell. cli_name_escape writes a backslash as \\, a newline, CR
 * and tab as \n, \r, \t, every other control character (C1 included) and
 * each byte that is not UTF-8 as \xNN; the rest as it is. malloc'd; NULL
 * when out of memory. */
char *cli_name_escape(const char *s, size_t len);
/* Every name read from Redis that a command prints to a terminal (queue,
 * class, JID, identity, error text) goes through these, escaped as
 * cli_name_escape does, so an escape sequence in a name cannot drive the
 * terminal. The result lives in one of four rotating slots: up to four per
 * printf. cli_shown_json takes a JSON string (length-aware: a NUL inside
 * shows as \x00) and shows anything else as "". */
const char *cli_shown(const char *s, size_t len);
const char *cli_shown_str(const char *s);
const char *cli_shown_json(const json_t *v);
/* Free text (an error class or message) as the logs show it: escaped as
 * cli_shown escapes, but a backslash as it is, so a byte the worker stored
 * as the text \xNN (not UTF-8) shows as \xNN, and what shows is what
 * --error takes. Same rotating slots. */
const char *cli_shown_text(const char *s, size_t len);
/* A payload (JSON text) as `show` prints it: control characters and bytes
 * that are not UTF-8 as \xNN, backslashes as they are (JSON's own). */
void cli_put_payload(const char *s, size_t len, FILE *f);
/* The bytes of o's member key, a base64 string (the library's
 * "payload_base64", "name_base64": what JSON cannot carry): malloc'd in
 * *out (NUL-terminated), their count in *len. Returns 0, or -1 when the
 * member is absent, not base64, or out of memory. */
int cli_base64_field(const json_t *o, const char *key, char **out, size_t *len);
/* The inverse: \\, \n, \r, \t and \xNN (two hex digits, not 00) are
 * decoded, any other backslash is kept as it is. Returns the name
 * (malloc'd) or NULL after printing why. */
char *cli_name_unescape(const char *s);

/* Columns of text sized to their content, as `column -t` sizes them (a
 * table of the job management commands, stats, processes, top): each
 * column as wide as its widest cell in display columns (cli_width), two
 * spaces between columns, the last one not padded. Rows are held until
 * cli_table_end, or until CLI_TABLE_HOLD rows came: the widths are then
 * fixed and later rows are written at once (a long list starts printing,
 * and its memory stays bounded; a wider later cell pushes its row only). */
#define CLI_TABLE_HOLD 1000
typedef struct cli_table cli_table;
typedef void cli_table_line_fn(void *udata, const char *line);
/* align: one letter per column, 'l' (left) or 'r' (right). Lines go to
 * fn, or to stdout when fn is NULL. NULL when out of memory. */
cli_table *cli_table_new(const char *align, cli_table_line_fn *fn, void *udata);
/* One row: as many cells as align has letters (NULL reads as ""); the
 * cells are copied (names already escaped, cli_shown). */
void cli_table_row(cli_table *t, const char *const *cells);
/* Writes the rows held and frees the table. */
void cli_table_end(cli_table *t);
/* Terminal columns of a UTF-8 string: East Asian wide characters count 2,
 * combining marks 0, every other character 1 (invalid bytes 1 each). */
size_t cli_width(const char *s);

/* Reads a --redis-password-file: its first line, without the line end.
 * Returns the password (owned here, valid until the next call), or NULL
 * after printing a clear error (file missing or unreadable, first line
 * empty); the password itself is never printed. */
const char *cli_password_file(const char *path);

/* The words of a command (its verb, its operand) wherever its options
 * are, even under POSIXLY_CORRECT (which stops a permuting getopt at the
 * first word: `retries list -r URL` would lose its -r). The command runs
 * getopt_long in its "-" mode, which returns each word as option 1 in
 * their order; its loop stores it with argv[(*w)++] = optarg (*w from 1:
 * those slots getopt has passed). cli_words_end then puts those words, and
 * the ones after a "--", at the end of argv in their order and returns the
 * index of the first, what optind is after a permuting getopt. */
int cli_words_end(int argc, char **argv, int w);

/* -r/--redis URL into *url: 0, or CLI_EXIT_USAGE after saying why when it
 * is empty (-r "$URL" with URL unset must not mean the default Redis). */
int cli_redis_url(const char *arg, const char **url);
/* clang-format off */ /* the help text keeps its layout */
#define CLI_PASSWORD_FILE_HELP \
    "      --redis-password-file FILE  Redis password from FILE's first line, when the URL has\n" \
    "                             none (else $REDIS_PASSWORD): kept out of ps and /proc\n"
/* clang-format on */

/* A handler's output (--exec, --serve) cut into lines for the log. A line
 * longer than CLI_LINE_MAX is passed on in pieces; the \r of a \r\n end
 * is dropped. */
#define CLI_LINE_MAX 4096
typedef struct cli_lines {
    char buf[CLI_LINE_MAX];
    size_t len; /* the partial line so far */
    int cut;    /* the last piece passed was a full buffer with no newline */
} cli_lines;
typedef void cli_line_fn(void *udata, const char *line, size_t len);
/* Passes each complete line of data to fn. */
void cli_lines_feed(cli_lines *l, const char *data, size_t n, cli_line_fn *fn, void *udata);
/* At EOF: passes the unterminated last line, if any. */
void cli_lines_end(cli_lines *l, cli_line_fn *fn, void *udata);
/* A job's share of the log for its handler's output (--exec-log-max): a
 * handler that prints without end must not flood the log. Lines are logged
 * while their bytes fit (the one that crosses max is cut there); the bytes
 * after that are only counted, their pipe still read. */
#define CLI_LOG_MAX_DEFAULT 65536
#define CLI_SERVE_HELLO_TIMEOUT_DEFAULT 30.0 /* seconds for a new --serve process to say hello */
typedef struct cli_log_budget {
    size_t max;     /* bytes logged per job at most; 0: no cap */
    size_t logged;  /* so far */
    size_t dropped; /* bytes not logged (line ends not counted) */
} cli_log_budget;
/* Logs one line a handler wrote on stream ("stderr", "stdout"), tagged
 * with its job's class and jid (klass and "-" between jobs) and its pid,
 * as far as budget b allows (NULL: no cap). */
void cli_log_handler_line(cli_log_budget *b, hh_manager *m, hh_job *job, const char *klass, int pid, const char *stream,
                          const char *line, size_t len);
/* A handler's output as text for C strings (the log line, the error
 * message, the backtrace): each NUL byte written "\x00", as the log
 * escapes other control bytes, so that what follows it is kept. malloc'd,
 * NUL-terminated (NULL: out of memory); *outlen (may be NULL) gets its
 * length. */
char *cli_output_text(const char *s, size_t len, size_t *outlen);
/* What an error message takes of a stderr line: the text after its last
 * '\r' (progress output redrawn in place shows only that), or NULL when
 * that holds nothing but blanks (a handler's trailing blank line is not
 * its error). Points into line. */
const char *cli_error_text(const char *line);
/* Ends the budget's job (or the output between jobs): one line saying how
 * many bytes were not logged, if any; counts start again from 0. */
void cli_log_budget_end(cli_log_budget *b, hh_manager *m, hh_job *job, const char *klass, int pid);

#endif
