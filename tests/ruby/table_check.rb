# tests/ruby/table_check.rb ALIGN FILE [ALIGN FILE...] -- exits 1 unless each FILE's table lines
# up: cells are what two or more spaces separate; in a left-aligned column ('l') every cell
# starts, in a right-aligned one ('r') every cell ends, at the same column as in the first row.
# Columns are counted in characters (code points): the tests' names are one column each.
bad = []
ARGV.each_slice(2) do |align, file|
  rows = File.read(file, encoding: "UTF-8").lines.map(&:chomp).reject(&:empty?)
  bad << "#{file}: fewer than 2 rows" if rows.size < 2
  cells = rows.map do |l|
    out = []
    l.scan(/\S+(?: \S+)*/) { out << [$~.begin(0), $~.end(0)] }
    out
  end
  align.each_char.with_index do |a, k|
    want = cells[0][k] or next
    cells.each_with_index do |c, r|
      next unless c[k] && c.size == cells[0].size
      got, exp = a == "r" ? [c[k][1], want[1]] : [c[k][0], want[0]]
      bad << "#{file}: row #{r} column #{k} at #{got}, first row's at #{exp}:\n#{rows[0]}\n#{rows[r]}" if got != exp
    end
  end
end
unless bad.empty?
  STDERR.puts(*bad)
  exit 1
end
