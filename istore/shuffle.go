package istore

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// The shuffle-based plan of the same joins (Salama17's baseline: a
// shuffle per join, as its RDMA radix join run once per join): every table
// is hash-partitioned over the n nodes, the dimensions on their keys
// (Hash, so they never move) and lineorder by order (round-robin over
// orders, so it is partitioned on no join key). Each node builds its
// dimension partitions, then each join is one exchange: the fact stream is
// repartitioned on the next join key, and the receivers probe the local
// dimension partition as tuples arrive and pass the joined rows on to the
// next exchange; after the last join they aggregate, and the partial
// aggregates are gathered as in the remote-read plan. The exchanges run
// over any shuffle design through a tpch.Exchanger (SHUFFLE and RECEIVE
// operators), with the same operator costs as the remote-read plan.
//
// Tuples are 16 bytes: a = key*n + Hash(key, n) (so that the operators'
// modulo on a picks the key's partition; below 2^32 for every key at
// SF <= MaxSF and n <= 64), b = the rest of the row packed: revenue (24
// bits), then c_nation (5) and p_mfgr (3) once joined, then the keys still
// to join (partkey 21 bits, suppkey 17).

// ShuffleSteps is the exchanges of q's shuffle plan: one repartition per
// join.
func ShuffleSteps(q Query) []tpch.Step {
	var out []tpch.Step
	for d := range q.Joins() {
		out = append(out, tpch.Step{Name: "join-" + Table(d).String(), Pattern: algos.Repartition})
	}
	return out
}

// midRow is a fact row between two joins.
type midRow struct {
	key          [3]int32 // custkey, partkey, suppkey
	rev          int64
	nation, mfgr uint8
}

func encodeKey(key int32, n int) uint64 { return uint64(key)*uint64(n) + uint64(Hash(key, n)) }

// pack encodes r for the exchange on dimension d.
func (r *midRow) pack(d, n int) (a, b uint64) {
	b = uint64(r.rev) & (1<<24 - 1)
	switch d {
	case 0:
		b |= uint64(r.key[1])<<24 | uint64(r.key[2])<<45
	case 1:
		b |= uint64(r.nation)<<24 | uint64(r.key[2])<<29
	case 2:
		b |= uint64(r.nation)<<24 | uint64(r.mfgr)<<29
	}
	return encodeKey(r.key[d], n), b
}

// unpack decodes a tuple of the exchange on dimension d.
func unpack(d, n int, a, b uint64) midRow {
	r := midRow{rev: int64(b & (1<<24 - 1))}
	r.key[d] = int32(a / uint64(n))
	switch d {
	case 0:
		r.key[1], r.key[2] = int32(b>>24&(1<<21-1)), int32(b>>45&(1<<17-1))
	case 1:
		r.nation, r.key[2] = uint8(b>>24&31), int32(b>>29&(1<<17-1))
	case 2:
		r.nation, r.mfgr = uint8(b>>24&31), uint8(b>>29&7)
	}
	return r
}

// RunShufflePlan runs q's shuffle plan on the calling node of an n-node
// cluster, exchanging through x; it returns the answer (gathered from
// every node; nil in size-only mode, where the exchanges deliver no
// payload and each node takes the rows it received from the database, as
// the tpch plans do).
func RunShufflePlan(th fabric.Thread, db *DB, q Query, n int, x tpch.Exchanger) (*Answer, error) {
	me := th.Node().ID()
	payload := th.Node().Payload()
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("%w: %d nodes: the shuffle plan packs node numbers into keys below 2^32; want 1..64", ErrConfig, n)
	}
	// Local dimension partitions: attribute + 1 by key.
	sizes := [3]int{len(db.Customers), len(db.Parts), len(db.Suppliers)}
	var dims [3][]uint8
	var build int64
	attrOf := func(d int, i int) (int32, uint8) {
		switch d {
		case 0:
			return db.Customers[i].Key, db.Customers[i].Nation
		case 1:
			return db.Parts[i].Key, db.Parts[i].Mfgr
		}
		return db.Suppliers[i].Key, db.Suppliers[i].Region
	}
	for d := range q.Joins() {
		dims[d] = make([]uint8, sizes[d]+1)
		for i := range sizes[d] {
			if k, v := attrOf(d, i); Hash(k, n) == me {
				dims[d][k] = v + 1
				build += CyclesBuildRow
			}
		}
	}
	x.Compute(th, build)
	// The fact rows this node holds, then receives at each step.
	var rows []midRow
	for i := range db.Lines {
		if l := &db.Lines[i]; int(l.Order)%n == me {
			rows = append(rows, midRow{key: [3]int32{l.Cust, l.Part, l.Supp}, rev: int64(l.Revenue)})
		}
	}
	scan := int64(len(rows)) * CyclesScanRow
	var agg [Groups]Agg
	for d := range q.Joins() {
		var s tpch.Stream
		s.Cycles, scan = scan, 0
		for i := range rows {
			a, b := rows[i].pack(d, n)
			s.Tuples = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(s.Tuples, a), b)
		}
		last := d == q.Joins()-1
		recv := int64(CyclesProbe)
		if last {
			recv += CyclesAgg
		}
		got, count, err := x.Exchange(th, d, s, recv)
		if err != nil {
			return nil, err
		}
		rows = rows[:0]
		if payload {
			if uint64(len(got)) != count*algos.TupleBytes {
				return nil, fmt.Errorf("istore: node %d: join %d received %d bytes for %d tuples", me, d, len(got), count)
			}
			for i := 0; i+16 <= len(got); i += 16 {
				rows = append(rows, unpack(d, n, binary.LittleEndian.Uint64(got[i:]), binary.LittleEndian.Uint64(got[i+8:])))
			}
		} else {
			rows = db.received(d, n, me, rows)
			if uint64(len(rows)) != count {
				return nil, fmt.Errorf("istore: node %d: join %d received %d tuples, the database says %d", me, d, count, len(rows))
			}
		}
		// Probe (charged per tuple by the receivers): the row takes its
		// attribute from the local partition.
		for i := range rows {
			r := &rows[i]
			k := r.key[d]
			if Hash(k, n) != me || k < 1 || int(k) > sizes[d] || dims[d][k] == 0 {
				return nil, fmt.Errorf("istore: node %d: join %d received key %d, which is not in its partition", me, d, k)
			}
			v := dims[d][k] - 1
			switch d {
			case 0:
				r.nation = v
			case 1:
				r.mfgr = v
			case 2:
				g := &agg[group(r.nation, r.mfgr, v)]
				g.Sum += r.rev
				g.Count++
			}
			if last && d < 2 {
				g := &agg[group(r.nation, r.mfgr, 0)]
				g.Sum += r.rev
				g.Count++
			}
		}
	}
	flat := make([]int64, 0, 2*Groups)
	for _, g := range agg {
		flat = append(flat, g.Sum, g.Count)
	}
	all, err := algos.GatherInts(th, "istore/shuffle-agg", flat)
	if err != nil || !payload {
		return nil, err
	}
	ans := &Answer{Query: q}
	for _, v := range all {
		for g := range Groups {
			ans.Groups[g].Sum += v[2*g]
			ans.Groups[g].Count += v[2*g+1]
		}
	}
	return ans, nil
}

// received is, in size-only mode, the rows node me receives in the
// exchange on dimension d: every fact row whose key d hashes to me, with
// the attributes of the dimensions joined before.
func (db *DB) received(d, n, me int, out []midRow) []midRow {
	for i := range db.Lines {
		l := &db.Lines[i]
		r := midRow{key: [3]int32{l.Cust, l.Part, l.Supp}, rev: int64(l.Revenue)}
		if Hash(r.key[d], n) != me {
			continue
		}
		if d > 0 {
			r.nation = db.Customers[l.Cust-1].Nation
		}
		if d > 1 {
			r.mfgr = db.Parts[l.Part-1].Mfgr
		}
		out = append(out, r)
	}
	return out
}
