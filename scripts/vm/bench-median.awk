# median(s): the median of a space-separated list of numbers ("" for none), shared by
# scripts/vm/bench-table.sh and scripts/vm/bench-boots.sh. A value of 1e12 or more stands for
# one beyond what was measured (bench-boots' `>100000`): of an even count, when the upper of the
# two middle values is one, the median is one too, rather than an average with a stand-in.
function median(s,   a, k, i, j, t) {
  k = split(s, a, " ")
  for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  if (k == 0) return ""
  if (k % 2) return a[(k + 1) / 2]
  if (a[k / 2 + 1] + 0 >= 1e12) return 1e12
  return (a[k / 2] + a[k / 2 + 1]) / 2
}
