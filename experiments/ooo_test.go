package experiments

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
)

// MQ/WR's polling variants read a buffer once its seal (or descriptor)
// is in memory. On hdr-cx6 (ConnectX-6: out-of-order placement) with RC
// packets routed adaptively, a seal can land before the packets of the
// data it seals, and the receiver reads a buffer that is not all there:
// the run is corrupt (or stalls, when what it missed was a source's end
// of stream). Write with immediate (notify=cq) waits for the completion
// and is whole; so is every variant on static routes.
func TestPollingWritesUnderAdaptiveRC(t *testing.T) {
	adaptive, err := netspec.Parse("fat-tree radix=4 routing=minhop adaptive+rc placement=contiguous")
	if err != nil {
		t.Fatal(err)
	}
	static, err := netspec.Parse("fat-tree radix=4 routing=minhop placement=contiguous")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		notify algos.Notify
		net    netspec.Spec
		whole  bool
	}{
		{algos.NotifyCQ, adaptive, true},
		{algos.NotifyBuffers, adaptive, false},
		{algos.NotifyBuffers, static, true},
		{algos.NotifyQueue, static, true},
	} {
		cfg := DefaultConfig()
		cfg.Design, cfg.Notify, cfg.Profile, cfg.Network = "MEMQ/WR", tc.notify, "hdr-cx6", tc.net
		cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.Payload, cfg.Seed = 8, 1, 4<<20, true, 1
		rec, err := Run(cfg)
		whole := err == nil && rec.Integrity == "ok"
		integrity := ""
		if rec != nil {
			integrity = rec.Integrity
		}
		t.Logf("notify=%s on %s: integrity %q, error %v", tc.notify, tc.net.String(), integrity, err)
		if whole != tc.whole {
			t.Errorf("notify=%s on %s: whole %v, want %v", tc.notify, tc.net.String(), whole, tc.whole)
		}
	}
}
