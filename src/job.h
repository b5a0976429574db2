/* job.h -- the job payload: parsing and validating what was fetched,
 * keeping its exact bytes, reading timestamps in either encoding, and
 * serialising with key order and number types kept. No Redis I/O. */
#ifndef HH_JOB_H
#define HH_JOB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "hiredhand.h"

struct hh_manager;

struct hh_job {
    char *payload; /* exact bytes as fetched (owned, NUL-terminated) */
    size_t len;
    json_t *item;      /* parsed object; NULL when malformed. Its "args"
                          * is [] when `slim`: use hh__job_item_full() */
    const char *klass; /* into item */
    size_t klass_len;  /* its length: a class may hold "\u0000" */
    const char *jid;   /* into item, "" when absent */
    const char *queue; /* queue it was fetched from, without "queue:" (in
                        * the job's own block) */
    long queue_index;  /* that queue among the manager's (fetch.h), -1 when
                          * not fetched by one: acks find its in-progress
                          * list without building the key per job */
    char *args_json;   /* lazily dumped "args" */
    int retry_count;   /* -1 when absent */
    int lossy;         /* holds integers beyond 64 bits: item was parsed
                          * with them as reals, so it runs (the handler gets
                          * the exact bytes) but is never re-serialised */
    int slim;          /* a big payload: item's args dropped after checks */
    double run_at;     /* epoch seconds the job started */
    /* failure details, set by the handler or the processor */
    char *error_class;
    char *error_message;      /* may hold NUL (an unknown class's name): */
    size_t error_message_len; /* its length */
    char **backtrace;
    size_t nbacktrace;
    uint64_t lease;                  /* key in the held-jobs registry, 0 when not held (lease.c) */
    int ack_uncertain;               /* an ack that removes nothing proves no lease loss */
    struct hh__processor *processor; /* the worker thread running it (hh_job_cancelled) */
};

/* Builds a job from fetched bytes (copied). Never NULL unless out of memory.
 * When the payload is malformed (not JSON, not an object, no "class" string,
 * "args" not an array) job->item is NULL and *why describes it. */
hh_job *hh__job_new(const char *payload, size_t len, const char *queue, char *why, size_t whylen);
/* The one rule for what is a job, applied wherever a payload is read
 * (fetch, the scheduler, `retries/dead retry`): NULL for a job object, else
 * why not (not an object, no non-empty "class" string, no "args" array). */
const char *hh__job_problem(const json_t *item);
/* The same, taking ownership of a malloc'd, NUL-terminated payload (freed
 * even on failure): a fetched 32 MiB job is not copied again. */
hh_job *hh__job_adopt(char *payload, size_t len, const char *queue, char *why, size_t whylen);
void hh__job_free(hh_job *job);
/* Frees what only running the job needed (the parsed item, the args dump,
 * the error details) and keeps what its ack needs: payload, queue, lease.
 * klass becomes NULL and jid "" (read them from the payload if needed).
 * Why: the thread that sends the ack frees the job, and glibc's malloc is
 * slow to free another thread's blocks; a parsed job is one block per JSON
 * node, so the thread that ran it frees those while they are its own. */
void hh__job_shed(hh_job *job);
/* Payloads from this size on do not keep their parsed args: the bytes are
 * held anyway, and a 32 MiB argument parsed is a second 32 MiB held for the
 * whole run (and beyond the 3 x the payload docs/redis.md promises). */
#define HH_JOB_SLIM_BYTES (1024 * 1024)
/* The whole parsed payload, args included (a new reference: json_decref
 * it; for a slim job a fresh parse the caller owns alone). NULL when
 * malformed or out of memory. */
json_t *hh__job_item_full(const hh_job *job);
/* Clears failure details (used before a run). */
void hh__job_reset_error(hh_job *job);
/* hh_job_fail with the message as len bytes, NUL bytes kept: the
 * processor's NameError stores an unknown class's name whole, as Sidekiq
 * stores it; escaping it is for whoever shows it. */
void hh__job_fail_bytes(hh_job *job, const char *error_class, const char *msg, size_t len);

/* Reads a timestamp: JSON real = seconds, JSON integer = milliseconds (the
 * rule of Sidekiq 8). Returns 0 when absent or not a number. */
double hh__json_time(const json_t *v);
/* hh__json_time() of item's top-level key, item parsed from payload by
 * hh__json_load_payload(): when lossy, every integer was read as a real, so
 * the stored token says which encoding it is (integer ms or real seconds). */
double hh__payload_time(const json_t *item, int lossy, const char *payload, size_t len, const char *key);
/* A timestamp in the configured encoding: real seconds or integer ms. */
json_t *hh__json_time_new(double epoch, hh_timestamps ts);
/* Parses a payload as hh__job_new() does: when it holds integers beyond 64
 * bits (jansson has no bignums) it is read again with every integer as a
 * real and *lossy is set: such a value must never be re-serialised (use
 * hh__json_set_raw()). NULL when not JSON. */
json_t *hh__json_load_payload(const char *payload, size_t len, int *lossy);
/* A copy of the JSON object text `obj` with its top-level `key` set to the
 * JSON text `value`, every other byte kept: the value's bytes replaced where
 * the key is (its last occurrence), or the member appended after the last
 * one. jansson reads every key and value (and says where each ends); only
 * the whitespace and the { : , } between them are looked at here. For
 * payloads that cannot be re-serialised unchanged (bignums). malloc'd,
 * *outlen set; NULL when obj is not an object or out of memory. */
char *hh__json_set_raw(const char *obj, size_t len, const char *key, const char *value, size_t *outlen);
/* hh__json_set_raw() with the JSON text of v, taking both: the malloc'd
 * object text obj is freed (the result replaces it, *len updated) and v's
 * reference is taken. NULL when out of memory or obj is not an object. */
char *hh__json_set_raw_take(char *obj, size_t *len, const char *key, json_t *v);
/* The text of the top-level member `key`'s value in the JSON object text
 * obj, as stored (a bignum keeps its digits): a pointer into obj, *vlen
 * bytes; NULL when absent or obj is not an object. */
const char *hh__json_get_raw(const char *obj, size_t len, const char *key, size_t *vlen);
/* The JSON integer text tok (n bytes, any number of digits) plus delta (1
 * or -1), exact, as Ruby's Integer arithmetic gives it: "100000000000000000000"
 * - 1 is "99999999999999999999". malloc'd; NULL when tok is not an integer
 * (a real such as 3.0 or 1e3, a string) or out of memory. */
char *hh__json_int_step(const char *tok, size_t n, int delta);
/* Compact JSON with key order kept and reals at full precision. Free with
 * free(). NULL on failure. */
char *hh__json_dump(const json_t *v);

/* The class Sidekiq's Web UI shows for a payload: Active Job's "wrapped"
 * class for its two wrapper classes, else "class". NULL when "class" is
 * not a string. The string belongs to item; *len (if non-NULL) gets its
 * length (NUL bytes may be inside). */
const char *hh__item_display_class(const json_t *item, size_t *len);
/* The class Sidekiq's Web UI and API show for a payload (Job#display_class:
 * "display_class", Active Job's wrapped class, "Mailer#method" for Action
 * Mailer's delivery jobs, else "class"), which is not always the class a
 * handler is chosen by (hh__item_display_class). A new JSON string (NUL
 * bytes kept), or NULL when "class" is not a string. */
json_t *hh__item_web_class(const json_t *item);

#endif
