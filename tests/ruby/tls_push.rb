# tests/ruby/tls_push.rb -- Sidekiq's own client over TLS: redis-rb with `ssl: true` and
# `ssl_params` (the test's CA, peer verification on), as a Sidekiq app on a managed Redis sets it.
#   ruby tls_push.rb push N CLASS   pushes N jobs (Sidekiq::Client.push) and prints their jids
#   ruby tls_push.rb processed      prints Sidekiq::Stats#processed, read over TLS
# Environment: TLS_URL (rediss://...), TLS_CA_FILE.
require "openssl"
require "redis"
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client do |c|
  c.redis = { url: ENV.fetch("TLS_URL"), ssl: true, size: 2,
              ssl_params: { ca_file: ENV.fetch("TLS_CA_FILE"), verify_mode: OpenSSL::SSL::VERIFY_PEER } }
end
Sidekiq.logger.level = Logger::WARN

case ARGV[0]
when "push"
  n = Integer(ARGV[1])
  n.times { |i| puts Sidekiq::Client.push("class" => ARGV[2], "args" => [i, "tls ✓"], "queue" => "default") }
when "processed"
  puts Sidekiq::Stats.new.processed
else
  abort "usage: tls_push.rb push N CLASS | processed"
end
