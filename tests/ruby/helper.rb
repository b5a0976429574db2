# tests/ruby/helper.rb -- shared setup for the Ruby side of hiredhand's integration tests.
#
# Loads Sidekiq 6.4 (client, API), points client and server at ENV["REDIS_URL"], silences the
# noise (redis-rb 4.8 deprecation lines, Sidekiq INFO logs), and offers:
#   redis            a plain Redis connection (binary-safe strings)
#   check(cond, msg) record a failed expectation (the script exits 1 listing them all at exit)
#   check_eq(actual, expected, msg)
#   finish!          exit now (1 when any check failed); also run automatically at exit
#   emit(obj)        print obj as one JSON line on stdout
# redis-namespace is not installed here, so no namespace support on this side.
require "json"
require "logger"
require "securerandom"
require "redis"
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
require "sidekiq"
require "sidekiq/api"

HH_REDIS_URL = ENV.fetch("REDIS_URL") { abort "helper.rb: REDIS_URL is not set" }

Sidekiq.configure_client { |c| c.redis = { url: HH_REDIS_URL, size: 5 } }
Sidekiq.configure_server { |c| c.redis = { url: HH_REDIS_URL } }
Sidekiq.logger.level = Logger::WARN

def redis
  @hh_redis ||= Redis.new(url: HH_REDIS_URL)
end

$hh_failures = []

def check(cond, msg)
  $hh_failures << msg unless cond
  cond
end

def check_eq(actual, expected, msg)
  check(actual == expected, "#{msg}: expected #{expected.inspect}, got #{actual.inspect}")
end

def check_between(v, lo, hi, msg)
  check(v.is_a?(Numeric) && v >= lo && v <= hi, "#{msg}: #{v.inspect} not within [#{lo}, #{hi}]")
end

def emit(obj)
  $stdout.puts JSON.generate(obj)
  $stdout.flush
end

def finish!
  $stdout.flush
  $stderr.flush
  unless $hh_failures.empty?
    $stderr.puts "ruby checks failed (#{$hh_failures.size}):"
    $hh_failures.each { |m| $stderr.puts "  - #{m}" }
    $stderr.flush
    exit! 1
  end
  exit! 0
end

# True when the JSON text has `key` as a top-level real number (written with '.' or exponent):
# Sidekiq 6.4 writes EPOCH_F timestamps; an integer would mean milliseconds (8.x) or seconds.
def json_real?(raw, key)
  m = raw.match(/"#{Regexp.escape(key)}"\s*:\s*(-?[0-9][0-9.eE+\-]*)/)
  !m.nil? && m[1].match?(/[.eE]/)
end

at_exit { finish! unless $hh_failures.empty? }
