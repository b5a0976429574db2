# retry_for.rb -- Sidekiq 7.3's own retry handler (JobRetry#global) on a job whose retry_for
# window ended two hours ago (hh_peer_ruby 73).
#   retry_for.rb payload        prints the job (retry_count 3, failed_at two hours ago, retry_for 1 h)
#   retry_for.rb sidekiq JSON   runs JobRetry#global on it with a failing block; prints
#                               "<set> <retry_count>" for where Sidekiq 7.3 put it
#   retry_for.rb where JID      prints "<set> <retry_count>" for where the job is now
require "json"
require "sidekiq"
require "sidekiq/api"
require "sidekiq/capsule"
require "sidekiq/job_retry"

Sidekiq.default_configuration.logger = Logger.new(IO::NULL)

def where(jid)
  %w[retry dead].each do |set|
    Sidekiq.redis { |c| c.call("ZRANGE", set, 0, -1) }.each do |m|
      j = JSON.parse(m)
      return "#{set} #{j["retry_count"]}" if j["jid"] == jid
    end
  end
  "none"
end

case ARGV[0]
when "payload"
  now = Time.now.to_f
  puts JSON.generate("class" => "RetryForJob", "args" => [], "queue" => "default", "retry" => true,
    "retry_for" => 3600, "retry_count" => 3, "failed_at" => now - 7200, "retried_at" => now - 600,
    "jid" => ARGV[1], "created_at" => now - 7200, "enqueued_at" => now)
when "sidekiq"
  retrier = Sidekiq::JobRetry.new(Sidekiq.default_configuration.default_capsule)
  begin
    retrier.global(ARGV[1], "default") { raise "boom" }
  rescue Sidekiq::JobRetry::Handled
  end
  puts where(JSON.parse(ARGV[1])["jid"])
when "where"
  puts where(ARGV[1])
end
