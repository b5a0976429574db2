# Used by test_retry_dead.sh (retries, the dead set, unknown classes).
#   push               -> LPUSHes the failing jobs (raw JSON, so the "retry" key is exactly as
#                         wanted); name => jid in the hash test:jobs, name => raw in test:raw
#   phase1             -> checks after every job's first execution
#   bump NAME          -> sets NAME's retry-set score to now (so the scheduler moves it at once)
#   state NAME         -> prints "retry <retry_count>" | "dead <retry_count>" | "none"
#   phase3             -> checks after the retries; prints the expected stat:failed/processed
require_relative "failure_checks"

# args that a re-serializing retry path must keep in meaning and JSON type
AWKWARD_ARGS = ["héllo 😀 👩‍👩‍👧", "\"\\\n\t\u0001\u2028", "nul\u0000x", { "a" => { "b" => [1, { "c" => nil }, [[], {}]] } },
                nil, true, false, 0.1, -2.5e-10, 1.0e+300, -0.0, 1.0, 5e-324, 0, -1, 2**53 + 1,
                9223372036854775807, -9223372036854775808, "x" * 5000].freeze

# same value and same JSON type (Integer vs Float, -0.0 vs 0.0) all the way down
def same_json?(a, b)
  case a
  when Hash then b.is_a?(Hash) && a.keys == b.keys && a.all? { |k, v| same_json?(v, b[k]) }
  when Array then b.is_a?(Array) && a.size == b.size && a.each_with_index.all? { |v, i| same_json?(v, b[i]) }
  when Float then b.is_a?(Float) && a == b && (a != 0.0 || (1.0 / a) == (1.0 / b))
  when Integer then b.is_a?(Integer) && a == b
  else a == b && a.class == b.class
  end
end

JOBS = {
  "t_true" => { "class" => "FailJob", "retry" => true, "custom_key" => { "x" => [1, 2.5] }, "tags" => ["t1"] },
  "t_false" => { "class" => "FailJob", "retry" => false },
  "t_zero" => { "class" => "FailJob", "retry" => 0 },
  "t_two" => { "class" => "FailJob", "retry" => 2 },
  "t_absent" => { "class" => "FailJob" },
  "t_zero_nodead" => { "class" => "FailJob", "retry" => 0, "dead" => false },
  "flaky" => { "class" => "FlakyJob", "retry" => true },
  "flaky_args" => { "class" => "FlakyJob", "retry" => true, "args" => AWKWARD_ARGS },
  "unknown_true" => { "class" => "Nope::Missing", "retry" => true },
  "unknown_absent" => { "class" => "Gone::Away" },
  "ns_registered" => { "class" => "Foo::Bar", "retry" => true },
  "ns_child" => { "class" => "Foo::Bar::Baz", "retry" => true },
  "ns_case" => { "class" => "foo::bar", "retry" => true }
}.freeze
UNKNOWN_RETRIED = %w[unknown_true ns_child ns_case].freeze

now = Time.now.to_f
case ARGV[0]
when "push"
  JOBS.each do |name, h|
    jid = SecureRandom.hex(12)
    job = { "queue" => "default", "args" => [name, { "n" => 1 }] }.merge(h).merge("jid" => jid,
                                                  "created_at" => Time.now.to_f, "enqueued_at" => Time.now.to_f)
    # keep "class" first like Sidekiq's client does for "retry"/"queue"; order matters for the check
    raw = JSON.generate(job)
    redis.hset("test:jobs", name, jid)
    redis.hset("test:raw", name, raw)
    redis.sadd("queues", "default")
    redis.lpush("queue:default", raw)
  end
  puts JOBS.size
when "phase1"
  rs = Sidekiq::RetrySet.new
  ds = Sidekiq::DeadSet.new
  inretry = ->(n) { rs.find_job(jid_of(n)) }
  indead = ->(n) { ds.find_job(jid_of(n)) }

  %w[t_true t_two t_absent flaky flaky_args].each do |name|
    e = inretry.(name)
    check(!e.nil?, "#{name}: is in Sidekiq::RetrySet after its first failure")
    check(indead.(name).nil?, "#{name}: not in Sidekiq::DeadSet")
    next unless e
    item = e.item
    check_eq(item["retry_count"], 0, "#{name}: retry_count after the first failure")
    check(!item.key?("retried_at"), "#{name}: no retried_at after the first failure")
    common_failure_checks(name, e, "retry", now)
    d = e.score - stamp_s(item["failed_at"])
    # 6.4: delay = 0**4 + 15 + rand(10) * 1 -> 15..24 s after the failure (score is computed a
    # moment after failed_at, hence the small slack above 24)
    check_between(d, 14.999, 24.5, "#{name}: first retry delay (score - failed_at)")
    check(e.at > Time.now - 1, "#{name}: retry due time is in the future")
    redis.hset("test:failed_at", name, item["failed_at"].to_s)
  end
  t = inretry.("t_true")
  if t
    msg = t.item["error_message"]
    check(msg.include?("3"), "t_true: error_message carries the exit status 3: #{msg.inspect}")
    check(msg.include?("boom: FailJob failed on purpose"), "t_true: error_message carries the last stderr line: #{msg.inspect}")
  end
  fa = inretry.("flaky_args")
  check(fa.nil? || same_json?(fa.item["args"], JSON.parse(JSON.generate(AWKWARD_ARGS))),
        "flaky_args: args in the retry member differ in value or JSON type from the pushed ones: #{fa && JSON.generate(fa.item["args"])[0, 400]}")
  f = inretry.("flaky")
  check(f.nil? || f.item["error_message"].include?("flaky: first attempt fails"), "flaky: error_message carries stderr: #{f && f.item["error_message"].inspect}")

  z = indead.("t_zero")
  check(!z.nil?, "t_zero (retry: 0): is in Sidekiq::DeadSet")
  check(inretry.("t_zero").nil?, "t_zero (retry: 0): not in the RetrySet")
  if z
    check_eq(z.item["retry_count"], 0, "t_zero: retry_count in dead")
    common_failure_checks("t_zero", z, "dead", now)
    check_between(z.score, now - 60, now + 1, "t_zero: dead score is the time of death")
  end

  %w[t_false t_zero_nodead unknown_absent].each do |name|
    check(inretry.(name).nil?, "#{name}: not in the RetrySet")
    check(indead.(name).nil?, "#{name}: not in the DeadSet")
  end
  %w[t_true t_false t_zero t_two t_absent t_zero_nodead].each do |name|
    check_eq(fails_of(jid_of(name)), ["-"], "#{name}: executions of the failing handler (HIREDHAND_RETRY_COUNT values)")
  end

  {"unknown_true" => "Nope::Missing", "ns_child" => "Foo::Bar::Baz", "ns_case" => "foo::bar"}.each do |name, klass|
    u = inretry.(name)
    check(!u.nil?, "#{name} (class #{klass}, not registered, retry true): is in the RetrySet")
    next unless u
    check_eq(u.item["error_class"], "NameError", "#{name}: error_class")
    check(u.item["error_message"].to_s.include?(klass), "#{name}: error_message names the class #{klass}: #{u.item["error_message"].inspect}")
    check_eq(u.item["retry_count"], 0, "#{name}: retry_count")
    check(u.at > Time.now - 1, "#{name}: score in the future")
    common_failure_checks(name, u, "retry", now)
  end
  ran = redis.lrange("test:ran", 0, -1).map { |x| JSON.parse(x)["jid"] }
  check_eq(ran.count(jid_of("ns_registered")), 1, "ns_registered (class Foo::Bar, registered): ran once")
  check(inretry.("ns_registered").nil?, "ns_registered: not in the RetrySet")
  check_eq(Sidekiq::Queue.new("default").size, 0, "queue default is empty after the first pass")
when "bump"
  e = Sidekiq::RetrySet.new.find_job(jid_of(ARGV[1]))
  abort "bump: #{ARGV[1]} is not in the retry set" unless e
  redis.zadd("retry", Time.now.to_f - 1, e.value)
  puts "bumped"
when "state"
  jid = jid_of(ARGV[1])
  if (e = Sidekiq::RetrySet.new.find_job(jid))
    puts "retry #{e.item["retry_count"]}"
  elsif (e = Sidekiq::DeadSet.new.find_job(jid))
    puts "dead #{e.item["retry_count"]}"
  else
    puts "none"
  end
when "phase3"
  rs = Sidekiq::RetrySet.new
  ds = Sidekiq::DeadSet.new
  two = ds.find_job(jid_of("t_two"))
  check(!two.nil?, "t_two (retry: 2): in the DeadSet after 3 executions")
  check(rs.find_job(jid_of("t_two")).nil?, "t_two: no longer in the RetrySet")
  check_eq(fails_of(jid_of("t_two")), ["-", "0", "1"], "t_two: executions (HIREDHAND_RETRY_COUNT values)")
  if two
    item = two.item
    check_eq(item["retry_count"], 2, "t_two: retry_count in dead")
    check(stamp_ok?(two.value, "retried_at"), "t_two: retried_at in hiredhand's layout: #{two.value}")
    check_eq(item["failed_at"].to_s, redis.hget("test:failed_at", "t_two"), "t_two: failed_at unchanged since the first failure")
    check(stamp_s(item["retried_at"]) >= stamp_s(item["failed_at"]), "t_two: retried_at >= failed_at")
    common_failure_checks("t_two", two, "dead", now)
    check_eq(JSON.parse(two.value).keys.count("retry_count"), 1, "t_two: one retry_count key")
  end
  fl = jid_of("flaky")
  check(rs.find_job(fl).nil?, "flaky: no trace in the RetrySet after succeeding")
  check(ds.find_job(fl).nil?, "flaky: not in the DeadSet")
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s) }
  check_eq(ran.count { |j| j["jid"] == fl }, 1, "flaky: succeeded exactly once")
  meta = redis.lrange("test:meta", 0, -1).map(&:split).select { |m| m[0] == fl }
  check_eq(meta.map { |m| m[3] }, ["0"], "flaky: HIREDHAND_RETRY_COUNT on the successful retry")
  fr = ran.find { |j| j["jid"] == fl }
  check(fr.nil? || fr["retry_count"] == 0, "flaky: the retried payload carries retry_count 0")
  check(fr.nil? || fr["enqueued_at"].to_f > fr["failed_at"].to_f, "flaky: the scheduler refreshed enqueued_at when it re-enqueued the job")
  fa = ran.find { |j| j["jid"] == jid_of("flaky_args") }
  check(!fa.nil?, "flaky_args: succeeded on its retry")
  check(fa.nil? || same_json?(fa["args"], JSON.parse(JSON.generate(AWKWARD_ARGS))),
        "flaky_args: args handed to the handler on the retry differ in value or JSON type: #{fa && JSON.generate(fa["args"])[0, 400]}")
  check(rs.find_job(jid_of("flaky_args")).nil?, "flaky_args: no trace in the RetrySet after succeeding")
  %w[t_false t_zero_nodead unknown_absent].each do |name|
    check(rs.find_job(jid_of(name)).nil? && ds.find_job(jid_of(name)).nil?, "#{name}: in neither set at the end")
  end
  # expected counters: every failing execution counts in stat:failed; processed counts all
  handler_fails = redis.llen("test:fails")
  unknown_execs = 1 # Gone::Away, discarded
  UNKNOWN_RETRIED.each do |name|
    u = rs.find_job(jid_of(name)) || ds.find_job(jid_of(name))
    unknown_execs += u ? u.item["retry_count"].to_i + 1 : 1
  end
  failed = handler_fails + unknown_execs
  processed = failed + ran.size
  emit("failed" => failed, "processed" => processed)
else
  abort "usage: retry_check.rb push|phase1|bump NAME|state NAME|phase3"
end
finish!
