/* unique_lua.h -- sidekiq-unique-jobs 8.1.0's Lua scripts that its server side
 * runs (queue, lock, unlock, delete_by_digest), with its shared/_common.lua
 * partial inlined where the gem's template includes it. Adapted only to fit a
 * C string: comment lines, blank lines and the single-line log_debug calls
 * (no-ops unless the gem's debug_lua is on; hiredhand passes it off) are left
 * out; every Redis command is the gem's, in its order, so a Ruby process and
 * hiredhand apply one lock's steps identically. Only unique.c runs them
 * (through redis.c's EVALSHA), with the KEYS and ARGV the gem's Locksmith
 * and Digests pass.
 *
 * The scripts are the gem's, under its license:
 *
 * The MIT License (MIT)
 *
 * Copyright (c) 2017 Mikael Henriksson
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
 * THE SOFTWARE.
 */
#ifndef HH_UNIQUE_LUA_H
#define HH_UNIQUE_LUA_H

/* queue.lua */
#define HH_LUA_UNIQUE_QUEUE                                                                                                                                     \
    "local digest    = KEYS[1]\n"                                                                                                                               \
    "local queued    = KEYS[2]\n"                                                                                                                               \
    "local primed    = KEYS[3]\n"                                                                                                                               \
    "local locked    = KEYS[4]\n"                                                                                                                               \
    "local info      = KEYS[5]\n"                                                                                                                               \
    "local changelog = KEYS[6]\n"                                                                                                                               \
    "local digests   = KEYS[7]\n"                                                                                                                               \
    "local job_id     = ARGV[1]      -- The job_id that was previously primed\n"                                                                                \
    "local pttl       = tonumber(ARGV[2])\n"                                                                                                                    \
    "local lock_type  = ARGV[3]\n"                                                                                                                              \
    "local limit      = tonumber(ARGV[4])\n"                                                                                                                    \
    "local lock_score = ARGV[5]\n"                                                                                                                              \
    "local current_time = tonumber(ARGV[6])\n"                                                                                                                  \
    "local debug_lua    = tostring(ARGV[7]) == \"1\"\n"                                                                                                         \
    "local max_history  = tonumber(ARGV[8])\n"                                                                                                                  \
    "local script_name  = tostring(ARGV[9]) .. \".lua\"\n"                                                                                                      \
    "local function toversion(version)\n"                                                                                                                       \
    "  local _, _, maj, min, pat = string.find(version, \"(%d+)%.(%d+)%.(%d+)\")\n"                                                                             \
    "  return {\n"                                                                                                                                              \
    "    [\"version\"] = version,\n"                                                                                                                            \
    "    [\"major\"]   = tonumber(maj),\n"                                                                                                                      \
    "    [\"minor\"]   = tonumber(min),\n"                                                                                                                      \
    "    [\"patch\"]   = tonumber(pat)\n"                                                                                                                       \
    "  }\n"                                                                                                                                                     \
    "end\n"                                                                                                                                                     \
    "local function log_debug( ... )\n"                                                                                                                         \
    "  if debug_lua ~= true then return end\n"                                                                                                                  \
    "  local args = {...}\n"                                                                                                                                    \
    "  local result = \"\"\n"                                                                                                                                   \
    "  for _,v in ipairs(args) do\n"                                                                                                                            \
    "    result = result .. \" \" .. tostring(v)\n"                                                                                                             \
    "  end\n"                                                                                                                                                   \
    "  redis.log(redis.LOG_DEBUG, script_name .. \" -\" ..  result)\n"                                                                                          \
    "end\n"                                                                                                                                                     \
    "local function log(message, prev_jid)\n"                                                                                                                   \
    "  if not max_history or max_history == 0 then return end\n"                                                                                                \
    "  local entry = cjson.encode({digest = digest, job_id = job_id, script = script_name, message = message, time = current_time, prev_jid = prev_jid })\n"    \
    "  log_debug(\"ZADD\", changelog, current_time, entry);\n"                                                                                                  \
    "  redis.call(\"ZADD\", changelog, current_time, entry);\n"                                                                                                 \
    "  local total_entries = redis.call(\"ZCARD\", changelog)\n"                                                                                                \
    "  local removed_entries = redis.call(\"ZREMRANGEBYRANK\", changelog, 0, -1 * max_history)\n"                                                               \
    "  if removed_entries > 0 then\n"                                                                                                                           \
    "    log_debug(\"Removing\", removed_entries , \"entries from changelog (total entries\", total_entries, \"exceeds max_history:\", max_history ..\")\");\n" \
    "  end\n"                                                                                                                                                   \
    "  log_debug(\"PUBLISH\", changelog, entry);\n"                                                                                                             \
    "  redis.call(\"PUBLISH\", changelog, entry);\n"                                                                                                            \
    "end\n"                                                                                                                                                     \
    "if redis.call(\"HEXISTS\", locked, job_id) == 1 then\n"                                                                                                    \
    "  log(\"Duplicate\")\n"                                                                                                                                    \
    "  return job_id\n"                                                                                                                                         \
    "end\n"                                                                                                                                                     \
    "local set_result = redis.call(\"SET\", digest, job_id, \"NX\")\n"                                                                                          \
    "if set_result then\n"                                                                                                                                      \
    "else\n"                                                                                                                                                    \
    "  local prev_jid = redis.call(\"GET\", digest)\n"                                                                                                          \
    "  if prev_jid == job_id then\n"                                                                                                                            \
    "    log(\"Duplicate\")\n"                                                                                                                                  \
    "    return job_id\n"                                                                                                                                       \
    "  else\n"                                                                                                                                                  \
    "    local locked_count = redis.call(\"HLEN\", locked)\n"                                                                                                   \
    "    local queued_count = redis.call(\"LLEN\", queued)\n"                                                                                                   \
    "    if limit > locked_count and queued_count < limit then\n"                                                                                               \
    "      redis.call(\"SET\", digest, job_id)\n"                                                                                                               \
    "    else\n"                                                                                                                                                \
    "      log(\"Limit exceeded\", prev_jid)\n"                                                                                                                 \
    "      return prev_jid\n"                                                                                                                                   \
    "    end\n"                                                                                                                                                 \
    "  end\n"                                                                                                                                                   \
    "end\n"                                                                                                                                                     \
    "redis.call(\"LPUSH\", queued, job_id)\n"                                                                                                                   \
    "if pttl and pttl > 0 then\n"                                                                                                                               \
    "  redis.call(\"PEXPIRE\", digest, pttl)\n"                                                                                                                 \
    "  redis.call(\"PEXPIRE\", queued, pttl)\n"                                                                                                                 \
    "end\n"                                                                                                                                                     \
    "log(\"Queued\")\n"                                                                                                                                         \
    "return job_id\n"

/* lock.lua */
#define HH_LUA_UNIQUE_LOCK                                                                                                                                      \
    "local digest           = KEYS[1]\n"                                                                                                                        \
    "local queued           = KEYS[2]\n"                                                                                                                        \
    "local primed           = KEYS[3]\n"                                                                                                                        \
    "local locked           = KEYS[4]\n"                                                                                                                        \
    "local info             = KEYS[5]\n"                                                                                                                        \
    "local changelog        = KEYS[6]\n"                                                                                                                        \
    "local digests          = KEYS[7]\n"                                                                                                                        \
    "local expiring_digests = KEYS[8]\n"                                                                                                                        \
    "local job_id       = ARGV[1]\n"                                                                                                                            \
    "local pttl         = tonumber(ARGV[2])\n"                                                                                                                  \
    "local lock_type    = ARGV[3]\n"                                                                                                                            \
    "local limit        = tonumber(ARGV[4])\n"                                                                                                                  \
    "local lock_score   = ARGV[5]\n"                                                                                                                            \
    "local current_time = tonumber(ARGV[6])\n"                                                                                                                  \
    "local debug_lua    = tostring(ARGV[7]) == \"1\"\n"                                                                                                         \
    "local max_history  = tonumber(ARGV[8])\n"                                                                                                                  \
    "local script_name  = tostring(ARGV[9]) .. \".lua\"\n"                                                                                                      \
    "local redisversion = ARGV[10]\n"                                                                                                                           \
    "local function toversion(version)\n"                                                                                                                       \
    "  local _, _, maj, min, pat = string.find(version, \"(%d+)%.(%d+)%.(%d+)\")\n"                                                                             \
    "  return {\n"                                                                                                                                              \
    "    [\"version\"] = version,\n"                                                                                                                            \
    "    [\"major\"]   = tonumber(maj),\n"                                                                                                                      \
    "    [\"minor\"]   = tonumber(min),\n"                                                                                                                      \
    "    [\"patch\"]   = tonumber(pat)\n"                                                                                                                       \
    "  }\n"                                                                                                                                                     \
    "end\n"                                                                                                                                                     \
    "local function log_debug( ... )\n"                                                                                                                         \
    "  if debug_lua ~= true then return end\n"                                                                                                                  \
    "  local args = {...}\n"                                                                                                                                    \
    "  local result = \"\"\n"                                                                                                                                   \
    "  for _,v in ipairs(args) do\n"                                                                                                                            \
    "    result = result .. \" \" .. tostring(v)\n"                                                                                                             \
    "  end\n"                                                                                                                                                   \
    "  redis.log(redis.LOG_DEBUG, script_name .. \" -\" ..  result)\n"                                                                                          \
    "end\n"                                                                                                                                                     \
    "local function log(message, prev_jid)\n"                                                                                                                   \
    "  if not max_history or max_history == 0 then return end\n"                                                                                                \
    "  local entry = cjson.encode({digest = digest, job_id = job_id, script = script_name, message = message, time = current_time, prev_jid = prev_jid })\n"    \
    "  log_debug(\"ZADD\", changelog, current_time, entry);\n"                                                                                                  \
    "  redis.call(\"ZADD\", changelog, current_time, entry);\n"                                                                                                 \
    "  local total_entries = redis.call(\"ZCARD\", changelog)\n"                                                                                                \
    "  local removed_entries = redis.call(\"ZREMRANGEBYRANK\", changelog, 0, -1 * max_history)\n"                                                               \
    "  if removed_entries > 0 then\n"                                                                                                                           \
    "    log_debug(\"Removing\", removed_entries , \"entries from changelog (total entries\", total_entries, \"exceeds max_history:\", max_history ..\")\");\n" \
    "  end\n"                                                                                                                                                   \
    "  log_debug(\"PUBLISH\", changelog, entry);\n"                                                                                                             \
    "  redis.call(\"PUBLISH\", changelog, entry);\n"                                                                                                            \
    "end\n"                                                                                                                                                     \
    "if redis.call(\"HEXISTS\", locked, job_id) == 1 then\n"                                                                                                    \
    "  log(\"Duplicate\")\n"                                                                                                                                    \
    "  if limit <= 1 then\n"                                                                                                                                    \
    "    redis.call(\"UNLINK\", queued, primed)\n"                                                                                                              \
    "  else\n"                                                                                                                                                  \
    "    redis.call(\"LREM\", queued, -1, job_id)\n"                                                                                                            \
    "    redis.call(\"LREM\", primed, 1, job_id)\n"                                                                                                             \
    "  end\n"                                                                                                                                                   \
    "  return job_id\n"                                                                                                                                         \
    "end\n"                                                                                                                                                     \
    "local locked_count   = redis.call(\"HLEN\", locked)\n"                                                                                                     \
    "local within_limit   = limit > locked_count\n"                                                                                                             \
    "local limit_exceeded = not within_limit\n"                                                                                                                 \
    "if limit_exceeded then\n"                                                                                                                                  \
    "  log(\"Limited\")\n"                                                                                                                                      \
    "  return nil\n"                                                                                                                                            \
    "end\n"                                                                                                                                                     \
    "if lock_type == \"until_expired\" and pttl and pttl > 0 then\n"                                                                                            \
    "  redis.call(\"ZADD\", expiring_digests, current_time + pttl, digest)\n"                                                                                   \
    "else\n"                                                                                                                                                    \
    "  local score\n"                                                                                                                                           \
    "  if #lock_score == 0 then\n"                                                                                                                              \
    "    score = current_time\n"                                                                                                                                \
    "  else\n"                                                                                                                                                  \
    "    score = lock_score\n"                                                                                                                                  \
    "  end\n"                                                                                                                                                   \
    "  redis.call(\"ZADD\", digests, score, digest)\n"                                                                                                          \
    "end\n"                                                                                                                                                     \
    "redis.call(\"HSET\", locked, job_id, current_time)\n"                                                                                                      \
    "if limit <= 1 then\n"                                                                                                                                      \
    "  redis.call(\"UNLINK\", queued, primed)\n"                                                                                                                \
    "else\n"                                                                                                                                                    \
    "  redis.call(\"LREM\", primed, 1, job_id)\n"                                                                                                               \
    "  redis.call(\"LREM\", queued, -1, job_id)\n"                                                                                                              \
    "end\n"                                                                                                                                                     \
    "if pttl and pttl > 0 then\n"                                                                                                                               \
    "  redis.call(\"PEXPIRE\", digest, pttl)\n"                                                                                                                 \
    "  redis.call(\"PEXPIRE\", locked, pttl)\n"                                                                                                                 \
    "  redis.call(\"PEXPIRE\", info, pttl)\n"                                                                                                                   \
    "end\n"                                                                                                                                                     \
    "log(\"Locked\")\n"                                                                                                                                         \
    "return job_id\n"

/* unlock.lua */
#define HH_LUA_UNIQUE_UNLOCK                                                                                                                                    \
    "local digest    = KEYS[1]\n"                                                                                                                               \
    "local queued    = KEYS[2]\n"                                                                                                                               \
    "local primed    = KEYS[3]\n"                                                                                                                               \
    "local locked    = KEYS[4]\n"                                                                                                                               \
    "local info      = KEYS[5]\n"                                                                                                                               \
    "local changelog = KEYS[6]\n"                                                                                                                               \
    "local digests   = KEYS[7]\n"                                                                                                                               \
    "local job_id     = ARGV[1]\n"                                                                                                                              \
    "local pttl       = tonumber(ARGV[2])\n"                                                                                                                    \
    "local lock_type  = ARGV[3]\n"                                                                                                                              \
    "local limit      = tonumber(ARGV[4])\n"                                                                                                                    \
    "local lock_score = ARGV[5]\n"                                                                                                                              \
    "local has_sync_flag = #ARGV > 10\n"                                                                                                                        \
    "local sync_locked   = has_sync_flag and tonumber(ARGV[6]) == 1\n"                                                                                          \
    "local arg_offset    = has_sync_flag and 1 or 0\n"                                                                                                          \
    "local current_time = tonumber(ARGV[6 + arg_offset])\n"                                                                                                     \
    "local debug_lua    = tostring(ARGV[7 + arg_offset]) == \"1\"\n"                                                                                            \
    "local max_history  = tonumber(ARGV[8 + arg_offset])\n"                                                                                                     \
    "local script_name  = tostring(ARGV[9 + arg_offset]) .. \".lua\"\n"                                                                                         \
    "local redisversion = ARGV[10 + arg_offset]\n"                                                                                                              \
    "local function toversion(version)\n"                                                                                                                       \
    "  local _, _, maj, min, pat = string.find(version, \"(%d+)%.(%d+)%.(%d+)\")\n"                                                                             \
    "  return {\n"                                                                                                                                              \
    "    [\"version\"] = version,\n"                                                                                                                            \
    "    [\"major\"]   = tonumber(maj),\n"                                                                                                                      \
    "    [\"minor\"]   = tonumber(min),\n"                                                                                                                      \
    "    [\"patch\"]   = tonumber(pat)\n"                                                                                                                       \
    "  }\n"                                                                                                                                                     \
    "end\n"                                                                                                                                                     \
    "local function log_debug( ... )\n"                                                                                                                         \
    "  if debug_lua ~= true then return end\n"                                                                                                                  \
    "  local args = {...}\n"                                                                                                                                    \
    "  local result = \"\"\n"                                                                                                                                   \
    "  for _,v in ipairs(args) do\n"                                                                                                                            \
    "    result = result .. \" \" .. tostring(v)\n"                                                                                                             \
    "  end\n"                                                                                                                                                   \
    "  redis.log(redis.LOG_DEBUG, script_name .. \" -\" ..  result)\n"                                                                                          \
    "end\n"                                                                                                                                                     \
    "local function log(message, prev_jid)\n"                                                                                                                   \
    "  if not max_history or max_history == 0 then return end\n"                                                                                                \
    "  local entry = cjson.encode({digest = digest, job_id = job_id, script = script_name, message = message, time = current_time, prev_jid = prev_jid })\n"    \
    "  log_debug(\"ZADD\", changelog, current_time, entry);\n"                                                                                                  \
    "  redis.call(\"ZADD\", changelog, current_time, entry);\n"                                                                                                 \
    "  local total_entries = redis.call(\"ZCARD\", changelog)\n"                                                                                                \
    "  local removed_entries = redis.call(\"ZREMRANGEBYRANK\", changelog, 0, -1 * max_history)\n"                                                               \
    "  if removed_entries > 0 then\n"                                                                                                                           \
    "    log_debug(\"Removing\", removed_entries , \"entries from changelog (total entries\", total_entries, \"exceeds max_history:\", max_history ..\")\");\n" \
    "  end\n"                                                                                                                                                   \
    "  log_debug(\"PUBLISH\", changelog, entry);\n"                                                                                                             \
    "  redis.call(\"PUBLISH\", changelog, entry);\n"                                                                                                            \
    "end\n"                                                                                                                                                     \
    "if sync_locked and limit <= 1 then\n"                                                                                                                      \
    "  if lock_type ~= \"until_expired\" then\n"                                                                                                                \
    "    redis.call(\"UNLINK\", digest, info, locked, primed)\n"                                                                                                \
    "    redis.call(\"ZREM\", digests, digest)\n"                                                                                                               \
    "  else\n"                                                                                                                                                  \
    "    redis.call(\"ZREM\", digests, digest)\n"                                                                                                               \
    "  end\n"                                                                                                                                                   \
    "  log(\"Unlocked\")\n"                                                                                                                                     \
    "  return job_id\n"                                                                                                                                         \
    "end\n"                                                                                                                                                     \
    "local holds_lock = redis.call(\"HEXISTS\", locked, job_id) == 1\n"                                                                                         \
    "if not holds_lock then\n"                                                                                                                                  \
    "  redis.call(\"LREM\", queued, -1, job_id)\n"                                                                                                              \
    "  redis.call(\"LREM\", primed, -1, job_id)\n"                                                                                                              \
    "end\n"                                                                                                                                                     \
    "if not holds_lock then\n"                                                                                                                                  \
    "  local queued_count = redis.call(\"LLEN\", queued)\n"                                                                                                     \
    "  local primed_count = redis.call(\"LLEN\", primed)\n"                                                                                                     \
    "  local locked_count = redis.call(\"HLEN\", locked)\n"                                                                                                     \
    "  if queued_count == 0 and primed_count == 0 and locked_count == 0 then\n"                                                                                 \
    "  else\n"                                                                                                                                                  \
    "    log(\"Yielding to other lock holders\")\n"                                                                                                             \
    "    return nil\n"                                                                                                                                          \
    "  end\n"                                                                                                                                                   \
    "end\n"                                                                                                                                                     \
    "if lock_type ~= \"until_expired\" then\n"                                                                                                                  \
    "  redis.call(\"HDEL\", locked, job_id)\n"                                                                                                                  \
    "  if limit and limit > 1 then\n"                                                                                                                           \
    "    local locked_count = redis.call(\"HLEN\", locked)\n"                                                                                                   \
    "    redis.call(\"UNLINK\", digest, info)\n"                                                                                                                \
    "    if locked_count < 1 then\n"                                                                                                                            \
    "      redis.call(\"UNLINK\", locked, primed)\n"                                                                                                            \
    "      redis.call(\"ZREM\", digests, digest)\n"                                                                                                             \
    "    elseif redis.call(\"LLEN\", primed) == 0 then\n"                                                                                                       \
    "      redis.call(\"UNLINK\", primed)\n"                                                                                                                    \
    "    end\n"                                                                                                                                                 \
    "  else\n"                                                                                                                                                  \
    "    redis.call(\"UNLINK\", digest, info, locked, primed)\n"                                                                                                \
    "    redis.call(\"ZREM\", digests, digest)\n"                                                                                                               \
    "  end\n"                                                                                                                                                   \
    "else\n"                                                                                                                                                    \
    "  redis.call(\"ZREM\", digests, digest)\n"                                                                                                                 \
    "end\n"                                                                                                                                                     \
    "redis.call(\"LPUSH\", queued, \"1\")\n"                                                                                                                    \
    "redis.call(\"PEXPIRE\", queued, 5000)\n"                                                                                                                   \
    "log(\"Unlocked\")\n"                                                                                                                                       \
    "return job_id\n"

/* delete_by_digest.lua */
#define HH_LUA_UNIQUE_DELETE_BY_DIGEST                                                                                                                          \
    "local digest     = KEYS[1]\n"                                                                                                                              \
    "local queued     = KEYS[2]\n"                                                                                                                              \
    "local primed     = KEYS[3]\n"                                                                                                                              \
    "local locked     = KEYS[4]\n"                                                                                                                              \
    "local run_digest = KEYS[5]\n"                                                                                                                              \
    "local run_queued = KEYS[6]\n"                                                                                                                              \
    "local run_primed = KEYS[7]\n"                                                                                                                              \
    "local run_locked = KEYS[8]\n"                                                                                                                              \
    "local digests    = KEYS[9]\n"                                                                                                                              \
    "local current_time = tonumber(ARGV[1])\n"                                                                                                                  \
    "local debug_lua    = tostring(ARGV[2]) == \"1\"\n"                                                                                                         \
    "local max_history  = tonumber(ARGV[3])\n"                                                                                                                  \
    "local script_name  = tostring(ARGV[4]) .. \".lua\"\n"                                                                                                      \
    "local redisversion = tostring(ARGV[5])\n"                                                                                                                  \
    "local function toversion(version)\n"                                                                                                                       \
    "  local _, _, maj, min, pat = string.find(version, \"(%d+)%.(%d+)%.(%d+)\")\n"                                                                             \
    "  return {\n"                                                                                                                                              \
    "    [\"version\"] = version,\n"                                                                                                                            \
    "    [\"major\"]   = tonumber(maj),\n"                                                                                                                      \
    "    [\"minor\"]   = tonumber(min),\n"                                                                                                                      \
    "    [\"patch\"]   = tonumber(pat)\n"                                                                                                                       \
    "  }\n"                                                                                                                                                     \
    "end\n"                                                                                                                                                     \
    "local function log_debug( ... )\n"                                                                                                                         \
    "  if debug_lua ~= true then return end\n"                                                                                                                  \
    "  local args = {...}\n"                                                                                                                                    \
    "  local result = \"\"\n"                                                                                                                                   \
    "  for _,v in ipairs(args) do\n"                                                                                                                            \
    "    result = result .. \" \" .. tostring(v)\n"                                                                                                             \
    "  end\n"                                                                                                                                                   \
    "  redis.log(redis.LOG_DEBUG, script_name .. \" -\" ..  result)\n"                                                                                          \
    "end\n"                                                                                                                                                     \
    "local function log(message, prev_jid)\n"                                                                                                                   \
    "  if not max_history or max_history == 0 then return end\n"                                                                                                \
    "  local entry = cjson.encode({digest = digest, job_id = job_id, script = script_name, message = message, time = current_time, prev_jid = prev_jid })\n"    \
    "  log_debug(\"ZADD\", changelog, current_time, entry);\n"                                                                                                  \
    "  redis.call(\"ZADD\", changelog, current_time, entry);\n"                                                                                                 \
    "  local total_entries = redis.call(\"ZCARD\", changelog)\n"                                                                                                \
    "  local removed_entries = redis.call(\"ZREMRANGEBYRANK\", changelog, 0, -1 * max_history)\n"                                                               \
    "  if removed_entries > 0 then\n"                                                                                                                           \
    "    log_debug(\"Removing\", removed_entries , \"entries from changelog (total entries\", total_entries, \"exceeds max_history:\", max_history ..\")\");\n" \
    "  end\n"                                                                                                                                                   \
    "  log_debug(\"PUBLISH\", changelog, entry);\n"                                                                                                             \
    "  redis.call(\"PUBLISH\", changelog, entry);\n"                                                                                                            \
    "end\n"                                                                                                                                                     \
    "local counter       = 0\n"                                                                                                                                 \
    "local redis_version = toversion(redisversion)\n"                                                                                                           \
    "counter = redis.call(\"UNLINK\", digest, queued, primed, locked, run_digest, run_queued, run_primed, run_locked)\n"                                        \
    "redis.call(\"ZREM\", digests, digest)\n"                                                                                                                   \
    "return counter\n"

#endif
