# Used by test_admin_sidekiq.sh: Sidekiq 6.4's own API reads what `hiredhand retries|dead|busy`
# did to jobs a real Sidekiq server failed.
#   push CLASS ARGS_JSON    Sidekiq::Client.push, prints the jid
#   snapshot JID FILE       saves the RetrySet entry of JID (item, score) as JSON
#   retried JID FILE        hiredhand retried it: in Queue("default") with retry_count - 1, a fresh
#                           enqueued_at, every other key as it was; no longer in RetrySet
#   killed JID FILE         hiredhand killed it: DeadSet holds the entry byte for byte (Sidekiq's
#                           error fields), score about now; no longer in RetrySet
#   refailed JID            Sidekiq ran the retried job and failed it again: RetrySet holds it with
#                           retry_count 0 (it was -1 after the retry from 0), retried_at set
#   gone JID                in no set and no queue
require_relative "helper"

def retry_entry(jid) = Sidekiq::RetrySet.new.find_job(jid)

case ARGV[0]
when "push"
  puts Sidekiq::Client.push("class" => ARGV[1], "args" => JSON.parse(ARGV[2]))
when "snapshot"
  e = retry_entry(ARGV[1]) or abort "no RetrySet entry for #{ARGV[1]}"
  File.write(ARGV[2], JSON.generate("value" => e.value, "score" => e.score))
when "retried"
  jid = ARGV[1]
  old = JSON.parse(File.read(ARGV[2]))
  was = JSON.parse(old["value"])
  check(retry_entry(jid).nil?, "#{jid}: still in Sidekiq::RetrySet after `retries retry`")
  job = Sidekiq::Queue.new("default").find_job(jid)
  check(!job.nil?, "#{jid}: not in Sidekiq::Queue('default') after `retries retry`")
  if job
    check_eq(job["retry_count"], was["retry_count"] - 1, "#{jid}: retry_count after retry (SortedEntry#retry decrements)")
    check_between(job["enqueued_at"], Time.now.to_f - 60, Time.now.to_f + 1, "#{jid}: enqueued_at is now")
    check(json_real?(job.value, "enqueued_at"), "#{jid}: enqueued_at written as a float")
    (was.keys - %w[retry_count enqueued_at]).each { |k| check_eq(job[k], was[k], "#{jid}: key #{k} kept") }
    check(Sidekiq::Queue.new("default").latency < 60, "Sidekiq::Queue#latency reads the new enqueued_at")
  end
when "killed"
  jid = ARGV[1]
  old = JSON.parse(File.read(ARGV[2]))
  check(retry_entry(jid).nil?, "#{jid}: still in Sidekiq::RetrySet after `retries kill`")
  d = Sidekiq::DeadSet.new.find_job(jid)
  check(!d.nil?, "#{jid}: not in Sidekiq::DeadSet after `retries kill`")
  if d
    check_eq(d.value, old["value"], "#{jid}: the dead entry is the retry entry byte for byte (DeadSet#kill(message))")
    check_between(d.score, Time.now.to_f - 60, Time.now.to_f + 1, "#{jid}: dead score is the time of the kill")
    check_eq(d["error_class"], "RuntimeError", "#{jid}: error_class kept")
    check(d["error_message"].to_s.start_with?("boom"), "#{jid}: error_message kept: #{d["error_message"].inspect}")
    check(d.error?, "#{jid}: SortedEntry#error? in the dead set")
  end
when "refailed"
  e = retry_entry(ARGV[1])
  puts(e ? "retry #{e["retry_count"]} #{e["retried_at"] ? "retried_at" : "-"}" : "absent")
when "gone"
  jid = ARGV[1]
  found = [Sidekiq::RetrySet.new, Sidekiq::DeadSet.new, Sidekiq::ScheduledSet.new].map { |s| s.find_job(jid) }.compact
  found << :queue if Sidekiq::Queue.new("default").find_job(jid)
  check(found.empty?, "#{jid}: still somewhere: #{found.inspect}")
else
  abort "usage: admin_real.rb push|snapshot|retried|killed|refailed|gone ..."
end
finish!
