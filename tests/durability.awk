# Reads `strace -f -y` output of one spool command and prints every breach
# of the durability order (spool-layout.md, "Transitions"):
#  - a file in tmp/ is fdatasync'd after its last write, before it is moved;
#  - a job's sidecar record is fdatasync'd before the job's file moves,
#    or, for a move out of new/ or leased/ (which spool-fsck puts back
#    when its record is lost), after its last write, before the process
#    ends;
#  - every directory moved into, and every parent of a new directory but
#    reserve/, is fsync'd after the last move there, before the process
#    ends;
#  - the audit log is fdatasync'd after its last write, and that write comes
#    after the last move;
#  - a file in done/ is removed (a new cycle's enqueue) only once every
#    directory moved into is fsync'd.
# Prints "checked N moves" on a line of its own at the end.

function path(s,    a, b) {
	a = index(s, "<")
	b = index(s, ">")
	return (a && b > a) ? substr(s, a + 1, b - a - 1) : ""
}
function unq(s) {
	gsub(/^ *"/, "", s)
	gsub(/".*$/, "", s)
	return s
}
function ok(line) { return line ~ /= 0$/ || line ~ /= 0</ }
function id_of(name) { sub(/,.*$/, "", name); return name }
{
	pid = ""
	if (match($0, /^[0-9]+ +/)) {	# strace -f: the thread's ID
		pid = substr($0, 1, RLENGTH)
		$0 = substr($0, RLENGTH + 1)
	}
	# A call that another thread's line interrupted: join its halves.
	if ($0 ~ /<unfinished \.\.\.>$/) {
		sub(/ *<unfinished \.\.\.>$/, "")
		pending[pid] = $0
		next
	}
	if ($0 ~ /^<\.\.\. [a-z0-9_]+ resumed>/ && (pid in pending)) {
		sub(/^<\.\.\. [a-z0-9_]+ resumed>/, "")
		$0 = pending[pid] $0
		delete pending[pid]
	}
	n++
}
/^(write|pwrite64)\(/ {
	p = path($0); wrote[p] = n
	if (p ~ /\/audit\/[^\/]*$/) audit_write = n
}
/^(fdatasync|fsync)\(/ && ok($0) {
	p = path($0); synced[p] = n
	if (p ~ /\/audit\/[^\/]*$/) audit_sync = n
}
/^unlinkat\(/ && ok($0) && $0 !~ /AT_REMOVEDIR/ {
	split($0, f, ", ")
	# Removing the old cycle's file before the new one is durable could
	# leave the job nowhere after a power cut.
	if (path(f[1]) ~ /\/done$/)
		for (d in into)
			if (!(d in synced) || synced[d] < into[d])
				print "line " n ": done/" unq(f[2]) " removed before " d " was fsync'd"
}
# reserve/ holds no job's state and is never synced (spool-layout.md,
# "The reserve").
/^mkdirat\(/ && ok($0) && $0 !~ /"reserve"/ {
	split($0, f, ", ")
	made[++nmade] = path(f[1]); made_at[nmade] = n
}
/^(renameat2|renameat|linkat)\(/ && ok($0) {
	split($0, f, ", ")
	src = path(f[1]) "/" unq(f[2]); dir = path(f[3]); dst = unq(f[4])
	moves++; last_move = n
	into[dir] = n
	if (src ~ /\/tmp\/[^\/]*$/ && !(src in synced && synced[src] > wrote[src] && synced[src] < n))
		print "line " n ": " src " moved before its data was fdatasync'd"
	meta = dir; sub(/\/(new|leased|done|dead)(\/.*)?$/, "/meta/", meta)
	meta = meta id_of(dst)
	if (dir ~ /\/(tmp|meta|audit)$/)
		next
	if (path(f[1]) ~ /\/(new|leased)(\/.*)?$/)
		late[meta] = dst
	else if (!(meta in synced && synced[meta] > wrote[meta] && synced[meta] < n))
		print "line " n ": " dst " moved before its sidecar record was fdatasync'd"
}
END {
	for (m in late)
		if (!(m in synced) || synced[m] < wrote[m])
			print late[m] ": its sidecar record not fdatasync'd after its last write"
	for (d in into)
		if (!(d in synced) || synced[d] < into[d])
			print d ": moved into but not fsync'd after"
	for (i = 1; i <= nmade; i++)
		if (!(made[i] in synced) || synced[made[i]] < made_at[i])
			print made[i] ": gained a directory but not fsync'd after"
	if (moves && (!audit_write || audit_write < last_move))
		print "no audit line written after the last move"
	if (audit_write && audit_sync < audit_write)
		print "audit log not fdatasync'd after its last write"
	print "checked " moves + 0 " moves"
}
