// Package results holds what runs produce, as data: the run record of
// docs/results.md and the software costs a record names. It depends on no
// backend, so figures, sweeps, reports and analyses can read records
// without the simulator.
package results

import (
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
)

// Record is the run record of docs/results.md.
type Record struct {
	Experiment string `json:"experiment"`
	// Workload is what the point ran besides the synthetic shuffle (a
	// TPC-H query, an I-Store experiment); absent for the shuffle.
	Workload *Workload `json:"workload,omitempty"`
	Label    string    `json:"label,omitempty"`
	Backend  string    `json:"backend"`
	Profile  string    `json:"profile"`
	// Loopback: on RDMA hardware, the nodes were contexts of one adapter
	// in one process (fabric.SharesAdapter): their traffic was looped back
	// inside it, crossing no link or switch, and it did every node's work.
	Loopback       bool         `json:"loopback,omitempty"`
	Design         string       `json:"design"`
	Notify         string       `json:"notify,omitempty"`
	Pattern        string       `json:"pattern"`
	Nodes          int          `json:"nodes"`
	Threads        int          `json:"threads"`
	MsgBytes       int          `json:"msg_bytes"`
	Buffers        int          `json:"buffers"`
	CreditEvery    int          `json:"credit_every"`
	Seed           uint64       `json:"seed"`
	QPNumbering    uint64       `json:"qp_numbering,omitempty"` // experiments.RunConfig.QPNumbering
	Doorbells      string       `json:"doorbells,omitempty"`    // experiments.RunConfig.Doorbells: "shared", "per-thread"; empty: the profile's
	Network        netspec.Spec `json:"network,omitzero"`       // the configuration's Network; left out for the single switch
	BytesPerNode   int64        `json:"bytes_per_node"`
	BytesPerPair   int64        `json:"bytes_per_pair,omitempty"`
	CyclesPerTuple int64        `json:"cycles_per_tuple"`
	NodeCycles     []int64      `json:"node_cycles,omitempty"`
	// Adaptive buffering: the mean number of receive buffers in
	// circulation per node (over the run, summed over endpoints and
	// sources), buffers added and retired, and the pool's peak pinned
	// bytes per node.
	Adaptive        bool    `json:"adaptive,omitempty"`
	MaxBuffers      int     `json:"max_buffers,omitempty"`
	PinnedCapMiB    int64   `json:"pinned_cap_mib,omitempty"`
	RecvBuffersMean float64 `json:"recv_buffers_mean,omitempty"`
	// The same per node (time mean of the receive buffers of its endpoints).
	RecvBuffersByNode []float64 `json:"recv_buffers_by_node,omitempty"`
	// RecvBuffersMean split by state (posted and empty, filled and not yet
	// taken, being consumed), per node on average.
	RecvStateMeans []float64 `json:"recv_state_means,omitempty"`
	BuffersGrown   int64     `json:"buffers_grown,omitempty"`
	BuffersRetired int64     `json:"buffers_retired,omitempty"`
	PoolPeakBytes  int64     `json:"pool_peak_bytes,omitempty"`
	// UD loss recovery: on, messages retransmitted, duplicates dropped.
	UDRecovery  bool  `json:"ud_recovery,omitempty"`
	Retransmits int64 `json:"retransmits,omitempty"`
	Duplicates  int64 `json:"duplicates,omitempty"`
	// InfiniBand service levels: the data's (0 left out), and the control
	// messages' when the run gave them one (left out: the data's).
	SL             uint8   `json:"sl,omitempty"`
	ControlSL      *uint8  `json:"control_sl,omitempty"`
	ThroughputGiBs float64 `json:"throughput_gibps"`
	ResponseS      float64 `json:"response_s"`
	// Skew between nodes (skew.go): each node's finish time, from the
	// start barrier to the end of its last receiving thread (its last
	// message received and processed), in milliseconds; the slowest over
	// the median (FinishSkew). On a network of switches, the leaf switch
	// of each node (leaves numbered from 0 in the topology's order,
	// counting only those that host a node of the run) and each leaf's
	// mean finish time. Absent in records of other workloads and in
	// records made before them.
	NodeFinishMS  []float64 `json:"node_finish_ms,omitempty"`
	FinishSkew    float64   `json:"finish_skew,omitempty"`
	NodeLeaf      []int     `json:"node_leaf,omitempty"`
	LeafFinishMS  []float64 `json:"leaf_finish_ms,omitempty"`
	SetupMS       float64   `json:"setup_ms"`
	QPsPerNode    int       `json:"qps_per_node"`
	RegisteredPer int64     `json:"registered_bytes_per_node"`
	// RecvPoolPer is the part of RegisteredPer that holds received
	// messages: the one pool Liu19 §7.1.3 counts (0 with adaptive
	// receive buffers).
	RecvPoolPer    int64  `json:"recv_pool_bytes_per_node,omitempty"`
	Integrity      string `json:"integrity"`
	TuplesSent     uint64 `json:"tuples_sent"`
	TuplesReceived uint64 `json:"tuples_received"`
	CreditWrites   int64  `json:"credit_writes"`
	// CreditRepeats is the part of CreditWrites that the SQ/SR designs
	// sent as repeats on quiet connections.
	CreditRepeats int64 `json:"credit_repeats,omitempty"`
	// CreditOwed is the part of CreditWrites that the SQ/SR designs sent
	// late, once the credit queue pair's send queue had room for credit it
	// had refused.
	CreditOwed int64 `json:"credit_owed,omitempty"`
	// RDMA Write designs: RDMA Writes per data transfer (the data, any
	// notification write, and credit writes), over the cluster.
	WritesPerTransfer float64 `json:"writes_per_transfer,omitempty"`
	// RDMA Write designs: mean time from writing a slot of the receiver
	// to the sender seeing it free again, microseconds.
	SlotReturnUS float64 `json:"slot_return_us,omitempty"`
	CreditStalls int64   `json:"credit_stalls"`
	QPCacheMiss  float64 `json:"qp_cache_miss_rate"`
	// Fractions of the sending and receiving threads' time spent waiting
	// (in Thread.Wait: for a free buffer, credit, data or completions),
	// over all threads of all nodes, from the start barrier to each
	// thread's end.
	SenderIdle   float64 `json:"sender_idle"`
	ReceiverIdle float64 `json:"receiver_idle"`
	// LockWait is the fraction of the sending and receiving threads' time
	// spent waiting for locks other threads held (a shared endpoint's lock,
	// the provider's queue-pair and completion-queue locks, an MPI
	// library's lock: spinning, sleeping and the hand-off), over all
	// threads of all nodes, senders and receivers together. The idle
	// fractions above count this time as busy. Simulator only; absent
	// elsewhere and in records made before it.
	LockWait float64 `json:"lock_wait,omitempty"`
	// Receiving threads' time in Release (returning the buffer: reposting
	// the receive and writing credit back), milliseconds per GiB received.
	ReleaseMSPerGiB float64 `json:"release_ms_per_gib"`
	// Receivers' time writing credit back (posting credit writes or
	// messages in Release), milliseconds per GiB received.
	CreditMSPerGiB float64 `json:"credit_ms_per_gib,omitempty"`
	SimEvents      uint64  `json:"sim_events"`
	// VerbsCheck is "off" when the simulator's verbs-usage checker did
	// not run (explore run --no-check); absent when it did.
	VerbsCheck string  `json:"verbs_check,omitempty"`
	WallS      float64 `json:"wall_s"`
	// Steady-state growth (explore reproduce): the input was this many
	// times the figure's, and the throughput moved by SteadyChange (a
	// fraction) from the run with half of it. Absent when not grown.
	InputScale   int     `json:"input_scale,omitempty"`
	SteadyChange float64 `json:"steady_change,omitempty"`
	// SteadyStop says why growth stopped before the throughput settled
	// and before the most growth allowed: the next doubling failed, or
	// would not fit in the memory available. Absent otherwise.
	SteadyStop string `json:"steady_stop,omitempty"`
	// The build that made the record (buildinfo): module version,
	// version-control commit and Go toolchain; and the simulated
	// profile's parameters (sim.Profile.Hash; empty off the simulator).
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	GoVersion   string `json:"go_version"`
	ProfileHash string `json:"profile_hash"`
	// Software is the software costs the run used where they were not
	// the defaults (experiments.RunConfig.Software); absent for the defaults.
	Software *SoftwareCosts `json:"software,omitempty"`
	// Payload says the run moved real bytes (experiments.RunConfig.Payload); absent
	// for a size-only run.
	Payload bool `json:"payload,omitempty"`
	// Faults is what a fault schedule injected into a run that
	// succeeded all the same (sim.Cluster.FaultSummary: packets lost,
	// links and cables down, reroutes); absent without faults.
	Faults string `json:"faults,omitempty"`
	// TimeoutS is the run's longest wait for progress, in simulated (or,
	// on hardware, real) seconds, where it was not the default
	// (algos.DefaultTimeout); absent for the default.
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// SoftwareCosts replace, for one run, software costs that are estimates
// (docs/model.md §2 and §4): the MPI and IPoIB baselines' costs (also
// HyPer-TCP's kernel costs), the cycles a polling loop pays per cache
// line, and SQ/SR's credit timers (design choices without a source). The
// zero value keeps the defaults (algos.DefaultMPICosts,
// algos.DefaultIPoIBCosts, algos.DefaultPollLineCycles,
// algos.DefaultCreditTimers). Sensitivity
// analysis moves them; a record made with any of them says so.
type SoftwareCosts struct {
	MPI            *algos.MPICosts     `json:"mpi,omitempty"`
	IPoIB          *algos.IPoIBCosts   `json:"ipoib,omitempty"`
	PollLineCycles int64               `json:"poll_line_cycles,omitempty"`
	Credit         *algos.CreditTimers `json:"credit,omitempty"`
}

// IsZero says whether s keeps every default.
func (s SoftwareCosts) IsZero() bool {
	return s.MPI == nil && s.IPoIB == nil && s.PollLineCycles == 0 && s.Credit == nil
}
