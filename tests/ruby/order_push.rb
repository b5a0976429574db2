# Used by test_queue_order.sh: order_push.rb QUEUE COUNT QUEUE_INDEX
# LPUSHes COUNT minimal OrderJob payloads to queue:QUEUE (pipelined, in order), with
# jid = 2 hex digits of QUEUE_INDEX + 22 hex digits of the sequence number, so the handler's
# "queue jid" lines show both the queue and the FIFO position.
require_relative "helper"

q, count, qi = ARGV[0], ARGV[1].to_i, ARGV[2].to_i
now = Time.now.to_f
redis.sadd("queues", q)
(0...count).each_slice(500) do |slice|
  redis.pipelined do |p|
    slice.each do |i|
      jid = format("%02x%022x", qi, i)
      p.lpush("queue:#{q}", JSON.generate("retry" => true, "queue" => q, "class" => "OrderJob", "args" => [i],
                                          "jid" => jid, "created_at" => now, "enqueued_at" => now))
    end
  end
end
puts redis.llen("queue:#{q}")
