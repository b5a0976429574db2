# cron_fleet.rb -- sidekiq-cron's side of the mixed-fleet periodic-job
# tests (test_cron_fleet.sh). Runs with sidekiq-cron 2.x (peers' 7.3 with
# gems) or 1.8 (Debian's, with Sidekiq 6.4): the same calls, renamed in 2.x.
#   define NAME CRON QUEUE   save a job as sidekiq-cron does (date_as_argument)
#   poll                     sidekiq-cron's poller loop, every 0.2 s, until killed
#   check NAME QUEUE         the job's state read back through sidekiq-cron's API;
#                            prints "last=<epoch> history=<n> jids_ok=<0|1>"
require "sidekiq"
require "sidekiq-cron"
require "json"

Sidekiq.logger.level = Logger::WARN
V2 = Sidekiq::Cron::Job.method_defined?(:test_and_enqueue_for_time!)

case ARGV[0]
when "define"
  name, cron, queue = ARGV[1], ARGV[2], ARGV[3]
  ok = Sidekiq::Cron::Job.create(name: name, cron: cron, class: "CronTick", queue: queue,
                                 date_as_argument: true)
  abort "save refused: #{Sidekiq::Cron::Job.new(name: name, cron: cron, class: 'CronTick').tap(&:valid?).errors}" unless ok
  puts "defined"
when "poll"
  $stdout.sync = true
  puts "polling"
  loop do
    jobs = V2 ? Sidekiq::Cron::Job.all("*") : Sidekiq::Cron::Job.all
    jobs.each do |j|
      next unless j.valid?
      V2 ? j.test_and_enqueue_for_time!(Time.now.utc) : j.test_and_enque_for_time!(Time.now.utc)
    end
    sleep 0.2
  end
when "check"
  name, queue = ARGV[1], ARGV[2]
  job = Sidekiq::Cron::Job.find(name) or abort "job #{name} not found"
  hist = job.jid_history_from_redis
  queued = Sidekiq.redis { |c| c.lrange("queue:#{queue}", 0, -1) }.map { |p| JSON.parse(p)["jid"] }
  jids_ok = !hist.empty? && hist.all? { |h| queued.include?(h["jid"]) && Time.parse(h["enqueued"].to_s) }
  puts "last=#{job.last_enqueue_time.to_i} history=#{hist.size} jids_ok=#{jids_ok ? 1 : 0}"
end
