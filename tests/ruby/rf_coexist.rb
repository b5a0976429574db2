# Used by test_rf_coexist_sidekiq.sh (issue 3, coexistence of reliable fetch with Ruby Sidekiq).
#   push CLASS N [ARG]  -> pushes N jobs of CLASS to queue default with Sidekiq::Client.push_bulk
#                          (args [ARG, i]); prints the jids, one a line
#   inspect             -> prints one JSON line: what Sidekiq 6.4.1's API reads --
#                          {"queues": Sidekiq::Queue.all names, "queues_set": SMEMBERS queues,
#                           "stats_queues": Sidekiq::Stats#queues, "enqueued": Stats#enqueued,
#                           "processes": ProcessSet identities, "busy": Workers#size,
#                           "busy_jids": jids on the Busy page, "latency": Queue("default").latency}
#   ran_jids            -> prints the jid of every entry in test:ran (jobs run by Ruby Sidekiq)
require_relative "helper"

case ARGV[0]
when "push"
  klass, n, arg = ARGV[1], ARGV[2].to_i, ARGV[3]
  args = (0...n).map { |i| arg ? [arg, i] : [i] }
  jids = Sidekiq::Client.push_bulk("class" => klass, "queue" => "default", "args" => args)
  raise "push_bulk returned #{jids.inspect}" unless jids.is_a?(Array) && jids.size == n
  puts jids
when "inspect"
  busy_jids = []
  Sidekiq::Workers.new.each do |_process, _thread, work|
    payload = work["payload"]
    payload = JSON.parse(payload) if payload.is_a?(String) # 7.x layout: a JSON string
    busy_jids << payload["jid"]
  end
  emit("queues" => Sidekiq::Queue.all.map(&:name),
       "queues_set" => redis.smembers("queues").sort,
       "stats_queues" => Sidekiq::Stats.new.queues,
       "enqueued" => Sidekiq::Stats.new.enqueued,
       "processes" => Sidekiq::ProcessSet.new.map { |p| p["identity"] },
       "busy" => Sidekiq::Workers.new.size,
       "busy_jids" => busy_jids,
       "latency" => Sidekiq::Queue.new("default").latency)
when "ran_jids"
  redis.lrange("test:ran", 0, -1).each { |raw| puts JSON.parse(raw)["jid"] }
else
  abort "usage: rf_coexist.rb push CLASS N [ARG] | inspect | ran_jids"
end
