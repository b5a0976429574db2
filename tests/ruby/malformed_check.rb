# Used by test_malformed.sh.
#   push BATCH   -> LPUSHes malformed entries (batch 1: many kinds; batch 2: one more) followed by a
#                   good OkJob; records name => raw in test:bad:<batch>, good jid in test:good:<batch>
#   verify       -> every malformed entry is in `dead` exactly once: byte-identical when it is not
#                   JSON (or not UTF-8); JSON that is not an object (array, string, null) wrapped
#                   as a hiredhand::InvalidJob whose only arg is its exact text (stored bare it
#                   breaks Sidekiq's Dead page); and for JSON objects every
#                   original key/value kept plus error_class and error_message strings; the good
#                   jobs ran once; nothing left queued, nothing in retry
require_relative "helper"

def bad_entries(batch)
  j = -> { SecureRandom.hex(12) }
  t = Time.now.to_f
  if batch == "1"
    {
      "not_json" => "not json{",
      "truncated" => "{\"class\":\"OkJob\",\"args\":[1",
      "array" => "[1,2,3]",
      "json_string" => "\"just a string\"",
      "json_null" => "null",
      "empty" => "",
      "invalid_utf8" => "{\"class\":\"OkJob\",\"args\":[\"\xff\xfe\"],\"jid\":\"#{j.()}\"}".b,
      "no_class" => JSON.generate("args" => [1], "jid" => j.(), "queue" => "default", "custom" => { "x" => 1 }, "created_at" => t),
      "empty_class" => JSON.generate("class" => "", "args" => [], "jid" => j.(), "queue" => "default"),
      "class_not_string" => JSON.generate("class" => 42, "args" => [], "jid" => j.(), "queue" => "default")
    }
  else
    { "not_json_2" => "<<garbage #{j.()}>>" }
  end
end

case ARGV[0]
when "push"
  batch = ARGV[1]
  redis.sadd("queues", "default")
  bad_entries(batch).each do |name, raw|
    redis.hset("test:bad:#{batch}", name, raw)
    redis.lpush("queue:default", raw)
  end
  good = SecureRandom.hex(12)
  redis.lpush("queue:default", JSON.generate("retry" => true, "queue" => "default", "class" => "OkJob",
                                             "args" => ["good", batch], "jid" => good, "created_at" => Time.now.to_f, "enqueued_at" => Time.now.to_f))
  redis.set("test:good:#{batch}", good)
  puts good
when "verify"
  dead = redis.zrange("dead", 0, -1).map(&:b)
  bad = redis.hgetall("test:bad:1").merge(redis.hgetall("test:bad:2"))
  bad.each do |name, raw|
    raw = raw.b
    utf8 = raw.dup.force_encoding("UTF-8")
    parsed = begin
      utf8.valid_encoding? ? [JSON.parse(utf8, quirks_mode: true)] : nil
    rescue JSON::ParserError
      nil
    end
    obj = parsed && parsed[0].is_a?(Hash) ? parsed[0] : nil
    if parsed && obj.nil?
      hits = dead.select do |m|
        h = (JSON.parse(m.dup.force_encoding("UTF-8")) rescue nil)
        h.is_a?(Hash) && h["class"] == "hiredhand::InvalidJob" && h["args"] == [utf8]
      end
      check_eq(hits.size, 1, "#{name} (#{raw[0, 60].inspect}): wrapped with its exact text as the arg")
      h = hits.first && JSON.parse(hits.first)
      check(h && h["error_message"].is_a?(String) && !h["error_message"].empty?, "#{name}: wrapped entry has the reason")
    elsif obj.nil?
      check_eq(dead.count(raw), 1, "#{name} (#{raw[0, 60].inspect}): byte-identical copies in the dead set")
    else
      hits = dead.select do |m|
        h = (JSON.parse(m.dup.force_encoding("UTF-8")) rescue nil)
        h.is_a?(Hash) && obj.all? { |k, v| h[k] == v } && h.keys.size >= obj.keys.size
      end
      check_eq(hits.size, 1, "#{name} (#{raw[0, 80]}): dead-set entries keeping all its keys")
      next if hits.empty?
      h = JSON.parse(hits.first.dup.force_encoding("UTF-8"))
      check(h["error_class"].is_a?(String) && !h["error_class"].empty?, "#{name}: dead entry has an error_class: #{hits.first}")
      check(h["error_message"].is_a?(String) && !h["error_message"].empty?, "#{name}: dead entry has an error_message (the reason): #{hits.first}")
      check_eq(h.keys.first(obj.keys.size), obj.keys, "#{name}: original keys keep their order")
    end
  end
  check_eq(dead.size, bad.size, "dead set size (one entry per malformed item)")
  # Sidekiq's own Dead page reads every entry (a bare array or number broke it)
  begin
    n = 0
    Sidekiq::DeadSet.new.each { |e| e.klass; e.args; e.jid; n += 1 }
    check_eq(n, bad.size, "Sidekiq::DeadSet#each reads every entry")
  rescue StandardError => e
    check(false, "Sidekiq::DeadSet#each raised #{e.class}: #{e.message}")
  end
  scores = redis.zrange("dead", 0, -1, with_scores: true).map(&:last)
  check(scores.all? { |s| (s - Time.now.to_f).abs < 120 }, "dead scores are the time of the move: #{scores.inspect}")
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s)["jid"] }
  %w[1 2].each do |b|
    g = redis.get("test:good:#{b}")
    check_eq(ran.count(g), 1, "good job of batch #{b} ran once")
  end
  check_eq(ran.size, 2, "handler executions (only the good jobs)")
  check_eq(redis.llen("queue:default"), 0, "queue:default drained")
  check_eq(redis.zcard("retry"), 0, "nothing in the retry set")
else
  abort "usage: malformed_check.rb push BATCH|verify"
end
finish!
