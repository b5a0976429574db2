# tests/ruby/job_metrics_app.rb -- the app the Sidekiq 7.3 and 8.1 peer servers run in
# test_job_metrics_sidekiq:
#   MxRuby, MxShared  perform(seconds, mode): raises at once when mode is "fail", else sleeps
#                     seconds (as tests/integration/handlers/mx_job.sh does for hiredhand)
# The server beats every second instead of every 10: Sidekiq writes its metrics on each beat.
require "sidekiq"
require "sidekiq/launcher"

Sidekiq::Launcher.send(:remove_const, :BEAT_PAUSE)
Sidekiq::Launcher.const_set(:BEAT_PAUSE, 1)
Sidekiq.configure_server do |c|
  c.redis = { url: ENV.fetch("REDIS_URL") }
  c.logger.level = Logger::WARN
end

class MxJob
  include Sidekiq::Job
  def perform(seconds, mode)
    raise "failing on purpose" if mode == "fail"
    sleep seconds
  end
end

class MxRuby < MxJob; end
class MxShared < MxJob; end
