package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The verbs-usage checker watches how threads use the verbs and records
// hazards that real hardware would punish silently (Config.NoCheck turns it
// off). It only observes: no simulated time, event or result depends on it.
//
// CPU writes are plain Go slice writes and cannot be trapped, so buffer
// ownership is checked with checksums (checker_buffers.go): a request's
// bytes are summed when it is posted and checked whenever the NIC moves
// them and when its completion is polled. A mismatch means the CPU changed
// bytes the NIC owned. In size-only mode only the head and tail windows
// the NIC moves are summed.

// FindingKind names a kind of verbs-usage finding.
type FindingKind uint8

// Kinds of findings. Hazards (Finding.Hazard) are contract violations;
// the others are counted for information.
const (
	SendBufferModified  FindingKind = iota + 1 // a send's buffer changed between post and completion
	RecvBufferModified                         // the CPU wrote into a buffer posted as a receive
	ReadDestModified                           // the CPU wrote into an RDMA Read's destination before its completion
	WriteIntoPostedRecv                        // an RDMA Write landed in a buffer posted as a receive
	SendFromPostedRecv                         // a send's or RDMA Read's buffer overlaps a buffer posted as a receive
	RecvPostedTwice                            // a receive's buffer overlaps another posted receive's
	DeregBusy                                  // a memory region deregistered while requests name it
	UnsignaledWrap                             // a send queue filled with unsignaled requests: nothing can free it
	CQCanOverflow                              // a CQ shallower than the queues attached to it
	QueueFull                                  // a post beyond the queue's depth (rejected with ErrQueueFull)
	NoRecvDrop                                 // a UD message found no posted receive and was dropped
	RNRNak                                     // an RC message found no posted receive (RNR NAK)
	CQOverrun                                  // a completion was lost to a full CQ
	StillOpen                                  // an object still open at the end of a run (ReportOpen)
)

var findingNames = [...]string{"?", "send buffer modified before completion", "receive buffer modified while posted",
	"RDMA Read destination modified before completion", "RDMA Write into a posted receive buffer",
	"work request buffer also posted as a receive", "buffer posted twice as a receive", "memory deregistered with work outstanding",
	"unsignaled sends fill the send queue", "CQ can overflow", "post beyond queue depth",
	"UD send hit no posted receive", "RC send hit no posted receive (RNR)", "CQ overrun", "still open"}

func (k FindingKind) String() string {
	if int(k) < len(findingNames) {
		return findingNames[k]
	}
	return fmt.Sprintf("FindingKind(%d)", uint8(k))
}

// Hazard reports whether findings of this kind violate the verbs contract.
func (k FindingKind) Hazard() bool {
	switch k {
	case SendBufferModified, RecvBufferModified, ReadDestModified, WriteIntoPostedRecv, SendFromPostedRecv, RecvPostedTwice,
		DeregBusy, UnsignaledWrap, StillOpen:
		return true
	}
	return false
}

// Finding is one verbs-usage finding, merged with its repetitions (same
// kind, node, thread, operation and object).
type Finding struct {
	Kind   FindingKind
	Node   int
	Thread string // the thread that made the call or posted the request ("driver" outside threads)
	Op     string // the operation: PostSend, PostRecv, Dereg, CreateQP, ...
	Detail string // what and where, from the first occurrence
	At     fabric.Time
	Count  int64
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s: node %d, thread %s, %s: %s", f.Kind, f.Node, f.Thread, f.Op, f.Detail)
	if f.Count > 1 {
		s += fmt.Sprintf(" (%d times)", f.Count)
	}
	return s
}

// ErrVerbsUsage is wrapped by CheckError.
var ErrVerbsUsage = errors.New("sim: verbs-usage checker")

type checker struct {
	c        *Cluster
	findings []Finding
	index    map[string]int
	regions  map[regionKey]int // the finding (-1: none, the list is full) of reportRegion's keys
	// reportRegion's last key and its finding: a program that commits a
	// finding on every request repeats one key (perftest posts every
	// receive of a queue pair into one buffer), and a comparison costs a
	// fraction of a map lookup.
	lastRegion    regionKey
	lastRegionIdx int
	objs          []openable // every PD, CQ and AH created (QPs and MRs are on their NICs)
	payload       bool
}

type openable interface {
	openDesc() (string, bool)
	nodeID() int
}

const maxFindings = 1000

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func newChecker(c *Cluster) *checker {
	return &checker{c: c, index: map[string]int{}, regions: map[regionKey]int{}, payload: !c.cfg.SizeOnly}
}

func threadName(th *thread) string {
	if th == nil {
		return "driver"
	}
	return th.name
}

// nicThread stands for the NIC in findings made while it processes
// packets (no thread is making a call then).
var nicThread = &thread{name: "NIC"}

// report records a finding; object distinguishes findings of one kind by
// the object they concern (merged otherwise).
func (ch *checker) report(k FindingKind, node int, th *thread, op, object, detail string) int {
	return ch.reportAs(k, node, threadName(th), op, object, detail)
}

// reportAs is report for a thread known by its name (a receive keeps its
// poster's name by number: Cluster.nameID).
func (ch *checker) reportAs(k FindingKind, node int, thread, op, object, detail string) int {
	key := fmt.Sprintf("%d|%d|%s|%s|%s", k, node, thread, op, object)
	if i, ok := ch.index[key]; ok {
		ch.findings[i].Count++
		return i
	}
	if len(ch.findings) >= maxFindings {
		return -1
	}
	ch.index[key] = len(ch.findings)
	ch.findings = append(ch.findings, Finding{Kind: k, Node: node, Thread: thread, Op: op, Detail: detail, At: ch.c.now, Count: 1})
	return len(ch.findings) - 1
}

// regionKey names a finding of kind k by th on region m.
type regionKey struct {
	k  FindingKind
	th *thread
	m  *mr
}

// reportRegion records a finding of kind k by th about region m, merged
// with the earlier ones of that kind, thread and region. Repetitions cost
// a map lookup: detail, which formats the finding, runs once. A program
// may commit these on every request (perftest posts every receive of a
// queue pair into one buffer, and sends from it too).
func (ch *checker) reportRegion(k FindingKind, th *thread, op string, m *mr, detail func() string) {
	key := regionKey{k, th, m}
	i, ok := ch.lastRegionIdx, key == ch.lastRegion
	if !ok {
		i, ok = ch.regions[key]
	}
	if !ok {
		i = ch.report(k, m.nic.node.id, th, op, fmt.Sprintf("MR %#x", m.Key), detail())
		ch.regions[key] = i
	} else if i >= 0 {
		ch.findings[i].Count++
	}
	ch.lastRegion, ch.lastRegionIdx = key, i
}

// sum is the checksum of the bytes of b the NIC moves: all of them in
// payload mode (CRC-32C, which the CPU computes fast over long buffers),
// only the two size-only windows otherwise (a multiply-xor hash of 8-byte
// words: on 128 bytes it costs a fraction of a CRC-32C call, and the
// checker takes seven sums per message).
func (ch *checker) sum(b []byte) uint64 {
	const w = fabric.SizeOnlyWindow
	switch {
	case ch.payload:
		return uint64(crc32.Checksum(b, crcTable))
	case len(b) > 2*w:
		return windowHash(b[len(b)-w:], windowHash(b[:w], uint64(len(b))))
	}
	return wordHash(b, uint64(len(b)))
}

const hashMul = 0x9e3779b97f4a7c15 // odd: multiplying by it is a bijection

// windowHash is written for 64-byte windows: this fails to compile if
// fabric.SizeOnlyWindow changes.
const _ = uint(fabric.SizeOnlyWindow-64) + uint(64-fabric.SizeOnlyWindow)

// windowHash folds one size-only window of exactly 64 bytes into h, as
// wordHash does, unrolled on two independent lanes.
func windowHash(b []byte, h uint64) uint64 {
	_ = b[63]
	le := binary.LittleEndian
	a := (h ^ le.Uint64(b[0:])) * hashMul
	c := (^h ^ le.Uint64(b[8:])) * hashMul
	a = (a ^ a>>29 ^ le.Uint64(b[16:])) * hashMul
	c = (c ^ c>>29 ^ le.Uint64(b[24:])) * hashMul
	a = (a ^ a>>29 ^ le.Uint64(b[32:])) * hashMul
	c = (c ^ c>>29 ^ le.Uint64(b[40:])) * hashMul
	a = (a ^ a>>29 ^ le.Uint64(b[48:])) * hashMul
	c = (c ^ c>>29 ^ le.Uint64(b[56:])) * hashMul
	return (a ^ a>>29 ^ c) * hashMul
}

// wordHash folds b into h eight bytes at a time. Each step, h = (h ^ w) *
// odd, then h ^= h>>29, is a bijection of h for a given word, so changing
// any one word always changes the result; changes to several words
// collide with probability about 2^-64.
func wordHash(b []byte, h uint64) uint64 {
	for len(b) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(b)) * hashMul
		h ^= h >> 29
		b = b[8:]
	}
	for _, c := range b {
		h = (h ^ uint64(c)) * hashMul
		h ^= h >> 29
	}
	return h
}

// attach accounts for a queue of depth entries whose completions go to q.
func (ch *checker) attach(q *cq, entries int, qp *qp, which string) {
	if q == nil { // an XRC queue pair's missing queue
		return
	}
	q.attached += entries
	if q.attached > q.depth && !q.warned {
		q.warned = true
		ch.report(CQCanOverflow, q.nic.node.id, ch.c.cur, "CreateQP", q.String(),
			fmt.Sprintf("CQ of depth %d now serves queues of %d entries in all (the %s queue of %v adds %d): if they all complete unpolled, completions are lost",
				q.depth, q.attached, which, qp, entries))
	}
}

func (ch *checker) dereg(m *mr) {
	if m.busy > 0 {
		ch.report(DeregBusy, m.nic.node.id, ch.c.cur, "Dereg", fmt.Sprintf("MR %#x", m.Key),
			fmt.Sprintf("MR %#x deregistered while %d posted work requests name it (the NIC may still read or write it)", m.Key, m.busy))
	}
}

func (ch *checker) notice(k FindingKind, node int, op, object, detail string) {
	ch.report(k, node, ch.c.cur, op, object, detail)
}

func (p *pd) nodeID() int { return p.nic.node.id }
func (q *cq) nodeID() int { return q.nic.node.id }
func (a *ah) nodeID() int { return a.pd.nic.node.id }

func (p *pd) openDesc() (string, bool) {
	return fmt.Sprintf("PD on node %d (%d objects in it)", p.nic.node.id, p.Users()), !p.Dead()
}
func (q *cq) openDesc() (string, bool) { return q.String(), !q.Dead() }
func (a *ah) openDesc() (string, bool) {
	return fmt.Sprintf("AH on node %d to LID %d", a.pd.nic.node.id, a.dest.LID), !a.Dead()
}

// Findings returns the checker's findings so far, in the order they first
// occurred (nil when the checker is off).
func (c *Cluster) Findings() []Finding {
	if c.chk == nil {
		return nil
	}
	return append([]Finding(nil), c.chk.findings...)
}

// CheckError returns an error wrapping ErrVerbsUsage that lists the
// hazards found so far, or nil when there are none (or the checker is off).
func (c *Cluster) CheckError() error {
	var hz []string
	for _, f := range c.Findings() {
		if f.Kind.Hazard() {
			hz = append(hz, f.String())
		}
	}
	if len(hz) == 0 {
		return nil
	}
	more := ""
	if len(hz) > 5 {
		more = fmt.Sprintf("; and %d more", len(hz)-5)
		hz = hz[:5]
	}
	return fmt.Errorf("%w: %d hazards: %s%s", ErrVerbsUsage, len(hz), strings.Join(hz, "; "), more)
}

// OpenObject is a verbs object not yet freed: the node it belongs to and
// a description for people.
type OpenObject struct {
	Node int
	Desc string
}

func (o OpenObject) String() string { return o.Desc }

// OpenObjects lists every PD, MR, CQ, QP and AH not yet freed, node by
// node (the checker tracks PDs, CQs and AHs only while it is on). It only
// looks; ReportOpen also records them as findings.
func (c *Cluster) OpenObjects() []OpenObject {
	var out []OpenObject
	for _, n := range c.nodes {
		for _, q := range n.nic.qps {
			if q != nil && !q.destroyed {
				out = append(out, OpenObject{n.id, q.String()})
			}
		}
		for _, m := range n.nic.mrs {
			if m != nil && !m.Dead() {
				out = append(out, OpenObject{n.id, fmt.Sprintf("%v, %d bytes", m, len(m.buf))})
			}
		}
	}
	if c.chk != nil {
		for _, o := range c.chk.objs {
			if d, open := o.openDesc(); open {
				out = append(out, OpenObject{o.nodeID(), d})
			}
		}
	}
	return out
}

// ReportOpen is the end-of-run check: it returns OpenObjects and records
// each as a StillOpen finding (with the checker on).
func (c *Cluster) ReportOpen() []OpenObject {
	out := c.OpenObjects()
	if c.chk != nil {
		for _, o := range out {
			c.chk.report(StillOpen, o.Node, nil, "end of run", o.Desc, o.Desc+" was never freed")
		}
	}
	return out
}

// CheckClosed is the end-of-run check of a run that succeeded: every
// object freed. It reports what is still open (ReportOpen) and returns an
// error wrapping ErrVerbsUsage that names up to five of them; nil when
// everything was freed.
func (c *Cluster) CheckClosed() error {
	open := c.ReportOpen()
	if len(open) == 0 {
		return nil
	}
	descs := make([]string, 0, 5)
	for _, o := range open[:min(len(open), 5)] {
		descs = append(descs, o.Desc)
	}
	return fmt.Errorf("%w: %d objects still open at the end of the run: %s", ErrVerbsUsage, len(open), strings.Join(descs, "; "))
}
