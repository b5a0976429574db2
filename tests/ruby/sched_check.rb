# Used by test_scheduled_perform_in.sh.
#   push   -> OkWorker.perform_in(3), perform_in(6), perform_at(now + 4.5), perform_in(40), a raw
#             Client.push with "at" in the past, and a raw schedule member that already carries a
#             float enqueued_at; records jid => [name, score, raw member] in test:sched
#   verify WORKER_START_EPOCH -> every due job ran once, not before its score, within 10 s after it; the payload the
#             handler got is the member with a fresh float enqueued_at (one key) and the same
#             created_at token; the perform_in(40) job has not run and is still scheduled
require_relative "helper"

class OkWorker
  include Sidekiq::Worker
  def perform(*); end
end

case ARGV[0]
when "push"
  jids = {}
  jids["in3"] = OkWorker.perform_in(3, "in3", { "k" => [1, 2.5, nil] })
  jids["in6"] = OkWorker.perform_in(6, "in6")
  jids["at4.5"] = OkWorker.perform_at(Time.now.to_f + 4.5, "at4.5")
  jids["in40"] = OkWorker.perform_in(40, "in40")
  jids["past"] = Sidekiq::Client.push("class" => "OkWorker", "args" => ["past"], "at" => Time.now.to_f - 10)
  jid = SecureRandom.hex(12)
  t = Time.now.to_f
  member = JSON.generate("retry" => true, "queue" => "default", "class" => "OkWorker", "args" => ["stale_enq"],
                         "jid" => jid, "created_at" => t - 100, "enqueued_at" => t - 100)
  redis.zadd("schedule", t + 2, member)
  jids["stale_enq"] = jid
  members = redis.zrange("schedule", 0, -1, with_scores: true)
  jids.each do |name, j|
    raw, score = members.find { |m, _| JSON.parse(m)["jid"] == j }
    abort "#{name} not in schedule" unless raw
    redis.hset("test:sched", j, JSON.generate([name, score, raw]))
  end
  puts jids.size
when "verify"
  started = ARGV[1].to_f # when the worker was started: a job already due then is due from there
  sched = redis.hgetall("test:sched").transform_values { |v| JSON.parse(v) }
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s) }
  meta = redis.lrange("test:meta", 0, -1).map(&:split)
  sched.each do |jid, (name, score, member)|
    runs = ran.select { |j| j["jid"] == jid }
    if name == "in40"
      check_eq(runs.size, 0, "in40: must not run before its time")
      check(Sidekiq::ScheduledSet.new.find_job(jid), "in40: still in the ScheduledSet")
      next
    end
    check_eq(runs.size, 1, "#{name}: executions")
    next if runs.empty?
    m = meta.find { |x| x[0] == jid }
    t = m && m[4].to_f
    check(t && t >= score - 0.01, "#{name}: ran at #{t}, before its schedule score #{score}")
    due = [score, started].max
    check(t && t <= due + 10, "#{name}: ran at #{t}, more than 10 s after it was due (#{due})")
    raw = redis.lrange("test:ran", 0, -1).find { |s| JSON.parse(s)["jid"] == jid }
    check_eq(raw.scan('"enqueued_at"').size, 1, "#{name}: exactly one enqueued_at key in #{raw}")
    check(json_real?(raw, "enqueued_at"), "#{name}: enqueued_at is float seconds: #{raw}")
    job = runs.first
    check(job["enqueued_at"].to_f >= score - 0.01 && job["enqueued_at"].to_f <= t + 0.01,
          "#{name}: enqueued_at #{job["enqueued_at"]} refreshed when moved (score #{score}, ran #{t})")
    ca = member[/"created_at":[^,}]+/]
    check(raw.include?(ca), "#{name}: created_at token #{ca} kept: #{raw}")
    check(!job.key?("at"), "#{name}: no 'at' key")
    orig = JSON.parse(member)
    orig.each do |k, v|
      next if k == "enqueued_at"
      check_eq(job[k], v, "#{name}: key #{k} unchanged by the scheduler")
    end
  end
  check_eq(Sidekiq::ScheduledSet.new.size, 1, "only the perform_in(40) job is left in the ScheduledSet")
  check_eq(Sidekiq::RetrySet.new.size + Sidekiq::DeadSet.new.size, 0, "no retries or dead jobs")
else
  abort "usage: sched_check.rb push|verify"
end
finish!
