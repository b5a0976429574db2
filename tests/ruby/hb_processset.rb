# tests/ruby/hb_processset.rb -- what Sidekiq's API (6.4, or 7.3 / 8.1 through the peers) sees of a
# hiredhand process. Expectations come as one JSON object in HB_EXPECT:
#   {"identity": ID, "hostname": H, "pid": N, "tag": T, "labels": [...], "concurrency": N,
#    "queues": [...], "busy": N, "quiet": "false"|"true", "beat_max_age": S,
#    "jobs": [{"jid","class","args","queue"}...], "run_at_min": EPOCH, "run_at_max": EPOCH}
# Every mismatch is listed; exit 1 when any.
require_relative "helper"

exp = JSON.parse(ENV.fetch("HB_EXPECT"))
id = exp["identity"]
now = Time.now.to_f

procs = []
Sidekiq::ProcessSet.new.each { |p| procs << p }
pr = procs.find { |p| p["identity"] == id }
check(!pr.nil?, "Sidekiq::ProcessSet lists #{id} (listed: #{procs.map { |p| p['identity'] }.inspect})")
if pr
  %w[hostname pid tag concurrency queues busy quiet].each do |k|
    check_eq(pr[k], exp[k], "ProcessSet[#{id}][#{k}]") if exp.key?(k)
  end
  check_eq(pr.labels, exp["labels"], "ProcessSet[#{id}].labels") if exp.key?("labels")
  check_eq(pr.stopping?, exp["quiet"] == "true", "ProcessSet[#{id}].stopping?") if exp.key?("quiet")
  check(pr["beat"].is_a?(Float), "beat is a Float (#{pr['beat'].inspect})")
  check_between(now - pr["beat"].to_f, -1.0, exp.fetch("beat_max_age", 7).to_f, "age of the beat (s)")
  check(pr["started_at"].is_a?(Float), "started_at is a Float (#{pr['started_at'].inspect})")
  check_between(now - pr["started_at"].to_f, 0.0, 600.0, "age of started_at (s)")
  check(pr["rss"].to_i > 0, "rss > 0 KB (#{pr['rss'].inspect})")
  check(pr["identity"] == id, "info identity equals the key")
end

if exp.key?("jobs")
  rows = []
  Sidekiq::Workers.new.each { |process, thread, work| rows << [process, thread, work_hash(work)] }
  mine = rows.select { |r| r[0] == id }
  check_eq(mine.size, exp["jobs"].size, "Sidekiq::Workers rows of #{id}")
  check_eq(mine.map { |r| r[1] }.uniq.size, mine.size, "distinct thread ids of #{id}'s rows")
  exp["jobs"].each do |j|
    row = mine.find { |r| r[2]["payload"].is_a?(Hash) && r[2]["payload"]["jid"] == j["jid"] }
    check(!row.nil?, "Sidekiq::Workers shows jid #{j['jid']} under #{id}")
    next unless row
    work = row[2]
    check(row[1].is_a?(String) && !row[1].empty?, "thread id of #{j['jid']} (#{row[1].inspect})")
    check_eq(work["queue"], j["queue"], "queue of #{j['jid']}")
    check_eq(work["payload"]["class"], j["class"], "payload class of #{j['jid']}")
    check_eq(work["payload"]["args"], j["args"], "payload args of #{j['jid']}")
    check_eq(work["payload"]["queue"], j["queue"], "payload queue of #{j['jid']}")
    check(work["run_at"].is_a?(Integer), "run_at of #{j['jid']} is an Integer (#{work['run_at'].inspect})")
    check_between(work["run_at"].to_i, exp["run_at_min"].to_i, exp["run_at_max"].to_i + 1, "run_at of #{j['jid']}") if exp["run_at_min"]
    rec = Sidekiq::JobRecord.new(work["payload"])
    check_eq(rec.display_class, j["class"], "JobRecord#display_class of #{j['jid']}")
  end
  check_eq(Sidekiq::Workers.new.size, exp["busy"], "Sidekiq::Workers#size (sum of busy)") if exp.key?("busy")
end
finish!
