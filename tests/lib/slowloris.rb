# tests/lib/slowloris.rb -- slow HTTP clients for tests/integration/http/test_http_slowloris.sh.
#   ruby slowloris.rb HOST PORT SECONDS SRC_IPS PER_IP READY_FILE
# Opens PER_IP connections from each source address (comma-separated, all on lo), sends a
# request's headers one byte a second and never ends them; a connection the server closes is
# opened again 0.2 s later. Runs SECONDS, then prints one line:
#   opened=N cut=M max_life=S
# cut: connections the server closed after they had been open > 0.5 s (a refused one is
# closed at once); max_life: the longest time any connection stayed open, still open ones
# included. READY_FILE is written once every connection was tried once.
require 'socket'

host, port, secs, ips, per_ip, ready = ARGV
port = port.to_i
per_ip = per_ip.to_i
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs.to_f
HEAD = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + ('a' * 4096)
Conn = Struct.new(:src, :sock, :opened, :sent, :next_at, :retry_at)
conns = ips.split(',').flat_map { |ip| Array.new(per_ip) { Conn.new(ip, nil, 0, 0, 0, 0) } }
opened = 0
cut = 0
max_life = 0.0
now = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

open_conn = lambda do |c|
  s = Socket.new(:INET, :STREAM)
  begin
    s.bind(Addrinfo.tcp(c.src, 0))
    s.connect(Addrinfo.tcp(host, port))
  rescue SystemCallError
    s.close
    return
  end
  c.sock = s
  c.opened = now.call
  c.sent = 0
  c.next_at = c.opened
  opened += 1
end

drop = lambda do |c|
  life = now.call - c.opened
  max_life = life if life > max_life
  cut += 1 if life > 0.5
  c.sock.close rescue nil
  c.sock = nil
  c.retry_at = now.call + 0.2 # a refused client comes back at once, not in a busy loop
end

conns.each { |c| open_conn.call(c) }
File.write(ready, "ready\n") if ready && !ready.empty?
while (t = now.call) < deadline
  conns.each do |c|
    open_conn.call(c) if !c.sock && t >= c.retry_at
    next unless c.sock && t >= c.next_at
    begin
      c.sock.write_nonblock(HEAD[c.sent % HEAD.size])
      c.sent += 1
      c.next_at = t + 1.0
    rescue IO::WaitWritable
    rescue SystemCallError, IOError
      drop.call(c)
    end
  end
  live = conns.map(&:sock).compact
  r, = IO.select(live, nil, nil, 0.2)
  (r || []).each do |s|
    c = conns.find { |x| x.sock.equal?(s) }
    begin
      s.read_nonblock(4096)
    rescue IO::WaitReadable
    rescue EOFError, SystemCallError, IOError
      drop.call(c)
    end
  end
end
t = now.call
conns.each do |c|
  next unless c.sock
  life = t - c.opened
  max_life = life if life > max_life
end
puts format('opened=%d cut=%d max_life=%.1f', opened, cut, max_life)
