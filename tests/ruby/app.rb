# tests/ruby/app.rb -- the Sidekiq application run by the real `sidekiq` server in the tests:
#   sidekiq -r tests/ruby/app.rb -q default -c 2
# Worker classes:
#   OkWorker    records {"jid","args","queue","class","payload"} as JSON in the list test:ran
#   FailWorker  raises RuntimeError "boom <args>"
#   SlowWorker  sleeps args[0] seconds, then records like OkWorker
#   HardWorker, NoopJob  record like OkWorker (HardWorker: the class examples/client.c pushes)
# It runs in Sidekiq 6.4 and in the 7.3 / 8.1 peers (hh_peer_sidekiq_start).
# HH_SK_POLL=N sets Sidekiq's poll_interval_average (first scheduler poll 0-5 s after boot,
# then every N/2 .. 3N/2 s) so scheduled/retried jobs move quickly in tests.
require_relative "helper"

if ENV["HH_SK_POLL"] && !ENV["HH_SK_POLL"].empty?
  if Sidekiq.respond_to?(:options) # 6.x; 7.0 moved the options into Sidekiq::Config
    Sidekiq.options[:poll_interval_average] = ENV["HH_SK_POLL"].to_f
  else
    Sidekiq.configure_server { |c| c[:poll_interval_average] = ENV["HH_SK_POLL"].to_f }
  end
end

# Records the parsed payload as seen by the server middleware chain.
class HHRecordPayload
  def call(_worker, job, queue)
    Thread.current[:hh_job] = job
    Thread.current[:hh_queue] = queue
    yield
  end
end
Sidekiq.configure_server do |c|
  c.server_middleware { |chain| chain.add HHRecordPayload }
end

module HHRecord
  def hh_record(args)
    entry = { "jid" => jid, "class" => self.class.name, "args" => args,
              "queue" => Thread.current[:hh_queue], "payload" => Thread.current[:hh_job] }
    Sidekiq.redis { |r| r.rpush("test:ran", JSON.generate(entry)) }
  end
end

class OkWorker
  include Sidekiq::Worker
  include HHRecord
  def perform(*args)
    hh_record(args)
  end
end

class FailWorker
  include Sidekiq::Worker
  def perform(*args)
    raise "boom #{args.inspect}"
  end
end

class SlowWorker
  include Sidekiq::Worker
  include HHRecord
  def perform(n = 30, *rest)
    sleep n.to_f
    hh_record([n, *rest])
  end
end

class HardWorker < OkWorker; end
class NoopJob < OkWorker; end
