/* unique.h -- the server side of sidekiq-unique-jobs 8.x for jobs hiredhand
 * runs: the lock a job's payload names (`lock`, `lock_digest`, written by
 * the gem's client middleware) is taken, kept or released around the run as
 * the gem's server middleware does, and a job that dies releases it as the
 * gem's death handler does. The keys (uniquejobs:*) and the scripts are the
 * gem's (unique_lua.h), so Ruby and hiredhand processes share one digest.
 * Sidekiq Enterprise's unique_for keeps a layout of its own: not handled
 * (docs/compatibility.md). */
#ifndef HH_UNIQUE_H
#define HH_UNIQUE_H

#include <jansson.h>
#include <hiredis/sds.h>
#include "conn.h"
#include "job.h"
#include "keys.h"
#include "util.h"

/* The gem's lock classes, by what its server side does. */
typedef enum hh__lock_kind {
    HH_LOCK_NONE = 0,
    HH_LOCK_UNTIL_EXECUTED,  /* until_executed (until_completed, _performed, _processed, _successfully_completed) */
    HH_LOCK_UNTIL_EXECUTING, /* until_executing (while_enqueued) */
    HH_LOCK_WHILE_EXECUTING, /* while_executing (around_perform, while_busy, while_working), while_executing_reject */
    HH_LOCK_UNTIL_AND_WHILE_EXECUTING,
    HH_LOCK_UNTIL_EXPIRED,
    HH_LOCK_UNKNOWN /* a lock type only a Ruby process knows (a custom lock class) */
} hh__lock_kind;

/* What the gem's server does when the runtime lock (:RUN) is held by
 * another job: its on_conflict strategy for the server. */
typedef enum hh__unique_conflict {
    HH_CONFLICT_NONE = 0, /* no strategy (the gem's null strategy), or one it does not know: not run */
    HH_CONFLICT_LOG,      /* not run, an INFO line */
    HH_CONFLICT_RAISE,    /* SidekiqUniqueJobs::Conflict: the job fails (retry rules apply) */
    HH_CONFLICT_REJECT,   /* to the dead set, not run */
    HH_CONFLICT_RETRY     /* reschedule, replace: need the job's Ruby class; failed instead, so it is retried */
} hh__unique_conflict;

/* One job's lock, read from its payload. Pointers into the item stay valid
 * while the job lives. */
typedef struct hh__unique_lock {
    hh__lock_kind kind;
    const char *type;  /* the payload's "lock", as the scripts get it */
    const char *jid;   /* the payload's "jid" */
    sds digest;        /* "lock_digest" as the client wrote it (never recomputed) */
    sds run_digest;    /* digest + ":RUN" (the runtime lock), unless it ends so */
    long long pttl;    /* lock_ttl (else lock_expiration) seconds x 1000, plus the time until "at"; 0: none */
    long long limit;   /* lock_limit, 1 when absent */
    long long timeout; /* lock_timeout, seconds; the wait for a queued token is 1..5 s */
    char score[48];    /* "at" as Ruby's to_s writes it ("" when absent): the digests score */
    int lock_info;     /* lock_info true: the INFO key is written */
    hh__unique_conflict conflict;
    const json_t *item;
    int run_held; /* set by hh__unique_before: the :RUN lock is this job's */
} hh__unique_lock;

/* Reads a job's lock from its parsed payload: 1 when the gem's server
 * middleware handles it (a "lock" and a "lock_digest" string, and no
 * "rescheduled" mark: the gem runs such a job without its lock), else 0
 * (*u is then zeroed). now is epoch seconds (for "at" in the future). Returns
 * -1 out of memory. Free with hh__unique_lock_free. */
int hh__unique_parse(const json_t *item, double now, hh__unique_lock *u);
void hh__unique_lock_free(hh__unique_lock *u);

/* The gem's lock type name -> kind (HH_LOCK_UNKNOWN for any other). */
hh__lock_kind hh__unique_kind(const char *type);
/* The server conflict strategy a payload names: "on_server_conflict", else
 * "on_conflict" (a name, or an object's "server"); while_executing_reject
 * always rejects. */
hh__unique_conflict hh__unique_conflict_of(const json_t *item, const char *type);

/* The gem's key list for a digest (its Key#to_a): digest, :QUEUED,
 * :PRIMED, :LOCKED, :INFO, uniquejobs:changelog, uniquejobs:digests,
 * uniquejobs:expiring_digests. Never namespaced: the gem's Redis has none.
 * Each a new sds (hh__unique_keys_free); returns -1 out of memory. */
#define HH_UNIQUE_NKEYS 8
int hh__unique_keys(const char *digest, sds keys[HH_UNIQUE_NKEYS]);
void hh__unique_keys_free(sds keys[HH_UNIQUE_NKEYS]);

/* Ruby's Float#to_s for a score ("1700000000.0", "1700000000.25"). */
void hh__unique_ruby_float(char *buf, size_t len, double v);

/* What the gem's server rules say for each lock kind (unique.c's one
 * table; the unit tests pin it). */
typedef struct hh__unique_rules {
    int unlock_before;     /* release the until lock before the run (until_executing, until_and_while) */
    int skip_if_not_freed; /* ...and run only when that unlock says the lock was free (until_and_while) */
    int lock_whole;        /* hold the digest's lock for the run: skip when another job holds it */
    int lock_run;          /* take the :RUN lock for the run, released after it whatever the end */
    int unlock_on_success; /* release the digest's lock after a success (until_executed) */
    int relock_on_failure; /* take the until lock back after a failure (until_executing, until_and_while) */
} hh__unique_rules;
const hh__unique_rules *hh__unique_rules_of(hh__lock_kind kind);

/* Where the hooks write. */
typedef struct hh__unique_env {
    hh__conn *conn;
    const hh__logger *log;
    const hh__keys *keys; /* for the dead set of the reject strategy */
    double dead_timeout;
    long dead_max_jobs;
} hh__unique_env;

typedef enum hh__unique_verdict {
    HH_UNIQUE_RUN = 0, /* run the job */
    HH_UNIQUE_SKIP,    /* done without running (the lock is another job's): ack it */
    HH_UNIQUE_FAIL     /* failed without running (job->error_* set): the retry rules apply */
} hh__unique_verdict;

/* Before the run: parses the job's lock into *u (freed by hh__unique_after)
 * and takes or releases what the gem's server takes or releases before it
 * runs the job. A Redis error fails the job (it is retried, nothing lost). */
hh__unique_verdict hh__unique_before(const hh__unique_env *env, hh_job *job, hh__unique_lock *u);

typedef enum hh__unique_end {
    HH_UNIQUE_SUCCEEDED = 0,
    HH_UNIQUE_FAILED,     /* failed, run or not (the retry rules apply next) */
    HH_UNIQUE_INTERRUPTED /* pushed back by a hard stop or recovered elsewhere: only :RUN is released */
} hh__unique_end;

/* After the run (or the verdict): releases or takes back what the gem's
 * server does for this end, then frees *u. */
void hh__unique_after(const hh__unique_env *env, hh__unique_lock *u, hh__unique_end end);

/* A job that went to the dead set, or was dropped (retry: false, dead:
 * false): the gem's death handler deletes every key of its lock_digest
 * (until and :RUN). No-op without a lock_digest. */
void hh__unique_dead(const hh__unique_env *env, const hh_job *job);

#endif
