/* util.h -- clocks, randomness, logging and small string helpers shared by
 * every layer. Touches no Redis key. */
#ifndef HH_UTIL_H
#define HH_UTIL_H

#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "hiredhand.h"

/* Wall clock (CLOCK_REALTIME) as epoch seconds: for every stored timestamp. */
double hh__now(void);
/* Monotonic seconds: for intervals, deadlines and rtt. */
double hh__mono(void);
/* Sleeps `seconds` (interrupted early by nothing; callers keep slices short). */
void hh__sleep(double seconds);

/* Fills buf with 2*nbytes lowercase hex digits from getrandom() plus a NUL.
 * Returns 0, or -1 when the kernel's CSPRNG failed. */
int hh__random_hex(char *buf, size_t nbytes);
/* Fills buf with n bytes from getrandom(); returns 0 or -1. */
int hh__random_bytes(unsigned char *buf, size_t n);
/* Writes 2*n lowercase hex digits of raw plus a NUL into out. */
void hh__hex(char *out, const unsigned char *raw, size_t n);
/* A fresh jid: 12 CSPRNG bytes as 24 hex digits (Sidekiq's SecureRandom.hex(12)). */
int hh__new_jid(char jid[HH_JID_SIZE]);

/* Fast non-cryptographic randomness for jitter and shuffles; state per caller. */
typedef struct hh__rng {
    uint64_t s;
} hh__rng;
void hh__rng_seed(hh__rng *r);
uint64_t hh__rng_next(hh__rng *r);
/* Uniform in [0, 1). */
double hh__rng_double(hh__rng *r);
/* Uniform integer in [0, n-1]; n > 0. */
uint64_t hh__rng_below(hh__rng *r, uint64_t n);

/* A log sink shared by one manager or client. */
typedef struct hh__logger {
    hh_log_fn fn;
    void *udata;
    hh_log_level level;
} hh__logger;

void hh__log(const hh__logger *lg, hh_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void hh__vlog(const hh__logger *lg, hh_log_level level, const char *fmt, va_list ap);
/* Sends msg (len bytes, msg[len] writable) to the sink as one line, its
 * control characters escaped (hh__escape_ctl); for messages longer than
 * hh__log's line buffer. Every message goes through here. */
void hh__log_line(const hh__logger *lg, hh_log_level level, char *msg, size_t len);
/* The default sink: hh_log_format_line()'s text layout on stderr
 * ("2026-11-29T15:24:53.123Z pid=1 tid=x2 LEVEL: msg"). */
void hh__log_stderr(hh_log_level level, const char *msg, void *udata);

/* The job the calling thread runs, for the context of its log lines
 * (Sidekiq's class=, jid=, elapsed=). Copied: the job may be freed before
 * hh__log_job_end(). tid names the worker thread as the heartbeat does. */
void hh__log_job_begin(const char *tid, const char *klass, const char *jid);
void hh__log_job_elapsed(double seconds);
void hh__log_job_end(void);

/* Marks a descriptor close-on-exec: an --exec handler, or any program a
 * plug-in starts, must not inherit the worker's Redis connections or files.
 * Returns 0, or -1 with errno set. */
int hh__fd_cloexec(int fd);

/* Numbers as text whatever the process's locale: an embedding program that
 * calls setlocale(LC_ALL, "de_DE.UTF-8") must not get "1,5" into JSON or a
 * ZADD score. These format and parse under the "C" locale (uselocale, for
 * this thread and this call only). */
int hh__snprintf_c(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int hh__vsnprintf_c(char *buf, size_t len, const char *fmt, va_list ap);
double hh__strtod_c(const char *s, char **end);

/* strdup that returns NULL for NULL. */
char *hh__strdup(const char *s);
/* Copies src into dst (size n), always NUL-terminated, truncating. */
void hh__strlcpy(char *dst, const char *src, size_t n);
/* Whether the bytes are valid UTF-8. */
int hh__utf8_valid(const char *s, size_t len);
/* A malloc'd copy of len bytes with every byte that is not part of valid
 * UTF-8 written as the text \xNN (four characters), as the logs show it:
 * what stays of a handler's error text that JSON cannot hold. NUL bytes
 * are kept; the copy is NUL-terminated and its length is in *outlen.
 * NULL when out of memory. */
char *hh__utf8_escape_len(const char *s, size_t len, size_t *outlen);
/* A malloc'd copy of len bytes with every byte that is not part of valid
 * UTF-8 replaced by U+FFFD, as a browser decodes them: text JSON can carry
 * when the exact bytes cannot travel. NUL-terminated, its length in
 * *outlen. NULL when out of memory. */
char *hh__utf8_replace_len(const char *s, size_t len, size_t *outlen);
/* A new JSON string of len bytes as standard base64: bytes that JSON
 * cannot carry (not UTF-8) given exactly. NULL when out of memory. */
json_t *hh__json_base64(const char *s, size_t len);

/* A malloc'd copy of len bytes fit for one log line: control characters
 * escaped (\n, \r, \t, else \xNN: NUL, ESC, DEL...), C1 controls as
 * \u0080..\u009f, bytes that are not valid UTF-8 as \xNN; everything else
 * (backslashes included) as it is. NULL when out of memory. */
char *hh__escape_ctl(const char *s, size_t len);
/* Whether hh__escape_ctl() would change these bytes. */
int hh__needs_escape(const char *s, size_t len);

/* Joins thread t by the monotonic time deadline (hh__mono() seconds), or
 * detaches it then: returns 1 joined, 0 left running (detached). */
int hh__join_by(pthread_t t, double deadline);

/* What Linux's /proc/<pid>/stat (with the boot time in /proc/stat) tells
 * of a process: the recovery's liveness check of an identity and the
 * process_* metrics both read it. */
typedef struct hh__proc_info {
    char state;               /* R, S, D, Z (zombie), T... */
    double utime, stime;      /* CPU seconds in user and in kernel mode */
    double start;             /* start, epoch seconds; 0 when the boot time is unknown */
    unsigned long long vsize; /* virtual memory, bytes */
    unsigned long long rss;   /* resident memory, bytes; 0 when the page size is unknown */
} hh__proc_info;
/* Reads process pid. Returns 0, or -1 when it does not exist (or /proc is
 * not there) or its stat file cannot be parsed. */
int hh__proc_stat(long pid, hh__proc_info *out);
/* The parser under hh__proc_stat(), apart so it can be tested: text is a
 * stat file's content, hz the clock ticks per second, btime the boot time
 * in epoch seconds (0 unknown), page the page size in bytes (0 unknown).
 * The command name may hold spaces and ')': fields count from the last
 * ')'. Returns 0, or -1 when text is not a stat line or hz <= 0. */
int hh__proc_stat_parse(const char *text, long hz, double btime, long page, hh__proc_info *out);

/* A run of errors of one kind (fetch replies, refused acks): logged when it
 * starts and when its error changes, and once when it ends, never per
 * attempt: fetching threads retry every second each, acks back off from
 * 50 ms, and an outage (Redis refusing writes over maxmemory) would fill
 * the log with one line. Initialise with hh__err_run_init. */
typedef struct hh__err_run {
    pthread_mutex_t mu;
    char last[256]; /* the error last logged */
    double since;   /* hh__mono() when the run began */
    atomic_int on;  /* a run is going; while 0 a success costs one load */
} hh__err_run;
void hh__err_run_init(hh__err_run *e);
void hh__err_run_destroy(hh__err_run *e);
/* One more failure in run e: logged as "<what>: <why>" at level when the
 * run starts or why differs from the error last logged (Redis' script line
 * in why is not a difference). Thread-safe. */
void hh__err_run_fail(const hh__logger *log, hh__err_run *e, hh_log_level level, const char *what, const char *why);
/* A success: ends run e, if one is going, with "<what> restored after N s". */
void hh__err_run_ok(const hh__logger *log, hh__err_run *e, const char *what);

#endif
