package sensitivity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Mechanisms names the changes of mechanism that moved results (each
// with a refresh of the golden records), so that ModelID changes with
// them too. Append one when a change of code alters what the model
// computes.
var Mechanisms = []string{
	"mpi-ibcast: the MPI baseline broadcasts with MPICH's MPI_Ibcast schedules",
	"payload-fetch: a non-inline payload and an RDMA Read's data reach the NIC a PCIe round trip after the fetch starts; MPI eager messages up to 128 bytes go inline",
	"rx-store-forward: the receive pipeline writes a packet's payload over PCIe after its last bit is in, and data and completion are visible rx_latency_ns after that write",
	"doorbells-11: with shared doorbells a context's queue pairs share 11 registers beyond the 4 low-latency ones, not 12 (the kernel driver keeps register 0)",
	"read-requests: a payload is fetched in PCIe read requests of pcie.read_request_bytes, and a packet leaves once the request holding its last byte is on the NIC",
}

// ModelID identifies the model: every built-in profile's parameters
// (sim.Profile.Hash), the baselines' and designs' cost constants in
// package algos, and Mechanisms. An analysis made on another model does
// not describe this model's verdicts. A change of mechanism that is not
// listed in Mechanisms is not seen; the golden records are the check for
// those. SQ/SR's credit timers (algos.DefaultCreditTimers) are such
// constants: their defaults are pinned by TestCreditTimerDefaults, and a
// change of them is listed in Mechanisms.
func ModelID() string {
	h := sha256.New()
	for _, name := range sim.BuiltinProfiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			fmt.Fprintf(h, "%s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", name, p.Hash())
	}
	fmt.Fprintf(h, "ipoib %+v\nmpi %+v\npoll %d\n", algos.DefaultIPoIBCosts, algos.DefaultMPICosts, algos.DefaultPollLineCycles)
	for _, m := range Mechanisms {
		fmt.Fprintf(h, "mechanism %s\n", m)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
