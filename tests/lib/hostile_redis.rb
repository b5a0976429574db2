# hostile_redis.rb -- a Redis proxy for tests that answers chosen commands with wrong shapes.
#
#   ruby hostile_redis.rb LISTEN_PORT UPSTREAM_PORT RULES_FILE LOG_FILE
#
# Listens on 127.0.0.1:LISTEN_PORT; each client gets its own connection to the real redis-server
# on 127.0.0.1:UPSTREAM_PORT. Every command is passed through and its reply relayed, except those
# named in RULES_FILE: one rule a line, "COMMAND<TAB>REPLY" with \r and \n written as such, e.g.
#   SCAN	*2\r\n:0\r\n$-1\r\n
# COMMAND may be NAME@I=PREFIX: only when argument I (0 is the name) starts with PREFIX, e.g.
# EVALSHA@3=queue: for the fetch script (its first key is a queue; the other scripts' first keys
# are not). A matching command is not sent upstream (EXEC discards the upstream transaction first) and the
# client gets REPLY; its name is appended to LOG_FILE, so a test can wait until the worker has
# seen the hostile reply. Push messages (SUBSCRIBE) are not relayed: give SUBSCRIBE an error rule.
require 'socket'
require_relative 'redis_proxy'

listen_port, up_port, rules_file, log_file = ARGV
Rule = Struct.new(:name, :index, :prefix, :reply)
rules = File.readlines(rules_file, chomp: true).reject(&:empty?).map do |l|
  key, reply = l.split("\t", 2)
  name, cond = key.split('@', 2)
  index, prefix = cond ? cond.split('=', 2) : [nil, nil]
  Rule.new(name.upcase, index&.to_i, prefix, reply.gsub('\r', "\r").gsub('\n', "\n"))
end

server = TCPServer.new('127.0.0.1', listen_port.to_i)
$stdout.sync = true
puts "listening on #{listen_port}"
RedisProxy.serve(server, up_port) do |c, up, args, raw|
  name = args[0].to_s.upcase
  rule = rules.find { |r| r.name == name && (!r.index || args[r.index].to_s.start_with?(r.prefix)) }
  if (hostile = rule&.reply)
    if name == 'EXEC'
      up.write("*1\r\n$7\r\nDISCARD\r\n")
      RedisProxy.read_reply(up)
    end
    File.open(log_file, 'a') { |f| f.puts name }
    c.write(hostile)
  else
    up.write(raw)
    c.write(RedisProxy.read_reply(up))
  end
end
