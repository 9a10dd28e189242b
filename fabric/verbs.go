package fabric

import "fmt"

// Access is the set of permissions of a memory region or a queue pair.
type Access uint8

// Access flags, as in ibv_access_flags.
const (
	AccessLocalWrite Access = 1 << iota
	AccessRemoteWrite
	AccessRemoteRead
)

// QPType is the transport of a queue pair.
type QPType uint8

// Transports.
const (
	RC QPType = iota + 1 // reliable connection: acknowledged, exactly once, in order
	UC                   // unreliable connection: in order, no acknowledgement, no RDMA Read
	UD                   // unreliable datagram: one MTU per message, any destination
	// XRCSend is an XRC initiator (INI, IBV_QPT_XRC_SEND): RC's transport
	// to one XRCRecv queue pair, whose every request names the remote XRC
	// shared receive queue it is for (SendWR.RemoteSRQN). It has a send
	// queue and no receive queue.
	XRCSend
	// XRCRecv is an XRC target (TGT, IBV_QPT_XRC_RECV): the responder of
	// one XRCSend queue pair, opened in an XRC domain (QPInit.XRCD). It
	// delivers each message into the XRC shared receive queue the message
	// names, which must be of its domain; it has neither a send queue nor
	// a receive queue, and no completion queues of its own.
	XRCRecv
	// DCI is a Dynamically Connected initiator (mlx5dv_create_qp(3),
	// MLX5DV_DCTYPE_DCI): a send-only reliable queue pair that may send to
	// any DCT. Each request names its target (SendWR.AH, SendWR.RemoteQPN
	// as the DCT's number, SendWR.DCKey: mlx5dv_wr_set_dc_addr(3)); the
	// NIC connects to a target implicitly, and when a request names
	// another target than the one connected, disconnects and connects to
	// it (a handshake on the wire, no host involvement) once the earlier
	// requests are acknowledged. It takes a SendCQ and Caps.MaxSendWR;
	// RecvCQ, Caps.MaxRecvWR and SRQ are not for it (PostRecv fails with
	// ErrInvalidArg). It goes to RTR and RTS with no destination.
	DCI
	// DCT is a Dynamically Connected target (MLX5DV_DCTYPE_DCT): the
	// responder of any number of DCIs, created with a shared receive
	// queue (QPInit.SRQ, required), the completion queue its receives
	// complete in (QPInit.RecvCQ, required) and an access key
	// (QPInit.DCKey) that every request must carry; a request with
	// another key is refused with a remote access error. It has no send
	// queue, goes to RTR with no destination and stays there (RTS is
	// refused). Its number (QPN, Info().QPN) is what initiators name.
	DCT
)

// Reliable reports whether t is acknowledged and retried: RC and both
// ends of XRC.
func (t QPType) Reliable() bool {
	return t == RC || t == XRCSend || t == XRCRecv || t == DCI || t == DCT
}

// DC reports whether t is one of the Dynamically Connected types.
func (t QPType) DC() bool { return t == DCI || t == DCT }

func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case UD:
		return "UD"
	case XRCSend:
		return "XRC_SEND"
	case XRCRecv:
		return "XRC_RECV"
	case DCI:
		return "DCI"
	case DCT:
		return "DCT"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// QPState is a queue pair's state. Legal transitions:
// Reset->Init->RTR->RTS, any->Error, any->Reset.
type QPState uint8

// States.
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateError
)

func (s QPState) String() string {
	switch s {
	case StateReset:
		return "RESET"
	case StateInit:
		return "INIT"
	case StateRTR:
		return "RTR"
	case StateRTS:
		return "RTS"
	case StateError:
		return "ERROR"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// DeviceAttr describes a device and its active port.
type DeviceAttr struct {
	Name      string
	LinkLayer string // "InfiniBand" or "Ethernet"
	LID       uint16 // port LID (InfiniBand)
	GID       GID    // port GID (RoCE addressing)
	MTU       int    // active path MTU in bytes
	MaxQP     int
	MaxQPWR   int // maximum work requests per queue (send queues: see MaxSendWR)
	MaxCQE    int // maximum completion queue depth
	MaxSGE    int // scatter/gather elements per work request
	MaxInline int // largest inline send on an RC or UC queue pair, bytes
	// MaxInlineUD is the largest inline send on a UD queue pair, bytes:
	// providers size UD's inline space differently (the address vector
	// shares the work-queue entry).
	MaxInlineUD int
	MaxMRBytes  int64
	RateGbps    float64 // data rate of the port after encoding, 10^9 bit/s
	// SendQueue is how the provider sizes send queues, which can make the
	// deepest one shallower than MaxQPWR (MaxSendWR); the zero value
	// counts requests.
	SendQueue SendQueueLayout
}

// Device is an opened RDMA device (a device context). Owned by its Node; the
// node closes it.
type Device interface {
	Attr() DeviceAttr
	// AllocPD allocates a protection domain.
	AllocPD() (PD, error)
	// CreateCQ creates a completion queue holding at most depth entries.
	// A completion arriving at a full queue is an overrun: it is lost and
	// every later Poll reports ErrCQOverrun.
	CreateCQ(depth int) (CQ, error)
}

// PD is a protection domain. Memory regions, queue pairs and address handles
// of one PD may be used together only.
type PD interface {
	// RegMR allocates length bytes of memory that the backend owns (outside
	// the Go heap on hardware) and registers it with the given access.
	// The memory stays valid until Dereg; the caller must not deregister a
	// region that a posted request still names.
	RegMR(length int, access Access) (MR, error)
	// CreateQP creates a queue pair in StateReset.
	CreateQP(init QPInit) (QP, error)
	// CreateAH creates an address handle for UD sends to dest.
	CreateAH(dest Address) (AH, error)
	// CreateSRQ creates a shared receive queue (ibv_create_srq(3)), or an
	// XRC one when init.XRCD is set (ibv_create_srq_ex(3), IBV_SRQT_XRC).
	CreateSRQ(init SRQInit) (SRQ, error)
	// OpenXRCD opens an XRC domain (ibv_open_xrcd(3)). Verbs opens it
	// from the device context; here it is opened through a protection
	// domain, which then cannot be deallocated before the domain is
	// closed. One per node is enough: it groups the XRC shared receive
	// queues and XRC target queue pairs that may serve one another.
	OpenXRCD() (XRCD, error)
	// Dealloc frees the protection domain; it fails while objects remain.
	Dealloc() error
}

// RegTimer is implemented by protection domains that can time a memory
// registration alone. RegMR allocates the region's memory (zeroed: on
// hardware every page is written, so faulted in) before it registers it,
// so timing a RegMR call times allocating and zeroing too, which for a
// large region is as long as the registration or longer. TimeRegMR
// registers as RegMR does and returns, with the region, how long the
// registration took on memory already allocated and touched (on
// hardware: the ibv_reg_mr call alone, wall clock; on the simulator, the
// time it charges, which counts no allocation).
type RegTimer interface {
	TimeRegMR(length int, access Access) (MR, Duration, error)
}

// MRAlign is the alignment of a memory region's first byte: a cache line,
// so that a design can lay out words and descriptors that a remote NIC
// writes and a thread polls without straddling cache lines, and read each
// word with one aligned atomic load (algos' polled rings).
const MRAlign = 64

// MR is a registered memory region.
//
// Ownership: Bytes is readable and writable by the CPU at any time, but a
// range named by a posted work request belongs to the NIC until its
// completion (package comment). In the simulator, bytes written by the NIC
// become visible to a thread after the thread's next synchronizing call
// (a verb, Wait or Sync).
type MR interface {
	// Bytes is the region's memory, valid until Dereg. Its first byte is
	// aligned to MRAlign bytes.
	Bytes() []byte
	Addr() uint64 // virtual address of Bytes()[0], for SGEs and remote access
	Len() int
	LKey() uint32
	RKey() uint32
	// SGE returns the element for bytes [off, off+n) of this region.
	SGE(off, n int) SGE
	// Dereg deregisters and frees the region.
	Dereg() error
	Waitable
}

// CQ is a completion queue.
type CQ interface {
	// Poll moves up to len(wcs) completions into wcs and returns how many.
	// It never blocks. After an overrun it returns ErrCQOverrun along with
	// whatever completions remain. wcs belongs to the caller; polling a
	// completion hands the request's buffer back to the caller.
	Poll(wcs []WC) (int, error)
	Depth() int
	Destroy() error
	Waitable
}

// QPCaps are the limits requested for a queue pair. A work queue slot is
// taken by PostSend or PostRecv and free again once the request's
// completion (for an unsignaled send, a later one) has been polled.
// Providers may round the depths up; backends enforce the requested ones.
type QPCaps struct {
	MaxSendWR int // send queue depth
	MaxRecvWR int // receive queue depth
	MaxInline int // largest inline send in bytes
}

// QPInit holds the arguments of PD.CreateQP.
type QPInit struct {
	Type   QPType
	SendCQ CQ
	RecvCQ CQ
	Caps   QPCaps
	// SRQ, when set, attaches the queue pair (RC, UC or UD) to a shared
	// receive queue of the same protection domain: arriving messages take
	// their receives from it, Caps.MaxRecvWR is ignored, and PostRecv on
	// the queue pair itself fails with ErrInvalidArg (EINVAL in verbs).
	// Receive completions still go to RecvCQ and carry this queue pair's
	// number (WC.QPN). An XRC shared receive queue cannot be attached this
	// way (ErrInvalidArg): XRC target queue pairs reach it by its number.
	SRQ SRQ
	// XRCD is the XRC domain of an XRCRecv queue pair (required for it,
	// refused with ErrInvalidArg for every other type). An XRCRecv queue
	// pair takes no completion queues and no capabilities: the fields
	// SendCQ, RecvCQ and Caps are ignored. An XRCSend queue pair takes a
	// SendCQ and Caps.MaxSendWR; RecvCQ and Caps.MaxRecvWR are ignored.
	XRCD XRCD
	// DCKey is a DCT's access key (the dc_access_key of
	// mlx5dv_qp_init_attr's dc_init_attr): a request whose SendWR.DCKey
	// differs is refused. Ignored by every other type.
	DCKey uint64
}

// QPAttr carries the attributes used by QP.Modify. Each transition reads the
// fields listed beside them; others are ignored.
type QPAttr struct {
	// Reset -> Init
	Access Access // remote access allowed on this QP (RC, UC)
	QKey   uint32 // UD

	// Init -> RTR (RC, UC)
	Dest            Address // remote port and queue pair
	RemotePSN       PSN     // expected first PSN from the peer
	PathMTU         int     // bytes; 0 means the port's active MTU
	MinRNRTimer     uint8   // IB encoding 0..31 (see RNRTimerDuration)
	MaxDestRdAtomic int     // incoming RDMA Reads allowed in flight

	// RTR -> RTS
	SendPSN     PSN   // first PSN we send
	Timeout     uint8 // local ACK timeout, 4.096 us * 2^Timeout (0 = infinite)
	RetryCnt    uint8 // 0..7 transport retries
	RNRRetry    uint8 // 0..7, 7 = infinite
	MaxRdAtomic int   // outgoing RDMA Reads in flight
}

// QP is a queue pair.
type QP interface {
	QPN() uint32
	Type() QPType
	State() QPState
	// Modify moves the queue pair to state using attr (see QPAttr).
	Modify(state QPState, attr QPAttr) error
	// PostSend appends wrs to the send queue in order, without blocking. It
	// returns how many were posted; on error, wrs[n] is the first rejected
	// request (as ibv_post_send's bad_wr) and none after it was posted.
	// Ownership: wrs is the caller's again when PostSend returns; the bytes
	// each request names belong to the NIC until its completion is polled
	// (unsignaled: until a later signaled request of this QP completes),
	// except inline requests, whose bytes were copied.
	PostSend(wrs []SendWR) (int, error)
	// PostRecv appends receive buffers, with the same contract as PostSend.
	// Ownership: each buffer belongs to the NIC until its completion (success
	// or flush) is polled; only then may the CPU read what arrived.
	PostRecv(wrs []RecvWR) (int, error)
	// Info is what a peer needs to connect to this queue pair.
	Info() QPInfo
	// Destroy frees the queue pair. Outstanding requests are discarded.
	Destroy() error
}

// SRQInit holds the arguments of PD.CreateSRQ (struct ibv_srq_init_attr).
type SRQInit struct {
	MaxWR  int // receives the queue holds (max_wr)
	MaxSGE int // scatter/gather elements per receive (max_sge; a RecvWR has one)
	// Limit, when above 0, arms the limit event at creation (as
	// SRQ.ArmLimit(Limit) right after it: ibv_create_srq itself ignores
	// srq_limit, so the backends issue the modify).
	Limit int
	// XRCD, when set, makes an XRC shared receive queue of that domain
	// (IBV_SRQT_XRC). Such a queue is reached by XRC target queue pairs
	// of the domain through its number (SRQ.Number), and its receives
	// complete in CQ, which it then requires (ErrInvalidArg without it,
	// and with CQ but no XRCD). Its completions carry the number of the
	// target queue pair that delivered the message (WC.QPN).
	XRCD XRCD
	CQ   CQ
}

// SRQ is a shared receive queue (ibv_create_srq(3), ibv_post_srq_recv(3),
// ibv_modify_srq(3)). Every queue pair attached to it (QPInit.SRQ) takes
// the receive for an arriving message from it, in the order the messages
// reach the NIC, whichever queue pair they arrive on: receives are
// consumed in posting order, but by any attached queue pair, and the
// completion carries the queue pair that took it (WC.QPN). A message that
// finds the queue empty is treated as with an empty receive queue: an RC
// queue pair answers with an RNR NAK, UD drops it, UC drops the message.
//
// Slots: a receive's slot is taken by PostRecv and free again once its
// completion has been polled, as for a queue pair's receive queue. When a
// queue pair attached to the queue enters the error state, only the
// receives it had taken are flushed; those still in the queue stay.
type SRQ interface {
	// PostRecv appends receive buffers, with QP.PostRecv's contract (the
	// queue has no state: it accepts receives as soon as it exists).
	PostRecv(wrs []RecvWR) (int, error)
	// ArmLimit arms the limit event (ibv_modify_srq with IBV_SRQ_LIMIT):
	// the first time the number of receives in the queue (posted, not yet
	// taken by a message) falls below limit, the event fires once and the
	// limit goes back to 0, disarmed (IBV_EVENT_SRQ_LIMIT_REACHED). 0
	// disarms; limit must be below MaxWR (else ErrInvalidArg, EINVAL).
	ArmLimit(limit int) error
	// LimitReached reports whether the limit event fired since the last
	// call, and consumes it (as ibv_get_async_event then
	// ibv_ack_async_event). It never blocks.
	LimitReached() bool
	// MaxWR is the queue's depth, as requested.
	MaxWR() int
	// Number is the queue's number on its device (ibv_get_srq_num(3)):
	// what an XRC send names to reach it (SendWR.RemoteSRQN). Never 0.
	Number() uint32
	// Destroy frees the queue. It fails with ErrBusy while queue pairs are
	// attached (the kernel's EBUSY); receives still posted are discarded.
	Destroy() error
}

// XRCD is an XRC domain (ibv_open_xrcd(3)). An XRC target queue pair
// delivers only into XRC shared receive queues of its own domain; a message
// that names another queue, or one that does not exist, is answered with
// an invalid-request NAK (the sender's request completes with
// StatusRemoteInvalid and its queue pair fails).
type XRCD interface {
	// Close closes the domain (ibv_close_xrcd). It fails with ErrBusy
	// while shared receive queues or target queue pairs of it remain.
	Close() error
}

// AH is an address handle for UD sends.
type AH interface {
	Dest() Address
	Destroy() error
}

// Waitable is something a Thread can wait on: a completion queue (new
// completions), a memory region (the NIC wrote into it) or a Signal.
// Backends accept only their own Waitables.
type Waitable interface {
	waitableMarker()
}

// WaitableBase is embedded by backend types to make them Waitable.
type WaitableBase struct{}

func (WaitableBase) waitableMarker() {}

// RNRTimerDuration decodes the IB min_rnr_timer encoding (0..31) into a
// Duration, following the table of the InfiniBand specification (value 0
// means 655.36 ms).
func RNRTimerDuration(code uint8) Duration {
	us := [...]float64{655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48,
		0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96,
		61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52}
	return Duration(us[code&31] * float64(Millisecond))
}

// AckTimeout decodes the IB local ACK timeout encoding: 4.096 us * 2^code;
// 0 means infinite (returns 0).
func AckTimeout(code uint8) Duration {
	if code == 0 {
		return 0
	}
	if code > 31 {
		code = 31
	}
	return Duration(4096) * Nanosecond * Duration(1) << code
}

// Transition checks a queue pair's move from state from to state to with
// attributes a, as ibv_modify_qp does: the state machine (INIT is reached
// from RESET, or INIT again; RTR from INIT; RTS from RTR; RESET and ERROR
// from any state) and then Check. It returns what is wrong, or "" when
// the move is allowed (a state it does not know is the caller's to
// refuse). The backends that emulate a NIC (sim, loopback) apply it in
// QP.Modify, so that they share one state machine.
func (a QPAttr) Transition(typ QPType, from, to QPState, activeMTU, maxRd int) string {
	switch {
	case to == StateInit && from != StateReset && from != StateInit:
		return "INIT is reached from RESET"
	case to == StateRTR && from != StateInit:
		return "RTR is reached from INIT"
	case to == StateRTS && from != StateRTR:
		return "RTS is reached from RTR"
	case to == StateRTS && typ == DCT:
		return "a DCT stays in RTR (it sends nothing but responses)"
	}
	return a.Check(to, typ, activeMTU, maxRd)
}

// Check reports what puts a outside the contract's ranges for a transition
// of a queue pair of type typ to state to, or "" when nothing does: for
// RTR of a connected queue pair, the destination QPN (24 bits), the path
// MTU (256, 512, 1024, 2048 or 4096, at most the port's activeMTU; 0 means
// the active MTU), the min RNR timer code (0..31) and the incoming read
// depth; for RTS, the retry counts (0..7), the ACK timeout code (0..31) and
// the outgoing read depth. Read depths must not be negative, and not above
// maxRd when maxRd > 0 (a backend that clamps them to its device passes 0).
// Every backend applies it in QP.Modify, so that they reject the same
// attributes with the same words.
func (a QPAttr) Check(to QPState, typ QPType, activeMTU, maxRd int) string {
	depth := func(name string, v int) string {
		switch {
		case v < 0:
			return fmt.Sprintf("%s %d is negative", name, v)
		case maxRd > 0 && v > maxRd:
			return fmt.Sprintf("%s %d outside 0..%d (the device's limit)", name, v, maxRd)
		}
		return ""
	}
	switch {
	case to == StateRTR && typ != UD:
		if !typ.DC() && (a.Dest.QPN == 0 || a.Dest.QPN >= 1<<24) {
			return fmt.Sprintf("destination QPN %#x is not a valid queue pair number", a.Dest.QPN)
		}
		mtu := a.PathMTU
		if mtu == 0 {
			mtu = activeMTU
		}
		switch mtu {
		case 256, 512, 1024, 2048, 4096:
		default:
			return fmt.Sprintf("path MTU %d is not one of 256..4096", mtu)
		}
		if activeMTU > 0 && mtu > activeMTU {
			return fmt.Sprintf("path MTU %d above the port's active MTU %d", mtu, activeMTU)
		}
		if a.MinRNRTimer > 31 {
			return fmt.Sprintf("min RNR timer code %d outside 0..31", a.MinRNRTimer)
		}
		return depth("max_dest_rd_atomic", a.MaxDestRdAtomic)
	case to == StateRTS:
		if a.RetryCnt > 7 || a.RNRRetry > 7 {
			return fmt.Sprintf("retry_cnt %d and rnr_retry %d must be 0..7", a.RetryCnt, a.RNRRetry)
		}
		if a.Timeout > 31 {
			return fmt.Sprintf("timeout code %d outside 0..31", a.Timeout)
		}
		return depth("max_rd_atomic", a.MaxRdAtomic)
	}
	return ""
}
