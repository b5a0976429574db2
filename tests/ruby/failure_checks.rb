# tests/ruby/failure_checks.rb -- what a job hiredhand failed must look like in the retry or dead
# set, read through Sidekiq's API (6.4, or 7.3 / 8.1 through the peers). The jobs are named: the
# hash test:jobs maps name => jid, test:raw name => the payload as pushed; handlers/fail.sh records
# "jid retry_count" in test:fails.
#   jid_of(name), fails_of(jid)
#   common_failure_checks(name, entry, set_name, now)  entry: a Sidekiq::SortedEntry
require_relative "helper"

def jid_of(name)
  redis.hget("test:jobs", name) or abort "no job #{name}"
end

def fails_of(jid)
  redis.lrange("test:fails", 0, -1).map(&:split).select { |j, _| j == jid }.map { |_, rc| rc }
end

def keys_in_order(raw)
  # top-level keys of a JSON object in textual order (JSON.parse keeps insertion order)
  JSON.parse(raw).keys
end

def common_failure_checks(name, entry, set_name, now)
  item = entry.item
  raw = entry.value
  orig = redis.hget("test:raw", name)
  check(item["error_class"].is_a?(String) && !item["error_class"].empty?, "#{name}: error_class in #{set_name}: #{raw}")
  check(item["error_message"].is_a?(String) && !item["error_message"].empty?, "#{name}: error_message in #{set_name}: #{raw}")
  check(stamp_ok?(raw, "failed_at"), "#{name}: failed_at in the layout hiredhand writes (EPOCH_F, or integer ms with --timestamps millis): #{raw}")
  check((stamp_s(item["failed_at"]) - now).abs < 60, "#{name}: failed_at #{item["failed_at"]} near now #{now}")
  check_eq(item["queue"], "default", "#{name}: queue in #{set_name}")
  check_eq(item["jid"], jid_of(name), "#{name}: jid in #{set_name}")
  # every original key kept, with the same value, in the same order, new keys appended
  o = JSON.parse(orig)
  o.each do |k, v|
    next if k == "enqueued_at"
    check_eq(item[k], v, "#{name}: original key #{k.inspect} kept in #{set_name}")
  end
  check_eq(keys_in_order(raw).first(o.size), o.keys, "#{name}: original keys keep their order in #{set_name}")
  ca = orig[/"created_at":[^,}]+/]
  check(ca.nil? || raw.include?(ca), "#{name}: created_at kept as the same JSON token (#{ca}) in #{set_name}: #{raw}")
  %w[retry_count error_class error_message failed_at].each do |k|
    check(item.key?(k), "#{name}: #{k} present in #{set_name}")
  end
  check(!raw.include?(":null"), "#{name}: no null fields written: #{raw}") unless orig.include?("null")
end
