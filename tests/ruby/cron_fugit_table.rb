# cron_fugit_table.rb -- prints fugit's answers for the cron expressions
# hiredhand's src/cron_expr.c must read the same way. Its output is
# committed as tests/fixtures/cron_fugit.tsv (read by
# tests/unit/test_cron_expr.c); tests/integration/cron/test_cron_expr_fugit.sh
# regenerates it with sidekiq-cron's fugit and diffs it against the fixture.
#
#   ruby73-gems tests/ruby/cron_fugit_table.rb > tests/fixtures/cron_fugit.tsv
#
# A first line "# tzdata VERSION", then rows (tab-separated):
#   tick  TZ  EXPR  T  PREV  NEXT   fugit's previous_time(T) and next_time(T)
#         with the process's TZ set to TZ (the zone of an EXPR that names
#         none), T given in the expression's zone; -1 where fugit raises
#   refused  EXPR  nil|raise       fugit's Cron.parse refuses it
#   accepted EXPR                  fugit accepts it, hiredhand refuses it
require 'fugit'

# The tz database fugit's zones came from (tzinfo reads the system's): a
# zone's future rules change with it, so the fixture names it, and the
# unit test knows which rows another machine's data may answer otherwise.
tzdata = (File.open('/usr/share/zoneinfo/tzdata.zi', &:readline)[/version (\S+)/, 1] rescue nil) || 'unknown'
puts "# tzdata #{tzdata}"

def utc(s) = Time.utc(*s.split(/[-T:]/).map(&:to_i)).to_i

# Instants (UTC) around which each expression is walked: month and year
# ends, a leap day, the Berlin spring change on a month's last day
# (2024-03-31); and, for zones with daylight saving time, the change days
# of Europe/Berlin and America/New_York, walked further (two ticks each way).
INSTANTS = %w[
  2026-02-27T12:00:00 2028-02-28T23:59:59 2026-12-31T23:59:30 2026-06-15T09:00:00
  2024-03-30T22:30:00
].map { |s| utc(s) }
DST_INSTANTS = %w[
  2026-03-29T00:30:00 2026-10-25T00:10:00 2026-10-25T01:45:00 2026-03-08T06:00:00
  2026-11-01T05:10:00 2026-11-01T06:45:00
].map { |s| utc(s) }
DST_ZONES = %w[Europe/Berlin America/New_York Australia/Lord_Howe EST5EDT].freeze
# Zones whose daylight-saving changes happen at midnight (a missing or a
# repeated midnight: fugit skips the day, or raises), and their change days.
MIDNIGHT_ZONES = %w[America/Havana America/Santiago Asia/Beirut].freeze
MIDNIGHT_INSTANTS = %w[
  2026-03-08T03:00:00 2026-11-01T03:00:00 2026-09-05T12:00:00 2026-03-28T12:00:00
  2026-10-24T20:30:00
].map { |s| utc(s) }

ZONED = [
  '* * * * *', '*/15 * * * *', '5/15 * * * *', '/20 * * * *', ',1,,2, * * * *',
  '0-30/10 9-17 * * *', '0 9 * * 1-5', '0 9 * * MON-fri', '30 4 1,15 * 5',
  '30 4 1,15 * 5&', '0 0 1-7& * mon', '0 0 L * *', '0 0 last * *', '0 0 -2 * *',
  '0 0 -3-L * *', '0 0 25--1 * *', '0 0 31-2 * *', '0 0 1-31 * 1', '0 12 * * fri#-1',
  '0 12 * * mon#2', '0 12 * * fri#L', '0 12 * * sun#5', '0 12 * * mon%2',
  '0 12 * * tue%3+1', '0 12 * * *,1', '0 12 * * 0#1,6#L', '0 0 * * Sun-Sat/2', '0 0 1-L * *',
  '0 0 -1--3 * *', '0 0 L,15 * *', '59-1 * * * *', '*/61 * * * *',
  '0 12 * * mon%3+123456789012', '0 12 * * mon%7+8,tue%5+3', '0 0 29 2 *', '0 0 31 2,3 *',
  '0 0 * JAN-mar,Dec *', '15 22-2 * * *', '0 0 * * 7', '0 0 * * 5-2',
  '0 0 * * */2', '0 0 * * 1/2', '0 0 * * */0', '0 24 * * *', '0 20-24 * * *',
  '*/90 * * * *', '0 */5 * * *', '0 0 1 */4 *', '59 23 31 12 *',
  '@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@noon',
  '@hourly', '@daily Europe/Berlin',
  '*/10 * * * * *', '30 */5 * * * *', '0-10/5 0 12 * * *', '* * * * * *',
  '15,45 30 2 * * * Europe/Berlin', '0 0 0 * * sun',
  '0 9 * * 1-5 Europe/Berlin', '30 2 * * * Europe/Berlin', '0 2 * * * Europe/Berlin',
  '0 3 * * * Europe/Berlin', '0 * * * * Europe/Berlin', '*/20 2 * * * Europe/Berlin',
  '0 0 L * * Europe/Berlin', '0 12 * * mon%2 Europe/Berlin',
  '30 2 * * * America/New_York', '30 1 * * * America/New_York',
  '*/30 * * * * America/New_York', '0 0 * * 0 America/New_York',
  '0 0 * * * +09:00', '0 0 * * * -03:30', '0 0 * * * +0545', '0 0 * * * UTC',
  '0 0 * * * Asia/Kolkata', '30 2 * * * Australia/Lord_Howe',
  '0 0 1 * * America/Havana', '0 0 L * * America/Havana', '0 12 * * * America/Havana',
  '0 0 * * * America/Santiago', '30 0 * * * Asia/Beirut',
  '0 9 * * * America/Argentina/Buenos_Aires', '0 0 * * * EST5EDT', '0 0 * * * Etc/GMT+5',
  '0 9 * * 1-5 UTC'
].freeze

# Expressions without a zone, under a process TZ (fugit's local zone).
LOCAL = {
  'Europe/Berlin' => ['30 2 * * *', '0 9 * * 1-5', '0 0 L * *', '0 * * * *'],
  'America/New_York' => ['30 1 * * *', '0 */6 * * *'],
  'Asia/Tokyo' => ['0 9 * * *']
}.freeze

REFUSED = [
  '', '* * * *', '60 * * * *', '* 25 * * *', '* * 32 * *', '* * 0 * *', '* * * 13 *',
  '* * * 0 *', '* * * * 8', '* * * * monday', '* * * * mon#0', '* * * * mon#6',
  '* * * * 1-2#2', '*/0 * * * *', '0 ,5 * * *', '* * * * ,', '* * ? * *',
  '0 0 30 2 *', '0 0 31 4,6,9,11 *', '* * L-3 * *', '* * L/2 * *',
  '* * * * * Z', '* * * * * JST', '* * * * * JST-9', '* * * * * Mars/Base',
  '* * * * * Europe/berlin', '* * * * * +12:00', '* * * * * +24:00',
'* * * * * Asia/Tokyo Europe/Berlin', '* * * * * # x',
  '1 2 3 4 5 6 7', '@reboot', '@HOURLY', '@every 5m', '@foo',
  'every day at noon', 'every monday at 01:11', 'L * * * *', '* * * * 5L', '0 0 LW * *',
  '0 0 15W * *'
].freeze

# fugit accepts these; hiredhand refuses them (README: what is refused).
ACCEPTED = [
  '0 0 * * mon%0',          # fugit raises ZeroDivisionError at the first tick
  '0 0 * * mon%2000000',    # a modulo no week reaches: fugit's walk gives up
  '0 0 * * * Europe/Berlinx' # et-orbi trims an unknown name to a known one
].freeze

def walk(c, expr, tzenv, rows)
  zone = c.timezone || EtOrbi.determine_local_tzone
  plan = INSTANTS.map { |t| [t, 1] }
  plan += DST_INSTANTS.map { |t| [t, 2] } if DST_ZONES.include?(zone.name)
  plan += MIDNIGHT_INSTANTS.map { |t| [t, 1] } if MIDNIGHT_ZONES.include?(zone.name)
  # fugit is slow (milliseconds a call): each answer is asked once
  memo = Hash.new { |h, (m, t)| h[[m, t]] = safe { c.send(m, EtOrbi::EoTime.new(t, zone)).to_i } }
  seen = {}
  plan.each do |t0, steps|
    # the instant, and `steps` ticks after it and before it
    todo = [t0]
    t = t0
    steps.times { t = memo[[:next_time, t]]; break if t < 0; todo << t }
    t = t0
    steps.times { t = memo[[:previous_time, t]]; break if t < 0; todo << t }
    todo.each do |x|
      next if seen[x]
      seen[x] = true
      rows << ['tick', tzenv, expr, x, memo[[:previous_time, x]], memo[[:next_time, x]]].join("\t")
    end
  end
end

def safe
  yield
rescue StandardError
  -1
end

rows = []
ENV['TZ'] = 'UTC'
ZONED.each { |e| walk(Fugit::Cron.parse(e) || abort("fugit refuses #{e.inspect}"), e, 'UTC', rows) }
LOCAL.each do |tz, exprs|
  ENV['TZ'] = tz
  exprs.each { |e| walk(Fugit::Cron.parse(e), e, tz, rows) }
end
ENV['TZ'] = 'UTC'
REFUSED.each do |e|
  r = begin
    Fugit::Cron.parse(e) ? 'ACCEPTED' : 'nil'
  rescue StandardError
    'raise'
  end
  rows << ['refused', e, r].join("\t")
end
ACCEPTED.each { |e| rows << ['accepted', e, Fugit::Cron.parse(e) ? 'yes' : 'NO'].join("\t") }
puts rows
