# Used by test_logs.sh: prints the line Sidekiq 6.4's own formatter writes for a job's log line.
#   log_format.rb pretty|json CLASS JID ELAPSED|- MSG
require_relative "helper"
require "sidekiq/logger"

kind, klass, jid, elapsed, msg = ARGV
f = kind == "json" ? Sidekiq::Logger::Formatters::JSON.new : Sidekiq::Logger::Formatters::Pretty.new
Thread.current[:sidekiq_context] = { class: klass, jid: jid }
Sidekiq::Context.add(:elapsed, Float(elapsed)) unless elapsed == "-"
$stdout.write f.call("INFO", Time.now, "sidekiq", msg)
