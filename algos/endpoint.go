package algos

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// State says whether a buffer is the last of its stream (Liu17 §4.2).
type State uint8

// States.
const (
	MoreData State = iota
	Depleted
)

func (s State) String() string {
	if s == Depleted {
		return "Depleted"
	}
	return "MoreData"
}

// Buffer is a registered send buffer lent to the caller by Acquire until it
// is handed back with PutData. The caller writes payload into Data[:N]
// (payload mode) and describes it in Tuples and Sum, which travel in the
// message header, so that a receiver can check integrity in size-only mode
// too. Not safe for concurrent use.
type Buffer struct {
	Data   []byte // payload area of the registered buffer; len is the capacity
	N      int    // payload bytes used
	Tuples uint64 // tuples in the payload
	Sum    uint64 // checksum of the tuples (see TupleSum)
	id     int
	mr     fabric.MR // the registered region holding the buffer
	off    int       // offset of the buffer's header in mr
}

// Delivery is one received buffer, lent to the caller by GetData until it
// is handed back with Release.
type Delivery struct {
	State  State // Depleted: the source has nothing more after this buffer
	Src    int   // sending node
	Data   []byte
	N      int
	Tuples uint64
	Sum    uint64
	End    bool // no buffer: every source has ended (Release not needed)
	id     int
	retire bool // adaptive buffers: goes back to the pool on Release
}

// Endpoint is one end of the shuffle's communication: it owns registered
// memory and queue pairs and moves buffers between nodes. Endpoint i of
// every node talks to endpoint i of every node (the endpoint index is the
// Tag of its Config). All methods are safe for concurrent use by threads of
// its node (a shared endpoint serializes them internally); blocking methods
// wait through the thread, never the Go runtime.
type Endpoint interface {
	// Acquire returns a free send buffer, waiting until one is free.
	Acquire(th fabric.Thread) (*Buffer, error)
	// PutData sends b to every node in dests (a transmission group) and
	// takes b back; st = Depleted tells those nodes this endpoint has no
	// more data for them. It waits for credit when a destination has none.
	PutData(th fabric.Thread, b *Buffer, dests []int, st State) error
	// GetData returns the next received buffer, waiting for one; when every
	// source has ended it returns a Delivery with End set.
	GetData(th fabric.Thread) (Delivery, error)
	// Release hands a received buffer back (and re-credits its sender).
	Release(th fabric.Thread, d Delivery) error
	// Close finishes the stream's bookkeeping (send/receive parity) and
	// frees every resource. Call it once, from one thread.
	Close(th fabric.Thread) error
	// Info describes the endpoint's resources.
	Info() EndpointInfo
}

// EndpointInfo describes what an endpoint uses.
type EndpointInfo struct {
	QPs             int   // queue pairs created, credit-return ones included
	RegisteredBytes int64 // registered memory
	// RecvPoolBytes is the part of RegisteredBytes that holds received
	// messages (receive buffers, MQ/WR slots, MQ/RD read slots): the one
	// pool Liu19 §7.1.3 counts. Zero where receive buffers come from an
	// adaptive pool.
	RecvPoolBytes int64
	// CreditNS is the receivers' time writing credit back (posting the
	// credit writes or messages in Release), nanoseconds.
	CreditNS     float64
	CreditWrites int64 // credit write-backs sent
	// CreditRepeats is the part of CreditWrites that SQ/SR sent as
	// repeats on quiet connections (repeats.go).
	CreditRepeats int64
	// CreditOwed is the part of CreditWrites that SQ/SR sent late: credit
	// that found the credit queue pair's send queue full, sent once it
	// had room (owed.go).
	CreditOwed   int64
	CreditStalls int64 // times a PutData had to wait for credit
	Transfers    int64 // data messages posted (one per destination of a buffer)
	Retransmits  int64 // UD loss recovery: messages sent again
	Duplicates   int64 // UD loss recovery: duplicate messages dropped
	NoticeWrites int64 // MQ/WR poll-buffers and poll-queue: notification writes posted
	FreeWrites   int64 // MQ/WR and MQ/RD: FreeArr entries written (a slot or buffer returned)
	// MQ/WR poll-buffers and poll-queue receivers: scans of the memory
	// the notices arrive in, and the locations (cache lines) they read.
	NoticeScans, NoticeLines int64
	// MQ/WR: the total and count of slot return latencies, from a write
	// into a slot of the receiver to the sender seeing that slot free.
	SlotReturnNS float64
	SlotReturns  int64
	// Adaptive buffers (zero otherwise): buffers added and retired, and
	// the time-mean number of receive buffers (summed over sources) and
	// send buffers in circulation.
	AdaptiveGrown, AdaptiveRetired   int64
	RecvBuffersMean, SendBuffersMean float64
	// RecvStateMeans splits RecvBuffersMean by state: posted and empty
	// (Wait), filled and not yet taken (Ready), being consumed (Lent).
	RecvStateMeans [3]float64
}

// Add adds o's counters and time means to i (the sum over a node's
// endpoints).
func (i *EndpointInfo) Add(o EndpointInfo) {
	i.QPs += o.QPs
	i.RegisteredBytes += o.RegisteredBytes
	i.RecvPoolBytes += o.RecvPoolBytes
	i.CreditNS += o.CreditNS
	i.CreditWrites += o.CreditWrites
	i.CreditRepeats += o.CreditRepeats
	i.CreditOwed += o.CreditOwed
	i.CreditStalls += o.CreditStalls
	i.Transfers += o.Transfers
	i.Retransmits += o.Retransmits
	i.Duplicates += o.Duplicates
	i.NoticeWrites += o.NoticeWrites
	i.FreeWrites += o.FreeWrites
	i.NoticeScans += o.NoticeScans
	i.NoticeLines += o.NoticeLines
	i.SlotReturnNS += o.SlotReturnNS
	i.SlotReturns += o.SlotReturns
	i.AdaptiveGrown += o.AdaptiveGrown
	i.AdaptiveRetired += o.AdaptiveRetired
	i.RecvBuffersMean += o.RecvBuffersMean
	i.SendBuffersMean += o.SendBuffersMean
	for k := range i.RecvStateMeans {
		i.RecvStateMeans[k] += o.RecvStateMeans[k]
	}
}

// Config configures an endpoint.
type Config struct {
	Nodes       int             // cluster size
	Tag         int             // endpoint index: endpoint Tag talks to endpoint Tag of every node
	MsgBytes    int             // message (buffer) size including the header
	Buffers     int             // per thread: send buffers per destination, and receives per source
	Threads     int             // threads sharing the endpoint (pools scale with it); 0 means 1
	CreditEvery int             // receives per credit write-back
	Timeout     fabric.Duration // longest wait for progress before an error; 0: DefaultTimeout
	Notify      Notify          // MQ/WR only: how receivers learn of a write (default NotifyCQ)
	// SL is the InfiniBand service level of the endpoint's queue pairs
	// and address handles (fabric.Address.SL); ControlSL that of its
	// control messages where it sends them on queue pairs of their own
	// (Design.ControlChannel; otherwise ignored). The subnet manager's
	// SL-to-VL tables put each level on a virtual lane.
	SL, ControlSL uint8
	// Adaptive, if set, makes the registered buffers adaptive; Buffers is
	// then where they start.
	Adaptive *AdaptiveBuffers
	// Recover (SQ/SR only) recovers from lost UD messages instead of
	// failing: senders keep each message until acknowledged and
	// retransmit it after RTO (default 500 us); receivers drop duplicates.
	Recover bool
	RTO     fabric.Duration
	// Broadcast says every buffer goes to every node (the broadcast
	// pattern): the MPI baseline then uses MPI_Ibcast, which every node
	// must post ahead; other designs ignore it.
	Broadcast bool
	// PollLineCycles is the CPU cost, in cycles, of each 64-byte cache
	// line a polling loop reads from memory the NIC writes (credit words,
	// seals, descriptor rings, FreeArr): 0 means DefaultPollLineCycles,
	// a negative value charges nothing (the model before polling was
	// charged, kept so that tests can compare with it).
	PollLineCycles int64
	// MPI and IPoIB, when set, replace the baselines' default software
	// costs (DefaultMPICosts, DefaultIPoIBCosts) for the designs of
	// Baselines and Peers that charge them (the MPI baseline; IPoIB and
	// HyPer-TCP): they are estimates, and sensitivity analysis moves them.
	// Other designs ignore them.
	MPI   *MPICosts
	IPoIB *IPoIBCosts
	// Credit (SQ/SR only), when set, replaces the credit timers
	// (DefaultCreditTimers): design choices without a source, which
	// sensitivity analysis moves. Other designs ignore it.
	Credit *CreditTimers
}

// mpiCosts is c.MPI, or the defaults.
func (c Config) mpiCosts() MPICosts {
	if c.MPI != nil {
		return *c.MPI
	}
	return DefaultMPICosts
}

// ipoibCosts is c.IPoIB, or the defaults.
func (c Config) ipoibCosts() IPoIBCosts {
	if c.IPoIB != nil {
		return *c.IPoIB
	}
	return DefaultIPoIBCosts
}

// DefaultPollLineCycles is the cost of reading one cache line that the
// NIC has written: a last-level cache hit on the Xeon E5 hosts of Liu19's
// clusters (inbound DMA writes land in the L3 with DDIO), docs/model.md
// §2 gives the source and what each design charges.
const DefaultPollLineCycles = 30

// ErrConfig reports an invalid endpoint configuration.
var ErrConfig = errors.New("algos: invalid configuration")

func (c *Config) check(maxMsg int) error {
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("%w: %d nodes", ErrConfig, c.Nodes)
	case c.MsgBytes < HeaderBytes+TupleBytes:
		return fmt.Errorf("%w: message of %d bytes cannot hold the %d-byte header and one tuple", ErrConfig, c.MsgBytes, HeaderBytes)
	case maxMsg > 0 && c.MsgBytes > maxMsg:
		return setting.New("MsgBytes", c.MsgBytes, "above the port's active MTU of %d bytes: a UD message travels in one packet; use at most %d", maxMsg, maxMsg).Sentinel(ErrConfig)
	case c.Buffers < 1:
		return fmt.Errorf("%w: %d buffers per destination", ErrConfig, c.Buffers)
	case c.CreditEvery < 1:
		return fmt.Errorf("%w: credit write-back every %d receives", ErrConfig, c.CreditEvery)
	case c.CreditEvery > c.Buffers:
		return fmt.Errorf("%w: credit every %d receives needs at least that many buffers per source, not %d (Liu19 §7.1.1)",
			ErrConfig, c.CreditEvery, c.Buffers)
	case c.Threads < 0:
		return fmt.Errorf("%w: %d threads", ErrConfig, c.Threads)
	}
	if c.Adaptive != nil {
		if err := c.Adaptive.check(*c); err != nil {
			return err
		}
	}
	if c.RTO < 0 {
		return fmt.Errorf("%w: retransmission timeout %v", ErrConfig, c.RTO)
	}
	if c.Credit != nil {
		if err := c.Credit.check(); err != nil {
			return err
		}
	}
	if c.RTO == 0 {
		c.RTO = 500 * fabric.Microsecond
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Threads == 0 {
		c.Threads = 1
	}
	return nil
}

// HeaderBytes is the size of the header at the start of every message.
// Layout (little-endian): magic (1), flags (1), source node (2), payload
// bytes (4), sequence number (8), tuples (8), checksum (8).
const HeaderBytes = 32

// DefaultTimeout is the longest an endpoint waits for progress before it
// fails, unless Config.Timeout says otherwise. It is longer than the RC
// transport's own recovery (eight attempts at the local ACK timeout the
// designs set, code 14: 67 ms each, 537 ms in all), so that a
// retransmission lost again is recovered by the transport, or reported
// by it as retries exceeded, rather than cut short by the endpoint.
const DefaultTimeout = fabric.Second

const (
	headerMagic  = 0xa5
	flagDepleted = 1
	flagParity   = 2 // an empty message sent only to consume credit at the end
)

type header struct {
	flags  uint8
	src    int
	n      int
	seq    uint64
	tuples uint64
	sum    uint64
}

func (h *header) put(b []byte) {
	b[0], b[1] = headerMagic, h.flags
	binary.LittleEndian.PutUint16(b[2:], uint16(h.src))
	binary.LittleEndian.PutUint32(b[4:], uint32(h.n))
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint64(b[16:], h.tuples)
	binary.LittleEndian.PutUint64(b[24:], h.sum)
}

// ErrBadMessage reports a received message whose header is malformed.
var ErrBadMessage = errors.New("algos: malformed message")

func (h *header) get(b []byte, max int) error {
	if len(b) < HeaderBytes {
		return fmt.Errorf("%w: %d bytes, shorter than the header", ErrBadMessage, len(b))
	}
	if b[0] != headerMagic {
		return fmt.Errorf("%w: magic %#x", ErrBadMessage, b[0])
	}
	h.flags = b[1]
	h.src = int(binary.LittleEndian.Uint16(b[2:]))
	h.n = int(binary.LittleEndian.Uint32(b[4:]))
	h.seq = binary.LittleEndian.Uint64(b[8:])
	h.tuples = binary.LittleEndian.Uint64(b[16:])
	h.sum = binary.LittleEndian.Uint64(b[24:])
	if h.n < 0 || h.n > max {
		return fmt.Errorf("%w: payload of %d bytes in a %d-byte buffer", ErrBadMessage, h.n, max)
	}
	return nil
}

// deliveries is a FIFO of the deliveries an endpoint has received and
// GetData has not handed out yet; its array is reused once it empties.
type deliveries struct {
	q    []Delivery
	head int
}

func (r *deliveries) push(d Delivery) { r.q = append(r.q, d) }

func (r *deliveries) len() int { return len(r.q) - r.head }

// pop hands out the oldest delivery, if any.
func (r *deliveries) pop() (Delivery, bool) {
	if r.head == len(r.q) {
		return Delivery{}, false
	}
	d := r.q[r.head]
	r.q[r.head] = Delivery{}
	if r.head++; r.head == len(r.q) {
		r.q, r.head = r.q[:0], 0
	}
	return d, true
}
