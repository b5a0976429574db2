/* outcome.c -- see outcome.h.
 * Keys written: retry or dead (ZADD, trims), and the source the job leaves:
 * an in-progress list (LREM) or retry/schedule (ZREM). */
#include "outcome.h"

#include <stdio.h>
#include <string.h>

int hh_outcome_write(hh_conn *c, const hh_keys *k, const hh_outcome *o, char *why, size_t whylen) {
    static const char *modes[] = {"drop", "retry", "dead"};
    static const char *sources[] = {"none", "list", "zset"};
    double dead_timeout = o->dead_timeout > 0 ? o->dead_timeout : HH_DEAD_TIMEOUT;
    long max_jobs = o->dead_max_jobs > 0 ? o->dead_max_jobs : HH_DEAD_MAX_JOBS;
    char score[32], cutoff[32], maxrank[32];
    hh_fmt_double(score, sizeof(score), o->score);
    hh_fmt_double(cutoff, sizeof(cutoff), o->score - dead_timeout);
    snprintf(maxrank, sizeof(maxrank), "%ld", -max_jobs);
    sds target = hh_key(k, o->mode == HH_OUTCOME_RETRY ? HH_K_RETRY : HH_K_DEAD);
    const char *src = o->source == HH_SOURCE_NONE ? target : o->source_key;
    const char *keys[2] = {src, target};
    size_t klen[2] = {strlen(src), sdslen(target)};
    const char *member = o->member ? o->member : "";
    const char *entry = o->entry ? o->entry : "";
    const char *args[7] = {member, entry, score, modes[o->mode], cutoff, maxrank, sources[o->source]};
    size_t alen[7] = {o->member ? o->member_len : 0, o->entry ? o->entry_len : 0, strlen(score),
                      strlen(modes[o->mode]), strlen(cutoff), strlen(maxrank), strlen(sources[o->source])};
    redisReply *r = hh_conn_eval(c, HH_SCRIPT_OUTCOME, 2, keys, klen, 7, args, alen);
    sdsfree(target);
    int rc = -1;
    if (!r) {
        snprintf(why, whylen, "%s", c->last_error[0] ? c->last_error : "connection lost");
    } else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        rc = (int)r->integer;
    } else {
        snprintf(why, whylen, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply to the outcome script");
    }
    if (r) freeReplyObject(r);
    return rc;
}
