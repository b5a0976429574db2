# redis_proxy.rb -- what the test proxies in front of a real redis-server share (held_brpop_proxy.rb,
# hostile_redis.rb): RESP framing of commands and replies, and the accept loop that gives each
# client its own upstream connection and hands every command to the proxy's own rule.
require 'socket'

module RedisProxy
  module_function

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

  # Accepts clients on server for ever, each on its own thread with its own connection to
  # 127.0.0.1:up_port, and yields every command: (client, upstream, args, raw, n), n being the
  # client's number (1, 2...). The block answers the client, relaying the command upstream or
  # not. A client or upstream that goes away ends that client's thread only.
  def serve(server, up_port)
    seq = 0
    loop do
      Thread.new(server.accept, seq += 1) do |c, n|
        up = TCPSocket.new('127.0.0.1', up_port.to_i)
        loop do
          args, raw = read_command(c)
          yield c, up, args, raw, n
        end
      rescue EOFError, IOError, SystemCallError
        nil
      ensure
        c.close rescue nil
        up&.close rescue nil
      end
    end
  end
end
