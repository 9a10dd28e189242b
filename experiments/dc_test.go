package experiments

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestDCDesignsUnderFaults runs the DC designs on more nodes than an
// endpoint has DC initiators (so that they reconnect) under faults that
// hit their connects: lost connect requests and responses are sent again
// and every tuple arrives, with its content; random loss and duplication
// on every link likewise; and connects lost for good end the run with an
// error that says a transport retry was exceeded, not with a hang or a
// wrong result.
func TestDCDesignsUnderFaults(t *testing.T) {
	lose := func(op string, nth, count int) sim.Rule {
		return sim.Rule{Action: sim.Lose, Src: -1, Dst: -1, Op: op, Nth: nth, Count: count}
	}
	for _, design := range []string{algos.NameMEMQSRDC, algos.NameMEMQWRDC} {
		for _, tc := range []struct {
			name    string
			rules   []sim.Rule
			faults  sim.Faults
			retry   int
			wantErr fabric.Status // success for an exact delivery
		}{
			{name: "connects lost", rules: []sim.Rule{lose("DC_CONNECT", 3, 2), lose("DC_CONNECT_ACK", 5, 1)}, retry: -1},
			{name: "loss and duplication", faults: sim.Faults{Loss: 0.01, Duplicate: 0.01}, retry: -1},
			{name: "connects lost for good", rules: []sim.Rule{lose("DC_CONNECT", 4, 1<<20)}, retry: 1, wantErr: fabric.StatusRetryExceeded},
		} {
			t.Run(strings.ReplaceAll(design, "/", "-")+"/"+tc.name, func(t *testing.T) {
				c := goldenBase()
				c.Design, c.Nodes, c.Payload, c.BytesPerNode = design, 6, true, 1<<20
				plan := sim.NewPlan()
				plan.Rules, plan.RetryCnt, plan.AckTimeout = tc.rules, tc.retry, 10
				var st sim.Stats
				rec, err := RunSim(c, SimOptions{Plan: plan, Faults: tc.faults, Inspect: func(cl *sim.Cluster) { st = cl.Stats() }})
				if tc.wantErr != fabric.StatusSuccess {
					var ce *fabric.CompletionError
					if !errors.As(err, &ce) || ce.WC.Status != tc.wantErr {
						t.Fatalf("got %v, want a completion with status %v", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if rec.Integrity != "ok" || rec.TuplesReceived != rec.TuplesSent {
					t.Fatalf("integrity %q, %d tuples of %d", rec.Integrity, rec.TuplesReceived, rec.TuplesSent)
				}
				if len(tc.rules) > 0 && st.DCConnectRetries == 0 {
					t.Fatalf("no connect retried, %d packets lost", st.PacketsLost)
				}
				t.Logf("%.2f GiB/s, %d connect retries, %d packets lost, %d duplicated", rec.ThroughputGiBs, st.DCConnectRetries, st.PacketsLost, st.PacketsDuplicated)
			})
		}
	}
}
