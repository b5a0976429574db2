#!/usr/bin/env ruby
# A --serve handler in Ruby (standard library only): hiredhand's line
# protocol, version 1. Replace perform with your jobs; raise to fail one.
require "json"

def perform(msg)
  job = msg["job"] # the payload as stored in Redis
  raise ArgumentError, "failed on purpose: #{job["args"].inspect}" if msg["class"] == "FailJob"
  exit 3 if msg["class"] == "CrashJob"
end

$stdout.sync = true
puts JSON.generate("hiredhand" => 1)
$stdin.each_line do |line|
  msg = JSON.parse(line)
  begin
    perform(msg)
    puts JSON.generate("ok" => true)
  rescue StandardError => e
    puts JSON.generate("ok" => false, "error_class" => e.class.name, "error_message" => e.message,
                       "backtrace" => e.backtrace)
  end
end
