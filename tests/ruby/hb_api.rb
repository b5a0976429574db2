# tests/ruby/hb_api.rb -- Sidekiq's own API (6.4, or 7.3 / 8.1 through the peers), as the heartbeat
# tests use it.
#   processes                 -> one JSON line {"size": ProcessSet#size (after the prune that
#                                ProcessSet.new does), "total_concurrency", "list": [process attrs]}
#   workers                   -> one JSON line {"size": Workers#size (sum of busy), "list":
#                                [{"process","thread","queue","payload" (Hash),"run_at"}]}
#   signal ID quiet|stop|dump -> looks ID up in Sidekiq::ProcessSet and calls #quiet!, #stop! or
#                                #dump_threads on that Sidekiq::Process (what the Web UI does);
#                                exits 1 when ID is not listed
#   signal_all quiet|stop     -> Sidekiq::ProcessSet.new.each(&:quiet!) (the "Quiet All" button)
require_relative "helper"

def process_list
  ps = Sidekiq::ProcessSet.new
  list = []
  ps.each do |p|
    h = {}
    %w[identity hostname pid tag concurrency queues labels started_at busy beat quiet rss rtt_us].each { |k| h[k] = p[k] }
    h["stopping"] = p.stopping?
    list << h
  end
  { "size" => ps.size, "total_concurrency" => ps.total_concurrency, "list" => list }
end

def worker_list
  ws = Sidekiq::Workers.new
  list = []
  ws.each do |process, thread, w|
    work = work_hash(w)
    list << { "process" => process, "thread" => thread, "queue" => work["queue"],
              "payload" => work["payload"], "run_at" => work["run_at"] }
  end
  { "size" => ws.size, "list" => list }
end

case ARGV[0]
when "processes"
  emit(process_list)
when "workers"
  emit(worker_list)
when "signal"
  id, what = ARGV[1], ARGV[2]
  pr = Sidekiq::ProcessSet.new.find { |p| p["identity"] == id }
  abort "hb_api.rb: #{id} is not in Sidekiq::ProcessSet" unless pr
  case what
  when "quiet" then pr.quiet!
  when "stop" then pr.stop!
  when "dump" then pr.dump_threads
  else abort "hb_api.rb: signal wants quiet|stop|dump"
  end
  emit("sent" => what, "identity" => id)
when "signal_all"
  n = 0
  Sidekiq::ProcessSet.new.each { |p| ARGV[1] == "stop" ? p.stop! : p.quiet!; n += 1 }
  emit("sent" => ARGV[1], "count" => n)
else
  abort "usage: hb_api.rb processes|workers|signal ID quiet|stop|dump|signal_all quiet|stop"
end
