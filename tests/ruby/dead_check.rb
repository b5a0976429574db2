# Used by test_dead_trim.sh (the dead set's trims).
#   prefill           -> `dead` = 10,000 entries scored now-10000 .. now-1 plus one scored 200 days
#                        ago; prints the prefill time
#   verify T0 JID|RAW EXPECTED_SIZE [MAX_AGE]
#                     -> ZCARD dead == EXPECTED_SIZE, the new entry (matched by jid, or the raw
#                        string when it starts with "raw:") is present, the 200-day entry is gone,
#                        and every entry left is among the newest ones (the lowest-scored ones went)
require_relative "helper"

case ARGV[0]
when "prefill"
  t0 = Time.now.to_f
  redis.del("dead")
  (1..10_000).each_slice(1000) do |slice|
    redis.zadd("dead", slice.map { |i| [t0 - i, JSON.generate("class" => "OldJob", "args" => [i], "jid" => format("%024x", i), "retry_count" => 0, "error_class" => "E", "error_message" => "old")] })
  end
  redis.zadd("dead", t0 - 200 * 86_400, JSON.generate("class" => "AncientJob", "args" => [], "jid" => "a" * 24))
  puts format("%.6f", t0)
when "verify"
  t0 = ARGV[1].to_f
  want = ARGV[2]
  size = ARGV[3].to_i
  max_age = ARGV[4]&.to_f
  all = redis.zrange("dead", 0, -1, with_scores: true)
  check_eq(all.size, size, "ZCARD dead")
  newest = all.select { |m, _| want.start_with?("raw:") ? m.b == want.sub("raw:", "").b : (JSON.parse(m)["jid"] rescue nil) == want }
  check_eq(newest.size, 1, "the entry that just died is in the dead set")
  check(all.none? { |m, _| m.include?("AncientJob") }, "the 200-day-old entry was removed (dead_timeout)")
  olds = all.map { |m, s| [m, s] }.select { |m, _| m.include?("OldJob") }
  # the old entries kept must be exactly the newest (size - 1) of them: i = 1 .. size-1
  kept = olds.map { |m, _| JSON.parse(m)["args"][0] }.sort
  check_eq(kept, (1..(size - 1)).to_a, "old entries kept are the newest #{size - 1} (lowest-scored removed)") if kept.size < 10_000
  if max_age
    now = Time.now.to_f
    check(all.all? { |_, s| s >= now - max_age - 30 }, "every entry is younger than dead_timeout #{max_age}")
  end
  check(newest.empty? || (newest.first[1] - Time.now.to_f).abs < 60, "the new entry is scored at its time of death")
else
  abort "usage: dead_check.rb prefill|verify ..."
end
finish!
