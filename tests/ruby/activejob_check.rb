# tests/ruby/activejob_check.rb -- what Sidekiq 6.4's API shows for Active Job payloads.
#   retry JID  -> one JSON line {"display_class","display_args","class","wrapped","error_class",
#                 "retry_count"} of that job in Sidekiq::RetrySet (exit 1 when absent)
#   busy       -> one JSON line: [display_class of every job on the Busy page (Sidekiq::Workers)]
require_relative "helper"

case ARGV[0]
when "retry"
  job = Sidekiq::RetrySet.new.find_job(ARGV[1])
  abort "no #{ARGV[1]} in the retry set" unless job
  emit("display_class" => job.display_class, "display_args" => job.display_args, "class" => job.item["class"],
       "wrapped" => job.item["wrapped"], "error_class" => job.item["error_class"],
       "retry_count" => job.item["retry_count"])
when "busy"
  shown = []
  Sidekiq::Workers.new.each do |_process, _thread, work|
    payload = work["payload"]
    payload = JSON.parse(payload) if payload.is_a?(String)
    shown << Sidekiq::JobRecord.new(payload).display_class
  end
  emit(shown)
end
