# tests/ruby/hb_busy_dom.rb -- checks a Busy page DOM (chromium --dump-dom output, or the raw HTML)
# of Sidekiq 6.4's Web UI for one process.
#   hb_busy_dom.rb FILE running ID HOST:PID TAG CONCURRENCY BUSY JID CLASS ARG QUEUE
#       the process row shows HOST:PID, the tag label, Threads = CONCURRENCY, Busy = BUSY, the
#       identity in the row's hidden input, a Quiet button, no "quiet" label; the jobs table has a
#       row with Process = ID, the JID, QUEUE, CLASS and ARG
#   hb_busy_dom.rb FILE quiet ID HOST:PID
#       the process row is still there, with the "quiet" label and without the Quiet button
#   hb_busy_dom.rb FILE gone ID HOST:PID
#       neither the processes table nor the jobs table mentions the process
require_relative "helper"

file, mode, id, hostpid, *rest = ARGV
html = File.read(file)
check(html.include?("Sidekiq"), "#{file} looks like a Sidekiq page")

def table(html, klass)
  m = html.match(%r{<table[^>]*class="[^"]*\b#{klass}\b[^"]*"[^>]*>(.*?)</table>}m)
  m ? m[1] : nil
end

def rows(tbl)
  return [] unless tbl
  tbl.split(/<tr[\s>]/).drop(1).map { |r| r.split(%r{</tr>}).first.to_s }
end

def text(s)
  s.gsub(/<[^>]+>/, " ").gsub("&quot;", '"').gsub("&amp;", "&").gsub("&#39;", "'").gsub("&lt;", "<").gsub("&gt;", ">").gsub(/\s+/, " ").strip
end

def cells(row)
  row.scan(%r{<td[^>]*>(.*?)</td>}m).map { |c| text(c[0]) }
end

procs = table(html, "processes")
work = table(html, "workers")
check(!procs.nil?, "the page has the processes table")
check(!work.nil?, "the page has the jobs (workers) table")
prow = rows(procs).find { |r| text(r).split(" ").include?(hostpid) }
wrows = rows(work).select { |r| cells(r)[0] == id }

case mode
when "running"
  tag, conc, busy, jid, klass, arg, queue = rest
  check(!prow.nil?, "processes table has a row for #{hostpid} (rows: #{rows(procs).map { |r| text(r)[0, 80] }.inspect})")
  if prow
    c = cells(prow)
    check(prow.match?(%r{<span class="label label-success">\s*#{Regexp.escape(tag)}\s*</span>}), "row shows the tag #{tag} as a label")
    check(prow.include?(%(name="identity" value="#{id}")), "row's hidden identity input is #{id}")
    check(!prow.include?("label-danger\">quiet"), "row has no quiet label")
    check(prow.match?(/name="quiet"/), "row has a Quiet button")
    check(c[0].include?("Queues: #{queue}"), "row shows Queues: #{queue} (#{c[0].inspect})")
    check_eq(c[3], conc, "Threads cell")
    check_eq(c[4], busy, "Busy cell")
  end
  check(wrows.size == busy.to_i, "jobs table has #{busy} row(s) of #{id} (has #{wrows.size})")
  w = wrows.find { |r| cells(r)[2] == jid }
  check(!w.nil?, "jobs table shows jid #{jid} (rows: #{rows(work).map { |r| cells(r) }.inspect})")
  if w
    c = cells(w)
    check(!c[1].empty?, "TID cell not empty")
    check_eq(c[3], queue, "Queue cell")
    check(c[4].start_with?(klass), "Job cell starts with #{klass} (#{c[4].inspect})")
    check(c[5].include?(arg), "Arguments cell has #{arg} (#{c[5].inspect})")
    check(w.include?("<time"), "Started cell renders run_at")
  end
when "quiet"
  check(!prow.nil?, "processes table still has a row for #{hostpid}")
  if prow
    check(prow.match?(%r{label-danger">\s*quiet\s*<}), "row shows the quiet label")
    check(!prow.match?(/name="quiet"/), "row has no Quiet button any more")
  end
when "gone"
  check(prow.nil?, "processes table has no row for #{hostpid} any more")
  check(wrows.empty?, "jobs table has no row of #{id} any more")
  check(!html.include?(id), "the page does not mention #{id} at all")
else
  abort "usage: see the header of #{__FILE__}"
end
finish!
