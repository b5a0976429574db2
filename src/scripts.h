/* scripts.h -- every Lua script hiredhand runs, in one place. Each takes all
 * its keys through KEYS (already namespaced by keys.c, never prefixed here)
 * and is called with EVALSHA by redis.c, reloaded on NOSCRIPT.
 *
 * Over maxmemory
 * --------------
 * A full Redis (maxmemory, noeviction) refuses every command flagged
 * denyoom (LPUSH, LMOVE, RPUSH, ZADD, HSET, SET...), and a plain script's
 * first such write. Running jobs is what frees memory, so the scripts that
 * only move a job from one list to another (or refresh a fixed-size hash)
 * must keep working there, or a full Redis never drains: they carry the
 * shebang HH_LUA_ALLOW_OOM (Redis 7 script flags), which lets the whole
 * script run over maxmemory. Those that grow the data set (retry and dead
 * entries, the scheduler's moves, recovery counters, job management) stay
 * plain, so Redis refuses them and the caller retries until it takes them
 * (docs/reliability.md). Redis before 7.0 knows no shebang: redis.c then
 * loads the same script without its first line (hh__script_source). */
#ifndef HH_SCRIPTS_H
#define HH_SCRIPTS_H

typedef enum hh__script_id {
    HH_SCRIPT_FETCH = 0,   /* reliable fetch over several queues */
    HH_SCRIPT_ENQUEUE_DUE, /* scheduler: move one due member, once */
    HH_SCRIPT_REQUEUE,     /* in-progress -> front of its queue, once */
    HH_SCRIPT_OUTCOME,     /* retry/dead entry written, then the job leaves its source */
    HH_SCRIPT_RECOVER,     /* orphan -> queue, counted; poison pill -> dead */
    HH_SCRIPT_ADMIN_MOVE,  /* job management: one set entry moved or deleted, once */
    HH_SCRIPT_LEASE,       /* heartbeat over maxmemory: our own hash kept alive */
    HH_SCRIPT_PUSH_BACK,   /* basic fetch: a job taken and not started, back to its queue */
    /* sidekiq-unique-jobs' own scripts (unique_lua.h, run by unique.c) */
    HH_SCRIPT_UNIQUE_QUEUE,  /* queue.lua: a lock's token queued */
    HH_SCRIPT_UNIQUE_LOCK,   /* lock.lua: the primed token locked */
    HH_SCRIPT_UNIQUE_UNLOCK, /* unlock.lua */
    HH_SCRIPT_UNIQUE_DELETE, /* delete_by_digest.lua: the death handler's */
    HH_SCRIPT_CRON_ENQUEUE,  /* cron.c: one tick of a periodic job, guard + push + bookkeeping */
    HH_SCRIPT_COUNT
} hh__script_id;

/* KEYS: queue:<q1>, inprogress(q1), queue:<q2>, inprogress(q2), ... for
 * the queues to try (fetch.c passes only those not known to be empty, and
 * only as many as the batch may need, so a call's cost follows the jobs it
 * moves, not the queue count); queue indexes below are positions in this
 * list. ARGV[1]: "1" or "0" (reliable fetch; the moves below need no
 * LMOVE, so any Redis takes them) or "b" (basic fetch: pop, no in-progress
 * list), followed by "x" to skip the EXISTS check below (the caller tries
 * only queues it has not seen empty). ARGV[2]: the jobs wanted. ARGV[3..]:
 * pairs (queue index, at most how many jobs from it), tried in order until
 * the jobs wanted are moved: strict order passes each queue with the whole
 * batch, weighted order passes the queues drawn for the batch with the
 * number of draws each got (fetch.c draws each job's queue as Sidekiq draws
 * it per BRPOP). Several jobs from one queue move oldest first in one step
 * (LRANGE of its oldest end, LPUSH onto its in-progress list in the order
 * one LMOVE per job would leave them, LTRIM), so their cost per job is a
 * few table entries, not a command; a single job moves with one LMOVE
 * (RPOPLPUSH before Redis 6.2; RPOP for basic fetch). Returns {{queues found empty}, queue index,
 * payload, ...} oldest first per queue (the caller leaves the empty ones
 * out of its next fetches: fetch.c), or false when nothing was moved, at
 * once when every queue is empty (found with one EXISTS per 1,000 queues,
 * so an idle poll costs one command, not one per queue; unpack() takes a
 * few thousand values at most). */
/* The first line of the scripts allowed over maxmemory (see above): a
 * Redis 7 shebang; "allow-oom" alone keeps every other default (a flagged
 * script is otherwise refused whole over maxmemory, even its RPOP). */
#define HH_LUA_ALLOW_OOM "#!lua flags=allow-oom\n"

#define HH_LUA_FETCH                                                              \
    HH_LUA_ALLOW_OOM                                                              \
    "local how = string.sub(ARGV[1], 1, 1)\n"                                     \
    "local any = string.sub(ARGV[1], 2, 2) == 'x'\n"                              \
    "if not any then\n"                                                           \
    "  local queues = {}\n"                                                       \
    "  for i = 1, #KEYS, 2 do queues[#queues+1] = KEYS[i] end\n"                  \
    "  for i = 1, #queues, 1000 do\n"                                             \
    "    local last = math.min(i + 999, #queues)\n"                               \
    "    if redis.call('EXISTS', unpack(queues, i, last)) > 0 then\n"             \
    "      any = true\n"                                                          \
    "      break\n"                                                               \
    "    end\n"                                                                   \
    "  end\n"                                                                     \
    "end\n"                                                                       \
    "if not any then return false end\n"                                          \
    "local left = tonumber(ARGV[2])\n"                                            \
    "local out, gone = {{}}, {}\n"                                                \
    "for j = 3, #ARGV - 1, 2 do\n"                                                \
    "  if left <= 0 then break end\n"                                             \
    "  local i = tonumber(ARGV[j])\n"                                             \
    "  local want = math.min(tonumber(ARGV[j+1]), left)\n"                        \
    "  local src, dst = KEYS[2*i-1], KEYS[2*i]\n"                                 \
    "  local n = 0\n"                                                             \
    "  if want == 1 then\n"                                                       \
    "    local v\n"                                                               \
    "    if how == '1' then v = redis.call('LMOVE', src, dst, 'RIGHT', 'LEFT')\n" \
    "    elseif how == 'b' then v = redis.call('RPOP', src)\n"                    \
    "    else v = redis.call('RPOPLPUSH', src, dst) end\n"                        \
    "    if v then\n"                                                             \
    "      n = 1\n"                                                               \
    "      out[#out+1] = i\n"                                                     \
    "      out[#out+1] = v\n"                                                     \
    "    end\n"                                                                   \
    "  else\n"                                                                    \
    "    local v = redis.call('LRANGE', src, -want, -1)\n"                        \
    "    n = #v\n"                                                                \
    "    if n > 0 then\n"                                                         \
    "      local old = {}\n"                                                      \
    "      for k = n, 1, -1 do\n"                                                 \
    "        old[#old+1] = v[k]\n"                                                \
    "        out[#out+1] = i\n"                                                   \
    "        out[#out+1] = v[k]\n"                                                \
    "      end\n"                                                                 \
    "      if how ~= 'b' then redis.call('LPUSH', dst, unpack(old)) end\n"        \
    "      redis.call('LTRIM', src, 0, -n-1)\n"                                   \
    "    end\n"                                                                   \
    "  end\n"                                                                     \
    "  left = left - n\n"                                                         \
    "  if n < want then gone[#gone+1] = i end\n"                                  \
    "end\n"                                                                       \
    "if #out > 1 then out[1] = gone return out end\n"                             \
    "return false\n"

/* Write first, remove last. Redis refuses a script's first write command
 * when it is over maxmemory (OOM) and then lets the rest through, and an
 * error reply (WRONGTYPE...) ends a script without undoing what it wrote:
 * so every script that moves a job does its denied-on-OOM write (LPUSH,
 * RPUSH, ZADD) first and removes the job from where it was last. A refused
 * write leaves the job where it was, to be tried again (docs/reliability.md). */

/* KEYS: the sorted set, queues, queue:<q>. ARGV: member, new payload, queue
 * name. Pushes the new payload and removes the member only if it is still
 * there, so two schedulers never enqueue one job twice (Sidekiq 6.4's
 * scheduler pops and pushes in two steps; this closes the gap). Returns 1 or
 * 0. */
#define HH_LUA_ENQUEUE_DUE                                              \
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n" \
    "redis.call('LPUSH', KEYS[3], ARGV[2])\n"                           \
    "redis.call('SADD', KEYS[2], ARGV[3])\n"                            \
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"                            \
    "return 1\n"

/* Whether the exact payload ARGV[1] is in the list KEYS[1]: LPOS from the
 * tail where Redis has it (6.0.6+), a scan of the list before (a failure
 * path only). */
#define HH_LUA_IN_LIST                                                  \
    "local function in_list(key, v)\n"                                  \
    "  local ok, pos = pcall(redis.call, 'LPOS', key, v, 'RANK', -1)\n" \
    "  if ok then return pos ~= false and pos ~= nil end\n"             \
    "  for _, e in ipairs(redis.call('LRANGE', key, 0, -1)) do\n"       \
    "    if e == v then return true end\n"                              \
    "  end\n"                                                           \
    "  return false\n"                                                  \
    "end\n"

/* A job's outcome in one atomic step. KEYS: source, target sorted set
 * (retry, dead or schedule). ARGV: [1] exact member in the source, [2] entry for the
 * target, [3] its score, [4] mode: "retry", "schedule", "dead" (with Sidekiq's trims:
 * [5] cutoff score, [6] -max_jobs) or "drop" (nothing written), [7] source
 * kind: "list" (an in-progress list), "zset" (a sorted set) or "none"
 * (basic fetch: the job is only in memory). Writes the entry first and
 * removes the member last, only if it was still in the source. Returns 1
 * written, 0 when the member was no longer there (nothing written). */
#define HH_LUA_OUTCOME                                                                    \
    HH_LUA_IN_LIST                                                                        \
    "local src, mode = ARGV[7], ARGV[4]\n"                                                \
    "if src == 'list' and not in_list(KEYS[1], ARGV[1]) then return 0 end\n"              \
    "if src == 'zset' and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n" \
    "if mode ~= 'drop' then\n"                                                            \
    "  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])\n"                                   \
    "  if mode == 'dead' then\n"                                                          \
    "    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])\n"                      \
    "    redis.call('ZREMRANGEBYRANK', KEYS[2], 0, ARGV[6])\n"                            \
    "  end\n"                                                                             \
    "end\n"                                                                               \
    "if src == 'list' then redis.call('LREM', KEYS[1], -1, ARGV[1]) end\n"                \
    "if src == 'zset' then redis.call('ZREM', KEYS[1], ARGV[1]) end\n"                    \
    "return 1\n"

/* KEYS: in-progress list, queue:<q>. ARGV: exact payload. Pushes it to the
 * queue's tail (runs next, as Sidekiq's own requeue does) and removes one
 * copy from the list, only if it was still there: two recoverers never
 * requeue one job twice. Returns 1 or 0. */
#define HH_LUA_REQUEUE                                     \
    HH_LUA_ALLOW_OOM                                       \
    HH_LUA_IN_LIST                                         \
    "if not in_list(KEYS[1], ARGV[1]) then return 0 end\n" \
    "redis.call('RPUSH', KEYS[2], ARGV[1])\n"              \
    "redis.call('LREM', KEYS[1], -1, ARGV[1])\n"           \
    "return 1\n"

/* KEYS: in-progress list, queue:<q>, recovery counter (hiredhand:recoveries:
 * <jid>), dead, the owner's heartbeat hash <identity>. ARGV: exact payload,
 * max recoveries (0: no limit), dead entry, score (now), cutoff score,
 * -max_jobs, counter TTL seconds, "1" to take the job only while the owner's
 * hash does not exist ("0" at boot, for this process's own identity).
 * Only the caller that finds the job counts the recovery, so racing
 * recoverers never count one twice; the push comes first and the removal
 * last, the counter (best effort) in between. An owner that beat again (it
 * was only paused) keeps every job not yet taken, so its own check after
 * that beat sees every recovery there will be. Returns {1, count} requeued
 * (to the tail: runs next), {2, count} moved to the dead set as a poison
 * pill, {0, 0} when it was gone, {3, 0} when the owner is alive again. */
#define HH_LUA_RECOVER                                                                  \
    HH_LUA_IN_LIST                                                                      \
    "if ARGV[8] == '1' and redis.call('EXISTS', KEYS[5]) == 1 then return {3, 0} end\n" \
    "if not in_list(KEYS[1], ARGV[1]) then return {0, 0} end\n"                         \
    "local okc, c = pcall(redis.call, 'GET', KEYS[3])\n"                                \
    "local n = (okc and tonumber(c) or 0) + 1\n"                                        \
    "local max = tonumber(ARGV[2])\n"                                                   \
    "local res = 1\n"                                                                   \
    "if max > 0 and n > max then\n"                                                     \
    "  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[3])\n"                                 \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[5])\n"                      \
    "  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, ARGV[6])\n"                            \
    "  res = 2\n"                                                                       \
    "else\n"                                                                            \
    "  redis.call('RPUSH', KEYS[2], ARGV[1])\n"                                         \
    "end\n"                                                                             \
    "pcall(redis.call, 'SET', KEYS[3], n, 'EX', ARGV[7])\n"                             \
    "redis.call('LREM', KEYS[1], -1, ARGV[1])\n"                                        \
    "return {res, n}\n"

/* KEYS: queue:<q>. ARGV: exact payload. Basic fetch's push back of a job
 * taken and not started (the stop, a batch larger than the threads left):
 * an RPUSH (runs next, as Sidekiq's requeue), allowed over maxmemory since
 * it only returns what the fetch just took. Returns the list's length. */
#define HH_LUA_PUSH_BACK \
    HH_LUA_ALLOW_OOM     \
    "return redis.call('RPUSH', KEYS[1], ARGV[1])\n"

/* The heartbeat's lease when Redis refuses the beat's transaction over
 * maxmemory. KEYS: our process hash <identity>, <identity>-signals. ARGV:
 * [1] our info (as the beat writes it), [2] TTL seconds, then field/value
 * pairs (beat, busy, quiet, rss, rtt_us: fixed-size values over fixed
 * fields, so the hash does not grow). Refreshes the hash only while it
 * exists and is still ours: one that expired, or that a newer process of
 * our identity wrote, is left to the next full beat, which tells both
 * apart (lease.c). EXPIRE comes first, so that without the shebang (Redis
 * before 7.0) the script's first write is one allowed over maxmemory and
 * the HSET after it goes through too. Pops one remote signal (quiet,
 * stop: RPOP only shrinks). Returns {1, signal or false}, or {0, false}. */
#define HH_LUA_LEASE                                           \
    HH_LUA_ALLOW_OOM                                           \
    "if redis.call('HGET', KEYS[1], 'info') ~= ARGV[1] then\n" \
    "  return {0, false}\n"                                    \
    "end\n"                                                    \
    "redis.call('EXPIRE', KEYS[1], ARGV[2])\n"                 \
    "redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"           \
    "return {1, redis.call('RPOP', KEYS[2])}\n"

/* ------------------------------------------------ job management (admin.c) */

/* One entry of a sorted set (schedule, retry, dead) retried, enqueued,
 * killed or deleted by an operator. KEYS: [1] the sorted set, [2] target
 * (queue:<q> or dead), [3] queues. ARGV: [1] exact member, [2] mode:
 * "queue" (LPUSH [3] to KEYS[2], SADD [4] to queues), "dead" (ZADD [3] with
 * score [5], then Sidekiq's trims: by score up to [6], by rank to [7] =
 * -max_jobs) or "drop" (only the removal). Acts only while the exact member
 * is in the set, and writes first, removes last (see above): two operators,
 * or an operator and the scheduler, never move one job twice, and a write
 * Redis refuses leaves it where it was. Returns 1 moved, 0 gone. */
#define HH_LUA_ADMIN_MOVE                                               \
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n" \
    "local mode = ARGV[2]\n"                                            \
    "if mode == 'queue' then\n"                                         \
    "  redis.call('LPUSH', KEYS[2], ARGV[3])\n"                         \
    "  redis.call('SADD', KEYS[3], ARGV[4])\n"                          \
    "elseif mode == 'dead' then\n"                                      \
    "  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[3])\n"                 \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[6])\n"      \
    "  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, ARGV[7])\n"            \
    "elseif mode ~= 'drop' then\n"                                      \
    "  return redis.error_reply('ERR admin move: unknown mode')\n"      \
    "end\n"                                                             \
    "redis.call('ZREM', KEYS[1], ARGV[1])\n"                            \
    "return 1\n"

/* One tick of a sidekiq-cron job, all of it or nothing (cron.c says why).
 * KEYS: the job's hash cron_job:...<name>, its <hash>:enqueued guard set,
 * its <hash>:jid_history list, queues, queue:<q>. ARGV: [1] guard score
 * (sidekiq-cron's tick.to_f.to_s) or "" for a run now without the guard,
 * [2] guard member (the tick as ISO 8601 UTC), [3] the payload, [4] the
 * queue name, [5] last_enqueue_time, [6] the jid_history entry, [7] the
 * last index the history keeps (size - 1), [8] the guard entries' cut-off
 * ("(<now - 24 h>"), [9] "1": only if the job is enabled. Returns 1 when
 * pushed, 0 when the tick was already taken (by any process, Ruby or
 * hiredhand), -1 when the job is gone, -2 when it is disabled. Plain
 * script: it grows the data set, so a full Redis refuses it whole. */
#define HH_LUA_CRON_ENQUEUE                                                           \
    "local st = redis.call('HGET', KEYS[1], 'status')\n"                              \
    "if not st then\n"                                                                \
    "  if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end\n"                    \
    "  st = 'enabled'\n"                                                              \
    "end\n"                                                                           \
    "if ARGV[9] == '1' and st ~= 'enabled' then return -2 end\n"                      \
    "if ARGV[1] ~= '' then\n"                                                         \
    "  if redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end\n"     \
    "end\n"                                                                           \
    "redis.call('SADD', KEYS[4], ARGV[4])\n"                                          \
    "redis.call('LPUSH', KEYS[5], ARGV[3])\n"                                         \
    "redis.call('HSET', KEYS[1], 'last_enqueue_time', ARGV[5])\n"                     \
    "redis.call('LPUSH', KEYS[3], ARGV[6])\n"                                         \
    "redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[7]))\n"                            \
    "if ARGV[1] ~= '' then redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, ARGV[8]) end\n" \
    "return 1\n"

#endif
