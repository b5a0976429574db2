# held_brpop_proxy.rb -- a Redis proxy for tests that holds BRPOP commands back for a while, so a
# blocking fetch reaches Redis late (as from a thread descheduled just before it), and times them.
#
#   ruby held_brpop_proxy.rb LISTEN_PORT UPSTREAM_PORT HOLD_FILE HOLD_SECONDS LOG_FILE
#
# Listens on 127.0.0.1:LISTEN_PORT; each client gets its own connection to the real redis-server on
# 127.0.0.1:UPSTREAM_PORT and every command is relayed, its reply passed back. While HOLD_FILE
# exists, a BRPOP is kept HOLD_SECONDS before it goes upstream. LOG_FILE gets a line per held
# BRPOP: "held N" when it arrives, "replied N SECONDS" when its reply came, SECONDS counted from
# when it went upstream (how long Redis kept it blocked). SUBSCRIBE is refused (push messages
# are not relayed), so the worker's idle threads fall back to blocking fetches.
require 'socket'
require_relative 'redis_proxy'

listen_port, up_port, hold_file, hold_s, log_file = ARGV
hold_s = hold_s.to_f
LOG = Mutex.new
def log(file, line)
  LOG.synchronize { File.open(file, 'a') { |f| f.puts line } }
end

server = TCPServer.new('127.0.0.1', listen_port.to_i)
RedisProxy.serve(server, up_port) do |c, up, args, raw, n|
  name = args[0].to_s.upcase
  if name == 'SUBSCRIBE'
    c.write("-ERR no push messages through this proxy\r\n")
    next
  end
  held = name == 'BRPOP' && File.exist?(hold_file)
  if held
    log(log_file, "held #{n}")
    sleep hold_s
  end
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  up.write(raw)
  reply = RedisProxy.read_reply(up)
  log(log_file, format('replied %d %.2f', n, Process.clock_gettime(Process::CLOCK_MONOTONIC) - t)) if held
  c.write(reply)
end
