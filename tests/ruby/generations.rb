# tests/ruby/generations.rb -- the parts of test_sidekiq_generations.sh that the other helpers do
# not cover, written against whichever Sidekiq loads (6.4, 7.3 or 8.1: run it with hh_peer_ruby).
#   push             -> with this generation's client, into queue default: OkWorker.perform_in(1)
#                       and perform_in(3600), FailWorker.set(retry: 2 | 0).perform_in(1) (f2, f0),
#                       SlowWorker.perform_async (busy); name => jid in test:jobs, the member as
#                       written in test:raw (failure_checks.rb reads both)
#   first            -> after hiredhand's scheduler moved and ran "in1": its payload kept every key
#                       and token, gained one enqueued_at in hiredhand's layout; ScheduledSet
#                       reads "later" (at, args, and 8.x's JobRecord#created_at); RetrySet /
#                       DeadSet read f2 and f0 after their first run; then f2's retry is made due
#   second STATS     -> RetrySet reads f2 after its second run (retried_at), and Sidekiq::Stats
#                       equals STATS {"processed","failed","retry_size","dead_size","scheduled_size"}
#   web get PATH NEEDLE [PATH NEEDLE]... -> Sidekiq::Web answers each GET PATH with 200 and a body
#                                 that holds its NEEDLE
#   web press ID quiet|stop    -> the Busy page's per-process button: POST /busy as a browser
#                                 sends it (7.x: the page's authenticity_token with the session
#                                 cookie; 8.x: Sec-Fetch-Site: same-origin); expects the redirect
require_relative "failure_checks"

GEN8 = Sidekiq::VERSION.to_i >= 8

class OkWorker
  include Sidekiq::Worker
  def perform(*); end
end

class FailWorker < OkWorker; end
class SlowWorker < OkWorker; end

def near_now?(t, slack = 60)
  t.is_a?(Time) && (t.to_f - Time.now.to_f).abs < slack
end

def web_app
  Rack::Builder.new do
    use Rack::Session::Cookie, secret: "x" * 64
    run Sidekiq::Web
  end.to_app
end

NOW = Time.now.to_f

def push
  jobs = {
    "in1" => OkWorker.perform_in(1, "in1", { "k" => [1, 2.5, nil] }),
    "later" => OkWorker.perform_in(3600, "later"),
    "f2" => FailWorker.set(retry: 2).perform_in(1, "f2"),
    "f0" => FailWorker.set(retry: 0).perform_in(1, "f0")
  }
  members = redis.zrange("schedule", 0, -1)
  jobs.each do |name, jid|
    raw = members.find { |m| JSON.parse(m)["jid"] == jid } or abort "#{name} is not in the schedule"
    redis.hset("test:jobs", name, jid)
    redis.hset("test:raw", name, raw)
  end
  redis.hset("test:jobs", "busy", SlowWorker.perform_async("busy-arg", 42))
  puts jobs.size + 1
end

def check_scheduled(now)
  raw = redis.lrange("test:ran", 0, -1).select { |s| JSON.parse(s)["jid"] == jid_of("in1") }
  check_eq(raw.size, 1, "in1: runs")
  if (r = raw.first)
    member = redis.hget("test:raw", "in1")
    job = JSON.parse(r)
    JSON.parse(member).each { |k, v| check_eq(job[k], v, "in1: key #{k} kept when hiredhand moved it") unless k == "enqueued_at" }
    check_eq(r.scan('"enqueued_at"').size, 1, "in1: one enqueued_at key in #{r}")
    check(stamp_ok?(r, "enqueued_at"), "in1: enqueued_at in hiredhand's layout: #{r}")
    check((stamp_s(job["enqueued_at"]) - now).abs < 60, "in1: enqueued_at #{job["enqueued_at"]} near now")
    ca = member[/"created_at":[^,}]+/]
    check(r.include?(ca), "in1: created_at token #{ca} kept: #{r}")
    check(!job.key?("at"), "in1: no 'at' key")
  end
  ss = Sidekiq::ScheduledSet.new
  check_eq(ss.size, 1, "ScheduledSet size (only 'later' left)")
  e = ss.find_job(jid_of("later"))
  check(!e.nil?, "ScheduledSet finds 'later'")
  if e
    check_between(e.at.to_f - now, 3500, 3601, "'later': ScheduledSet entry's at - now (s)")
    check_eq(e.args, ["later"], "'later': args")
    check(near_now?(e.created_at), "'later': JobRecord#created_at #{e.created_at} near now") if GEN8
  end
end

def check_failures(phase, now)
  rs = Sidekiq::RetrySet.new
  ds = Sidekiq::DeadSet.new
  e = rs.find_job(jid_of("f2"))
  check(!e.nil?, "f2 (retry: 2) is in the RetrySet after run #{phase}")
  check(ds.find_job(jid_of("f2")).nil?, "f2 is not in the DeadSet")
  if e
    item = e.item
    common_failure_checks("f2", e, "retry", now)
    check_eq(item["retry_count"], phase - 1, "f2: retry_count after run #{phase}")
    check(item["error_message"].include?("boom: FailWorker failed on purpose"), "f2: error_message carries the last stderr line: #{item["error_message"].inspect}")
    check(e.at.to_f > now - 1, "f2: retry due time in the future")
    if phase == 1
      check(!item.key?("retried_at"), "f2: no retried_at after the first failure")
      check_between(e.score - stamp_s(item["failed_at"]), 14.999, 24.5, "f2: first retry delay (score - failed_at)")
      redis.hset("test:failed_at", "f2", JSON.generate(item["failed_at"]))
    else
      check(stamp_ok?(e.value, "retried_at"), "f2: retried_at in hiredhand's layout: #{e.value}")
      check(stamp_s(item["retried_at"]) >= stamp_s(item["failed_at"]), "f2: retried_at >= failed_at")
      check_eq(JSON.generate(item["failed_at"]), redis.hget("test:failed_at", "f2"), "f2: failed_at unchanged since the first failure")
      check(near_now?(e.retried_at), "f2: JobRecord#retried_at #{e.retried_at} near now") if GEN8
    end
    check(near_now?(e.failed_at), "f2: JobRecord#failed_at #{e.failed_at} near now") if GEN8
  end
  d = ds.find_job(jid_of("f0"))
  check(!d.nil?, "f0 (retry: 0) is in the DeadSet")
  check(rs.find_job(jid_of("f0")).nil?, "f0 is not in the RetrySet")
  if d
    common_failure_checks("f0", d, "dead", now)
    check_eq(d.item["retry_count"], 0, "f0: retry_count in dead")
    check_between(d.score, now - 60, now + 1, "f0: dead score is the time of death")
    check(near_now?(d.failed_at), "f0: JobRecord#failed_at #{d.failed_at} near now") if GEN8
  end
  check_eq(fails_of(jid_of("f2")), ["-", "0"].first(phase), "f2: executions (HIREDHAND_RETRY_COUNT values)")
  check_eq(fails_of(jid_of("f0")), ["-"], "f0: executions")
  # due now: hiredhand's scheduler retries it
  redis.zadd("retry", Time.now.to_f - 1, e.value) if e && phase == 1
end

def web(args)
  require "sidekiq/web"
  require "rack/mock"
  app = Rack::MockRequest.new(web_app)
  case args[0]
  when "get"
    args[1..].each_slice(2) do |path, needle|
      page = app.get(path)
      check_eq(page.status, 200, "GET #{path} status")
      check(page.body.include?(needle), "GET #{path} shows #{needle}")
    end
  when "press"
    id, button = args[1], args[2]
    page = app.get("/busy")
    check_eq(page.status, 200, "GET /busy status")
    check(page.body.include?("value=\"#{id}\""), "the Busy page has the form of #{id}")
    token = page.body[/name=["']authenticity_token["'] value=["']([^"']+)/, 1]
    cookie = page.headers["Set-Cookie"].to_s.split(/[;\n]/).first
    params = { "identity" => id, button => "1" }
    params["authenticity_token"] = token if token
    res = app.post("/busy", params: params, "HTTP_COOKIE" => cookie, "HTTP_SEC_FETCH_SITE" => "same-origin")
    check_eq(res.status, 302, "POST /busy #{button}=1 (the #{button} button) status: #{res.body[0, 300]}")
  else
    abort "usage: generations.rb web get PATH NEEDLE... | web press ID quiet|stop"
  end
end

case ARGV[0]
when "push" then push
when "first"
  check_scheduled(NOW)
  check_failures(1, NOW)
when "second"
  check_failures(2, NOW)
  s = Sidekiq::Stats.new
  JSON.parse(ARGV[1]).each { |k, v| check_eq(s.public_send(k), v, "Sidekiq::Stats##{k}") }
when "web" then web(ARGV[1..])
else
  abort "usage: generations.rb push|first|second STATS|web ..."
end
finish!
