package perfdata

// checkAttrsAgree refuses a file-mode recording whose attrs perf 6.1's
// perf_session__open refuses (unless it has the STAT feature, of perf
// stat record): with more than one attr, every sample must carry its id
// at the same place from the start and from the end of a record
// (evlist__valid_sample_type, "non matching sample_type"), every attr
// must agree on sample_id_all ("non matching sample_id_all"), and a first
// attr with PERF_SAMPLE_READ must have PERF_FORMAT_ID ("non matching
// read_format"). Reading on would take one event's samples for another's.
func (r *Reader) checkAttrsAgree() error {
	if len(r.attrs) == 0 || r.hdr.HasFeature(FeatStat) {
		return nil
	}
	at := func(a *Attr) int64 { return int64(r.hdr.Attrs.Offset + uint64(a.Index)*r.hdr.AttrSize) }
	first := r.attrs[0]
	if len(r.attrs) > 1 {
		ip, sp := idPos(first.SampleType), isPos(first.SampleType)
		if ip < 0 || sp < 0 {
			return formatError(at(first), "attr at file offset %#x: sample_type %#x has neither ID nor IDENTIFIER, so the samples of the recording's %d events cannot be told apart (perf 6.1: \"non matching sample_type\")",
				at(first), uint64(first.SampleType), len(r.attrs))
		}
		for _, a := range r.attrs[1:] {
			if idPos(a.SampleType) != ip || isPos(a.SampleType) != sp {
				return formatError(at(a), "attr at file offset %#x: sample_type %#x puts the sample id elsewhere than the first attr's %#x (perf 6.1: \"non matching sample_type\")",
					at(a), uint64(a.SampleType), uint64(first.SampleType))
			}
		}
		for _, a := range r.attrs[1:] {
			if a.SampleIDAll() != first.SampleIDAll() {
				return formatError(at(a), "attr at file offset %#x: sample_id_all is %v, the first attr's %v (perf 6.1: \"non matching sample_id_all\")",
					at(a), a.SampleIDAll(), first.SampleIDAll())
			}
		}
	}
	if first.SampleType&SampleFormatRead != 0 && first.ReadFormat&ReadID == 0 {
		return formatError(at(first), "attr at file offset %#x: PERF_SAMPLE_READ without PERF_FORMAT_ID in read_format %#x (perf 6.1: \"non matching read_format\")",
			at(first), uint64(first.ReadFormat))
	}
	return nil
}
