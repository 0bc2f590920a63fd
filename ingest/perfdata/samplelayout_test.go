package perfdata

import "testing"

func TestNewSampleLayout(t *testing.T) {
	const (
		ip, tid, tm, cpu, period = SampleFormatIP, SampleFormatTID, SampleFormatTime, SampleFormatCPU, SampleFormatPeriod
	)
	tests := []struct {
		name string
		t    SampleFormat
		want sampleLayout
	}{
		{"none", 0, sampleLayout{fast: true, identifier: -1, ip: -1, tid: -1, time: -1, addr: -1, id: -1, streamID: -1, cpu: -1, period: -1}},
		{"perf record -a", ip | tid | tm | cpu | period, sampleLayout{fast: true, size: 40,
			identifier: -1, ip: 0, tid: 8, time: 16, addr: -1, id: -1, streamID: -1, cpu: 24, period: 32}},
		{"-a -g, two events", SampleFormatIdentifier | ip | tid | tm | cpu | period | SampleFormatCallchain,
			sampleLayout{fast: true, chain: true, size: 48,
				identifier: 0, ip: 8, tid: 16, time: 24, addr: -1, id: -1, streamID: -1, cpu: 32, period: 40}},
		{"every fixed field", fixedSampleFields, sampleLayout{fast: true, size: 72,
			identifier: 0, ip: 8, tid: 16, time: 24, addr: 32, id: 40, streamID: 48, cpu: 56, period: 64}},
		{"read values", ip | SampleFormatRead, sampleLayout{size: 8,
			identifier: -1, ip: 0, tid: -1, time: -1, addr: -1, id: -1, streamID: -1, cpu: -1, period: -1}},
	}
	for _, tt := range tests {
		if got := newSampleLayout(tt.t); got != tt.want {
			t.Errorf("%s: newSampleLayout(%#x) = %+v, want %+v", tt.name, tt.t, got, tt.want)
		}
	}
}
