# Used by test_reference_sidekiq.sh: drives the real Sidekiq 6.4 against the test Redis.
#   push   -> pushes OkWorker, FailWorker and a perform_in(1) OkWorker; prints their jids as JSON
#   verify OK_JID FAIL_JID SCHED_JID -> checks test:ran and the RetrySet entry through Sidekiq's API
require_relative "app"

case ARGV[0]
when "push"
  ok = Sidekiq::Client.push("class" => "OkWorker", "args" => [1, "é😀", { "n" => nil }])
  bad = Sidekiq::Client.push("class" => "FailWorker", "args" => ["x"])
  sched = OkWorker.perform_in(1, "later")
  emit("ok" => ok, "fail" => bad, "sched" => sched)
when "verify"
  ok, bad, sched = ARGV[1, 3]
  ran = redis.lrange("test:ran", 0, -1).map { |s| JSON.parse(s) }
  check_eq(ran.count { |e| e["jid"] == ok }, 1, "OkWorker ran once")
  okrun = ran.find { |e| e["jid"] == ok }
  check_eq(okrun && okrun["args"], [1, "é😀", { "n" => nil }], "OkWorker args")
  check_eq(ran.count { |e| e["jid"] == sched }, 1, "scheduled OkWorker ran once")
  entry = Sidekiq::RetrySet.new.find_job(bad)
  check(!entry.nil?, "FailWorker is in the RetrySet")
  if entry
    item = entry.item
    check_eq(item["retry_count"], 0, "retry_count")
    check_eq(item["error_class"], "RuntimeError", "error_class")
    check_eq(item["queue"], "default", "queue")
    check(item["failed_at"].is_a?(Float), "failed_at is a Float")
    d = entry.score - item["failed_at"]
    check_between(d, 15, 25, "first retry delay (score - failed_at)")
  end
  check_eq(Sidekiq::DeadSet.new.size, 0, "dead set empty")
else
  abort "usage: reference_check.rb push|verify ..."
end
