package faults

import (
	"fmt"
	"strings"
	"testing"
)

// TestScheduleFieldsAtTheirLimits walks every numeric field of a fault
// schedule: at each end of its range the schedule is valid (for a 4-node
// cluster), one step past it is refused naming the problem.
func TestScheduleFieldsAtTheirLimits(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string // yaml has one %s for the value
		at, past   string
		want       string // in the error past the limit
	}{
		{"rate, top", "loss: [{rate: %s}]", "1", "1.0000000000000002", "not a probability"},
		{"rate, bottom", "corrupt: [{rate: %s}]", "5e-324", "0", "not a probability"},
		{"delay, top", "reorder: [{rate: 0.1, delay: %s}]", "1000s", "1000.000001s", "longer than 1000 s"},
		{"delay, bottom", "reorder: [{rate: 0.1, delay: %s}]", "0ns", "-1ns", "must not be negative"},
		{"nth, top", "drop: [{kind: data, nth: %s}]", "2147483647", "2147483648", "must be at most 2147483647"},
		{"nth, bottom", "drop: [{kind: data, nth: %s}]", "0", "-1", "must not be negative"},
		{"count, top", "drop: [{kind: data, count: %s}]", "2147483647", "2147483648", "must be at most 2147483647"},
		{"count, bottom", "drop: [{kind: data, count: %s}]", "0", "-1", "must not be negative"},
		{"packet, top", "drop: [{src: 1, dst: 0, packet: %s}]", "2147483647", "2147483648", "must be at most 2147483647"},
		{"packet, bottom", "drop: [{src: 1, dst: 0, packet: %s}]", "0", "-1", "must not be negative"},
		{"node, top", "crash: [{node: %s, at: 1us}]", "3", "4", "outside the 4-node cluster"},
		{"node, bottom", "crash: [{node: %s, at: 1us}]", "0", "-1", "negative"},
		{"src, top", "loss: [{rate: 0.1, src: %s}]", "3", "4", "outside the 4-node cluster"},
		{"dst, bottom", "loss: [{rate: 0.1, dst: %s}]", "0", "-1", "negative"},
		{"at, top", "crash: [{node: 1, at: %s}]", "1000s", "1000.000001s", "longer than 1000 s"},
		{"at, bottom", "crash: [{node: 1, at: %s}]", "0s", "-1ns", "must not be negative"},
		{"window, top", "link_down: [{node: 1, from: 1us, to: %s}]", "1000s", "1000.000001s", "longer than 1000 s"},
		{"window, bottom", "slow_receiver: [{node: 1, from: %s, to: 5us}]", "0s", "-1ns", "must not be negative"},
		{"retry_cnt, top", "rc_retry: {retry_cnt: %s, timeout: 8}", "7", "8", "outside 0..7"},
		{"retry_cnt, bottom", "rc_retry: {retry_cnt: %s, timeout: 8}", "0", "-1", "outside 0..7"},
		{"timeout, top", "rc_retry: {retry_cnt: 1, timeout: %s}", "31", "32", "outside 0..31"},
		{"timeout, bottom", "rc_retry: {retry_cnt: 1, timeout: %s}", "0", "-1", "rc_retry"},
		{"cable port, bottom", "cable_down: [{switch: '#0', port: %s}]", "1", "0", "a switch port from 1"},
		{"reroute_after, top", "cable_down: [{switch: '#0', port: 1}]\nreroute_after: %s", "1000s", "1000.000001s", "longer than 1000 s"},
		{"qp_cache_entries, top", "qp_cache_entries: %s", "16777216", "16777217", "above the most"},
		{"qp_cache_entries, bottom", "qp_cache_entries: %s\ncrash: [{node: 1, at: 1us}]", "0", "-1", "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(v string) error {
				s, err := Parse([]byte(fmt.Sprintf(tc.yaml, v)))
				if err != nil {
					return err
				}
				return s.Validate(4)
			}
			if err := check(tc.at); err != nil {
				t.Errorf("%s at its limit refused: %v", tc.at, err)
			}
			if err := check(tc.past); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s, one step past: %v, want an error saying %q", tc.past, err, tc.want)
			}
		})
	}
}
