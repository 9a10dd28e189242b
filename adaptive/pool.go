package adaptive

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Buf is one registered buffer of a Pool: Size bytes at offset Off of the
// memory region MR (a chunk of buffers registered together), lent to an
// endpoint between Get and Put.
type Buf struct {
	MR    fabric.MR
	Off   int
	Size  int
	chunk *chunk
}

// Bytes is the buffer's memory.
func (b *Buf) Bytes() []byte { return b.MR.Bytes()[b.Off : b.Off+b.Size] }

// chunk is one registration: n buffers of size bytes in one region.
type chunk struct {
	mr         fabric.MR
	size, n    int
	idle       int
	registered bool
}

// PoolStats describes a pool's registrations. Registered bytes always
// equal RegisteredTotal - DeregisteredTotal.
type PoolStats struct {
	Registrations, Deregistrations     int64 // regions (chunks)
	RegisteredTotal, DeregisteredTotal int64 // bytes
	Registered, Peak                   int64 // bytes registered now, and at most
	Lent                               int   // buffers out (Get without Put)
	Free                               int   // buffers registered and idle
	CapHits                            int64 // Gets refused by the cap
}

// ErrPinnedCap is returned by Get when registering one more buffer would
// exceed the pool's pinned-memory cap even after deregistering every idle
// chunk.
var ErrPinnedCap = errors.New("adaptive: pinned-memory cap reached")

// Chunk sizes: a pool registers buffers of one size in chunks, each as
// many buffers as it already has of that size (doubling), between these
// bounds, so that growing costs a registration only now and then.
const (
	MinChunk = 8
	MaxChunk = 512
)

// Pool is a node's pool of registered buffers, shared by the node's
// endpoints (they use its protection domain). Get reuses an idle buffer of
// the size asked for or registers a chunk of new ones, which costs what
// registration costs on the backend; when the pinned-memory cap would be
// exceeded it first deregisters idle chunks (memory pressure). Put keeps a
// buffer registered for reuse. Safe for concurrent use by the threads of
// one node: it serializes itself with a node mutex.
type Pool struct {
	pd     fabric.PD
	mu     fabric.Mutex
	cap    int64
	access fabric.Access
	idle   map[int][]*Buf   // by size
	chunks map[int][]*chunk // by size, in registration order
	count  map[int]int      // buffers registered, by size
	order  []int            // sizes in the order first seen (deterministic trimming)
	lent   map[*Buf]bool
	stats  PoolStats
	closed bool
}

// NewPool returns an empty pool registering in pd with access, capped at
// capBytes of pinned memory (0: no cap). mu is a node mutex (Node.NewMutex).
func NewPool(pd fabric.PD, mu fabric.Mutex, capBytes int64, access fabric.Access) (*Pool, error) {
	if pd == nil || mu == nil {
		return nil, fmt.Errorf("adaptive: a pool needs a protection domain and a node mutex")
	}
	if capBytes < 0 {
		return nil, fmt.Errorf("adaptive: pinned-memory cap of %d bytes: must not be negative (0 means no cap)", capBytes)
	}
	return &Pool{pd: pd, mu: mu, cap: capBytes, access: access, idle: map[int][]*Buf{}, chunks: map[int][]*chunk{},
		count: map[int]int{}, lent: map[*Buf]bool{}}, nil
}

// PD is the pool's protection domain: endpoints that use the pool's
// buffers create their queue pairs in it.
func (p *Pool) PD() fabric.PD { return p.pd }

// Get lends a registered buffer of size bytes.
func (p *Pool) Get(size int) (*Buf, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("adaptive: Get on a closed pool")
	}
	if size < 1 {
		return nil, fmt.Errorf("adaptive: buffer of %d bytes", size)
	}
	if b := p.takeIdle(size); b != nil {
		return p.lend(b), nil
	}
	n := min(MaxChunk, max(MinChunk, p.count[size]))
	if p.cap > 0 {
		if p.stats.Registered+int64(n*size) > p.cap {
			if err := p.trim(p.cap - int64(n*size)); err != nil {
				return nil, err
			}
		}
		n = min(n, int((p.cap-p.stats.Registered)/int64(size)))
		if n < 1 {
			p.stats.CapHits++
			return nil, fmt.Errorf("%w: %d of %d bytes registered, %d buffers lent", ErrPinnedCap, p.stats.Registered, p.cap, p.stats.Lent)
		}
	}
	mr, err := p.pd.RegMR(n*size, p.access)
	if err != nil {
		return nil, err
	}
	c := &chunk{mr: mr, size: size, n: n, idle: n, registered: true}
	p.chunks[size] = append(p.chunks[size], c)
	if p.count[size] == 0 {
		p.order = append(p.order, size)
	}
	p.count[size] += n
	p.stats.Registrations++
	p.stats.RegisteredTotal += int64(n * size)
	p.stats.Registered += int64(n * size)
	p.stats.Peak = max(p.stats.Peak, p.stats.Registered)
	for i := n - 1; i >= 0; i-- {
		p.idle[size] = append(p.idle[size], &Buf{MR: mr, Off: i * size, Size: size, chunk: c})
		p.stats.Free++
	}
	return p.lend(p.takeIdle(size)), nil
}

func (p *Pool) takeIdle(size int) *Buf {
	l := p.idle[size]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	p.idle[size] = l[:len(l)-1]
	p.stats.Free--
	b.chunk.idle--
	return b
}

func (p *Pool) lend(b *Buf) *Buf {
	p.lent[b] = true
	p.stats.Lent++
	return b
}

// Put takes a lent buffer back; it stays registered until memory pressure
// or Close.
func (p *Pool) Put(b *Buf) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b == nil || !p.lent[b] {
		return fmt.Errorf("adaptive: Put of a buffer this pool did not lend")
	}
	delete(p.lent, b)
	p.stats.Lent--
	p.idle[b.Size] = append(p.idle[b.Size], b)
	p.stats.Free++
	b.chunk.idle++
	return nil
}

// Trim deregisters idle chunks (every buffer of them idle) until at most
// keep bytes are registered, or no idle chunk is left.
func (p *Pool) Trim(keep int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trim(keep)
}

func (p *Pool) trim(keep int64) error {
	for _, size := range p.order {
		cs := p.chunks[size]
		for i := len(cs) - 1; i >= 0 && p.stats.Registered > keep; i-- {
			c := cs[i]
			if c.idle != c.n {
				continue
			}
			// Drop the chunk's buffers from the idle list, then the region.
			l := p.idle[size][:0]
			for _, b := range p.idle[size] {
				if b.chunk != c {
					l = append(l, b)
				}
			}
			p.idle[size] = l
			p.stats.Free -= c.n
			if err := c.mr.Dereg(); err != nil {
				return err
			}
			c.registered = false
			cs = append(cs[:i], cs[i+1:]...)
			p.count[size] -= c.n
			p.stats.Deregistrations++
			p.stats.DeregisteredTotal += int64(c.n * size)
			p.stats.Registered -= int64(c.n * size)
		}
		p.chunks[size] = cs
	}
	return nil
}

// Stats returns the pool's statistics.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close deregisters every idle chunk. It fails, naming how many, if
// buffers are still lent: their owners must Put them first.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.trim(0); err != nil {
		return err
	}
	p.closed = true
	if p.stats.Lent > 0 {
		return fmt.Errorf("adaptive: pool closed with %d buffers (%d bytes registered) still lent", p.stats.Lent, p.stats.Registered)
	}
	return nil
}
