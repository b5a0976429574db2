# tests/ruby/sentinel_push.rb -- Sidekiq's own client configured for Redis Sentinel (redis-rb:
# url "redis://mymaster", sentinels: [...], role: :master), as a Sidekiq app on a Sentinel fleet
# sets it.
#   ruby sentinel_push.rb N CLASS   pushes N jobs with Sidekiq::Client.push, prints their jids
# Environment: SENTINELS ("host:port,host:port"), SENTINEL_MASTER (default mymaster).
require "redis"
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
require "sidekiq"

sentinels = ENV.fetch("SENTINELS").split(",").map do |hp|
  host, port = hp.split(":")
  { host: host, port: Integer(port) }
end
Sidekiq.configure_client do |c|
  c.redis = { url: "redis://#{ENV.fetch("SENTINEL_MASTER", "mymaster")}", sentinels: sentinels, role: :master, size: 2 }
end
Sidekiq.logger.level = Logger::WARN
Integer(ARGV[0]).times { |i| puts Sidekiq::Client.push("class" => ARGV[1], "args" => [i], "queue" => "default") }
