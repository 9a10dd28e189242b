package experiments

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// MWThresholds are the write thresholds of the registered RDMA-MW/siw
// variants (seed 003's figure 4 sweep); 16 KiB is RDMA-MW/siw itself.
var MWThresholds = []int{2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10}

// MWDesign is the name of the soft-iWARP RDMA-MW design with a write
// threshold of bytes.
func MWDesign(threshold int) string {
	if threshold == 16<<10 {
		return "RDMA-MW/siw"
	}
	return fmt.Sprintf("RDMA-MW/siw/%dK", threshold>>10)
}

// PeerDesigns lists the peer designs registered here.
var PeerDesigns []string

// The peer designs of seeds 004 and 003 (docs/architecture.md, "Peer
// designs"), registered so that Run, sweeps and figures take them like the
// eight designs of seed 001.
func init() {
	hyper := func(o algos.HyPerOptions) func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
		return func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) { return algos.OpenHyPer(th, c, o) }
	}
	mw := func(threshold int, stack *algos.IPoIBCosts) func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
		return func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			// A ring smaller than the paper's 64 KB keeps the threshold
			// within half of it, so that a ring still pipelines.
			return algos.OpenRDMAMW(th, c, algos.MWOptions{Threshold: min(threshold, c.MsgBytes/2), Stack: stack})
		}
	}
	tcp, siw, sock := algos.DefaultIPoIBCosts, algos.SoftIWARPCosts, algos.GbESocketCosts
	specs := []DesignSpec{
		{Name: "HyPer", Shared: true, Open: hyper(algos.HyPerOptions{Schedule: algos.ScheduleRR}),
			About: "seed 004's multiplexer: one thread per node owns n-1 RC connections; round-robin phases, a barrier every 8 messages"},
		{Name: "HyPer/unsched", Shared: true, Open: hyper(algos.HyPerOptions{Schedule: algos.ScheduleNone}),
			About: "HyPer without network scheduling: messages in hand-over order, 2 in flight"},
		{Name: "HyPer-TCP", Shared: true, Open: hyper(algos.HyPerOptions{Schedule: algos.ScheduleRR, TCP: &tcp}),
			About: "HyPer's multiplexer over TCP/IPoIB (the IPoIB baseline's kernel costs on the multiplexer thread), scheduled"},
		{Name: "HyPer-TCP/unsched", Shared: true, Open: hyper(algos.HyPerOptions{Schedule: algos.ScheduleNone, TCP: &tcp}),
			About: "HyPer-TCP without network scheduling"},
		{Name: "RDMA-MW", Shared: true, Open: mw(16<<10, nil),
			About: "seed 003's middleware: per worker pair 64 KB rings, RDMA Write past a 16 KB threshold, batched Send/Recv notices (hardware RDMA)"},
		{Name: "Sockets-MW", Shared: true, Open: func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) { return algos.OpenIPoIB(th, c, sock) },
			About: "seed 003's sockets baseline: TCP sockets with a Gigabit NIC's kernel costs, 64 KB buffers"},
	}
	for _, t := range MWThresholds {
		specs = append(specs, DesignSpec{Name: MWDesign(t), Shared: true, Open: mw(t, &siw),
			About: fmt.Sprintf("RDMA-MW over software iWARP (the kernel's costs on the host), write threshold %d KB", t>>10)})
	}
	for _, d := range specs {
		RegisterDesign(d)
		PeerDesigns = append(PeerDesigns, d.Name)
	}
}
