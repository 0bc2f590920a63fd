# callchains.sh is sourced by the scripts that time or compare a view
# only recordings with callchains have (foreign.sh, sortviews.sh,
# perfbench.sh): has_callchains FILE reports whether perf's header of
# FILE gives an event a callchain. grep reads the whole header (grep -c,
# not -q): with pipefail, grep -q's early exit could end perf with
# SIGPIPE, and the check failed on a recording with callchains.
has_callchains() {
	perf report -i "$1" --header-only 2>/dev/null | grep -c 'sample_type = [A-Z|]*CALLCHAIN' >/dev/null
}
