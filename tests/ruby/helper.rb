# tests/ruby/helper.rb -- shared setup for the Ruby side of hiredhand's integration tests.
#
# Loads Sidekiq (client, API: Debian's 6.4 under `ruby`, 7.3 or 8.1 under the peers' ruby73 /
# ruby81), points client and server at ENV["REDIS_URL"], silences the noise (redis-rb 4.8
# deprecation lines, Sidekiq INFO logs), and offers:
#   redis            a plain Redis connection (binary-safe strings)
#   check(cond, msg) record a failed expectation (the script exits 1 listing them all at exit)
#   check_eq(actual, expected, msg)
#   finish!          exit now (1 when any check failed); also run automatically at exit
#   emit(obj)        print obj as one JSON line on stdout
#   stamp_ok?(raw, key[, millis])  a payload timestamp written in hiredhand's layout (HH_TIMESTAMPS)
#   stamp_s(v)       a payload timestamp in epoch seconds, read as Sidekiq 8 reads it
#   work_hash(work)  a Sidekiq::WorkSet row as {"queue", "payload" (Hash), "run_at"}, any version
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

# The payload timestamps hiredhand was told to write (`--timestamps`): HH_TIMESTAMPS=millis for
# Sidekiq 8's integer milliseconds, else float seconds.
HH_TS_MILLIS = ENV["HH_TIMESTAMPS"] == "millis"

# True when the JSON text has `key` as a top-level number in that layout: integer milliseconds,
# or a real (float seconds).
def stamp_ok?(raw, key, millis = HH_TS_MILLIS)
  return json_real?(raw, key) unless millis

  m = raw.match(/"#{Regexp.escape(key)}"\s*:\s*(-?[0-9][0-9.eE+\-]*)/)
  !m.nil? && m[1].match?(/\A-?[0-9]+\z/)
end

# Epoch seconds of a payload timestamp as Sidekiq 8 reads it: a JSON integer is milliseconds, a
# real is seconds (6.4 and 7.x only ever see reals from hiredhand's default layout).
def stamp_s(v)
  v.is_a?(Integer) ? v / 1000.0 : v.to_f
end

# A row of Sidekiq::WorkSet#each (Workers) as a Hash with the payload decoded: 6.4 yields such a
# Hash already; 7.x and 8.x a Sidekiq::Work holding the fields as read (the payload a JSON string),
# whose #[] 8.x dropped.
def work_hash(work)
  h = work.is_a?(Hash) ? work : work.instance_variable_get(:@hsh)
  payload = h["payload"]
  h.merge("payload" => payload.is_a?(String) ? JSON.parse(payload) : payload)
end

at_exit { finish! unless $hh_failures.empty? }
