/* scripts.h -- every Lua script hiredhand runs, in one place. Each takes all
 * its keys through KEYS (already namespaced by keys.c, never prefixed here)
 * and is called with EVALSHA by redis.c, reloaded on NOSCRIPT. */
#ifndef HH_SCRIPTS_H
#define HH_SCRIPTS_H

typedef enum hh_script_id {
    HH_SCRIPT_FETCH = 0,   /* reliable fetch over several queues */
    HH_SCRIPT_ENQUEUE_DUE, /* scheduler: move one due member, once */
    HH_SCRIPT_REQUEUE,     /* in-progress -> front of its queue, once */
    HH_SCRIPT_KILL_FROM,   /* in-progress -> dead set (with trims), once */
    HH_SCRIPT_RECOVER,     /* orphan -> queue, counted; poison pill -> dead */
    HH_SCRIPT_COUNT
} hh_script_id;

/* KEYS: queue:<q1>, inprogress(q1), queue:<q2>, inprogress(q2), ... in
 * configuration order. ARGV[1]: "1" to use LMOVE (Redis >= 6.2), else
 * RPOPLPUSH. ARGV[2..]: one entry per job wanted, each the order in which to
 * try the queues for that job ("2,1,3", 1-based), so weighted order is drawn
 * per job as Sidekiq draws it per BRPOP. Moves each job atomically and
 * returns {queue index, payload, ...}, or false when every queue is empty
 * (found with one EXISTS, so an idle poll costs one command, not one per
 * queue). */
#define HH_LUA_FETCH                                                          \
    "local lmove = ARGV[1] == '1'\n"                                          \
    "local queues = {}\n"                                                     \
    "for i = 1, #KEYS, 2 do queues[#queues+1] = KEYS[i] end\n"                \
    "if redis.call('EXISTS', unpack(queues)) == 0 then return false end\n"    \
    "local out = {}\n"                                                        \
    "for j = 2, #ARGV do\n"                                                   \
    "  local got = false\n"                                                   \
    "  for idx in string.gmatch(ARGV[j], '%d+') do\n"                         \
    "    local i = tonumber(idx)\n"                                           \
    "    local v\n"                                                           \
    "    if lmove then v = redis.call('LMOVE', KEYS[2*i-1], KEYS[2*i], 'RIGHT', 'LEFT')\n" \
    "    else v = redis.call('RPOPLPUSH', KEYS[2*i-1], KEYS[2*i]) end\n"      \
    "    if v then\n"                                                         \
    "      out[#out+1] = i\n"                                                 \
    "      out[#out+1] = v\n"                                                 \
    "      got = true\n"                                                      \
    "      break\n"                                                           \
    "    end\n"                                                               \
    "  end\n"                                                                 \
    "  if not got then break end\n"                                           \
    "end\n"                                                                   \
    "if #out > 0 then return out end\n"                                       \
    "return false\n"

/* KEYS: the sorted set, queues, queue:<q>. ARGV: member, new payload, queue
 * name. Pushes the new payload only if this caller removed the member, so
 * two schedulers never enqueue one job twice (Sidekiq 6.4's scheduler pops
 * and pushes in two steps; this closes the gap). Returns 1 or 0. */
#define HH_LUA_ENQUEUE_DUE                                                    \
    "if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then\n"                     \
    "  redis.call('SADD', KEYS[2], ARGV[3])\n"                                \
    "  redis.call('LPUSH', KEYS[3], ARGV[2])\n"                               \
    "  return 1\n"                                                            \
    "end\n"                                                                   \
    "return 0\n"

/* KEYS: in-progress list, queue:<q>. ARGV: exact payload. Removes one copy
 * and pushes it to the queue's tail (runs next, spec §4.7) only if it was
 * still there: two recoverers never requeue one job twice. Returns 1 or 0. */
#define HH_LUA_REQUEUE                                                        \
    "if redis.call('LREM', KEYS[1], -1, ARGV[1]) > 0 then\n"                  \
    "  redis.call('RPUSH', KEYS[2], ARGV[1])\n"                               \
    "  return 1\n"                                                            \
    "end\n"                                                                   \
    "return 0\n"

/* KEYS: in-progress list, dead. ARGV: exact payload, dead entry, score
 * (now), cutoff score (now - dead_timeout), -max_jobs. Moves the job to the
 * dead set with Sidekiq's trims (spec §6.4) only if it was still in the
 * list. Returns 1 or 0. */
#define HH_LUA_KILL_FROM                                                      \
    "if redis.call('LREM', KEYS[1], -1, ARGV[1]) > 0 then\n"                  \
    "  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])\n"                       \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])\n"            \
    "  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, ARGV[5])\n"                  \
    "  return 1\n"                                                            \
    "end\n"                                                                   \
    "return 0\n"

/* KEYS: in-progress list, queue:<q>, recovery counter (hiredhand:recoveries:
 * <jid>), dead, the owner's heartbeat hash <identity>. ARGV: exact payload,
 * max recoveries (0: no limit), dead entry, score (now), cutoff score,
 * -max_jobs, counter TTL seconds, "1" to take the job only while the owner's
 * hash does not exist ("0" at boot, for this process's own identity).
 * Only the caller that removes the job counts the recovery, so racing
 * recoverers never count one twice; an owner that beat again (it was only
 * paused) keeps every job not yet taken, so its own check after that beat
 * sees every recovery there will be. Returns {1, count} requeued (to the
 * tail: runs next), {2, count} moved to the dead set as a poison pill,
 * {0, 0} when it was gone, {3, 0} when the owner is alive again. */
#define HH_LUA_RECOVER                                                        \
    "if ARGV[8] == '1' and redis.call('EXISTS', KEYS[5]) == 1 then return {3, 0} end\n" \
    "if redis.call('LREM', KEYS[1], -1, ARGV[1]) == 0 then return {0, 0} end\n" \
    "local n = redis.call('INCR', KEYS[3])\n"                                 \
    "redis.call('EXPIRE', KEYS[3], ARGV[7])\n"                                \
    "local max = tonumber(ARGV[2])\n"                                         \
    "if max > 0 and n > max then\n"                                           \
    "  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[3])\n"                       \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[5])\n"            \
    "  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, ARGV[6])\n"                  \
    "  return {2, n}\n"                                                       \
    "end\n"                                                                   \
    "redis.call('RPUSH', KEYS[2], ARGV[1])\n"                                 \
    "return {1, n}\n"

#endif
