package sim

// White-box tests of the translation caches (tpt.go) and of the
// responder's RDMA Read resources (max_dest_rd_atomic): exact LRU
// behaviour, misses charged once and on the right path, the disabled mode
// leaving every run unchanged, and the read limit enforced by the
// responder. Simulated time only.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// TestTPTLRU: scripted touches and drops on a set of 3 keys, with the
// expected misses and order (most recent first).
func TestTPTLRU(t *testing.T) {
	cases := []struct {
		ops   string // lower case: touch; upper case: drop
		miss  string
		order string
	}{
		{"abc", "mmm", "cba"},
		{"abca", "mmmh", "acb"},
		{"abcd", "mmmm", "dcb"},
		{"abcad", "mmmhm", "dac"},
		{"abcdabcd", "mmmmmmmm", "dcb"},
		{"abcabc", "mmmhhh", "cba"},
		{"abcB", "mmm", "ca"},
		{"abcBd", "mmmm", "dca"},
		{"abcCAdd", "mmmmh", "db"},
		{"abAa", "mmm", "ab"},
	}
	for _, tc := range cases {
		c := newLRU(3)
		var miss []byte
		for _, op := range tc.ops {
			if op >= 'a' {
				if c.touch(uint64(op)) {
					miss = append(miss, 'm')
				} else {
					miss = append(miss, 'h')
				}
			} else {
				k := uint64(op - 'A' + 'a')
				c.drop(func(x uint64) bool { return x == k })
			}
		}
		var order []byte
		for _, k := range c.keys() {
			order = append(order, byte(k))
		}
		if string(miss) != tc.miss || string(order) != tc.order {
			t.Errorf("ops %q: misses %q, order %q; want %q, %q", tc.ops, miss, order, tc.miss, tc.order)
		}
		if c.hits+c.misses != int64(len(tc.miss)) || c.misses != int64(strings.Count(tc.miss, "m")) {
			t.Errorf("ops %q: %d hits, %d misses", tc.ops, c.hits, c.misses)
		}
		if len(c.idx) != len(tc.order) {
			t.Errorf("ops %q: index holds %d keys, list %d", tc.ops, len(c.idx), len(tc.order))
		}
	}
}

// TestTPTLRUMatchesReference compares the set with a reference LRU over
// random touches and drops, including the count-free use (warming).
func TestTPTLRUMatchesReference(t *testing.T) {
	for _, capacity := range []int{1, 2, 7, 64} {
		rng := rand.New(rand.NewPCG(uint64(capacity), 7))
		c := newLRU(capacity)
		var ref []uint64 // most recent first
		refTouch := func(k uint64) bool {
			if i := slices.Index(ref, k); i >= 0 {
				ref = slices.Insert(slices.Delete(ref, i, i+1), 0, k)
				return false
			}
			if len(ref) == capacity {
				ref = ref[:capacity-1]
			}
			ref = slices.Insert(ref, 0, k)
			return true
		}
		misses := int64(0)
		for step := 0; step < 4000; step++ {
			k := uint64(rng.IntN(3*capacity + 1))
			switch rng.IntN(10) {
			case 0:
				c.drop(func(x uint64) bool { return x == k })
				if i := slices.Index(ref, k); i >= 0 {
					ref = slices.Delete(ref, i, i+1)
				}
			case 1:
				if present := c.use(k); present != !refTouch(k) {
					t.Fatalf("cap %d step %d: use(%d) present %v", capacity, step, k, present)
				}
			default:
				want := refTouch(k)
				if want {
					misses++
				}
				if got := c.touch(k); got != want {
					t.Fatalf("cap %d step %d: touch(%d) miss %v, reference %v", capacity, step, k, got, want)
				}
			}
			if !slices.Equal(c.keys(), ref) {
				t.Fatalf("cap %d step %d: order %v, reference %v", capacity, step, c.keys(), ref)
			}
		}
		if c.misses != misses {
			t.Errorf("cap %d: %d misses counted, reference %d", capacity, c.misses, misses)
		}
	}
}

// tptNIC is a bare NIC with translation caches of mpt regions and mtt page
// entries and a PCIe round trip of 500 ns.
func tptNIC(mpt, mtt int) *nic {
	p := &Profile{NIC: NICProfile{MPTCacheEntries: mpt, MTTCacheEntries: mtt}, PCIe: PCIeProfile{RTTNS: 500}}
	return &nic{tpt: newTPT(p)}
}

func tptMR(key uint32, addr uint64, bytes int) *mr {
	return &mr{Region: fabric.Region{Key: key, Base: addr}, buf: make([]byte, bytes)}
}

// TestTPTMissCharges: a lookup costs nothing on a hit, one round trip when
// either the region or the lines miss, two when both do (the MPT says
// where the MTT is), one round trip for all the lines of one lookup, and
// the fetch engine serves one fetch at a time.
func TestTPTMissCharges(t *testing.T) {
	n := tptNIC(2, 4*mttLinePages) // 2 regions, 4 lines
	a := tptMR(0x101, addrBase, 1<<20)
	b := tptMR(0x202, addrBase+1<<30, 1<<20)
	line := uint64(pageSize * mttLinePages)
	us := func(v float64) fabric.Time { return fabric.Time(v * float64(fabric.Microsecond)) }
	steps := []struct {
		what     string
		m        *mr
		off      uint64
		n        int
		at, want fabric.Time
		mpt, mtt int64 // misses so far
	}{
		{"cold: region and line miss", a, 0, 64, 0, us(1), 1, 1},
		{"same bytes again: hit", a, 0, 64, us(10), us(10), 1, 1},
		{"same line, another page: hit", a, 4 * pageSize, 64, us(20), us(20), 1, 1},
		{"next line: MTT miss only", a, line, 64, us(30), us(30.5), 1, 2},
		{"a range over lines 1-3, line 1 cached: one round trip", a, line, int(2*line + 1), us(40), us(40.5), 1, 4},
		{"a fifth line evicts the least recent (line 0)", a, 4 * line, 1, us(50), us(50.5), 1, 5},
		{"line 0 misses again", a, 0, 1, us(60), us(60.5), 1, 6},
		{"another region: two round trips", b, 0, 8, us(70), us(71), 2, 7},
		{"a miss while the engine is busy waits for it", b, line, 8, us(70.5), us(71.5), 2, 8},
		{"empty range: nothing", a, 5 * line, 0, 0, 0, 2, 8},
		{"outside the region: nothing", a, 1 << 20, 8, 0, 0, 2, 8},
	}
	for _, s := range steps {
		got := n.translate(s.m, s.m.Base+s.off, s.n, s.at)
		if got != s.want || n.tpt.mpt.misses != s.mpt || n.tpt.mtt.misses != s.mtt {
			t.Errorf("%s: ready at %v with %d MPT and %d MTT misses; want %v, %d, %d",
				s.what, got, n.tpt.mpt.misses, n.tpt.mtt.misses, s.want, s.mpt, s.mtt)
		}
	}
	// Deregistration drops exactly the region's entries.
	n.forget(b)
	for _, k := range n.tpt.mtt.keys() {
		if k>>32 == uint64(b.Key) {
			t.Errorf("line %#x of a forgotten region still cached", k)
		}
	}
	if slices.Contains(n.tpt.mpt.keys(), uint64(b.Key)) || !slices.Contains(n.tpt.mpt.keys(), uint64(a.Key)) {
		t.Errorf("MPT after forgetting b: %v", n.tpt.mpt.keys())
	}
	// Registration warms: the region's entry and, of a region larger than
	// the cache, its last lines; warming counts nothing.
	h, m := n.tpt.mpt.hits+n.tpt.mtt.hits, n.tpt.mpt.misses+n.tpt.mtt.misses
	c := tptMR(0x303, addrBase+2<<30, 10*int(line))
	n.warm(c)
	if h2, m2 := n.tpt.mpt.hits+n.tpt.mtt.hits, n.tpt.mpt.misses+n.tpt.mtt.misses; h2 != h || m2 != m {
		t.Errorf("warming counted %d hits and %d misses", h2-h, m2-m)
	}
	if want := []uint64{mttKey(c, 9), mttKey(c, 8), mttKey(c, 7), mttKey(c, 6)}; !slices.Equal(n.tpt.mtt.keys(), want) {
		t.Errorf("after warming a 10-line region: lines %x, want %x", n.tpt.mtt.keys(), want)
	}
	if at := n.translate(c, c.Base+9*line, 64, 0); at != 0 {
		t.Errorf("a warmed line cost %v", at)
	}
	// Disabled: nothing is looked up or charged.
	off := tptNIC(0, 0)
	if at := off.translate(a, a.Base, 1<<20, 7); at != 7 || off.tpt.mtt.hits+off.tpt.mtt.misses+off.tpt.mpt.misses != 0 {
		t.Errorf("disabled caches charged %v", at)
	}
	off.warm(a)
	if len(off.tpt.mtt.keys()) != 0 {
		t.Error("disabled caches were warmed")
	}
}

// tptProfile is fdr-cx3 with translation caches of mpt regions and mtt
// page entries.
func tptProfile(t testing.TB, mpt, mtt int) *Profile {
	return mtProfile(t, "fdr-cx3", func(p *Profile) { p.NIC.MPTCacheEntries, p.NIC.MTTCacheEntries = mpt, mtt })
}

// tptDrain fires every event left.
func tptDrain(t *testing.T, h *mtHarness) {
	t.Helper()
	for {
		more, err := h.step()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// TestTPTPaths: each path that needs a translation looks it up once per
// DMA on the NIC that makes it: the requester's gather for a write, the
// responder's receive pipeline per packet, the responder's read of an RDMA
// Read's data, the requester's receive pipeline for the read responses.
// Caches start cold here (warming undone), so every first use misses once.
func TestTPTPaths(t *testing.T) {
	p := tptProfile(t, 16, 1024)
	c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
	h := newHarness(t, c, 1<<20)
	h.connect(0, 1)
	for _, nd := range c.nodes {
		nd.nic.tpt = newTPT(p)
	}
	tp := func(i int) *tpt { return &c.nodes[i].nic.tpt }
	counts := func(i int) [4]int64 {
		x := tp(i)
		return [4]int64{x.mpt.hits, x.mpt.misses, x.mtt.hits, x.mtt.misses}
	}
	post := func(wr fabric.SendWR) {
		t.Helper()
		if _, err := h.nodes[0].qps[1].PostSend([]fabric.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		tptDrain(t, h)
	}
	src, dst := h.nodes[0].mr, h.nodes[1].mr
	const line = pageSize * mttLinePages
	// A 64-byte write: one gather lookup at node 0 (cold: MPT and MTT
	// miss), one receive-pipeline lookup at node 1 (cold too).
	post(fabric.SendWR{ID: 1, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: src.SGE(0, 64), RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	if got := counts(0); got != [4]int64{0, 1, 0, 1} {
		t.Errorf("write: requester [MPT hits, misses, MTT hits, misses] %v, want one cold lookup", got)
	}
	if got := counts(1); got != [4]int64{0, 1, 0, 1} {
		t.Errorf("write: responder %v, want one cold lookup", got)
	}
	if tp(0).stall != 1 || tp(1).stall != 1 {
		t.Errorf("write: %d and %d stalled lookups, want 1 each", tp(0).stall, tp(1).stall)
	}
	// The same write again hits everywhere: the misses were charged once.
	post(fabric.SendWR{ID: 2, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: src.SGE(0, 64), RemoteAddr: dst.Addr(), RKey: dst.RKey()})
	if got0, got1 := counts(0), counts(1); got0 != [4]int64{1, 1, 1, 1} || got1 != [4]int64{1, 1, 1, 1} {
		t.Errorf("repeated write: %v and %v, want one hit more each", got0, got1)
	}
	// A 3-packet write (MTU 4096) into a fresh line of node 1: one gather
	// lookup at node 0 for the whole message (lines 0 and 1 of the source:
	// line 1 misses), three pipeline lookups at node 1 (the first misses
	// line 1, the next two hit it).
	post(fabric.SendWR{ID: 3, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: src.SGE(line-4096, 3*4096), RemoteAddr: dst.Addr() + line, RKey: dst.RKey()})
	if got := counts(0); got != [4]int64{2, 1, 2, 2} {
		t.Errorf("3-packet write: requester %v, want [2 1 2 2]", got)
	}
	if got := counts(1); got != [4]int64{4, 1, 3, 2} {
		t.Errorf("3-packet write: responder %v, want [4 1 3 2]", got)
	}
	// An RDMA Read of 64 bytes from node 1's line 2: the responder looks
	// up its source once (miss), the requester's pipeline looks up the
	// response's destination (node 0's line 3: miss). The read request
	// itself carries no payload and needs no gather at the requester.
	post(fabric.SendWR{ID: 4, Op: fabric.OpRead, Flags: fabric.Signaled, Local: src.SGE(3*line, 64), RemoteAddr: dst.Addr() + 2*line, RKey: dst.RKey()})
	if got := counts(1); got != [4]int64{5, 1, 3, 3} {
		t.Errorf("read: responder %v, want [5 1 3 3]", got)
	}
	if got := counts(0); got != [4]int64{3, 1, 2, 3} {
		t.Errorf("read: requester %v, want [3 1 2 3]", got)
	}
	ids, err := h.poll(0)
	if err != nil || len(ids) != 4 {
		t.Fatalf("completions %v (%v), want 4", ids, err)
	}
	// Stats add every NIC's counters.
	st := c.Stats()
	if st.MPTHits != 8 || st.MPTMisses != 2 || st.MTTHits != 5 || st.MTTMisses != 6 {
		t.Errorf("stats %+v", st)
	}
}

// TestTPTSendAndUDTargets: a send's payload is translated at the receive
// it will fill, in the order the receives were posted, and a UD receive's
// payload after its 40-byte GRH.
func TestTPTSendAndUDTargets(t *testing.T) {
	n := tptNIC(4, 64)
	m := tptMR(0x101, addrBase, 1<<20)
	n.mrs = []*mr{m} // receive entries name it by its number
	q := &qp{nic: n, typ: fabric.RC, mtu: 4096, rq: make([]rqe, 4)}
	for i, off := range []uint64{0, 100 << 10, 200 << 10} {
		q.rq[i] = rqe{id: uint64(i), mr: m.num(), at: off}
		q.rqTail++
	}
	want := []uint64{0, 4096, 100 << 10, 200 << 10}
	pk := []*packet{
		{op: pSend, first: true, n: 4096}, {op: pSend, last: true, n: 10},
		{op: pSend, first: true, last: true, n: 1}, {op: pSend, first: true, last: true, n: 1},
	}
	for i, p := range pk {
		gm, addr := q.rxTarget(p)
		if gm != m || addr != m.Base+want[i] {
			t.Errorf("packet %d: target %#x, want %#x", i, addr-m.Base, want[i])
		}
	}
	if gm, _ := q.rxTarget(&packet{op: pSend, first: true, n: 1}); gm != nil {
		t.Error("a send with no receive left was given a target")
	}
	// Delivery catches up: a receive consumed by delivery is not reused.
	q.rqHead, q.rx.seen = 3, 0
	q.rq[3] = rqe{mr: m.num(), at: 300 << 10}
	q.rqTail++
	if _, addr := q.rxTarget(&packet{op: pSend, first: true, n: 1}); addr != m.Base+300<<10 {
		t.Errorf("after delivery: target %#x", addr-m.Base)
	}
	u := &qp{nic: n, typ: fabric.UD, mtu: 4096, rq: []rqe{{mr: m.num(), at: 8192}}, rqTail: 1}
	if _, addr := u.rxTarget(&packet{op: pSend, first: true, last: true, n: 100}); addr != m.Base+8192+fabric.GRHBytes {
		t.Errorf("UD: target %#x, want past the GRH", addr-m.Base)
	}
	// A write with immediate takes a receive but writes nothing there.
	w := &qp{nic: n, typ: fabric.RC, mtu: 4096, rq: make([]rqe, 2), rqTail: 2}
	w.rq[0], w.rq[1] = rqe{mr: m.num()}, rqe{mr: m.num(), at: 4096}
	if gm, _ := w.rxTarget(&packet{op: pWrite, first: true, last: true, hasImm: true, rkey: 0x999, n: 8}); gm != nil {
		t.Error("a write with an unknown rkey was given a target")
	}
	if _, addr := w.rxTarget(&packet{op: pSend, first: true, last: true, n: 8}); addr != m.Base+4096 {
		t.Errorf("send after a write with immediate: target %#x, want the second receive", addr-m.Base)
	}
}

// TestTPTDisabledChangesNothing: with both cache sizes 0 the model looks
// nothing up, and a run gives exactly the trace, time and result of the
// same run with caches that hold every region (registration warms them,
// so every lookup hits and costs nothing). That is, the default profiles'
// existing benchmarks, whose regions fit, are unchanged by the model.
func TestTPTDisabledChangesNothing(t *testing.T) {
	cfgs := []perftest.Config{
		{Test: "write_bw", Size: 65536, Iters: 50, QPs: 2},
		{Test: "read_bw", Size: 32, Iters: 50, QPs: 8, Interleave: true},
		{Test: "send_bw", Size: 4096, Iters: 100},
		{Test: "send_bw", Size: 1024, Iters: 100, Conn: fabric.UD},
		{Test: "alltoall_bw", Size: 8192, Iters: 10},
	}
	for _, cfg := range cfgs {
		name := fmt.Sprintf("%s/%d/%v", cfg.Test, cfg.Size, cfg.Conn)
		type run struct {
			hash  uint64
			now   fabric.Time
			rate  float64
			stats Stats
		}
		do := func(mpt, mtt int) run {
			c := mtCluster(t, Config{Nodes: 4, Seed: 3, SizeOnly: true, Profile: tptProfile(t, mpt, mtt)})
			r, err := perftest.Run(c, cfg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return run{c.TraceHash(), c.Now(), r.MsgRateMpps, c.Stats()}
		}
		off, on := do(0, 0), do(64, 4096)
		if off.stats.MPTHits+off.stats.MPTMisses+off.stats.MTTHits+off.stats.MTTMisses+off.stats.TPTStalls != 0 {
			t.Errorf("%s: disabled caches were used: %+v", name, off.stats)
		}
		if on.stats.MTTHits == 0 || on.stats.MTTMisses != 0 || on.stats.TPTStalls != 0 {
			t.Errorf("%s: warmed caches: %d hits, %d misses, %d stalls; want hits only", name, on.stats.MTTHits, on.stats.MTTMisses, on.stats.TPTStalls)
		}
		if off.hash != on.hash || off.now != on.now || off.rate != on.rate {
			t.Errorf("%s: disabled %v / %v / %.4f, all-hit %v / %v / %.4f", name, off.hash, off.now, off.rate, on.hash, on.now, on.rate)
		}
	}
}

// TestTPTSpreadThrashes: random 32-byte reads over a region four times the
// MTT's reach miss most of the time at the responder and run well below
// reads confined to the reach; the same seed gives the same run.
func TestTPTSpreadThrashes(t *testing.T) {
	p := tptProfile(t, 16, 256) // 256 pages: 1 MiB of reach
	run := func(spread int) (float64, Stats, uint64) {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
		r, err := perftest.Run(c, perftest.Config{Test: "read_bw", Size: 32, Iters: 400, QPs: 4, Spread: spread})
		if err != nil {
			t.Fatal(err)
		}
		return r.MsgRateMpps, c.Stats(), c.TraceHash()
	}
	inRate, inSt, _ := run(512 << 10)
	outRate, outSt, h1 := run(4 << 20)
	_, _, h2 := run(4 << 20)
	t.Logf("within reach: %.2f M reads/s, %d MTT misses; 4x beyond: %.2f M/s, %d misses of %d", inRate, inSt.MTTMisses, outRate, outSt.MTTMisses, outSt.MTTHits+outSt.MTTMisses)
	if inSt.MTTMisses != 0 {
		t.Errorf("reads within the cache's reach missed %d times", inSt.MTTMisses)
	}
	// 1600 reads: one lookup each at the responder (random source, a
	// quarter of which the cache can hold) and one at the requester (its
	// slot, which stays cached).
	if lookups := outSt.MTTHits + outSt.MTTMisses; lookups != 3200 || outSt.MTTMisses < 1600*6/10 {
		t.Errorf("4x beyond the reach: %d misses of %d lookups, want about 3 in 4 of the 1600 at the responder", outSt.MTTMisses, lookups)
	}
	if outRate > inRate/2 {
		t.Errorf("thrashing reads ran at %.2f M/s against %.2f within reach", outRate, inRate)
	}
	if h1 != h2 {
		t.Error("same seed, different traces")
	}
}

// TestTPTProfileValidation: the new fields are required, non-negative,
// whole lines, and on or off together; each error names its field.
func TestTPTProfileValidation(t *testing.T) {
	for _, tc := range []struct {
		mpt, mtt int
		field    string // "" = valid
	}{
		{0, 0, ""}, {1, 8, ""}, {1024, 4096, ""},
		{-1, 8, "nic.mpt_cache_entries"}, {4, -8, "nic.mtt_cache_entries"},
		{4, 12, "nic.mtt_cache_entries"}, {0, 8, "nic.mpt_cache_entries"}, {4, 0, "nic.mtt_cache_entries"},
	} {
		p := tptProfile(t, 0, 0)
		p.NIC.MPTCacheEntries, p.NIC.MTTCacheEntries = tc.mpt, tc.mtt
		err := p.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("mpt %d, mtt %d: %v", tc.mpt, tc.mtt, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("mpt %d, mtt %d: error %v, want one naming %s", tc.mpt, tc.mtt, err, tc.field)
		}
	}
	for _, name := range BuiltinProfiles() {
		data, err := builtinFS.ReadFile("profiles/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"mpt_cache_entries", "mtt_cache_entries"} {
			var kept []string
			for _, l := range strings.Split(string(data), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), field+":") {
					kept = append(kept, l)
				}
			}
			if _, err := ParseProfile([]byte(strings.Join(kept, "\n"))); err == nil || !strings.Contains(err.Error(), "nic."+field+": missing") {
				t.Errorf("%s without %s: %v", name, field, err)
			}
		}
	}
}

// tptConnect connects an RC pair between nodes 0 and 1 of h with the
// requester (node 0) allowed rd reads in flight and the responder (node 1)
// dest of them.
func tptConnect(t *testing.T, h *mtHarness, rd, dest int) (fabric.QP, fabric.QP) {
	t.Helper()
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	var qs [2]fabric.QP
	for i := range qs {
		n := h.nodes[i]
		q, err := n.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: n.cq, RecvCQ: n.cq, Caps: fabric.QPCaps{MaxSendWR: 64, MaxRecvWR: 16}})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}); err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	for i, q := range qs {
		if err := q.Modify(fabric.StateRTR, fabric.QPAttr{Dest: qs[1-i].Info().Address(), MaxDestRdAtomic: dest, MinRNRTimer: 1}); err != nil {
			t.Fatal(err)
		}
		if err := q.Modify(fabric.StateRTS, fabric.QPAttr{Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: rd}); err != nil {
			t.Fatal(err)
		}
	}
	return qs[0], qs[1]
}

// TestResponderReadResources: the responder holds one resource per new
// RDMA Read until its last response has left, at most max_dest_rd_atomic;
// a requester that keeps within it never sees the limit, one that exceeds
// it (or reads from a responder that allows none) gets a NAK-Invalid
// Request; a read repeated after a lost response holds no new resource;
// writes take none.
func TestResponderReadResources(t *testing.T) {
	reads := func(h *mtHarness, q fabric.QP, k int, size int) {
		t.Helper()
		var wrs []fabric.SendWR
		src, dst := h.nodes[0].mr, h.nodes[1].mr
		for i := 0; i < k; i++ {
			wrs = append(wrs, fabric.SendWR{ID: uint64(i), Op: fabric.OpRead, Flags: fabric.Signaled,
				Local: src.SGE(i*size, size), RemoteAddr: dst.Addr() + uint64(i*size), RKey: dst.RKey()})
		}
		if _, err := q.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
	}
	statuses := func(h *mtHarness) []fabric.Status {
		var out []fabric.Status
		wcs := make([]fabric.WC, 64)
		n, _ := h.nodes[0].cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			out = append(out, wc.Status)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		rd, dest int
		ok       bool
	}{
		{"within", 4, 4, true},
		{"requester below", 2, 4, true},
		{"requester above", 4, 2, false},
		{"no reads allowed", 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil)})
			h := newHarness(t, c, 1<<20)
			req, resp := tptConnect(t, h, tc.rd, tc.dest)
			r := resp.(*qp)
			reads(h, req, 8, 8192)
			peak := 0
			for {
				more, err := h.step()
				if err != nil {
					t.Fatal(err)
				}
				peak = max(peak, r.readsInUse())
				if r.readsInUse() < 0 || r.readsInUse() > tc.dest {
					t.Fatalf("responder holds %d read resources, limit %d", r.readsInUse(), tc.dest)
				}
				if !more {
					break
				}
			}
			st := statuses(h)
			naks := c.Stats().ReadResourceNaks
			if tc.ok {
				if len(st) != 8 || slices.ContainsFunc(st, func(s fabric.Status) bool { return s != fabric.StatusSuccess }) || naks != 0 {
					t.Errorf("completions %v, %d NAKs; want 8 successes", st, naks)
				}
				if peak != min(tc.rd, tc.dest) || r.readsInUse() != 0 {
					t.Errorf("peak %d resources in use (want %d), %d left", peak, min(tc.rd, tc.dest), r.readsInUse())
				}
				return
			}
			// The reads within the limit complete, the first beyond it
			// fails with a remote invalid request, the rest are flushed.
			want := []fabric.Status{}
			for i := 0; i < tc.dest; i++ {
				want = append(want, fabric.StatusSuccess)
			}
			want = append(want, fabric.StatusRemoteInvalid)
			for len(want) < 8 {
				want = append(want, fabric.StatusFlushed)
			}
			if naks != 1 || !slices.Equal(st, want) {
				t.Errorf("completions %v, %d NAKs; want %v", st, naks, want)
			}
			if r.State() != fabric.StateError || r.readsInUse() != 0 {
				t.Errorf("responder in %v with %d resources; want ERROR and none", r.State(), r.readsInUse())
			}
		})
	}
	t.Run("duplicate holds none", func(t *testing.T) {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil)})
		h := newHarness(t, c, 1<<20)
		req, resp := tptConnect(t, h, 1, 1)
		lost := false
		c.SetFilter(func(pi PacketInfo) Verdict {
			if !lost && pi.Src == 1 && pi.Op == "READ_RESP" {
				lost = true
				return Drop
			}
			return Pass
		})
		reads(h, req, 3, 64)
		tptDrain(t, h)
		st := statuses(h)
		if !lost || len(st) != 3 || c.Stats().ReadResourceNaks != 0 || c.Stats().RCRetransmits == 0 || resp.(*qp).readsInUse() != 0 {
			t.Errorf("lost %v, completions %v, %d NAKs, %d retransmissions, %d resources left", lost, st, c.Stats().ReadResourceNaks, c.Stats().RCRetransmits, resp.(*qp).readsInUse())
		}
	})
	t.Run("writes take none", func(t *testing.T) {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil)})
		h := newHarness(t, c, 1<<20)
		req, resp := tptConnect(t, h, 1, 0)
		dst := h.nodes[1].mr
		var wrs []fabric.SendWR
		for i := 0; i < 8; i++ {
			wrs = append(wrs, fabric.SendWR{ID: uint64(i), Op: fabric.OpWrite, Flags: fabric.Signaled, Local: h.nodes[0].mr.SGE(0, 4096), RemoteAddr: dst.Addr(), RKey: dst.RKey()})
		}
		if _, err := req.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		tptDrain(t, h)
		if st := statuses(h); len(st) != 8 || resp.(*qp).readsInUse() != 0 || c.Stats().ReadResourceNaks != 0 {
			t.Errorf("writes with max_dest_rd_atomic 0: completions %v", st)
		}
	})
	t.Run("above the device limit", func(t *testing.T) {
		p := mtProfile(t, "fdr-cx3", nil)
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, Profile: p})
		h := newHarness(t, c, 4096)
		n := h.nodes[0]
		q, err := n.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: n.cq, RecvCQ: n.cq, Caps: fabric.QPCaps{MaxSendWR: 4, MaxRecvWR: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Modify(fabric.StateInit, fabric.QPAttr{}); err != nil {
			t.Fatal(err)
		}
		err = q.Modify(fabric.StateRTR, fabric.QPAttr{Dest: q.Info().Address(), MaxDestRdAtomic: p.NIC.MaxRdAtomic + 1})
		if !errors.Is(err, fabric.ErrBadTransition) || !strings.Contains(err.Error(), "max_dest_rd_atomic") {
			t.Errorf("max_dest_rd_atomic above the device's limit: %v", err)
		}
	})
}
