# Used by test_ruby_push_runs.sh.
#   push      -> pushes OkWorker jobs with awkward args through Sidekiq::Client (push and
#                push_bulk); stores jid => JSON of the args in the hash test:pushed; prints the count
#   snapshot  -> copies the exact queued strings (queue:default) into the list test:stored
#   verify    -> every stored string was handed to the handler exactly once, byte for byte;
#                parsed args equal what was pushed; env vars matched; Sidekiq::Stats counts them
require_relative "helper"

ARG_SETS = {
  "unicode" => ["héllo wörld", "日本語テキスト", "Ελληνικά", "עברית", "ﬁ ligature", "\u00e9 vs e\u0301"],
  "emoji" => ["😀🎉", "👩‍👩‍👧‍👦", "🏳️‍🌈", "a😀b", "\u{1F600}" * 50],
  "escapes" => ["\"quoted\"", "back\\slash", "new\nline", "tab\there", "\r\b\f", "slash/", "\u2028\u2029", "\"\\\n\t", "\u0001\u001f\u007f"],
  "nul" => ["nul\u0000inside", "\u0000"],
  "nested" => [{ "a" => { "b" => [1, { "c" => nil }, [[], {}]] }, "list" => [[[[1]]]], "k:with \"q\"" => "v" }],
  "nulls_bools" => [nil, true, false, [nil], { "n" => nil }],
  "floats" => [0.1, -2.5e-10, 1.0e+300, 3.141592653589793, -0.0, 1.0, 123456.789, 5e-324],
  "ints" => [0, -1, 2**31, 2**53 + 1, 9223372036854775807, -9223372036854775808],
  "bignum" => [2**64, -(2**70), 123456789012345678901234567890],
  "empty" => [],
  "big_string" => ["x" * 200_000],
  "mixed" => [1, "two", 3.0, [4], { "five" => 5 }, nil, true]
}.freeze

case ARGV[0]
when "push"
  n = 0
  ARG_SETS.each do |name, args|
    jid = Sidekiq::Client.push("class" => "OkWorker", "args" => args)
    raise "push #{name} returned no jid" unless jid
    redis.hset("test:pushed", jid, JSON.generate(args))
    redis.hset("test:names", jid, name)
    n += 1
  end
  # unknown keys must reach the handler untouched
  jid = Sidekiq::Client.push("class" => "OkWorker", "args" => ["custom"], "custom_key" => { "x" => [1, 2.5] },
                             "tags" => ["t1"], "bid" => "b-123")
  redis.hset("test:pushed", jid, JSON.generate(["custom"]))
  redis.hset("test:names", jid, "custom_keys")
  n += 1
  bulk = (1..20).map { |i| [i, "bulk #{i}"] }
  jids = Sidekiq::Client.push_bulk("class" => "OkWorker", "args" => bulk)
  jids.each_with_index do |j, i|
    redis.hset("test:pushed", j, JSON.generate(bulk[i]))
    redis.hset("test:names", j, "bulk_#{i + 1}")
  end
  n += jids.size
  puts n
when "snapshot"
  stored = redis.lrange("queue:default", 0, -1)
  redis.del("test:stored")
  redis.rpush("test:stored", stored) unless stored.empty?
  puts stored.size
when "verify"
  pushed = redis.hgetall("test:pushed")
  names = redis.hgetall("test:names")
  stored = redis.lrange("test:stored", 0, -1).map(&:b)
  ran = redis.lrange("test:ran", 0, -1).map(&:b)
  check_eq(ran.size, pushed.size, "number of handler executions")
  check_eq(stored.size, pushed.size, "number of stored payloads")

  stored_count = Hash.new(0)
  stored.each { |s| stored_count[s] += 1 }
  ran_count = Hash.new(0)
  ran.each { |s| ran_count[s] += 1 }
  stored_count.each do |s, c|
    jid = (JSON.parse(s)["jid"] rescue "?")
    got = ran_count[s]
    check_eq(got, c, "job #{names[jid] || jid}: times its exact stored payload reached the handler's stdin")
  end
  ran_count.each_key do |s|
    next if stored_count.key?(s)
    check(false, "handler got a payload that is not byte-identical to any stored one: #{s[0, 300].inspect}")
  end

  seen = Hash.new(0)
  ran.each do |raw|
    job = begin
      JSON.parse(raw.dup.force_encoding("UTF-8"))
    rescue JSON::ParserError => e
      check(false, "recorded payload is not JSON (#{e.message[0, 80]}): #{raw[0, 200].inspect}")
      next
    end
    jid = job["jid"]
    seen[jid] += 1
    unless pushed.key?(jid)
      check(false, "ran an unknown jid #{jid.inspect}")
      next
    end
    expected = JSON.parse(pushed[jid])
    check(job["args"] == expected && JSON.generate(job["args"]) == pushed[jid],
          "job #{names[jid]}: args differ: pushed #{pushed[jid][0, 300]} got #{JSON.generate(job["args"])[0, 300]}")
    check_eq(job["class"], "OkWorker", "job #{names[jid]}: class")
    if names[jid] == "custom_keys"
      check_eq(job["custom_key"], { "x" => [1, 2.5] }, "custom_key preserved")
      check_eq(job["tags"], ["t1"], "tags preserved")
      check_eq(job["bid"], "b-123", "bid preserved")
    end
  end
  pushed.each_key do |jid|
    check_eq(seen[jid], 1, "job #{names[jid]} (#{jid}) executions")
  end

  # environment the handler saw: "jid class queue retry_count epoch"
  metas = redis.lrange("test:meta", 0, -1).map(&:split)
  check_eq(metas.size, pushed.size, "test:meta entries")
  metas.each do |jid, klass, queue, rc, _t|
    check(pushed.key?(jid), "HIREDHAND_JID #{jid.inspect} is a pushed jid")
    check_eq(klass, "OkWorker", "HIREDHAND_CLASS for #{jid}")
    check_eq(queue, "default", "HIREDHAND_QUEUE for #{jid}")
    check_eq(rc, "-", "HIREDHAND_RETRY_COUNT for a first execution of #{jid} (empty)")
  end

  stats = Sidekiq::Stats.new
  check_eq(stats.processed, pushed.size, "Sidekiq::Stats#processed")
  check_eq(stats.failed, 0, "Sidekiq::Stats#failed")
  check_eq(stats.retry_size, 0, "Sidekiq::Stats#retry_size")
  check_eq(stats.dead_size, 0, "Sidekiq::Stats#dead_size")
  check_eq(Sidekiq::Queue.new("default").size, 0, "queue default is empty")
  finish!
else
  abort "usage: ruby_push.rb push|snapshot|verify"
end
