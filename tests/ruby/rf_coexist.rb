# Used by test_coexist_reliable_fetch.sh (coexistence of reliable fetch with Ruby Sidekiq).
#   push CLASS N [ARG]  -> pushes N jobs of CLASS to queue default with Sidekiq::Client.push_bulk
#                          (args [ARG, i]); prints the jids, one a line
#   inspect             -> prints one JSON line: what Sidekiq 6.4.1's API reads --
#                          {"queues": Sidekiq::Queue.all names, "queues_set": SMEMBERS queues,
#                           "stats_queues": Sidekiq::Stats#queues, "enqueued": Stats#enqueued,
#                           "processes": ProcessSet identities, "busy": Workers#size,
#                           "busy_jids": jids on the Busy page, "latency": Queue("default").latency}
#   ran_jids            -> prints the jid of every entry in test:ran (jobs run by Ruby Sidekiq)
#   trickle CLASS DONE_FILE WANT MAX DEADLINE_S
#                       -> pushes CLASS jobs 4 at a time, each batch once the previous one has run
#                          (so idle threads of both sides are waiting), until hiredhand (jids in
#                          DONE_FILE) and Ruby Sidekiq (test:ran) have each run WANT of them, or
#                          MAX were pushed, or the deadline passed (once one side has WANT, a batch
#                          a second, so a stalled side still finds jobs); prints the jids. Waiting
#                          for that event, not for a share of a fixed bulk, keeps the test's
#                          "both sides work" check meaningful on a loaded machine.
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
when "trickle"
  klass, done_file, want, max, secs = ARGV[1], ARGV[2], ARGV[3].to_i, ARGV[4].to_i, ARGV[5].to_f
  deadline = Time.now + secs
  hh_done = -> { File.exist?(done_file) ? File.readlines(done_file).map { |l| l.split.first } : [] }
  sk_done = -> { redis.lrange("test:ran", 0, -1).map { |raw| JSON.parse(raw)["jid"] } }
  jids = []
  loop do
    hh, sk = hh_done.(), sk_done.()
    break if (jids & hh).size >= want && (jids & sk).size >= want
    break if jids.size + 4 > max || Time.now > deadline
    batch = Sidekiq::Client.push_bulk("class" => klass, "queue" => "default",
                                      "args" => (0...4).map { |i| [jids.size + i] })
    raise "push_bulk returned #{batch.inspect}" unless batch.is_a?(Array) && batch.size == 4
    jids.concat(batch)
    sleep 0.02 until (batch - hh_done.() - sk_done.()).empty? || Time.now > deadline
    # one side has its share, the other none yet (stalled, or slow to boot): a batch a second,
    # so the side that is ahead does not eat the whole budget before the other wakes
    hh, sk = hh_done.(), sk_done.()
    sleep 1 if ((jids & hh).size >= want) != ((jids & sk).size >= want)
  end
  puts jids
when "ran_jids"
  redis.lrange("test:ran", 0, -1).each { |raw| puts JSON.parse(raw)["jid"] }
else
  abort "usage: rf_coexist.rb push CLASS N [ARG] | inspect | ran_jids | trickle CLASS DONE_FILE WANT MAX DEADLINE_S"
end
