# medians.awk is the part the benchmark scripts' summaries share (awk -f
# medians.awk -f SUMMARY). Its input lines are GNU time's
# "-f NAME %e %U %S %M": a run's name, wall, user and system CPU, peak
# RSS. names[1..nnames] are the names in the order they first came;
# wall(k), cpu(k) (user + system) and rss(k) are name k's medians.
function median(a, n,    i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function column(k, col,    i, v) {
	for (i = 1; i <= n[k]; i++) v[i] = col[k, i]
	return median(v, n[k])
}
function wall(k) { return column(k, w) }
function cpu(k) { return column(k, c) }
function rss(k) { return column(k, m) }
{
	k = $1
	if (!(k in n)) names[++nnames] = k
	n[k]++
	w[k, n[k]] = $2; c[k, n[k]] = $3 + $4; m[k, n[k]] = $5
}
