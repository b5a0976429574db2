# tests/ruby/web_data.rb -- jobs for the web dashboard's test (test_web_dashboard.sh), written by
# Debian's Sidekiq 6.4 as its client, retry and death write them: a queue, scheduled jobs, retry
# entries with a compressed backtrace (JobRetry's Base64.encode64(Zlib::Deflate...)), dead
# entries (DeadSet#kill), some of them hostile: markup in class, args, error message and
# backtrace, a javascript: URL, and a payload whose bytes are not UTF-8.
# Prints {"retry_jids": [...], "hostile_jid": J} on stdout.
require_relative "helper"
require "base64"
require "zlib"

HOSTILE = [
  "<script>document.title='pwned-script'</script>",
  "\"><img src=x onerror=\"document.title='pwned-img'\">",
  "javascript:document.title='pwned-url'"
].freeze

def retry_entry(klass, args, msg, backtrace, queue = "default", jid = SecureRandom.hex(12))
  now = Time.now.to_f
  {
    "class" => klass, "args" => args, "queue" => queue, "jid" => jid, "retry" => true,
    "created_at" => now - 100, "enqueued_at" => now - 50, "failed_at" => now - 40, "retry_count" => 0,
    "error_class" => "RuntimeError", "error_message" => msg,
    "error_backtrace" => Base64.encode64(Zlib::Deflate.deflate(JSON.generate(backtrace)))
  }
end

jids = []
6.times do |i|
  e = retry_entry("PlainJob", [i, "retry-arg-#{i}"], "plain failure #{i}", ["app/jobs/plain.rb:#{i}:in `perform'"],
                  i.even? ? "default" : "mail")
  redis.zadd("retry", Time.now.to_f + 3600 + i, JSON.generate(e))
  jids << e["jid"]
end
hostile = retry_entry(HOSTILE[0], HOSTILE, HOSTILE[1], HOSTILE, "default", "javascript:alert(1)")
redis.zadd("retry", Time.now.to_f + 7200, JSON.generate(hostile))
# not UTF-8: the bytes \xff\xfe inside the error message, stored as they are
bad = JSON.generate(retry_entry("BinaryJob", ["x"], "BADBYTES", ["b.rb:1"])).sub("BADBYTES", "bad\xff\xfe bytes".b)
redis.zadd("retry", Time.now.to_f + 7300, bad.b)

3.times { |i| Sidekiq::Client.push("class" => "LaterJob", "args" => [i], "at" => Time.now.to_f + 600 + i) }
Sidekiq::Client.push("class" => HOSTILE[0], "args" => HOSTILE, "at" => Time.now.to_f + 900)
4.times { |i| Sidekiq::Client.push("class" => "QueuedJob", "args" => [i, "q"], "queue" => "default") }
Sidekiq::Client.push("class" => HOSTILE[1], "args" => HOSTILE, "queue" => "default")
2.times do |i|
  Sidekiq::DeadSet.new.kill(JSON.generate(retry_entry("DeadJob", [i], "died #{i}", ["d.rb:#{i}"])))
end
emit("retry_jids" => jids, "hostile_jid" => hostile["jid"])
