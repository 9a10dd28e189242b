package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Action is what a fault Rule does.
type Action uint8

// Actions of fault rules.
const (
	// Lose drops matching packets.
	Lose Action = iota + 1
	// Corrupt damages matching packets; the receiving NIC's ICRC check
	// drops them. Counted apart from losses.
	Corrupt
	// Dup delivers matching packets twice.
	Dup
	// Delay holds matching packets back by Rule.Delay, so that later
	// packets overtake them (reordering).
	Delay
	// LinkDown takes Node's link down from From to To: every packet to or
	// from the node is lost meanwhile.
	LinkDown
	// Starve makes Node's receivers too slow to post from From to To: its
	// receive queues look empty, so RC sends get RNR NAKs and UD sends are
	// dropped (the sends that hit no posted receive are counted).
	Starve
	// Crash stops Node at From: its threads stop at their next call into
	// the simulator and its link drops everything from then on.
	Crash
	// CableDown takes the cable at port Port of switch Switch (between two
	// switches of a network; Config.Fabric) down from From to To: packets
	// the switches at its ends send into it are lost. The subnet manager
	// installs forwarding tables around it Plan.Reroute after it fails,
	// and back Plan.Reroute after it returns.
	CableDown
	// SwitchDown takes switch Switch down from From to To: every cable
	// of it, to switches and to hosts, drops what is sent into it, and
	// the subnet manager routes around it Plan.Reroute after it fails
	// (the hosts cabled to it are then unreachable) and back Plan.Reroute
	// after it returns.
	SwitchDown
)

var actionNames = [...]string{"?", "lose", "corrupt", "duplicate", "reorder", "link-down", "starve", "crash", "cable-down", "switch-down"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// ByteMatch matches a byte of a message's first packet's payload: the
// rule applies when payload[Off]&Mask == Value.
type ByteMatch struct {
	Off         int
	Mask, Value byte
}

// Rule is one fault of a Plan. Packet rules (Lose, Corrupt, Dup, Delay)
// act on packets as they leave the switch towards their destination, when
// every selector matches; node rules (LinkDown, Starve, Crash) act on Node.
type Rule struct {
	Action Action
	// Selectors of packet rules: source and destination node (-1: any),
	// transport (0: any), packet opcode ("SEND", "WRITE", "READ_REQ",
	// "READ_RESP", "ACK", "NAK"; "": any), and bytes of the payload of a
	// message's first packet (a packet that is not the first of its
	// message, or has fewer bytes, does not match).
	Src, Dst  int
	Transport fabric.QPType
	Op        string
	Head      []ByteMatch
	// MaxBytes, if positive, matches only packets of at most this many
	// payload bytes (credit writes, say), and only the first of a message.
	MaxBytes int
	// Rate is the probability that a matching packet is hit. With Nth set
	// the rule is deterministic instead: it hits the Nth matching packet
	// (1-based) and the Count-1 after it (Count 0 means 1).
	Rate  float64
	Nth   int
	Count int
	// Node of a node rule.
	Node int
	// The rule is active from From until To (0: for ever).
	From, To fabric.Time
	// Delay of a Delay rule; 0 means 2 microseconds.
	Delay fabric.Duration
	// Switch and Port of a CableDown rule: the switch by name, GUID
	// ("0x...") or index ("#3"), and its port (from 1); Switch of a
	// SwitchDown rule.
	Switch string
	Port   int
	// Name describes the rule in reports; empty gives a generated one.
	Name string
}

// Plan is a scripted, seeded fault schedule for a cluster (SetPlan). Rules
// act in order; the first rule that loses or corrupts a packet ends its
// evaluation.
type Plan struct {
	Rules []Rule
	// RetryCnt, if not negative, caps the transport retry count (retry_cnt)
	// of every RC queue pair entering RTS; AckTimeout, if not zero, sets
	// their local ACK timeout code. Together with a link that goes down
	// they exhaust retries and move queue pairs to the error state.
	RetryCnt   int
	AckTimeout uint8
	// Reroute is how long the subnet manager takes to install forwarding
	// tables around a cable that went down (or back over one that came
	// up): 0 means DefaultReroute, negative never.
	Reroute fabric.Duration
}

// NewPlan returns an empty plan (no retry cap).
func NewPlan() *Plan { return &Plan{RetryCnt: -1} }

func (r *Rule) describe() string {
	if r.Name != "" {
		return r.Name
	}
	var b strings.Builder
	b.WriteString(r.Action.String())
	switch r.Action {
	case LinkDown, Starve, Crash:
		fmt.Fprintf(&b, " node %d", r.Node)
	case CableDown:
		fmt.Fprintf(&b, " %s port %d", r.Switch, r.Port)
	case SwitchDown:
		fmt.Fprintf(&b, " %s", r.Switch)
	default:
		if r.Src >= 0 || r.Dst >= 0 {
			fmt.Fprintf(&b, " %s->%s", anyNode(r.Src), anyNode(r.Dst))
		}
		if r.Transport != 0 {
			fmt.Fprintf(&b, " %v", r.Transport)
		}
		if r.Op != "" {
			fmt.Fprintf(&b, " %s", r.Op)
		}
		if r.Nth > 0 {
			fmt.Fprintf(&b, " match #%d", r.Nth)
			if r.Count > 1 {
				fmt.Fprintf(&b, "..#%d", r.Nth+r.Count-1)
			}
		} else {
			fmt.Fprintf(&b, " rate %g", r.Rate)
		}
	}
	if r.From > 0 || r.To > 0 {
		fmt.Fprintf(&b, " from %v", fabric.Duration(r.From))
		if r.To > 0 {
			fmt.Fprintf(&b, " to %v", fabric.Duration(r.To))
		}
	}
	return b.String()
}

func anyNode(n int) string {
	if n < 0 {
		return "*"
	}
	return fmt.Sprint(n)
}

func (p *Plan) validate(nodes int) error {
	if p.RetryCnt > 7 {
		return fmt.Errorf("sim: plan RetryCnt %d outside -1..7", p.RetryCnt)
	}
	if p.AckTimeout > 31 {
		return fmt.Errorf("sim: plan AckTimeout code %d outside 0..31", p.AckTimeout)
	}
	for i, r := range p.Rules {
		bad := func(f string, a ...any) error {
			return fmt.Errorf("sim: fault rule %d (%s): %s", i+1, r.Action, fmt.Sprintf(f, a...))
		}
		switch r.Action {
		case Lose, Corrupt, Dup, Delay:
			if r.Src < -1 || r.Src >= nodes || r.Dst < -1 || r.Dst >= nodes {
				return bad("source %d or destination %d outside the %d-node cluster", r.Src, r.Dst, nodes)
			}
			if !(r.Rate >= 0 && r.Rate <= 1) {
				return bad("rate %v is not a probability", r.Rate)
			}
			if r.Nth < 0 || r.Count < 0 {
				return bad("nth %d and count %d must not be negative", r.Nth, r.Count)
			}
			if r.Nth == 0 && r.Rate == 0 {
				return bad("neither a rate nor an nth packet")
			}
			for _, m := range r.Head {
				if m.Off < 0 {
					return bad("payload offset %d is negative", m.Off)
				}
			}
			if r.Delay < 0 {
				return bad("delay %v is negative", r.Delay)
			}
		case LinkDown, Starve, Crash:
			if r.Node < 0 || r.Node >= nodes {
				return bad("node %d outside the %d-node cluster", r.Node, nodes)
			}
		case CableDown:
			if r.Switch == "" || r.Port < 1 {
				return bad("a cable is a switch and a port from 1, got %q port %d", r.Switch, r.Port)
			}
		case SwitchDown:
			if r.Switch == "" {
				return bad("no switch named (a name, a GUID 0x... or an index #N)")
			}
		default:
			return bad("unknown action")
		}
		if r.From < 0 || r.To < 0 || r.To > 0 && r.To <= r.From {
			return bad("window from %v to %v is empty or negative", r.From, r.To)
		}
	}
	return nil
}

// injector applies a Plan.
type injector struct {
	plan    Plan
	rules   []ruleState
	pkt     bool // some packet rule
	down    [][]window
	starve  [][]window
	crashAt []fabric.Time
	// firstCrash is the earliest of crashAt (Forever: no crash).
	firstCrash fabric.Time
	// crashSeen marks the nodes whose crash took effect: a thread of the
	// node stopped or the node's link dropped a packet. A thread's clock
	// runs ahead of the cluster's, so the cluster's clock at the end of a
	// run can be short of a crash that has happened.
	crashSeen []bool
	// Counts of what was injected.
	counts FaultCounts
}

type ruleState struct {
	Rule
	rng     *rand.Rand
	matched int
	hits    int64
}

type window struct{ from, to fabric.Time }

func (w window) has(t fabric.Time) bool { return t >= w.from && (w.to == 0 || t < w.to) }

// FaultCounts are what a Plan injected so far.
type FaultCounts struct {
	Lost       int64 // packets lost by Lose rules
	Corrupted  int64 // packets dropped by the ICRC check (Corrupt rules)
	Duplicated int64
	Delayed    int64
	LinkDrops  int64 // packets lost to a link that was down (or a crashed node's)
	Starved    int64 // messages that found no receive because a receiver was starved
	Crashed    []int // nodes that crashed
}

// Total is the number of faults injected.
func (f FaultCounts) Total() int64 {
	return f.Lost + f.Corrupted + f.Duplicated + f.Delayed + f.LinkDrops + f.Starved + int64(len(f.Crashed))
}

// SetPlan installs a fault plan; call it before Run. The plan is copied.
// A nil plan removes it. Rules with a rate draw from their own seeded
// streams, so the same seed and plan give the same trace.
func (c *Cluster) SetPlan(p *Plan) error {
	if p == nil {
		c.inj = nil
		c.setCables(&Plan{})
		c.net.cables = nil
		for _, n := range c.nodes {
			n.crashAt = fabric.Forever
		}
		return nil
	}
	if err := p.validate(len(c.nodes)); err != nil {
		return err
	}
	cf, err := c.setCables(p)
	if err != nil {
		return err
	}
	c.net.cables = cf
	in := &injector{plan: *p, down: make([][]window, len(c.nodes)), starve: make([][]window, len(c.nodes)),
		crashAt: make([]fabric.Time, len(c.nodes)), crashSeen: make([]bool, len(c.nodes))}
	in.plan.Rules = append([]Rule(nil), p.Rules...)
	for i := range in.crashAt {
		in.crashAt[i] = fabric.Forever
	}
	for i, r := range in.plan.Rules {
		w := window{r.From, r.To}
		switch r.Action {
		case LinkDown:
			in.down[r.Node] = append(in.down[r.Node], w)
		case Starve:
			in.starve[r.Node] = append(in.starve[r.Node], w)
		case Crash:
			in.crashAt[r.Node] = min(in.crashAt[r.Node], r.From)
		case CableDown, SwitchDown: // setCables
		default:
			in.pkt = true
			in.rules = append(in.rules, ruleState{Rule: r, rng: c.rng(fmt.Sprintf("fault/%d", i))})
		}
	}
	in.firstCrash = fabric.Forever
	for i, n := range c.nodes {
		n.crashAt = in.crashAt[i]
		in.firstCrash = min(in.firstCrash, n.crashAt)
	}
	c.inj = in
	return nil
}

// linkDown reports whether node's link drops packets at t (down, or the
// node crashed).
func (in *injector) linkDown(node int, t fabric.Time) bool {
	if t >= in.crashAt[node] {
		in.crashSeen[node] = true
		return true
	}
	for _, w := range in.down[node] {
		if w.has(t) {
			return true
		}
	}
	return false
}

// starved reports whether node's receivers look empty at t.
func (in *injector) starved(node int, t fabric.Time) bool {
	for _, w := range in.starve[node] {
		if w.has(t) {
			return true
		}
	}
	return false
}

// verdict decides what happens to p as it leaves the switch at now: lost
// (the packet is gone), duplicated, and an extra delay.
func (in *injector) verdict(c *Cluster, p *packet, now fabric.Time) (lost, dup bool, delay fabric.Duration) {
	if in.linkDown(p.dst, now) || in.linkDown(p.src, now) {
		in.counts.LinkDrops++
		return true, false, 0
	}
	if !in.pkt {
		return false, false, 0
	}
	for i := range in.rules {
		r := &in.rules[i]
		if !r.matches(p, now) {
			continue
		}
		r.matched++
		hit := false
		if r.Nth > 0 {
			hit = r.matched >= r.Nth && r.matched < r.Nth+max(r.Count, 1)
		} else {
			hit = r.rng.Float64() < r.Rate
		}
		if !hit {
			continue
		}
		r.hits++
		switch r.Action {
		case Lose:
			in.counts.Lost++
			return true, dup, 0
		case Corrupt:
			in.counts.Corrupted++
			return true, dup, 0
		case Dup:
			in.counts.Duplicated++
			dup = true
		case Delay:
			in.counts.Delayed++
			d := r.Delay
			if d == 0 {
				d = 2 * fabric.Microsecond
			}
			delay += d
		}
	}
	return false, dup, delay
}

func (r *ruleState) matches(p *packet, now fabric.Time) bool {
	if r.Src >= 0 && p.src != r.Src || r.Dst >= 0 && p.dst != r.Dst {
		return false
	}
	if t := p.qpType; r.Transport != 0 && t != r.Transport && !(r.Transport == fabric.RC && (t == fabric.XRCSend || t == fabric.XRCRecv || t.DC())) {
		return false // XRC and DC are RC's transport: an RC rule hits them too
	}
	if r.Op != "" && p.op.String() != r.Op {
		return false
	}
	if !(window{r.From, r.To}).has(now) {
		return false
	}
	if r.MaxBytes > 0 && (p.n > r.MaxBytes || !p.first || p.n == 0) {
		return false
	}
	if len(r.Head) > 0 {
		// The first bytes of a message travel in its first packet's first
		// segment (in size-only mode too: the head window moves).
		if !p.first || p.nseg == 0 || p.segs[0].off != 0 {
			return false
		}
		head := p.data[:p.segs[0].n]
		for _, m := range r.Head {
			if m.Off >= len(head) || head[m.Off]&m.Mask != m.Value {
				return false
			}
		}
	}
	return true
}

// FaultCounts reports what the cluster's plan injected so far (zero
// without a plan).
func (c *Cluster) FaultCounts() FaultCounts {
	if c.inj == nil {
		return FaultCounts{}
	}
	f := c.inj.counts
	f.Crashed = nil
	for i, at := range c.inj.crashAt {
		if at != fabric.Forever && (c.now >= at || c.inj.crashSeen[i]) {
			f.Crashed = append(f.Crashed, i)
		}
	}
	return f
}

// FaultSummary describes in one line what the plan injected so far, rule
// by rule ("" when nothing was).
func (c *Cluster) FaultSummary() string {
	in := c.inj
	if in == nil {
		return ""
	}
	var parts []string
	for _, r := range in.rules {
		if r.hits > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d packets", r.describe(), r.hits))
		}
	}
	for _, r := range in.plan.Rules {
		switch r.Action {
		case LinkDown:
			if c.now >= r.From {
				parts = append(parts, r.describe())
			}
		case Starve:
			if c.now >= r.From {
				parts = append(parts, r.describe())
			}
		case Crash:
			if c.now >= r.From || in.crashSeen[r.Node] && in.crashAt[r.Node] == r.From {
				parts = append(parts, fmt.Sprintf("node %d crashed at %v", r.Node, fabric.Duration(r.From)))
			}
		}
	}
	if cf := c.net.cables; cf != nil {
		for _, r := range in.plan.Rules {
			if (r.Action == CableDown || r.Action == SwitchDown) && c.now >= r.From {
				parts = append(parts, r.describe())
			}
		}
		if cf.drops > 0 {
			parts = append(parts, fmt.Sprintf("%d packets lost to cables down", cf.drops))
		}
		for _, ep := range cf.epochs {
			if c.now >= ep.at {
				parts = append(parts, fmt.Sprintf("rerouted at %v (%s)", fabric.Duration(ep.at), ep.why))
			}
		}
		for _, k := range cf.kept {
			if c.now >= k.at {
				parts = append(parts, fmt.Sprintf("not rerouted at %v, old tables kept (%s)", fabric.Duration(k.at), k.why))
			}
		}
	}
	f := in.counts
	if f.LinkDrops > 0 {
		parts = append(parts, fmt.Sprintf("%d packets lost to links down or crashed nodes", f.LinkDrops))
	}
	if f.Starved > 0 {
		parts = append(parts, fmt.Sprintf("%d messages found no receive (starved receivers)", f.Starved))
	}
	if in.plan.RetryCnt >= 0 || in.plan.AckTimeout != 0 {
		parts = append(parts, fmt.Sprintf("RC retry_cnt capped at %d, ACK timeout code %d", in.plan.RetryCnt, in.plan.AckTimeout))
	}
	return strings.Join(parts, "; ")
}

// noRecv reports whether q has no receive to offer an arriving message:
// none posted, or its node's receivers are starved by the plan.
// A queue pair attached to a shared receive queue takes the queue's next
// receive into its own ring (srq.give) once no starvation stands in the way.
func (q *qp) noRecv() bool {
	if q.rqHead == q.rqTail && q.srq == nil {
		return true
	}
	if in := q.c.inj; in != nil && in.starved(q.nic.node.id, q.c.now) {
		in.counts.Starved++
		return true
	}
	return q.rqHead == q.rqTail && !q.srq.give(q)
}

// rtsAttr applies the plan's retry cap to an RC queue pair entering RTS.
func (c *Cluster) rtsAttr(q *qp) {
	in := c.inj
	if in == nil || !q.typ.Reliable() {
		return
	}
	if in.plan.RetryCnt >= 0 && int(q.attr.RetryCnt) > in.plan.RetryCnt {
		q.attr.RetryCnt = uint8(in.plan.RetryCnt)
		q.retries = int8(in.plan.RetryCnt)
	}
	if in.plan.AckTimeout != 0 {
		q.attr.Timeout = in.plan.AckTimeout
	}
}

// PeerFailed implements fabric.PeerFailures: the first node other than n
// that the fault plan crashed at or before at, or -1. It charges no time
// and fires no event.
func (n *node) PeerFailed(at fabric.Time) int {
	in := n.c.inj
	if in == nil || at < in.firstCrash {
		return -1
	}
	for i, crash := range in.crashAt {
		if i != n.id && at >= crash {
			return i
		}
	}
	return -1
}

var _ fabric.PeerFailures = (*node)(nil)

// freeze stops a thread whose node has crashed: it never runs again (the
// run ends by an error of another thread, a deadlock naming it, or the time
// limit); aborting the run unwinds it.
func (th *thread) freeze() {
	c := th.c
	if c.inj != nil {
		c.inj.crashSeen[th.node.id] = true
	}
	th.gen++
	c.timers.clear(th)
	th.waitSince, th.waitOn = c.now, crashed(th.node.id)
	for {
		th.suspend()
	}
}

// crashEnded is the error of a run whose every thread left is one a crash
// froze (every thread of the nodes that did not crash has returned): the
// crash, not a deadlock, ended it. Nil when some thread left is not.
func (c *Cluster) crashEnded() error {
	var names []string
	for _, th := range c.threads {
		if th.done {
			continue
		}
		if _, ok := th.waitOn.(crashed); !ok {
			return nil
		}
		names = append(names, th.name)
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("sim: the run cannot end: the threads left (%s) are on nodes that crashed (fault plan), and every other thread has returned", strings.Join(names, ", "))
}

type crashed int

func (n crashed) String() string {
	return fmt.Sprintf("nothing: node %d crashed (fault plan)", int(n))
}
