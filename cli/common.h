/* common.h -- helpers shared by the hiredhand subcommands (common.c):
 * usage errors, number parsing, name checks, --redis-password-file. */
#ifndef HH_CLI_COMMON_H
#define HH_CLI_COMMON_H

#include "hiredhand.h"

#define CLI_EXIT_USAGE 2

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
/* 0 when hh_name_check() accepts the name, else prints why and returns
 * CLI_EXIT_USAGE. */
int cli_check_name(hh_name_kind kind, const char *name);

/* Reads a --redis-password-file: its first line, without the line end.
 * Returns the password (owned here, valid until the next call), or NULL
 * after printing a clear error (file missing or unreadable, first line
 * empty); the password itself is never printed. */
const char *cli_password_file(const char *path);
#define CLI_PASSWORD_FILE_HELP \
    "      --redis-password-file FILE  Redis password from FILE's first line, when the URL has\n" \
    "                             none (else $REDIS_PASSWORD): kept out of ps and /proc\n"

#endif
