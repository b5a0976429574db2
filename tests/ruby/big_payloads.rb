# Used by test_large_payloads.sh (large payloads).
#   push   -> a job whose only arg is a 32 MiB random base64 string, one with an array of 200,000
#             integers, then 100 small jobs; prints one line per big job:
#             "jid sha256(arg0 JSON) payload-bytes" (bytes: an upper bound of the stored payload)
#   rss    -> nothing; helper for symmetry
require_relative "helper"
require "digest"
require "base64"

case ARGV[0]
when "push"
  big = Base64.strict_encode64(SecureRandom.random_bytes(24 * 1024 * 1024)) # 32 MiB of base64
  ints = (1..200_000).to_a
  [["BigJob", big], ["BigJob", ints]].each do |klass, arg|
    jid = Sidekiq::Client.push("class" => klass, "args" => [arg])
    # the payload as stored: Sidekiq's client adds retry, queue, jid, created_at, enqueued_at
    bytes = JSON.generate(arg).bytesize + 200
    puts "#{jid} #{Digest::SHA256.hexdigest(JSON.generate(arg) + "\n")} #{bytes}"
  end
  Sidekiq::Client.push_bulk("class" => "SmallJob", "args" => (1..100).map { |i| [i] })
end
