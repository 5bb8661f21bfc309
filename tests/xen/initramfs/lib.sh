# Helpers for scenario scripts, sourced as /tcx/lib.sh in dom0 and guests.
# shellcheck shell=sh disable=SC2034
RESULTS=/results			# dom0: everything here comes back to the host
KVER=$(cat /etc/kver)
MODDIR=/lib/modules/$KVER/kernel/drivers
CONSOLE_DIR=/var/log/xen/console	# xenconsoled writes guest-NAME.log here

# "@@ TEXT (uptime)": a marker on the console, with the domain's uptime
mark() { echo "@@ $* (up $(cut -d' ' -f1 /proc/uptime)s)"; }

# guest_create CFG: xl create, then print the new domain's id
guest_create() {
	_name=$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$1")
	xl create "$1" >&2 || return 1
	xl domid "$_name"
}

# guest_wait NAME PATTERN [SECONDS=300]: wait until the guest's console log
# holds PATTERN (grep -E); fails (and shows the log) on timeout, if the
# domain is gone or if its kernel panicked
# (xl costs dom0 a good fraction of a second under TCG: asked every 5 s only)
guest_wait() {
	_log=$CONSOLE_DIR/guest-$1.log _n=$(( ${3:-300} * 5 ))
	while ! grep -aqE "$2" "$_log" 2>/dev/null; do
		_n=$((_n - 1))
		if [ $_n -le 0 ] || grep -aq 'Kernel panic' "$_log" 2>/dev/null ||
			{ [ $((_n % 25)) = 0 ] && ! xl domid "$1" >/dev/null 2>&1; }; then
			echo "guest_wait $1 '$2': not seen" >&2
			tail -n 30 "$_log" >&2 2>/dev/null
			return 1
		fi
		sleep 0.2
	done
}

# guest_final_domid NAME FIRST_ID FILE: write the id domain NAME has now to
# FILE. Under TCG a PVH guest sometimes triple-faults as it starts and xl
# restarts it as a new domain (docs/real-xen.md); the checks must read the
# capture of the incarnation that ran. A changed id is marked on the console.
guest_final_domid() {
	_id=$(xl domid "$1") || return 1
	echo "$_id" > "$3"
	[ "$_id" = "$2" ] || mark "GUEST RESTARTED $1 domid $2 -> $_id"
}

# domains_file FILE: "name domid vcpus" for every domain (xl list)
domains_file() {
	xl list | awk 'NR > 1 { print $1, $2, $4 }' > "$1"
}
