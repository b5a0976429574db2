# Used by test_timestamps.sh (timestamps in both encodings).
#   push LAYOUT  -> queues ts1..ts4 get one OkJob each: (1) float created_at/enqueued_at,
#                   (2) integer ms both, (3) created_at float + enqueued_at int ms, (4) no stamps;
#                   FailJobs with int-ms / float stamps (retry true) in queue default; schedule
#                   members (int-ms created_at, and a float enqueued_at) due now, for queue parked
#                   (which no worker reads); names => raw in test:ts
#   latency FILE -> `hiredhand stats --json` in FILE: latency of ts1..ts4 in [0, 60]
#   verify LAYOUT (float|millis) -> after the worker ran: OkJobs ran; retry members keep
#                   created_at's token, failed_at in the layout's encoding; moved schedule members
#                   parse, keep created_at's token and have one enqueued_at in the layout's
#                   encoding; in float layout Sidekiq::Queue("parked").latency is small and >= 0
require_relative "helper"

def ms(t) = (t * 1000).to_i

def raw_token(raw, key)
  raw[/"#{key}":(-?[0-9][0-9.eE+\-]*)/, 1]
end

now = Time.now.to_f
case ARGV[0]
when "push"
  jobs = {
    "ts1" => { "created_at" => now - 2, "enqueued_at" => now - 2 },
    "ts2" => { "created_at" => ms(now - 2), "enqueued_at" => ms(now - 2) },
    "ts3" => { "created_at" => now - 2, "enqueued_at" => ms(now - 2) },
    "ts4" => {}
  }
  jobs.each do |q, stamps|
    raw = JSON.generate({ "retry" => true, "queue" => q, "class" => "OkJob", "args" => [q], "jid" => SecureRandom.hex(12) }.merge(stamps))
    redis.sadd("queues", q)
    redis.lpush("queue:#{q}", raw)
    redis.hset("test:ts", q, raw)
  end
  { "fail_ms" => { "created_at" => ms(now - 5), "enqueued_at" => ms(now - 5) },
    "fail_float" => { "created_at" => now - 5, "enqueued_at" => now - 5 } }.each do |name, stamps|
    raw = JSON.generate({ "retry" => true, "queue" => "default", "class" => "FailJob", "args" => [name], "jid" => SecureRandom.hex(12) }.merge(stamps))
    redis.lpush("queue:default", raw)
    redis.hset("test:ts", name, raw)
  end
  { "sched_ms" => { "created_at" => ms(now - 5) },
    "sched_enq_float" => { "created_at" => now - 5, "enqueued_at" => now - 5 } }.each do |name, stamps|
    raw = JSON.generate({ "retry" => true, "queue" => "parked", "class" => "OkJob", "args" => [name], "jid" => SecureRandom.hex(12) }.merge(stamps))
    redis.zadd("schedule", now - 1, raw)
    redis.hset("test:ts", name, raw)
  end
  redis.sadd("queues", "default")
when "latency"
  j = JSON.parse(File.read(ARGV[1]))
  qs = j["queues"]
  lat = {}
  (qs.is_a?(Hash) ? qs.map { |k, v| v.is_a?(Hash) ? v.merge("name" => k) : { "name" => k } } : qs).each { |q| lat[q["name"]] = q["latency"] }
  %w[ts1 ts2 ts3 ts4].each do |q|
    check(lat[q].is_a?(Numeric) && lat[q] >= 0 && lat[q] <= 60, "hiredhand's latency of queue #{q} (#{redis.hget("test:ts", q)[0, 120]}): #{lat[q].inspect} not in [0, 60]")
  end
when "verify"
  layout = ARGV[1]
  ts = redis.hgetall("test:ts")
  jid = ->(n) { JSON.parse(ts[n])["jid"] }
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s)["jid"] }
  %w[ts1 ts2 ts3 ts4].each { |q| check_eq(ran.count(jid.(q)), 1, "#{q}: OkJob ran once") }
  stamp_ok = lambda do |raw, key, what|
    tok = raw_token(raw, key)
    if tok.nil?
      check(false, "#{what}: no #{key} in #{raw}")
    elsif layout == "float"
      check(tok.match?(/[.eE]/) && (tok.to_f - now).abs < 120, "#{what}: #{key} #{tok} should be float seconds near now")
    else
      check(tok.match?(/\A-?\d+\z/) && (tok.to_i - ms(now)).abs < 120_000, "#{what}: #{key} #{tok} should be integer milliseconds near now")
    end
  end
  retries = redis.zrange("retry", 0, -1)
  %w[fail_ms fail_float].each do |n|
    raw = retries.find { |m| (JSON.parse(m)["jid"] rescue nil) == jid.(n) }
    check(!raw.nil?, "#{n}: in the retry set")
    next unless raw
    check_eq(raw_token(raw, "created_at"), raw_token(ts[n], "created_at"), "#{n}: created_at kept as the same JSON token")
    stamp_ok.(raw, "failed_at", "#{n} (retry member)")
  end
  parked = redis.lrange("queue:parked", 0, -1)
  %w[sched_ms sched_enq_float].each do |n|
    raw = parked.find { |m| (JSON.parse(m)["jid"] rescue nil) == jid.(n) }
    check(!raw.nil?, "#{n}: moved from schedule to queue:parked")
    next unless raw
    check(!!(JSON.parse(raw) rescue nil), "#{n}: moved payload parses with Ruby's JSON: #{raw}")
    check_eq(raw.scan('"enqueued_at"').size, 1, "#{n}: exactly one enqueued_at key: #{raw}")
    check_eq(raw_token(raw, "created_at"), raw_token(ts[n], "created_at"), "#{n}: created_at kept as the same JSON token")
    stamp_ok.(raw, "enqueued_at", "#{n} (moved by the scheduler)")
  end
  if layout == "float"
    l = Sidekiq::Queue.new("parked").latency
    check(l >= 0 && l < 60, "Sidekiq::Queue.new('parked').latency after hiredhand's scheduler move: #{l}")
  end
else
  abort "usage: ts_check.rb push|latency FILE|verify LAYOUT"
end
finish!
