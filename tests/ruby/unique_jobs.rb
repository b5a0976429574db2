# unique_jobs.rb -- sidekiq-unique-jobs 8.x beside hiredhand (Sidekiq 7.3 with the gem:
# hh_peer_ruby 73-gems). Jobs are pushed through the gem's client middleware; the reference is
# the gem's own server middleware (and its death handler) run here on the same kind of job; the
# uniquejobs:* keys each leaves are compared key by key (types, values, TTLs in 10 s steps), with
# jids, digests and times written as JID, D and T.
#
#   unique_jobs.rb reference FILE   each scenario pushed to queue "ref" and run by the gem's server
#                                   middleware here; the snapshots go to FILE (JSON)
#   unique_jobs.rb push FILE        each scenario pushed to queue "default" for hiredhand (not
#                                   running yet); the digests go to FILE
#   unique_jobs.rb compare REF PUSHED   waits (20 s at most) until every scenario's keys are the
#                                   reference's, then pushes until_executed's job again: exit 0
#                                   when all match and that push is accepted, else prints diffs
#   unique_jobs.rb push_pair CLASS  two jobs of one digest onto queue "default"
require "json"
require "sidekiq"
require "sidekiq_unique_jobs"

SidekiqUniqueJobs.configure { |c| c.logger = Logger.new(IO::NULL) }
Sidekiq.default_configuration.logger = Logger.new(IO::NULL)
Sidekiq.configure_client do |config|
  config.client_middleware { |chain| chain.add SidekiqUniqueJobs::Middleware::Client }
end

def job_class(name, opts)
  Object.const_set(name, Class.new do
    include Sidekiq::Job
    sidekiq_options(**opts)
    def perform(*); end
  end)
end

# name => [class, options, the run fails?, then the death handler?]
SCENARIOS = {
  "until_executed" => [:UqUntilExecuted, {lock: :until_executed}, false],
  "until_executed_fail" => [:UqUntilExecutedFail, {lock: :until_executed, retry: 3}, true],
  "until_executed_dead" => [:UqUntilExecutedDead, {lock: :until_executed, retry: false}, true, true],
  "until_executing" => [:UqUntilExecuting, {lock: :until_executing}, false],
  "until_executing_fail" => [:UqUntilExecutingFail, {lock: :until_executing, retry: 3}, true],
  "while_executing" => [:UqWhileExecuting, {lock: :while_executing}, false],
  "until_and_while_executing" => [:UqUntilAndWhile, {lock: :until_and_while_executing}, false],
  "until_and_while_executing_fail" => [:UqUntilAndWhileFail, {lock: :until_and_while_executing, retry: 3}, true],
  "until_expired" => [:UqUntilExpired, {lock: :until_expired, lock_ttl: 60}, false]
}.freeze
SCENARIOS.each_value { |klass, opts| job_class(klass, opts) }
job_class(:UqOverlap, lock: :while_executing)

def push(name, queue, tag)
  klass = Object.const_get(SCENARIOS.fetch(name)[0])
  jid = klass.set(queue: queue).perform_async(tag)
  raise "#{name}: push refused" unless jid
  jid
end

def ttl_step(pttl)
  (pttl < 0) ? pttl : (pttl / 10_000.0).ceil * 10
end

# The keys of one digest, normalised.
def snapshot(digest)
  Sidekiq.redis do |c|
    norm = ->(v) { v.is_a?(String) ? v.gsub(digest, "D").gsub(/\b[0-9a-f]{24}\b/, "JID").sub(/\A\d{9,}(\.\d+)?\z/, "T") : v }
    out = {}
    ["", ":QUEUED", ":PRIMED", ":LOCKED", ":INFO", ":RUN", ":RUN:QUEUED", ":RUN:PRIMED", ":RUN:LOCKED", ":RUN:INFO"].each do |sfx|
      k = digest + sfx
      type = c.call("TYPE", k)
      next if type == "none"
      val = case type
      when "string" then norm.call(c.call("GET", k))
      when "list" then c.call("LRANGE", k, 0, -1).map(&norm)
      when "hash" then c.call("HGETALL", k).to_a.flatten.map(&norm)
      else type
      end
      out["D#{sfx}"] = [type, val, ttl_step(c.call("PTTL", k))]
    end
    %w[uniquejobs:digests uniquejobs:expiring_digests].each do |z|
      [digest, "#{digest}:RUN"].each do |d|
        out["#{z} #{d.sub(digest, "D")}"] = "T" if c.call("ZSCORE", z, d)
      end
    end
    out["changelog"] = c.call("ZRANGE", "uniquejobs:changelog", 0, -1).map { |e| JSON.parse(e) }
      .select { |e| e["digest"] == digest || e["digest"] == "#{digest}:RUN" }
      .map { |e| [norm.call(e["digest"]), e["script"], e["message"], e["job_id"] && "JID", e["prev_jid"] && "JID"] }
    out
  end
end

def digest_of(item)
  item["lock_digest"]
end

case ARGV[0]
when "reference"
  ref = {}
  SCENARIOS.each do |name, (klass, _opts, fails, dies)|
    push(name, "ref", "ref-#{name}")
    jobstr = Sidekiq.redis { |c| c.call("RPOP", "queue:ref") }
    item = Sidekiq.load_json(jobstr)
    begin
      SidekiqUniqueJobs::Middleware::Server.new.call(Object.const_get(klass).new, item, "ref") do
        raise "boom" if fails
      end
    rescue => e
      SidekiqUniqueJobs::Server.death_handler.call(Sidekiq.load_json(jobstr), e) if dies
    end
    ref[name] = snapshot(digest_of(item))
  end
  File.write(ARGV[1], JSON.generate(ref))
when "push"
  pushed = {}
  SCENARIOS.each_key do |name|
    push(name, "default", "hh-#{name}")
    pushed[name] = digest_of(Sidekiq.load_json(Sidekiq.redis { |c| c.call("LINDEX", "queue:default", 0) }))
  end
  File.write(ARGV[1], JSON.generate(pushed))
when "compare"
  ref = JSON.parse(File.read(ARGV[1]))
  pushed = JSON.parse(File.read(ARGV[2]))
  deadline = Time.now + 20
  diffs = nil
  loop do
    diffs = pushed.filter_map { |name, digest| s = snapshot(digest); [name, ref[name], s] if s != ref[name] }
    break if diffs.empty? || Time.now > deadline
    sleep 0.1
  end
  diffs.each { |name, want, got| puts "#{name}:\n  gem:       #{want.inspect}\n  hiredhand: #{got.inspect}" }
  again = UqUntilExecuted.set(queue: "default").perform_async("hh-until_executed")
  puts "second push of until_executed's job refused" unless again
  exit((diffs.empty? && again) ? 0 : 1)
when "push_pair"
  a = UqOverlap.perform_async("same")
  b = UqOverlap.perform_async("same")
  puts [a, b].inspect
else
  abort "usage: unique_jobs.rb reference FILE | push FILE | compare REF PUSHED | push_pair"
end
