# bench/sidekiq_bench.rb -- the Sidekiq half of `make bench`: Debian's Sidekiq 6.4 with `ruby`,
# Sidekiq 7.3 when run with the peers' `ruby73` (BENCH_SIDEKIQ_SERVER names its server command).
#
# One file, two roles:
#
# * Loaded by the real server, `sidekiq -r bench/sidekiq_bench.rb -c 10 -q default`, it defines
#   the no-op NoopJob and LatencyJob workers. What the driver needs from inside the server
#   travels through the environment:
#     BENCH_TARGET=N, BENCH_DONE_FILE=path  the N-th NoopJob to finish writes the wall-clock time,
#                                           the number of jobs that ran twice and of those never
#                                           run (one byte per job index) into path (Sidekiq flushes
#                                           stat:processed only every 5 s, too coarse to time by)
#     BENCH_MODE=latency                    adds a server middleware recording now - enqueued_at
#                                           for LatencyJob; the N-th writes them all into path
#
# * Run as a script, it is the driver, the counterpart of bench/bench.c:
#     ruby bench/sidekiq_bench.rb enqueue  -n N [-b 1000]
#     ruby bench/sidekiq_bench.rb process  -n N -c C [--timeout S]
#     ruby bench/sidekiq_bench.rb latency  [-c 10] [-j 1000] [--rate 200] [--idle 10]
#     ruby bench/sidekiq_bench.rb pickup   [-c 3] [--queues 3] [--busy 1] [-j 100] [--prefix P]
#     ruby bench/sidekiq_bench.rb trickle  [-c 10] [--queues 3] [-j 1000] [--rate 200] [--prefix P]
#   with REDIS_URL set (or --url). It prints the same key=value lines as hh_bench, so
#   bench/run.sh tabulates both alike. process and latency start the `sidekiq` executable
#   themselves (in --tmp DIR, pid written to --pidfile for run.sh's clean-up) and stop it with
#   TERM. Measurement windows are the same as hh_bench's: the jobs are moved aside (RENAME)
#   while the server boots, and moved back once it has beaten and settled; the clock, the CPU
#   (utime+stime from /proc/<pid>/stat) and INFO commandstats start there.
require "json"
require "logger"
require "etc"
require "shellwords"
require "redis"
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
require "sidekiq"

BENCH_REDIS_URL = ENV["REDIS_URL"].to_s
abort "sidekiq_bench.rb: REDIS_URL is not set" if BENCH_REDIS_URL.empty? && !ARGV.include?("--url")

Sidekiq.configure_client { |c| c.redis = { url: BENCH_REDIS_URL, size: 2 } }
Sidekiq.configure_server { |c| c.redis = { url: BENCH_REDIS_URL } }
Sidekiq.logger.level = Logger::WARN

# In-server probe: counts finished NoopJobs and collects pickup latencies.
module BenchProbe
  TARGET = ENV["BENCH_TARGET"].to_i
  DONE_FILE = ENV["BENCH_DONE_FILE"]
  @lock = Mutex.new
  @count = 0
  @dups = 0
  @seen = "\0".b * [TARGET, 0].max
  @latencies = []

  # the job's one counter increment, and its index marked
  def self.job_done(i)
    n, dups, missing = @lock.synchronize do
      if i.is_a?(Integer) && i >= 0 && i < TARGET
        @seen.getbyte(i).zero? ? @seen.setbyte(i, 1) : (@dups += 1)
      else
        @dups += 1
      end
      @count += 1
      [@count, @dups, @count == TARGET ? @seen.count("\0") : 0]
    end
    publish("#{Time.now.to_f} #{dups} #{missing}") if n == TARGET && DONE_FILE
  end

  def self.latency(seconds)
    all = @lock.synchronize do
      @latencies << seconds
      @latencies.size == TARGET ? @latencies.dup : nil
    end
    publish(JSON.generate(all)) if all && DONE_FILE
  end

  # write-then-rename: the driver never reads half a file
  def self.publish(text)
    tmp = "#{DONE_FILE}.tmp"
    File.write(tmp, text)
    File.rename(tmp, DONE_FILE)
  end
end

class NoopJob
  include Sidekiq::Worker

  # no work; the probe is one mutex-guarded increment (well under 1 us of the job's cost)
  def perform(i)
    BenchProbe.job_done(i)
  end
end

class LatencyJob
  include Sidekiq::Worker

  def perform(_i); end
end

# Holds its thread until the driver creates BENCH_RELEASE (pickup with one thread busy).
class BusyJob
  include Sidekiq::Worker

  def perform
    release = ENV["BENCH_RELEASE"].to_s
    File.write("#{release}.started", "1") unless release.empty?
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 300
    sleep 0.005 until release.empty? || File.exist?(release) ||
                      Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
  end
end

# now - enqueued_at, taken as the job reaches the server middleware chain (just before perform)
class BenchLatencyProbe
  def call(_worker, job, _queue)
    if job["class"] == "LatencyJob"
      now = Time.now.to_f
      t = job["enqueued_at"]
      t = t / 1000.0 if t.is_a?(Integer) # Sidekiq 8 writes milliseconds
      BenchProbe.latency(now - t.to_f)
    end
    yield
  end
end

if ENV["BENCH_MODE"] == "latency"
  Sidekiq.configure_server { |c| c.server_middleware { |chain| chain.add BenchLatencyProbe } }
end

# ------------------------------------------------------------------------------------ driver

class BenchDriver
  APP = File.expand_path(__FILE__)
  HZ = (Etc.sysconf(Etc::SC_CLK_TCK) rescue 100)

  def initialize(argv)
    @mode = argv.shift
    @o = { url: BENCH_REDIS_URL, n: 100_000, batch: 1000, conc: 10, jobs: 1000, rate: 200.0,
           idle: 10.0, settle: 0.5, timeout: 120.0, tmp: Dir.pwd, pidfile: nil,
           queues: 3, busy: 0, prefix: "pickup" }
    until argv.empty?
      flag = argv.shift
      val = argv.shift or usage!("#{flag} needs a value")
      case flag
      when "--url", "-u" then @o[:url] = val
      when "-n", "--jobs" then @o[:n] = int!(val)
      when "-b", "--batch" then @o[:batch] = int!(val)
      when "-c", "--concurrency" then @o[:conc] = int!(val)
      when "-j", "--latency-jobs" then @o[:jobs] = int!(val)
      when "--rate" then @o[:rate] = float!(val)
      when "--idle" then @o[:idle] = float!(val)
      when "--settle" then @o[:settle] = Float(val)
      when "--timeout" then @o[:timeout] = float!(val)
      when "--tmp" then @o[:tmp] = val
      when "--pidfile" then @o[:pidfile] = val
      when "--queues" then @o[:queues] = int!(val)
      when "--busy" then @o[:busy] = Integer(val, 10)
      when "--prefix" then @o[:prefix] = val
      else usage!("unknown option #{flag}")
      end
    end
    @redis = Redis.new(url: @o[:url])
    @pid = nil
    at_exit { kill_server }
  end

  def usage!(msg)
    warn "sidekiq_bench.rb: #{msg}"
    warn "usage: ruby bench/sidekiq_bench.rb enqueue|process|latency|pickup|trickle [-n N] [-c C] [-b BATCH] " \
         "[-j JOBS] [--rate R] [--idle S] [--settle S] [--timeout S] [--tmp DIR] [--pidfile F]"
    exit! 2
  end

  def int!(v)
    i = Integer(v, 10)
    usage!("not a positive integer: #{v}") unless i.positive?
    i
  rescue ArgumentError
    usage!("not an integer: #{v}")
  end

  def float!(v)
    f = Float(v)
    usage!("not a positive number: #{v}") unless f.positive?
    f
  rescue ArgumentError
    usage!("not a number: #{v}")
  end

  def run
    case @mode
    when "enqueue" then enqueue
    when "process" then process
    when "latency" then latency
    when "pickup" then pickup
    when "trickle" then trickle
    else usage!("unknown mode #{@mode.inspect}")
    end
  end

  # ---------------------------------------------------------------- helpers

  def out(key, value)
    $stdout.puts "#{key}=#{value}"
    $stdout.flush
  end

  def note(msg)
    warn "sidekiq_bench: #{msg}"
  end

  def mono
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def cmdstats
    @redis.info("commandstats").transform_values { |h| h["calls"].to_i }
  end

  # per-command deltas, our own INFO (and other own commands) taken out
  def cmd_delta(a, b, own = {})
    d = {}
    b.each do |k, v|
      x = v - a.fetch(k, 0) - own.fetch(k, 0)
      d[k] = x if x.positive?
    end
    d
  end

  def breakdown(d, per, max)
    d.sort_by { |_, v| -v }.first(max).map { |k, v| format("%s:%.3g", k, v / per) }.join(",")
  end

  # redis-server's own CPU (INFO cpu), seconds
  def redis_cpu
    h = @redis.info("cpu")
    h["used_cpu_sys"].to_f + h["used_cpu_user"].to_f
  end

  def cpu_ticks(pid)
    s = File.read("/proc/#{pid}/stat")
    f = s[(s.rindex(")") + 2)..].split(" ")
    f[11].to_i + f[12].to_i # utime, stime (fields 14 and 15)
  end

  def hwm_kib(pid)
    File.read("/proc/#{pid}/status")[/^VmHWM:\s+(\d+)/, 1].to_i
  end

  def server_alive?
    @pid && Process.waitpid(@pid, Process::WNOHANG).nil?
  rescue Errno::ECHILD
    false
  end

  def start_server(conc, queues, env)
    log = File.join(@o[:tmp], "sidekiq.#{@mode}.c#{conc}.log")
    server = Shellwords.split(ENV.fetch("BENCH_SIDEKIQ_SERVER", "sidekiq"))
    args = server + ["-r", APP, "-c", conc.to_s] + queues.flat_map { |q| ["-q", q] }
    @pid = Process.spawn({ "REDIS_URL" => @o[:url] }.merge(env), *args,
                         chdir: @o[:tmp], in: File::NULL, out: [log, "a"], err: [:child, :out])
    File.write(@o[:pidfile], "#{@pid}\n") if @o[:pidfile]
    @log = log
    # ready: its first heartbeat put it into `processes`
    deadline = mono + 60
    until @redis.smembers("processes").any? { |id| id.include?(":#{@pid}:") }
      fail_run("sidekiq exited during boot; log #{log}:\n#{tail(log)}") unless server_alive?
      fail_run("sidekiq did not beat within 60 s; log #{log}:\n#{tail(log)}") if mono > deadline
      sleep 0.02
    end
    sleep @o[:settle]
  end

  def stop_server
    return unless @pid
    begin
      Process.kill("TERM", @pid)
    rescue Errno::ESRCH
      nil
    end
    deadline = mono + 30
    while server_alive?
      if mono > deadline
        note "sidekiq did not stop within 30 s: KILL"
        Process.kill("KILL", @pid)
        Process.wait(@pid)
        break
      end
      sleep 0.02
    end
    @pid = nil
  end

  def kill_server
    return unless @pid
    Process.kill("KILL", @pid)
    Process.wait(@pid)
  rescue StandardError
    nil
  end

  def tail(path)
    File.exist?(path) ? File.readlines(path).last(30).join : "(no log)"
  end

  def fail_run(msg)
    note msg
    kill_server
    exit! 1
  end

  def wait_file(path, timeout)
    deadline = mono + timeout
    until File.exist?(path)
      return false if mono > deadline || !server_alive?
      sleep 0.002
    end
    true
  end

  # ---------------------------------------------------------------- modes

  def enqueue
    n = @o[:n]
    args = (0...n).map { |i| [i] }
    len0 = @redis.llen("queue:default")
    a = cmdstats
    cpu0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    t0 = mono
    args.each_slice(@o[:batch]) { |slice| Sidekiq::Client.push_bulk("class" => NoopJob, "args" => slice) }
    t1 = mono
    cpu1 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    d = cmd_delta(a, cmdstats, "info" => 1)
    grew = @redis.llen("queue:default") - len0
    ok = grew == n
    note "CHECK FAILED: queue:default grew by #{grew}, expected #{n}" unless ok
    out "enqueue_jobs", n
    out "enqueue_seconds", format("%.4f", t1 - t0)
    out "enqueue_jobs_per_s", format("%.0f", n / (t1 - t0))
    out "enqueue_client_cpu_us_per_job", format("%.2f", (cpu1 - cpu0) * 1e6 / n)
    out "enqueue_cmds_per_job", format("%.4f", d.values.sum.to_f / n)
    out "enqueue_cmd_breakdown", breakdown(d, n.to_f, 8)
    out "enqueue_ok", ok ? 1 : 0
    exit!(ok ? 0 : 1)
  end

  def process
    n = @o[:n]
    c = @o[:conc]
    len = @redis.llen("queue:default")
    if len != n
      note "queue:default holds #{len} jobs, expected #{n} (run the enqueue mode first)"
      exit! 2
    end
    p0 = @redis.get("stat:processed").to_i
    f0 = @redis.get("stat:failed").to_i
    @redis.rename("queue:default", "sk_bench:staging")
    done = File.join(@o[:tmp], "sidekiq.done.#{Process.pid}.c#{c}")
    File.delete(done) if File.exist?(done)
    start_server(c, ["default"], "BENCH_TARGET" => n.to_s, "BENCH_DONE_FILE" => done)

    a = cmdstats
    cpu0 = cpu_ticks(@pid)
    rcpu0 = redis_cpu
    t0 = Time.now.to_f
    @redis.rename("sk_bench:staging", "queue:default")
    finished = wait_file(done, @o[:timeout])
    rcpu1 = redis_cpu
    cpu1 = cpu_ticks(@pid) if server_alive?
    hwm = server_alive? ? hwm_kib(@pid) : 0
    fail_run("CHECK FAILED: only part of #{n} jobs done after #{@o[:timeout]} s; log #{@log}:\n#{tail(@log)}") unless finished && cpu1
    t_end, dups, missing = File.read(done).split.map(&:to_f)
    secs = t_end - t0
    stop_server
    d = cmd_delta(a, cmdstats, "info" => 3, "rename" => 1)
    p1 = @redis.get("stat:processed").to_i
    f1 = @redis.get("stat:failed").to_i
    left = @redis.llen("queue:default")
    ok = true
    if p1 - p0 != n
      note "CHECK FAILED: stat:processed grew by #{p1 - p0}, expected exactly #{n}"
      ok = false
    end
    if f1 - f0 != 0
      note "CHECK FAILED: stat:failed grew by #{f1 - f0}, expected 0"
      ok = false
    end
    if left != 0
      note "CHECK FAILED: #{left} jobs left in queue:default"
      ok = false
    end
    if dups.to_i != 0 || missing.to_i != 0
      note "CHECK FAILED: #{dups.to_i} job(s) ran more than once, #{missing.to_i} never ran"
      ok = false
    end
    cpu = (cpu1 - cpu0).to_f / HZ
    k = "proc_c#{c}"
    out "#{k}_seconds", format("%.4f", secs)
    out "#{k}_jobs_per_s", format("%.0f", n / secs)
    out "#{k}_cpu_us_per_job", format("%.2f", cpu * 1e6 / n)
    out "#{k}_cpu_pct", format("%.1f", cpu / secs * 100)
    out "#{k}_redis_cpu_us_per_job", format("%.2f", (rcpu1 - rcpu0) * 1e6 / n)
    out "#{k}_redis_cpu_pct", format("%.1f", (rcpu1 - rcpu0) / secs * 100)
    out "#{k}_peak_rss_kib", hwm
    out "#{k}_cmds_per_job", format("%.4f", d.values.sum.to_f / n)
    out "#{k}_missing", missing.to_i
    out "#{k}_dups", dups.to_i
    out "#{k}_processed_delta", p1 - p0
    out "#{k}_failed_delta", f1 - f0
    out "#{k}_ok", ok ? 1 : 0
    out "#{k}_cmd_breakdown", breakdown(d, n.to_f, 10)
    exit!(ok ? 0 : 1)
  end

  def latency
    jobs = @o[:jobs]
    queues = %w[critical default low]
    done = File.join(@o[:tmp], "sidekiq.latency.#{Process.pid}")
    File.delete(done) if File.exist?(done)
    start_server(@o[:conc], queues, "BENCH_MODE" => "latency", "BENCH_TARGET" => jobs.to_s,
                                    "BENCH_DONE_FILE" => done)
    t0 = mono
    jobs.times do |i|
      wait = t0 + i / @o[:rate] - mono
      sleep wait if wait.positive?
      Sidekiq::Client.push("class" => "LatencyJob", "args" => [i], "queue" => queues[i % queues.size])
    end
    fail_run("not all #{jobs} latency jobs ran within 30 s of the last push; log #{@log}:\n#{tail(@log)}") \
      unless wait_file(done, 30)
    lat = JSON.parse(File.read(done)).sort
    pct = ->(q) { lat[[(q * lat.size).ceil, 1].max - 1] }
    out "lat_jobs", lat.size
    out "lat_p50_ms", format("%.3f", pct.call(0.50) * 1e3)
    out "lat_p99_ms", format("%.3f", pct.call(0.99) * 1e3)
    out "lat_max_ms", format("%.3f", lat.last * 1e3)
    out "lat_mean_ms", format("%.3f", lat.sum / lat.size * 1e3)
    out "lat_ok", 1

    # idle: the same server, nothing to do
    sleep 1
    a = cmdstats
    cpu0 = cpu_ticks(@pid)
    rcpu0 = redis_cpu
    i0 = mono
    sleep @o[:idle]
    i1 = mono
    cpu1 = cpu_ticks(@pid)
    rcpu1 = redis_cpu
    d = cmd_delta(a, cmdstats, "info" => 3)
    secs = i1 - i0
    out "idle_seconds", format("%.2f", secs)
    out "idle_redis_cpu_pct", format("%.3f", (rcpu1 - rcpu0) / secs * 100)
    out "idle_cpu_pct", format("%.3f", (cpu1 - cpu0).to_f / HZ / secs * 100)
    out "idle_cmds_per_s", format("%.2f", d.values.sum / secs)
    out "idle_cmd_breakdown", breakdown(d, secs, 12)
    out "idle_peak_rss_kib", hwm_kib(@pid)
    stop_server
    exit! 0
  end

  # The counterpart of hh_bench pickup: N queues (strict; critical,default,low when N is 3,
  # else q1..qN), one thread held by a BusyJob with --busy 1, then j LatencyJob jobs pushed one
  # at a time, each once the previous one left its queue, to queue (i * 37) % N.
  def pickup
    jobs = @o[:jobs]
    nq = @o[:queues]
    queues = nq == 3 ? %w[critical default low] : (1..nq).map { |i| "q#{i}" }
    done = File.join(@o[:tmp], "sidekiq.pickup.#{Process.pid}")
    release = File.join(@o[:tmp], "sidekiq.release.#{Process.pid}")
    [done, release, "#{release}.started"].each { |f| File.delete(f) if File.exist?(f) }
    start_server(@o[:conc], queues, "BENCH_MODE" => "latency", "BENCH_TARGET" => jobs.to_s,
                                    "BENCH_DONE_FILE" => done, "BENCH_RELEASE" => release)
    if @o[:busy] == 1
      Sidekiq::Client.push("class" => "BusyJob", "args" => [], "queue" => queues[0])
      fail_run("the BusyJob did not start within 20 s") unless wait_file("#{release}.started", 20)
      sleep 0.5
    end
    jobs.times do |i|
      q = queues[(i * 37) % nq]
      Sidekiq::Client.push("class" => "LatencyJob", "args" => [i], "queue" => q)
      deadline = mono + 30
      sleep 0.0005 while @redis.llen("queue:#{q}").positive? && mono < deadline
      sleep 0.02 + ((i * 13) % 30) / 1000.0
    end
    ok = wait_file(done, 30)
    File.write(release, "1")
    fail_run("not all #{jobs} pickup jobs ran within 30 s; log #{@log}:\n#{tail(@log)}") unless ok
    lat = JSON.parse(File.read(done)).sort
    pct = ->(q) { lat[[(q * lat.size).ceil, 1].max - 1] }
    k = @o[:prefix]
    out "#{k}_p50_ms", format("%.3f", pct.call(0.50) * 1e3)
    out "#{k}_p99_ms", format("%.3f", pct.call(0.99) * 1e3)
    out "#{k}_max_ms", format("%.3f", lat.last * 1e3)
    out "#{k}_jobs", lat.size
    stop_server
    out "#{k}_ok", 1
    exit! 0
  end

  # The counterpart of hh_bench trickle: N strict queues (q1..qN), idle, then j LatencyJob jobs
  # pushed at --rate per second, job i to queue (i * 37) % N. Redis CPU and commands per job from
  # the first push to the last job's start (the pushes included, our own INFO calls left out).
  def trickle
    jobs = @o[:jobs]
    nq = @o[:queues]
    queues = (1..nq).map { |i| "q#{i}" }
    k = @o[:prefix] == "pickup" ? "trickle" : @o[:prefix]
    done = File.join(@o[:tmp], "sidekiq.trickle.#{Process.pid}")
    File.delete(done) if File.exist?(done)
    start_server(@o[:conc], queues, "BENCH_MODE" => "latency", "BENCH_TARGET" => jobs.to_s,
                                    "BENCH_DONE_FILE" => done)
    sleep 1 # every thread sits in its BRPOP
    a = cmdstats
    cpu0 = cpu_ticks(@pid)
    rcpu0 = redis_cpu
    t0 = mono
    jobs.times do |i|
      wait = t0 + i / @o[:rate] - mono
      sleep wait if wait.positive?
      Sidekiq::Client.push("class" => "LatencyJob", "args" => [i], "queue" => queues[(i * 37) % nq])
    end
    fail_run("not all #{jobs} trickle jobs ran within 30 s of the last push; log #{@log}:\n#{tail(@log)}") \
      unless wait_file(done, 30)
    t1 = mono
    rcpu1 = redis_cpu
    cpu1 = cpu_ticks(@pid)
    d = cmd_delta(a, cmdstats, "info" => 3)
    lat = JSON.parse(File.read(done)).sort
    pct = ->(q) { lat[[(q * lat.size).ceil, 1].max - 1] }
    out "#{k}_jobs", lat.size
    out "#{k}_queues", nq
    out "#{k}_seconds", format("%.2f", t1 - t0)
    out "#{k}_redis_cpu_us_per_job", format("%.1f", (rcpu1 - rcpu0) * 1e6 / jobs)
    out "#{k}_cpu_us_per_job", format("%.1f", (cpu1 - cpu0).to_f / HZ * 1e6 / jobs)
    out "#{k}_cmds_per_job", format("%.2f", d.values.sum.to_f / jobs)
    out "#{k}_p50_ms", format("%.3f", pct.call(0.50) * 1e3)
    out "#{k}_p99_ms", format("%.3f", pct.call(0.99) * 1e3)
    out "#{k}_cmd_breakdown", breakdown(d, jobs.to_f, 10)
    stop_server
    out "#{k}_ok", 1
    exit! 0
  end
end

BenchDriver.new(ARGV.dup).run if File.expand_path($PROGRAM_NAME) == File.expand_path(__FILE__)
