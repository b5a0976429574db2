# tests/ruby/job_metrics_check.rb -- Sidekiq 7.3's or 8.1's view of the execution metrics
# (Metrics tab), for test_job_metrics_sidekiq; run with the peer's Ruby (hh_peer_ruby 73|81).
#   push QUEUE:CLASS:OK:FAIL...  pushes, with Sidekiq's client and retry: false, OK jobs
#                                [SECONDS, "ok"] and FAIL jobs [0, "fail"] of CLASS to QUEUE
#   check                        Sidekiq::Metrics::Query (top_jobs, for_job) and the Web UI's
#                                /metrics and /metrics/<Class> pages show, over the last hour:
#       MxRuby       run by this generation's Sidekiq server: 3 ok, 1 failed
#       MxHiredhand  run by hiredhand: the same as MxRuby (runs, failures, histogram; its ms
#                    within the same bounds)
#       MxShared     3 ok and 1 failed by Sidekiq, as many by hiredhand: the sum
#     each successful run in the histogram bucket of SECS (2.5-3.8 s).
require "json"
require "sidekiq"
require "sidekiq/api"
require "sidekiq/metrics/query"

SECS = 2.6 # bucket 2500-3800 ms: room for a loaded machine (mx_job.sh sleeps as long)
EDGE = Sidekiq::Metrics::Histogram::BUCKET_INTERVALS.find { |e| SECS * 1000 < e }
Sidekiq.configure_client { |c| c.redis = { url: ENV.fetch("REDIS_URL") } }
Sidekiq.logger.level = Logger::WARN

$failures = []
def check(cond, msg)
  $failures << msg unless cond
end

def check_eq(actual, expected, msg)
  check(actual == expected, "#{msg}: expected #{expected.inspect}, got #{actual.inspect}")
end

def push(specs)
  specs.each do |spec|
    queue, klass, ok, fail = spec.split(":")
    jobs = [[SECS, "ok"]] * ok.to_i + [[0, "fail"]] * fail.to_i
    jobs.each { |args| Sidekiq::Client.push("queue" => queue, "class" => klass, "args" => args, "retry" => false) }
  end
end

# Histogram#fetch returns the buckets slowest first; this gives bucket i at i, summed over minutes.
def hist_totals(jr)
  return [0] * 26 if jr.hist.empty?
  jr.hist.values.transpose.map(&:sum).reverse
end

def expected_hist(n)
  edges = Sidekiq::Metrics::Histogram::BUCKET_INTERVALS
  h = [0] * 26
  h[edges.index { |e| SECS * 1000 < e }] = n
  h
end

def web_get(path)
  require "rack"
  require "rack/session" if Gem::Version.new(Sidekiq::VERSION) >= Gem::Version.new("8") && !defined?(Rack::Session::Cookie)
  require "sidekiq/web"
  @app ||= Rack::Builder.new do
    use Rack::Session::Cookie, secret: "x" * 64
    run Sidekiq::Web
  end
  res = Rack::MockRequest.new(@app).get(path)
  check_eq(res.status, 200, "GET #{path}")
  res.body
end

def text(s)
  s.gsub(/<[^>]+>/, " ").gsub(/\s+/, " ").strip
end

def cells(row)
  row.scan(%r{<td[^>]*>(.*?)</td>}m).map { |c| text(c[0]) }
end

def check_all
  gen = Sidekiq::VERSION
  want = { "MxRuby" => [4, 1, 3], "MxHiredhand" => [4, 1, 3], "MxShared" => [8, 2, 6] }
  q = Sidekiq::Metrics::Query.new
  top = q.top_jobs(minutes: 60).job_results
  seen = {}
  want.each do |klass, (p, f, ok)|
    t = top[klass].totals
    check_eq([t["p"], t["f"]], [p, f], "#{gen} top_jobs #{klass} p, f")
    lo, hi = (ok * SECS * 1000).round, ok * EDGE
    check(t["ms"] >= lo && t["ms"] < hi, "#{gen} top_jobs #{klass} ms #{t["ms"]} not in [#{lo}, #{hi})")
    jr = q.for_job(klass, minutes: 60).job_results[klass]
    check_eq([jr.totals["p"], jr.totals["f"], jr.totals["ms"]], [p, f, t["ms"]], "#{gen} for_job #{klass} p, f, ms")
    check_eq(hist_totals(jr), expected_hist(ok), "#{gen} for_job #{klass} histogram")
    seen[klass] = [t["p"], t["f"], hist_totals(jr)]
  end
  check_eq(seen["MxHiredhand"], seen["MxRuby"], "#{gen}: hiredhand's runs read as Sidekiq's")

  # The Web UI: the Metrics table (Success, Failure, seconds) and the class's histogram chart.
  page = web_get("/metrics")
  want.each do |klass, (p, f, ok)|
    row = page.split(/<tr[\s>]/).find { |r| r.include?("metrics/#{klass}?") }
    check(!row.nil?, "#{gen} /metrics has a row for #{klass}")
    next unless row
    c = cells(row)
    check_eq(c[1..2], [(p - f).to_s, f.to_s], "#{gen} /metrics #{klass} Success, Failure")
    check(c[3].to_f >= (ok * SECS).round(2) - 0.01 && c[3].to_f < ok * EDGE / 1000.0, "#{gen} /metrics #{klass} seconds #{c[3]}")
  end
  body = web_get("/metrics/MxShared")
  chart = body[%r{<canvas id="hist-totals-chart">\s*(.*?)\s*</canvas>}m, 1]
  check(!chart.nil?, "#{gen} /metrics/MxShared has the histogram chart")
  if chart
    series = JSON.parse(chart.gsub("&quot;", '"'))["series"]
    check_eq(series, expected_hist(6), "#{gen} /metrics/MxShared histogram")
  end
end

case ARGV.shift
when "push" then push(ARGV)
when "check" then check_all
else abort "usage: job_metrics_check.rb push QUEUE:CLASS:OK:FAIL... | check"
end
$failures.each { |f| $stderr.puts "FAIL: #{f}" } # not warn: -W0 silences it
puts "ok #{Sidekiq::VERSION}" if $failures.empty?
exit($failures.empty? ? 0 : 1)
