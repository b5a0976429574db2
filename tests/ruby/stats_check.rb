# Used by test_stats_cli.sh.
#   setup  -> writes a known state (counters, sets, queues, a fake process) like Sidekiq would
#   compare JSON_FILE -> `hiredhand stats --json` output vs Sidekiq::Stats / Sidekiq::Queue
require_relative "helper"

case ARGV[0]
when "setup"
  now = Time.now.to_f
  redis.set("stat:processed", 123)
  redis.set("stat:failed", 7)
  mk = ->(i, q, extra = {}) { JSON.generate({ "retry" => true, "queue" => q, "class" => "OkJob", "args" => [i], "jid" => SecureRandom.hex(12), "created_at" => now - 30, "enqueued_at" => now - 30 }.merge(extra)) }
  2.times { |i| redis.zadd("schedule", now + 3600 + i, mk.(i, "default")) }
  3.times { |i| redis.zadd("retry", now + 600 + i, mk.(i, "default", "retry_count" => 0, "error_class" => "E", "error_message" => "m", "failed_at" => now)) }
  redis.zadd("dead", now, mk.(9, "default"))
  redis.sadd("queues", %w[default critical low])
  5.times { |i| redis.lpush("queue:default", mk.(i, "default")) }
  2.times { |i| redis.lpush("queue:critical", mk.(i, "critical")) }
  redis.sadd("processes", "fakehost:1:abcdef")
  redis.hset("fakehost:1:abcdef", "busy", 0)
  redis.expire("fakehost:1:abcdef", 60)
when "compare"
  out = File.read(ARGV[1])
  j = begin
    JSON.parse(out)
  rescue JSON::ParserError => e
    check(false, "stats --json output is not JSON (#{e.message[0, 60]}): #{out[0, 300].inspect}")
    finish!
  end
  s = Sidekiq::Stats.new
  { "processed" => s.processed, "failed" => s.failed, "scheduled_size" => s.scheduled_size,
    "retry_size" => s.retry_size, "dead_size" => s.dead_size, "processes_size" => s.processes_size,
    "enqueued" => s.enqueued }.each do |k, v|
    check_eq(j[k], v, "stats --json #{k} (Sidekiq::Stats##{k})")
  end
  check_eq([s.processed, s.failed, s.scheduled_size, s.retry_size, s.dead_size, s.enqueued], [123, 7, 2, 3, 1, 7], "sanity of the Ruby side")
  qs = j["queues"]
  check(qs.is_a?(Hash) || qs.is_a?(Array), "stats --json has queues: #{qs.inspect}")
  sizes = {}
  lat = {}
  case qs
  when Hash
    qs.each do |name, v|
      if v.is_a?(Hash)
        sizes[name] = v["size"]; lat[name] = v["latency"]
      else
        sizes[name] = v
      end
    end
  when Array
    qs.each { |v| sizes[v["name"]] = v["size"]; lat[v["name"]] = v["latency"] }
  end
  check_eq(sizes, s.queues, "queue sizes (Sidekiq::Stats#queues)")
  lat.each do |name, l|
    next if l.nil?
    ref = Sidekiq::Queue.new(name).latency
    check(l.is_a?(Numeric) && (l - ref).abs < 5, "queue #{name} latency #{l.inspect} vs Sidekiq::Queue#latency #{ref}")
  end
  if j.key?("default_queue_latency")
    check((j["default_queue_latency"].to_f - s.default_queue_latency).abs < 5, "default_queue_latency #{j["default_queue_latency"]} vs #{s.default_queue_latency}")
  end
else
  abort "usage: stats_check.rb setup|compare FILE"
end
finish!
