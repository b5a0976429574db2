/* fuzz_job.c -- job payloads: parsing (hh__job_new), the serialiser round
 * trip, and every rewrite of a payload: the retry/dead plan (hh__retry_plan),
 * the scheduler's enqueued_at refresh (done in scheduler.c with
 * json_loadb(JSON_ALLOW_NUL) + hh__json_time_new + hh__json_dump, mirrored
 * here) and the dead-set wrapper of a malformed job
 * (hh__malformed_dead_payload). Property of every rewrite: each key other
 * than the ones Sidekiq's own path changes keeps its position (relative
 * order), its JSON type and its value. */
#include <jansson.h>
#include <math.h>
#include "fuzz.h"
#include "job.h"
#include "outcome.h"
#include "retry.h"
#include "util.h"

/* As job.c reads a payload: bignums fall back to reals. */
static json_t *load(const char *s, size_t len) {
    json_error_t err;
    json_t *v = json_loadb(s, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
    if (!v && strstr(err.text, "too big ")) /* "too big [negative ]integer" */
        v = json_loadb(s, len, JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &err);
    return v;
}

static int in(const char *key, const char *const *set) {
    for (; set && *set; set++)
        if (!strcmp(key, *set)) return 1;
    return 0;
}

static long index_of(json_t *obj, const char *key) {
    long i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        (void)v;
        if (!strcmp(k, key)) return i;
        i++;
    }
    return -1;
}

/* Every key of orig outside `changed` is in out, json_equal (same type and
 * value: 1 and 1.0 differ), and the kept keys are in the same order. */
static void check_kept(json_t *orig, json_t *out, const char *const *changed, const char *what) {
    FUZZ_ASSERT(json_is_object(out), "%s: not an object", what);
    const char *k;
    json_t *v;
    long last = -1;
    json_object_foreach(orig, k, v) {
        if (in(k, changed)) continue;
        json_t *w = json_object_get(out, k);
        FUZZ_ASSERT(w != NULL, "%s: key \"%s\" lost", what, k);
        FUZZ_ASSERT(json_equal(v, w), "%s: key \"%s\" changed type or value", what, k);
        long at = index_of(out, k);
        FUZZ_ASSERT(at > last, "%s: key \"%s\" moved", what, k);
        last = at;
    }
}

static const char *const retry_changes[] = {"queue", "error_message", "error_class", "retry_count", "retried_at",
                                            "failed_at", "error_backtrace", NULL};
static const char *const schedule_changes[] = {"enqueued_at", NULL};
static const char *const malformed_changes[] = {"error_class", "error_message", "failed_at", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *payload = (const char *)data;
    hh_timestamps ts = size && (data[0] & 1) ? HH_TS_MILLIS : HH_TS_FLOAT;
    double now = 1700000000.25;
    char why[512];
    hh_job *job = hh__job_new(payload, size, "default", why, sizeof(why));
    if (!job) return 0;
    FUZZ_ASSERT(job->len == size && !memcmp(job->payload, payload, size), "the exact bytes are kept");
    json_t *orig = load(payload, size);

    if (job->item) {
        FUZZ_ASSERT(json_is_object(orig), "a job that parsed is an object");
        /* the serialiser: same keys, order, types and values */
        if (!job->lossy) {
            char *dump = hh__json_dump(orig);
            FUZZ_ASSERT(dump != NULL, "hh__json_dump of a parsed payload");
            json_t *back = load(dump, strlen(dump));
            check_kept(orig, back, NULL, "hh__json_dump round trip");
            FUZZ_ASSERT(json_object_size(back) == json_object_size(orig), "round trip adds no key");
            json_decref(back);
            free(dump);
        }
        /* retry or dead: Sidekiq's fields only */
        char *lines[2] = {"app.rb:1:in `perform'", "bad\xff line"};
        job->error_class = strdup("RuntimeError");
        job->error_message = strdup("boom \x1b[31m\nforged line");
        job->backtrace = malloc(sizeof(lines));
        if (job->backtrace) {
            job->backtrace[0] = strdup(lines[0]);
            job->backtrace[1] = strdup(lines[1]);
            job->nbacktrace = 2;
        }
        hh__retry_config cfg = {.max_retries = 25, .timestamps = ts, .class_known = size > 1 && (data[1] & 1)};
        hh__rng rng = {42};
        hh__failure_plan plan;
        memset(&plan, 0, sizeof(plan));
        if (hh__retry_plan(job, &cfg, now, &rng, &plan) == 0 && plan.payload) {
            json_t *out = load(plan.payload, strlen(plan.payload));
            check_kept(orig, out, retry_changes, plan.kind == HH_FAIL_RETRY ? "retry payload" : "dead payload");
            FUZZ_ASSERT(json_is_string(json_object_get(out, "error_message")), "error_message is a string");
            FUZZ_ASSERT(isfinite(plan.score), "a finite score");
            json_decref(out);
            free(plan.payload);
        }
        /* the scheduler moving a due entry to its queue */
        json_t *item = json_loadb(payload, size, JSON_ALLOW_NUL, NULL);
        if (json_is_object(item)) {
            json_object_set_new(item, "enqueued_at", hh__json_time_new(now, ts));
            char *fresh = hh__json_dump(item);
            FUZZ_ASSERT(fresh != NULL, "hh__json_dump of a scheduled entry");
            json_t *out = load(fresh, strlen(fresh));
            check_kept(orig, out, schedule_changes, "scheduled entry");
            FUZZ_ASSERT(json_is_number(json_object_get(out, "enqueued_at")), "enqueued_at is a number");
            json_decref(out);
            free(fresh);
        }
        json_decref(item);
    } else {
        FUZZ_ASSERT(why[0] != '\0', "a malformed job says why");
        size_t outlen = 0;
        char *dead = hh__malformed_dead_payload(payload, size, why, now, ts, &outlen);
        FUZZ_ASSERT(dead != NULL, "a dead payload");
        if (json_is_object(orig)) {
            json_t *out = load(dead, outlen);
            check_kept(orig, out, malformed_changes, "malformed object");
            FUZZ_ASSERT(json_is_string(json_object_get(out, "error_message")), "the reason is kept");
            json_decref(out);
        } else if (orig) {
            json_t *out = load(dead, outlen);
            FUZZ_ASSERT(json_is_object(out), "a non-object is wrapped");
            json_t *a0 = json_array_get(json_object_get(out, "args"), 0);
            FUZZ_ASSERT(json_is_string(a0) && json_string_length(a0) == size &&
                            !memcmp(json_string_value(a0), payload, size),
                        "the wrapper holds the exact text");
            json_decref(out);
        } else {
            FUZZ_ASSERT(outlen == size && !memcmp(dead, payload, size), "not JSON: stored as fetched");
        }
        free(dead);
    }
    json_decref(orig);
    hh__job_free(job);
    return 0;
}
