# cron_web.rb -- sidekiq-cron's Web UI (its Cron tab, `require "sidekiq/cron/web"`)
# on a job `hiredhand cron add` saved (test_cron_cli.sh). Run with the peers'
# 7.3 and gems. Drives Sidekiq::Web through Rack::MockRequest:
#   list NAME          GET /cron shows NAME; its page shows the jid history
#   press NAME ACTION  POST .../jobs/NAME/ACTION (enqueue, disable, enable)
#                      with the page's token and cookie; expects the redirect
require "sidekiq"
require "sidekiq-cron"
require "sidekiq/web"
require "sidekiq/cron/web"
require "rack/mock"

def check(ok, what) = (ok ? nil : abort("FAIL: #{what}"))

app = Rack::MockRequest.new(Rack::Builder.new do
  use Rack::Session::Cookie, secret: "x" * 64
  run Sidekiq::Web
end.to_app)

name = ARGV[1]
case ARGV[0]
when "list"
  page = app.get("/cron")
  check(page.status == 200, "GET /cron status #{page.status}")
  check(page.body.include?(name), "GET /cron shows #{name}")
  job = Sidekiq::Cron::Job.find(name) or abort("FAIL: Sidekiq::Cron::Job.find(#{name})")
  check(job.valid?, "the job is valid for sidekiq-cron: #{job.errors}")
  puts "status=#{job.status} source=#{job.source} history=#{job.jid_history_from_redis.size}"
when "press"
  page = app.get("/cron")
  token = page.body[/name=["']authenticity_token["'] value=["']([^"']+)/, 1]
  cookie = page.headers["Set-Cookie"].to_s.split(/[;\n]/).first
  params = {}
  params["authenticity_token"] = token if token
  res = app.post("/cron/namespaces/default/jobs/#{name}/#{ARGV[2]}", params: params, "HTTP_COOKIE" => cookie,
                 "HTTP_SEC_FETCH_SITE" => "same-origin")
  check(res.status == 302, "POST #{ARGV[2]} status #{res.status}: #{res.body[0, 200]}")
  puts "ok"
end
