# Used by test_push_runs_in_sidekiq.sh and test_sidekiq_generations.sh to check what
# `hiredhand push` (or the C client) wrote, then what the real Sidekiq server (6.4, 7.3 or 8.1) did
# with it.
#   inspect SPEC_JSON  -> SPEC_JSON: {"now": epoch, "jobs": [{"jid","args","queue","retry",
#                         "kind": "now"|"in"|"at", "at": epoch (for in/at), "class" (default
#                         OkWorker), "timestamps": "millis" when pushed with --timestamps millis,
#                         "now": epoch just before this push, when it differs from the spec's}]}
#   verify SPEC_JSON   -> after the sidekiq run: each job ran once with its args, no retries/dead
require_relative "helper"

spec = JSON.parse(ARGV[1] || "{}")
now = spec["now"].to_f
jobs = spec["jobs"] || []

case ARGV[0]
when "inspect"
  queued = {}
  redis.smembers("queues").each do |q|
    redis.lrange("queue:#{q}", 0, -1).each { |raw| (queued[(JSON.parse(raw)["jid"] rescue nil)] ||= []) << [q, raw] }
  end
  sched = {}
  redis.zrange("schedule", 0, -1, with_scores: true).each do |raw, score|
    (sched[(JSON.parse(raw)["jid"] rescue nil)] ||= []) << [score, raw]
  end
  jobs.each do |j|
    jid = j["jid"]
    name = "job #{j["args"].inspect} (#{j["kind"]})"
    millis = j["timestamps"] == "millis"
    layout = millis ? "integer-millisecond" : "EPOCH_F"
    check(jid.match?(/\A[0-9a-f]{24}\z/), "#{name}: jid #{jid.inspect} is 24 lowercase hex")
    if j["kind"] == "now"
      hits = queued[jid] || []
      check_eq(hits.size, 1, "#{name}: copies in queues")
      next if hits.empty?
      q, raw = hits.first
      check_eq(q, j["queue"], "#{name}: list it is in (queue:<q>)")
      check(redis.sismember("queues", j["queue"]), "#{name}: queue #{j["queue"]} is in the queues set")
      check(stamp_ok?(raw, "enqueued_at", millis), "#{name}: enqueued_at is in the #{layout} layout: #{raw}")
    else
      hits = sched[jid] || []
      check_eq(hits.size, 1, "#{name}: copies in schedule")
      check(!(queued[jid]), "#{name}: not in any queue yet")
      next if hits.empty?
      score, raw = hits.first
      if j["kind"] == "at"
        check_between(score, j["at"] - 0.001, j["at"] + 0.001, "#{name}: schedule score vs --at")
      else
        t = j.fetch("now", now) # when this push started, if the spec says
        check_between(score, t + j["in"] - 1.0, t + j["in"] + 3.0, "#{name}: schedule score vs now + --in")
      end
    end
    job = JSON.parse(raw)
    check_eq(job["jid"], jid, "#{name}: jid in payload equals the printed jid")
    check_eq(job["class"], j.fetch("class", "OkWorker"), "#{name}: class")
    check_eq(job["args"], j["args"], "#{name}: args")
    check_eq(job["queue"], j["queue"], "#{name}: queue key")
    check(job.key?("retry"), "#{name}: retry key written explicitly: #{raw}")
    check_eq(job["retry"], j["retry"], "#{name}: retry value (and JSON type)")
    check(!job.key?("at"), "#{name}: no 'at' key stored: #{raw}")
    check(stamp_ok?(raw, "created_at", millis), "#{name}: created_at is in the #{layout} layout: #{raw}")
    check((stamp_s(job["created_at"]) - now).abs < 30, "#{name}: created_at #{job["created_at"]} near now #{now}")
    if j["kind"] == "now"
      check((stamp_s(job["enqueued_at"]) - now).abs < 30, "#{name}: enqueued_at near now")
      check(stamp_s(job["enqueued_at"]) >= stamp_s(job["created_at"]), "#{name}: enqueued_at >= created_at")
    end
    check(!raw.include?("null"), "#{name}: no null values stored for absent fields: #{raw}") unless j["args"].to_s.include?("nil")
  end
  check_eq(jobs.map { |j| j["jid"] }.uniq.size, jobs.size, "jids are distinct")
when "verify"
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s) }
  jobs.each do |j|
    runs = ran.select { |e| e["jid"] == j["jid"] }
    check_eq(runs.size, 1, "job #{j["args"].inspect} (#{j["kind"]}): runs in sidekiq")
    next if runs.empty?
    check_eq(runs.first["args"], j["args"], "job #{j["jid"]}: args seen by OkWorker#perform")
    check_eq(runs.first["queue"], j["queue"], "job #{j["jid"]}: queue seen by the server middleware")
  end
  check_eq(Sidekiq::RetrySet.new.size, 0, "RetrySet size")
  check_eq(Sidekiq::DeadSet.new.size, 0, "DeadSet size")
  check_eq(Sidekiq::ScheduledSet.new.size, 0, "ScheduledSet size")
  stats = Sidekiq::Stats.new
  check_eq(stats.failed, 0, "Sidekiq::Stats#failed")
  check_eq(stats.processed, jobs.size, "Sidekiq::Stats#processed")
else
  abort "usage: push_check.rb inspect|verify SPEC_JSON"
end
finish!
