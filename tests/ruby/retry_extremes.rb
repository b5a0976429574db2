# Used by test_retry_extremes.sh: retry counts and limits at their extremes.
#   push        -> LPUSHes one FailWorker job per case below (raw JSON, so "retry" and
#                  "retry_count" are exactly the pushed tokens); name => jid in test:jobs
#   count       -> prints how many cases there are
#   dump        -> prints one JSON line: for every case, where its failure went and how:
#                  {"name": {"set": "retry"|"dead"|"none", "retry_count": the JSON token written
#                  (text, so 4 and 4.0 differ), "delay": score - (retried_at or failed_at),
#                  "score_finite": true|false, "stamp": "retried_at"|"failed_at"}}
#   compare A B -> A and B are two dump lines (hiredhand's, Sidekiq's): checks that every case
#                  went to the same set with the same retry_count token and a delay that
#                  Sidekiq 6.4's formula allows for it (count**4 + 15 + rand(10) * (count + 1))
require_relative "helper"

CASES = {
  "string3" => { "retry" => true, "retry_count" => "3" },
  "float3" => { "retry" => true, "retry_count" => 3.0 },
  "u32max" => { "retry" => 9_000_000_000_000_000_000, "retry_count" => 4_294_967_295 },
  "huge" => { "retry" => 9_000_000_000_000_000_000, "retry_count" => 9_000_000_000_000_000_000 }
}.freeze
# cases 6.4 cannot retry (its `retry_count += 1` raises): name => retry_count token hiredhand keeps
KEPT_DEAD = { "string3" => '"3"' }.freeze

# the JSON token of a top-level key, as written (4 and 4.0 are different tokens)
def token(raw, key)
  raw[/"#{key}":(-?[0-9][0-9.eE+-]*|"[^"]*"|true|false|null)/, 1]
end

def dump
  out = {}
  CASES.each_key do |name|
    jid = redis.hget("test:jobs", name)
    found = nil
    %w[retry dead].each do |set|
      redis.zrange(set, 0, -1, with_scores: true).each do |raw, score|
        next unless JSON.parse(raw)["jid"] == jid
        found = [set, raw, score]
      end
    end
    unless found
      out[name] = { "set" => "none" }
      next
    end
    set, raw, score = found
    item = JSON.parse(raw)
    stamp = item.key?("retried_at") ? "retried_at" : "failed_at"
    out[name] = { "set" => set, "retry_count" => token(raw, "retry_count"),
                  "score_finite" => score.finite?, "stamp" => stamp,
                  "delay" => score - item[stamp].to_f }
  end
  out
end

# Sidekiq 6.4's delay bounds for a retry_count token (Integer or Float arithmetic, as Ruby does)
def delay_range(tok)
  c = tok.include?(".") || tok =~ /[eE]/ ? tok.to_f : tok.to_i
  [(c**4 + 15).to_f, (c**4 + 15 + 9 * (c + 1)).to_f]
end

case ARGV[0]
when "push"
  CASES.each do |name, h|
    jid = SecureRandom.hex(12)
    job = { "class" => "FailWorker", "queue" => "default", "args" => [name] }.merge(h)
                                                                               .merge("jid" => jid, "created_at" => Time.now.to_f, "enqueued_at" => Time.now.to_f)
    redis.hset("test:jobs", name, jid)
    redis.sadd("queues", "default")
    redis.lpush("queue:default", JSON.generate(job))
  end
  puts CASES.size
when "count"
  puts CASES.size
when "dump"
  emit(dump)
when "compare"
  hh = JSON.parse(ARGV[1])
  sk = JSON.parse(ARGV[2])
  CASES.each_key do |name|
    a, b = hh[name], sk[name]
    check(!a.nil? && !b.nil?, "#{name}: missing from a dump (hiredhand #{a.inspect}, sidekiq #{b.inspect})")
    next unless a && b
    if (keep = KEPT_DEAD[name])
      # 6.4 raises in its own retry code and writes nothing (the job is lost); hiredhand writes no
      # retry either but keeps the job, untouched, in the dead set with the reason
      check_eq(b["set"], "none", "#{name}: Sidekiq 6.4 writes nothing for it")
      check_eq(a["set"], "dead", "#{name}: hiredhand keeps it in the dead set")
      check_eq(a["retry_count"], keep, "#{name}: retry_count kept as pushed in the dead entry")
      next
    end
    check_eq(a["set"], b["set"], "#{name}: where the failed job went (hiredhand vs Sidekiq 6.4)")
    check_eq(a["retry_count"], b["retry_count"], "#{name}: retry_count token written (hiredhand vs Sidekiq 6.4)")
    check_eq(a["stamp"], b["stamp"], "#{name}: timestamp key set (retried_at or failed_at)")
    next unless a["set"] == "retry" && a["retry_count"]
    check(a["score_finite"], "#{name}: hiredhand's retry score is a finite number")
    lo, hi = delay_range(a["retry_count"])
    # relative slack: at 1e38 a double's spacing is about 1e22
    slack = [1.0, hi * 1e-12].max
    d = a["delay"]
    check(d >= lo - slack && d <= hi + slack,
          "#{name}: hiredhand's delay #{d} is outside Sidekiq's #{lo}..#{hi} for retry_count #{a["retry_count"]}")
  end
else
  abort "usage: retry_extremes.rb push | count | dump | compare HH_DUMP SK_DUMP"
end
finish!
