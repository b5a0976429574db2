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

listen_port, up_port, rules_file, log_file = ARGV
Rule = Struct.new(:name, :index, :prefix, :reply)
rules = File.readlines(rules_file, chomp: true).reject(&:empty?).map do |l|
  key, reply = l.split("\t", 2)
  name, cond = key.split('@', 2)
  index, prefix = cond ? cond.split('=', 2) : [nil, nil]
  Rule.new(name.upcase, index&.to_i, prefix, reply.gsub('\r', "\r").gsub('\n', "\n"))
end

def read_line(io)
  io.gets("\r\n") or raise EOFError
end

# One command as hiredis sends it (an array of bulk strings): [args, raw bytes].
def read_command(io)
  line = read_line(io)
  raise EOFError unless line.start_with?('*')
  raw = line.dup
  args = Array.new(line[1..].to_i) do
    l = read_line(io)
    len = l[1..].to_i
    data = io.read(len + 2) or raise EOFError
    raw << l << data
    data[0, len]
  end
  [args, raw]
end

# The raw bytes of one reply (framing only: relayed as is).
def read_reply(io)
  line = read_line(io)
  case line[0]
  when '$'
    len = line[1..].to_i
    len.negative? ? line : line + (io.read(len + 2) or raise EOFError)
  when '*'
    n = line[1..].to_i
    n.negative? ? line : line + Array.new(n) { read_reply(io) }.join
  else
    line
  end
end

server = TCPServer.new('127.0.0.1', listen_port.to_i)
$stdout.sync = true
puts "listening on #{listen_port}"
loop do
  Thread.new(server.accept) do |c|
    up = TCPSocket.new('127.0.0.1', up_port.to_i)
    loop do
      args, raw = read_command(c)
      name = args[0].to_s.upcase
      rule = rules.find { |r| r.name == name && (!r.index || args[r.index].to_s.start_with?(r.prefix)) }
      if (hostile = rule&.reply)
        if name == 'EXEC'
          up.write("*1\r\n$7\r\nDISCARD\r\n")
          read_reply(up)
        end
        File.open(log_file, 'a') { |f| f.puts name }
        c.write(hostile)
      else
        up.write(raw)
        c.write(read_reply(up))
      end
    end
  rescue EOFError, IOError, SystemCallError
    nil
  ensure
    c.close rescue nil
    up&.close rescue nil
  end
end
