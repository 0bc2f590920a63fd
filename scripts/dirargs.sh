# dirargs.sh is sourced by the scripts that take "DIR [KBENCH]"
# (foreign.sh, sortviews.sh): it checks the arguments, sets dir and kb
# (the kbench binary given, or one built now from this checkout), and
# defines rows, which reduces a perf report --stdio table to its rows
# with their spacing normalized.
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 DIR [KBENCH]" >&2
	exit 2
fi
dir=$1
kb=${2:-}
if [ -z "$kb" ]; then
	kb=$(mktemp -d)/kbench
	go build -o "$kb" "$(dirname "$0")/../cmd/kbench" || exit 1
fi
rows() { grep -v '^#' | grep -v '^[[:space:]]*$' | sed 's/[[:space:]]*$//' | tr -s ' '; }
