package istore

import (
	"fmt"
	"math"
	"slices"
)

// The star schema: lineorder (the fact table) and the dimensions
// customer, part and supplier, pre-projected to the columns the joins
// need. Cardinalities and key distributions follow the Star Schema
// Benchmark's description (O'Neil et al., rev. 3, derived from TPC-H's
// dbgen rules): customer SF*30,000; supplier SF*2,000; part
// 200,000*floor(1+log2 SF) (linear in SF below 1, where the formula gives
// no rows); SF*1,500,000 orders of 1 to 7 lines each (about SF*6,000,000
// lineorder rows). An order's custkey is uniform over the customers whose
// key is not a multiple of 3 (dbgen's CUST_MORTALITY: a third of the
// customers place no orders); each line's partkey and suppkey are uniform;
// quantity 1..50, discount 0..10 percent; extended price = quantity x the
// part's retail price (TPC-H's formula, in cents); revenue = extended
// price x (100 - discount) / 100. Nations are uniform over TPC-H's 25,
// regions follow from them; p_mfgr is uniform over MFGR#1..5.
//
// The generator is host code (it runs before a simulation, as loading the
// database would); it uses its own seeded splitmix64 stream, not
// math/rand.

// Customer is a pre-projected customer row.
type Customer struct {
	Key    int32
	Nation uint8 // 0..24, TPC-H's nation keys
	Region uint8 // 0..4
}

// Part is a pre-projected part row.
type Part struct {
	Key  int32
	Mfgr uint8 // 1..5 (MFGR#1..MFGR#5)
}

// Supplier is a pre-projected supplier row.
type Supplier struct {
	Key    int32
	Nation uint8
	Region uint8
}

// Line is a pre-projected lineorder row.
type Line struct {
	Order   int32 // order index (0-based); the shuffle plan's placement
	Cust    int32
	Part    int32
	Supp    int32
	Revenue int32 // cents
}

// DB is a generated database.
type DB struct {
	SF        float64
	Seed      uint64
	Customers []Customer // Customers[k-1].Key == k
	Parts     []Part
	Suppliers []Supplier
	Lines     []Line
}

// NationRegion maps TPC-H's 25 nation keys to their region keys (AFRICA 0,
// AMERICA 1, ASIA 2, EUROPE 3, MIDDLE EAST 4).
var NationRegion = [25]uint8{0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1}

// MaxSF is the largest scale factor Generate accepts: the shuffle plan
// packs a lineorder row's keys and revenue into one 64-bit payload.
const MaxSF = 64

// Cardinalities returns the table sizes at sf: customers, parts,
// suppliers and orders.
func Cardinalities(sf float64) (cust, part, supp, orders int) {
	cust = int(math.Round(sf * 30000))
	supp = int(math.Round(sf * 2000))
	if sf >= 1 {
		part = 200000 * int(math.Floor(1+math.Log2(sf)))
	} else {
		part = int(math.Round(sf * 200000))
	}
	orders = int(math.Round(sf * 1500000))
	return
}

// rng is a splitmix64 stream.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// intn returns a value in [0, n).
func (r *rng) intn(n int) int { return int((r.next() >> 11) % uint64(n)) }

// mix is splitmix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// RetailPrice is TPC-H's p_retailprice of a part, in cents.
func RetailPrice(partkey int32) int64 {
	k := int64(partkey)
	return 90000 + (k/10)%20001 + 100*(k%1000)
}

// Generate builds the database at scale factor sf from seed. Every table
// must have a row: sf must be at least 0.0005 (one supplier).
func Generate(sf float64, seed uint64) (*DB, error) {
	if !(sf > 0) || sf > MaxSF {
		return nil, fmt.Errorf("istore: scale factor %v: want 0 < SF <= %d", sf, MaxSF)
	}
	nc, np, ns, no := Cardinalities(sf)
	if nc < 3 || np < 1 || ns < 1 || no < 1 {
		return nil, fmt.Errorf("istore: scale factor %v gives %d customers, %d parts, %d suppliers: too small (want SF >= 0.0005)", sf, nc, np, ns)
	}
	db := &DB{SF: sf, Seed: seed}
	r := rng{s: seed ^ 0x55b}
	for k := 1; k <= nc; k++ {
		n := uint8(r.intn(25))
		db.Customers = append(db.Customers, Customer{Key: int32(k), Nation: n, Region: NationRegion[n]})
	}
	for k := 1; k <= np; k++ {
		db.Parts = append(db.Parts, Part{Key: int32(k), Mfgr: uint8(1 + r.intn(5))})
	}
	for k := 1; k <= ns; k++ {
		n := uint8(r.intn(25))
		db.Suppliers = append(db.Suppliers, Supplier{Key: int32(k), Nation: n, Region: NationRegion[n]})
	}
	// Customers with orders: keys not divisible by 3.
	live := nc - nc/3
	db.Lines = make([]Line, 0, no*4)
	for o := 0; o < no; o++ {
		i := r.intn(live)              // the i-th key not divisible by 3
		cust := int32(i/2*3 + i%2 + 1) // 1, 2, 4, 5, 7, ...
		for range 1 + r.intn(7) {
			part := int32(1 + r.intn(np))
			qty := int64(1 + r.intn(50))
			disc := int64(r.intn(11))
			ext := qty * RetailPrice(part)
			db.Lines = append(db.Lines, Line{Order: int32(o), Cust: cust, Part: part, Supp: int32(1 + r.intn(ns)),
				Revenue: int32(ext * (100 - disc) / 100)})
		}
	}
	return db, nil
}

// Query is a star join: lineorder joined with the first Tables-1 of
// customer, part and supplier (2, 3 or 4 tables, the paper's queries; it
// gives no SQL). Every join is a foreign-key join without predicates, so
// each keeps every fact row, as the paper's baseline of binary joins on
// full inputs does:
//
//	2: SELECT c_nation, SUM(lo_revenue), COUNT(*) FROM lineorder, customer
//	   WHERE lo_custkey = c_custkey GROUP BY c_nation
//	3: ... , part WHERE ... AND lo_partkey = p_partkey GROUP BY c_nation, p_mfgr
//	4: ... , supplier WHERE ... AND lo_suppkey = s_suppkey
//	   GROUP BY c_nation, p_mfgr, s_region
type Query int

// ParseQuery accepts 2, 3 or 4 (tables).
func ParseQuery(tables int) (Query, error) {
	if tables < 2 || tables > 4 {
		return 0, fmt.Errorf("istore: a %d-table join: choose 2 (lineorder, customer), 3 (+ part) or 4 (+ supplier)", tables)
	}
	return Query(tables), nil
}

// Joins is the number of dimensions joined.
func (q Query) Joins() int { return int(q) - 1 }

func (q Query) String() string { return fmt.Sprintf("%d-table", int(q)) }

// Groups is the size of the dense group space: nation x mfgr x region.
const Groups = 25 * 5 * 5

// group is a row's group: c_nation, then p_mfgr (1..5) and s_region when
// joined (0 otherwise).
func group(nation, mfgr, region uint8) int {
	g := int(nation)
	if mfgr > 0 {
		g += 25 * int(mfgr-1)
	}
	return g + 125*int(region)
}

// Agg is one group's aggregate.
type Agg struct {
	Sum   int64
	Count int64
}

// Answer is a query's result: the aggregate of every group (dense; groups
// without rows are zero).
type Answer struct {
	Query  Query
	Groups [Groups]Agg
}

// Rows is the non-empty groups as "nation=.. mfgr=.. region=.. sum count".
func (a *Answer) Rows() []string {
	var out []string
	for g, v := range a.Groups {
		if v.Count == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("nation=%d mfgr=%d s_region=%d sum=%d count=%d", g%25, g/25%5+1, g/125, v.Sum, v.Count))
	}
	return out
}

// Equal reports whether two answers are the same.
func (a *Answer) Equal(b *Answer) bool {
	return a != nil && b != nil && a.Query == b.Query && slices.Equal(a.Groups[:], b.Groups[:])
}

// Reference evaluates q on one node, without any network: the answer the
// distributed plans must reproduce.
func (db *DB) Reference(q Query) *Answer {
	ans := &Answer{Query: q}
	for _, l := range db.Lines {
		var mfgr, region uint8
		if q >= 3 {
			mfgr = db.Parts[l.Part-1].Mfgr
		}
		if q >= 4 {
			region = db.Suppliers[l.Supp-1].Region
		}
		g := &ans.Groups[group(db.Customers[l.Cust-1].Nation, mfgr, region)]
		g.Sum += int64(l.Revenue)
		g.Count++
	}
	return ans
}
