# Used by test_admin_compare.sh: every verb of `hiredhand retries|scheduled|dead|queues` does to
# Redis what Sidekiq 6.4's Ruby API does for the same action on an identical fixture.
#
# REDIS_URL is db 1 (Sidekiq's side); HH_URL0 is db 0 (hiredhand's side); HIREDHAND the binary.
# For each case: both dbs are flushed and get the same fixture, Sidekiq's API acts on db 1, the
# hiredhand command on db 0, and then every key of both is compared, parsed: a timestamp written
# "now" (enqueued_at, created_at, a dead score) reads as NOW on both sides, a fresh jid as NEWJID.
require_relative "helper"
require "open3"

HH = ENV.fetch("HIREDHAND")
URL0 = ENV.fetch("HH_URL0")
R0 = Redis.new(url: URL0)
R1 = redis
T0 = Time.now.to_f - 3600 # the fixture's own times, far from "now"
FUT = Time.now.to_f + 1200 # when the fixture's retries and scheduled jobs are due

def job(jid, klass, extra = {})
  { "retry" => true, "queue" => "default", "class" => klass, "args" => [1, "two"], "jid" => jid,
    "created_at" => T0, "enqueued_at" => T0 }.merge(extra)
end

FIXTURE_JIDS = %w[r1r1r1r1r1r1r1r1r1r1r1r1 r2r2r2r2r2r2r2r2r2r2r2r2 r3r3r3r3r3r3r3r3r3r3r3r3
                  r4r4r4r4r4r4r4r4r4r4r4r4 r5r5r5r5r5r5r5r5r5r5r5r5 s1s1s1s1s1s1s1s1s1s1s1s1
                  s2s2s2s2s2s2s2s2s2s2s2s2 d1d1d1d1d1d1d1d1d1d1d1d1 d2d2d2d2d2d2d2d2d2d2d2d2].freeze

def fixture(r)
  r.flushdb
  err = { "error_class" => "RuntimeError", "error_message" => "boom", "failed_at" => T0 + 1 }
  at = FUT
  r.zadd("retry", at, JSON.generate(job(FIXTURE_JIDS[0], "HardJob", err.merge("queue" => "critical", "retry_count" => 2))))
  # the same score as r1: Sidekiq's remove_job has to tell them apart by jid
  r.zadd("retry", at, JSON.generate(job(FIXTURE_JIDS[1], "SoftJob", err.merge("retry_count" => 0, "tags" => ["a"]))))
  # no "queue" key (Sidekiq's defaults fill it), no created_at
  r.zadd("retry", at + 1, JSON.generate(job(FIXTURE_JIDS[2], "HardJob", err.merge("retry_count" => 5)).tap { |h| h.delete("queue"); h.delete("created_at") }))
  # an integer beyond 64 bits among the args, and ActiveJob's wrapper
  r.zadd("retry", at + 2, '{"retry":3,"queue":"default","class":"ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper","wrapped":"MailJob","args":[123456789012345678901234567890],"jid":"' + FIXTURE_JIDS[3] + '","created_at":' + T0.to_s + ',"enqueued_at":' + T0.to_s + ',"error_class":"Net::ReadTimeout","error_message":"slow","failed_at":' + T0.to_s + ',"retry_count":1}')
  r.zadd("retry", at + 3, JSON.generate(job(FIXTURE_JIDS[4], "SoftJob", err.merge("retry_count" => 7, "error_message" => "connection refused"))))
  r.zadd("schedule", at + 10, JSON.generate(job(FIXTURE_JIDS[5], "LaterJob", "queue" => "low").tap { |h| h.delete("enqueued_at") }))
  r.zadd("schedule", at + 20, JSON.generate(job(FIXTURE_JIDS[6], "LaterJob").tap { |h| h.delete("enqueued_at") }))
  r.zadd("dead", T0 + 5, JSON.generate(job(FIXTURE_JIDS[7], "HardJob", err.merge("retry_count" => 25))))
  r.zadd("dead", T0 + 6, JSON.generate(job(FIXTURE_JIDS[8], "SoftJob", err.merge("retry_count" => 3, "queue" => "critical"))))
  r.sadd("queues", %w[default critical])
  r.lpush("queue:default", JSON.generate(job("q1q1q1q1q1q1q1q1q1q1q1q1", "OkJob")))
  r.lpush("queue:critical", JSON.generate(job("q2q2q2q2q2q2q2q2q2q2q2q2", "OkJob", "queue" => "critical")))
end

def near_now?(v)
  v.is_a?(Numeric) && (v - Time.now.to_f).abs < 300
end

def norm_member(m)
  h = JSON.parse(m)
  return m unless h.is_a?(Hash)
  %w[enqueued_at created_at].each { |k| h[k] = "NOW" if near_now?(h[k]) }
  h["jid"] = "NEWJID" if h.key?("jid") && !FIXTURE_JIDS.include?(h["jid"]) && h["jid"] !~ /\Aq\dq\d/
  h
rescue JSON::ParserError
  m
end

def norm_score(s)
  near_now?(s) && s < Time.now.to_f + 60 ? "NOW" : s.round(3)
end

def snapshot(r)
  r.keys("*").sort.to_h do |k|
    v = case r.type(k)
        when "list" then r.lrange(k, 0, -1).map { |m| norm_member(m) }
        when "zset" then r.zrange(k, 0, -1, with_scores: true).map { |m, s| [norm_member(m), norm_score(s)] }.sort_by(&:to_s)
        when "set" then r.smembers(k).sort
        else r.type(k)
        end
    [k, v]
  end
end

def hh(*args)
  out, err, st = Open3.capture3(HH, *args, "-r", URL0, stdin_data: "")
  [st.exitstatus, out, err]
end

def entry(set, jid)
  set.find_job(jid) or raise "fixture: #{jid} not in #{set.name}"
end

CASES = [
  ["retries retry JID", %W[retries retry #{FIXTURE_JIDS[0]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[0]).retry }],
  ["retries retry JID (same score as another)", %W[retries retry #{FIXTURE_JIDS[1]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[1]).retry }],
  ["retries retry JID (no queue key)", %W[retries retry #{FIXTURE_JIDS[2]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[2]).retry }],
  ["retries retry JID (bignum arg)", %W[retries retry #{FIXTURE_JIDS[3]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[3]).retry }],
  ["retries delete JID", %W[retries delete #{FIXTURE_JIDS[1]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[1]).delete }],
  ["retries kill JID", %W[retries kill #{FIXTURE_JIDS[0]}], -> { entry(Sidekiq::RetrySet.new, FIXTURE_JIDS[0]).kill }],
  ["retries retry --all", %w[retries retry --all --yes], -> { Sidekiq::RetrySet.new.retry_all }],
  ["retries kill --all", %w[retries kill --all --yes], -> { Sidekiq::RetrySet.new.kill_all }],
  ["retries delete --all", %w[retries delete --all --yes], -> { Sidekiq::RetrySet.new.clear }],
  ["retries retry --all --class HardJob", %w[retries retry --all --yes --class HardJob],
   -> { Sidekiq::RetrySet.new.to_a.select { |e| e.klass == "HardJob" }.each(&:retry) }],
  ["retries kill --all --queue critical", %w[retries kill --all --yes --queue critical],
   -> { Sidekiq::RetrySet.new.to_a.select { |e| e.queue == "critical" }.each(&:kill) }],
  ["retries delete --all --error refused", %w[retries delete --all --yes --error refused],
   -> { Sidekiq::RetrySet.new.to_a.select { |e| e["error_message"].to_s.include?("refused") }.each(&:delete) }],
  ["scheduled enqueue JID", %W[scheduled enqueue #{FIXTURE_JIDS[5]}], -> { entry(Sidekiq::ScheduledSet.new, FIXTURE_JIDS[5]).add_to_queue }],
  ["scheduled enqueue --all", %w[scheduled enqueue --all --yes], -> { Sidekiq::ScheduledSet.new.to_a.each(&:add_to_queue) }],
  ["scheduled delete JID", %W[scheduled delete #{FIXTURE_JIDS[6]}], -> { entry(Sidekiq::ScheduledSet.new, FIXTURE_JIDS[6]).delete }],
  ["scheduled kill JID", %W[scheduled kill #{FIXTURE_JIDS[6]}], -> { entry(Sidekiq::ScheduledSet.new, FIXTURE_JIDS[6]).kill }],
  ["dead retry JID", %W[dead retry #{FIXTURE_JIDS[7]}], -> { entry(Sidekiq::DeadSet.new, FIXTURE_JIDS[7]).retry }],
  ["dead retry --all", %w[dead retry --all --yes], -> { Sidekiq::DeadSet.new.retry_all }],
  ["dead delete JID", %W[dead delete #{FIXTURE_JIDS[8]}], -> { entry(Sidekiq::DeadSet.new, FIXTURE_JIDS[8]).delete }],
  ["dead clear", %w[dead clear --yes], -> { Sidekiq::DeadSet.new.clear }],
  ["queues clear critical", %w[queues clear critical --yes], -> { Sidekiq::Queue.new("critical").clear }],
].freeze

only = ARGV[0]
CASES.each do |name, argv, ruby|
  next if only && !name.include?(only)
  fixture(R0)
  fixture(R1)
  before = snapshot(R1)
  ruby.call
  st, out, err = hh(*argv)
  check_eq(st, 0, "#{name}: exit status of hiredhand #{argv.join(" ")} (stderr: #{err.strip}, stdout: #{out.strip})")
  a = snapshot(R0)
  b = snapshot(R1)
  check(a != before || b == before, "#{name}: the fixture did not change on hiredhand's side")
  check(b != before, "#{name}: Sidekiq's side did not change (bad case)")
  if a != b
    (a.keys | b.keys).each do |k|
      next if a[k] == b[k]
      check(false, "#{name}: key #{k} differs\n    hiredhand: #{a[k].inspect[0, 1500]}\n    sidekiq:   #{b[k].inspect[0, 1500]}")
    end
  end
end
finish!
