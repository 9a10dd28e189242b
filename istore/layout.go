package istore

import (
	"encoding/binary"
	"fmt"
)

// Block format: a 16-byte header (rows: 2 bytes, table: 1, magic: 1,
// block number: 4, checksum of the rows: 8) and up to 127 rows of 16
// bytes (two little-endian 64-bit words a and b).
const (
	BlockBytes   = 2048
	blockHeader  = 16
	RowBytes     = 16
	RowsPerBlock = (BlockBytes - blockHeader) / RowBytes
	blockMagic   = 0xb1
)

// Table names a table of the schema.
type Table uint8

// Tables. The dimensions come in join order (Query.Joins takes the first
// ones).
const (
	TCustomer Table = iota
	TPart
	TSupplier
	TLineorder
)

var tableNames = [...]string{"customer", "part", "supplier", "lineorder"}

func (t Table) String() string {
	if int(t) < len(tableNames) {
		return tableNames[t]
	}
	return fmt.Sprintf("Table(%d)", uint8(t))
}

// Block is one 2 KB block: which rows of which table it holds and where
// it lies (memory server node, offset in that server's region).
type Block struct {
	Table Table
	Part  int // dimension partition, or lineorder cell
	Node  int // memory server's node id
	Off   int64
	Seq   uint32  // the block's number in the layout
	Rows  []int32 // row indices into the table (host side: what the block holds)
}

// Layout is the storage of a database on the memory servers: every table
// partitioned once per join key (one hash function per key into Parts
// parts; lineorder into Parts^3 cells), every partition cut into blocks,
// the blocks of every table spread round-robin over the memory servers.
// It is computed identically by every node, so compute servers know every
// block's address (the directory); the paper's distributed linked lists
// with pointer groups, which let a reader find the next addresses, are not
// modelled.
type Layout struct {
	DB       *DB
	Parts    int
	Memory   []int      // memory servers' node ids
	Dim      [3][][]int // per dimension, per partition: block indices
	Cells    [][]int    // per lineorder cell (c*P*P + p*P + s): block indices
	Blocks   []Block
	MemBytes map[int]int64 // region size per memory server node
}

// Hash is the partitioning function of a join key: the same for every
// table holding that key (splitmix64's finalizer of the key, modulo
// parts). A hash rather than the key modulo parts: custkeys divisible by
// 3 have no orders, so modulo 3 or 6 would leave cells empty.
func Hash(key int32, parts int) int { return int(mix(uint64(key)+0x632be59bd9b4e019) % uint64(parts)) }

// NewLayout places db on the memory servers with parts partitions per key.
func NewLayout(db *DB, parts int, memory []int) (*Layout, error) {
	if parts < 1 || parts > 64 {
		return nil, fmt.Errorf("istore: %d partitions per join key: want 1..64 (lineorder has parts^3 cells)", parts)
	}
	if len(memory) == 0 {
		return nil, fmt.Errorf("istore: no memory servers")
	}
	l := &Layout{DB: db, Parts: parts, Memory: memory, MemBytes: map[int]int64{}}
	for _, m := range memory {
		l.MemBytes[m] = 0
	}
	P := parts
	var dimRows [3][][]int32
	for d := range dimRows {
		dimRows[d] = make([][]int32, P)
	}
	for i, c := range db.Customers {
		h := Hash(c.Key, P)
		dimRows[0][h] = append(dimRows[0][h], int32(i))
	}
	for i, p := range db.Parts {
		h := Hash(p.Key, P)
		dimRows[1][h] = append(dimRows[1][h], int32(i))
	}
	for i, s := range db.Suppliers {
		h := Hash(s.Key, P)
		dimRows[2][h] = append(dimRows[2][h], int32(i))
	}
	cellRows := make([][]int32, P*P*P)
	for i, r := range db.Lines {
		c := l.Cell(Hash(r.Cust, P), Hash(r.Part, P), Hash(r.Supp, P))
		cellRows[c] = append(cellRows[c], int32(i))
	}
	place := func(t Table, part int, rows []int32, next *int) []int {
		var ids []int
		for lo := 0; lo < len(rows); lo += RowsPerBlock {
			m := memory[*next%len(memory)]
			*next++
			ids = append(ids, len(l.Blocks))
			l.Blocks = append(l.Blocks, Block{Table: t, Part: part, Node: m, Off: l.MemBytes[m], Seq: uint32(len(l.Blocks)),
				Rows: rows[lo:min(lo+RowsPerBlock, len(rows))]})
			l.MemBytes[m] += BlockBytes
		}
		return ids
	}
	for d := range 3 {
		next := 0
		l.Dim[d] = make([][]int, P)
		for p := range P {
			l.Dim[d][p] = place(Table(d), p, dimRows[d][p], &next)
		}
	}
	next := 0
	l.Cells = make([][]int, len(cellRows))
	for c, rows := range cellRows {
		l.Cells[c] = place(TLineorder, c, rows, &next)
	}
	if int64(len(l.Blocks)) >= 1<<32 {
		return nil, fmt.Errorf("istore: %d blocks: too many", len(l.Blocks))
	}
	return l, nil
}

// Cell is the lineorder cell of the partitions of custkey, partkey and
// suppkey.
func (l *Layout) Cell(c, p, s int) int { return (c*l.Parts+p)*l.Parts + s }

// row returns the 16-byte encoding of row i of table t:
// customer (custkey, nation), part (partkey, mfgr), supplier (suppkey,
// region), lineorder (custkey | partkey<<32, suppkey | revenue<<32).
func (db *DB) row(t Table, i int32) (a, b uint64) {
	switch t {
	case TCustomer:
		c := db.Customers[i]
		return uint64(c.Key), uint64(c.Nation)
	case TPart:
		p := db.Parts[i]
		return uint64(p.Key), uint64(p.Mfgr)
	case TSupplier:
		s := db.Suppliers[i]
		return uint64(s.Key), uint64(s.Region)
	}
	r := db.Lines[i]
	return uint64(uint32(r.Cust)) | uint64(uint32(r.Part))<<32, uint64(uint32(r.Supp)) | uint64(uint32(r.Revenue))<<32
}

func rowSum(a, b uint64) uint64 { return mix(a ^ mix(b+0x9e3779b97f4a7c15)) }

// Encode writes block b's bytes into dst (BlockBytes long): what the
// memory server holds.
func (l *Layout) Encode(b *Block, dst []byte) {
	clear(dst[:BlockBytes])
	var sum uint64
	for j, i := range b.Rows {
		a, v := l.DB.row(b.Table, i)
		binary.LittleEndian.PutUint64(dst[blockHeader+j*RowBytes:], a)
		binary.LittleEndian.PutUint64(dst[blockHeader+j*RowBytes+8:], v)
		sum += rowSum(a, v)
	}
	binary.LittleEndian.PutUint16(dst, uint16(len(b.Rows)))
	dst[2], dst[3] = byte(b.Table), blockMagic
	binary.LittleEndian.PutUint32(dst[4:], b.Seq)
	binary.LittleEndian.PutUint64(dst[8:], sum)
}

// ErrCorrupt reports a block that did not arrive as the memory server
// holds it.
var ErrCorrupt = fmt.Errorf("istore: corrupt block")

// Rows calls fn with every row of block b: decoded from data, the bytes
// that arrived (payload mode), after checking the header and checksum; or,
// when data is nil (size-only mode, where the NIC moves only a message's
// ends), taken from the database as the block holds them.
func (l *Layout) Rows(b *Block, data []byte, fn func(a, v uint64)) error {
	if data == nil {
		for _, i := range b.Rows {
			fn(l.DB.row(b.Table, i))
		}
		return nil
	}
	n := int(binary.LittleEndian.Uint16(data))
	if n != len(b.Rows) || data[2] != byte(b.Table) || data[3] != blockMagic || binary.LittleEndian.Uint32(data[4:]) != b.Seq {
		return fmt.Errorf("%w: block %d (%s partition %d) arrived with header rows=%d table=%d magic=%#x number=%d",
			ErrCorrupt, b.Seq, b.Table, b.Part, n, data[2], data[3], binary.LittleEndian.Uint32(data[4:]))
	}
	var sum uint64
	for j := range n {
		a := binary.LittleEndian.Uint64(data[blockHeader+j*RowBytes:])
		v := binary.LittleEndian.Uint64(data[blockHeader+j*RowBytes+8:])
		sum += rowSum(a, v)
	}
	if sum != binary.LittleEndian.Uint64(data[8:]) {
		return fmt.Errorf("%w: block %d (%s partition %d): checksum mismatch", ErrCorrupt, b.Seq, b.Table, b.Part)
	}
	for j := range n {
		fn(binary.LittleEndian.Uint64(data[blockHeader+j*RowBytes:]), binary.LittleEndian.Uint64(data[blockHeader+j*RowBytes+8:]))
	}
	return nil
}

// Tiling assigns the cells of the joined keys' partition grid to compute
// servers (the paper's work assignment for uniform data, §4.1): Tiles[d]
// tiles along joined dimension d (their product is the number of compute
// servers, each dividing Parts), chosen to read the fewest dimension rows
// (each server reads 1/Tiles[d] of dimension d); dimensions not joined are
// not tiled (1), and every server probes every cell along them.
type Tiling struct {
	Query   Query
	Parts   int
	Compute int
	Tiles   [3]int
}

// NewTiling finds the tiling of q's grid over compute servers with the
// least dimension data per server.
func NewTiling(db *DB, q Query, parts, compute int) (Tiling, error) {
	t := Tiling{Query: q, Parts: parts, Compute: compute, Tiles: [3]int{1, 1, 1}}
	rows := [3]float64{float64(len(db.Customers)), float64(len(db.Parts)), float64(len(db.Suppliers))}
	best := -1.0
	var try func(d, left int, cur [3]int)
	try = func(d, left int, cur [3]int) {
		if d == q.Joins() {
			if left != 1 {
				return
			}
			cost := 0.0
			for i := range d {
				cost += rows[i] / float64(cur[i])
			}
			if best < 0 || cost < best {
				best, t.Tiles = cost, cur
			}
			return
		}
		for k := 1; k <= parts; k++ {
			if parts%k == 0 && left%k == 0 {
				cur[d] = k
				try(d+1, left/k, cur)
			}
		}
	}
	try(0, compute, [3]int{1, 1, 1})
	if best < 0 {
		return t, fmt.Errorf("istore: %d compute servers cannot tile the %d partitions per key of a %s join: the number of compute servers must be a product of divisors of the partition count, one per joined dimension (e.g. equal to it)",
			compute, parts, q)
	}
	return t, nil
}

// Coord is compute server s's tile coordinate along each dimension (s is
// its index among the compute servers).
func (t Tiling) Coord(s int) [3]int {
	var c [3]int
	for d := range 3 {
		c[d] = s % t.Tiles[d]
		s /= t.Tiles[d]
	}
	return c
}

// DimParts is the range of dimension d's partitions that tile u holds.
func (t Tiling) DimParts(d, u int) (lo, hi int) {
	w := t.Parts / t.Tiles[d]
	return u * w, (u + 1) * w
}

// Cells lists the lineorder cells compute server s probes.
func (t Tiling) Cells(l *Layout, s int) []int {
	c := t.Coord(s)
	rng := func(d int) (int, int) {
		if d >= t.Query.Joins() {
			return 0, t.Parts
		}
		return t.DimParts(d, c[d])
	}
	var out []int
	c0, c1 := rng(0)
	p0, p1 := rng(1)
	s0, s1 := rng(2)
	for a := c0; a < c1; a++ {
		for b := p0; b < p1; b++ {
			for x := s0; x < s1; x++ {
				out = append(out, l.Cell(a, b, x))
			}
		}
	}
	return out
}
