package adaptive

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Buf is one registered buffer of a Pool: its own memory region, lent to
// an endpoint between Get and Put.
type Buf struct {
	MR   fabric.MR
	Size int
}

// PoolStats describes a pool's registrations. Registered bytes always
// equal RegisteredTotal - DeregisteredTotal.
type PoolStats struct {
	Registrations, Deregistrations     int64
	RegisteredTotal, DeregisteredTotal int64 // bytes
	Registered, Peak                   int64 // bytes registered now, and at most
	Lent                               int   // buffers out (Get without Put)
	Free                               int   // buffers registered and idle
	CapHits                            int64 // Gets refused by the cap
}

// ErrPinnedCap is returned by Get when registering one more buffer would
// exceed the pool's pinned-memory cap even after deregistering every idle
// buffer.
var ErrPinnedCap = errors.New("adaptive: pinned-memory cap reached")

// Pool is a node's pool of registered buffers, shared by the node's
// endpoints (they use its protection domain). Get reuses an idle buffer of
// the size asked for or registers a new one, which costs what registration
// costs on the backend; when the pinned-memory cap would be exceeded it
// first deregisters idle buffers (memory pressure). Put keeps a buffer
// registered for reuse. Safe for concurrent use by the threads of one
// node: it serializes itself with a node mutex.
type Pool struct {
	pd     fabric.PD
	mu     fabric.Mutex
	cap    int64
	access fabric.Access
	idle   map[int][]*Buf // by size
	order  []int          // sizes in the order first seen (deterministic trimming)
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
	return &Pool{pd: pd, mu: mu, cap: capBytes, access: access, idle: map[int][]*Buf{}, lent: map[*Buf]bool{}}, nil
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
	if l := p.idle[size]; len(l) > 0 {
		b := l[len(l)-1]
		p.idle[size] = l[:len(l)-1]
		p.stats.Free--
		return p.lend(b), nil
	}
	if p.cap > 0 && p.stats.Registered+int64(size) > p.cap {
		if err := p.trim(p.cap - int64(size)); err != nil {
			return nil, err
		}
		if p.stats.Registered+int64(size) > p.cap {
			p.stats.CapHits++
			return nil, fmt.Errorf("%w: %d of %d bytes registered, %d lent", ErrPinnedCap, p.stats.Registered, p.cap, p.stats.Lent)
		}
	}
	mr, err := p.pd.RegMR(size, p.access)
	if err != nil {
		return nil, err
	}
	p.stats.Registrations++
	p.stats.RegisteredTotal += int64(size)
	p.stats.Registered += int64(size)
	p.stats.Peak = max(p.stats.Peak, p.stats.Registered)
	found := false
	for _, s := range p.order {
		found = found || s == size
	}
	if !found {
		p.order = append(p.order, size)
	}
	return p.lend(&Buf{MR: mr, Size: size}), nil
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
	return nil
}

// Trim deregisters idle buffers until at most keep bytes are registered
// (or no idle buffer is left).
func (p *Pool) Trim(keep int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trim(keep)
}

func (p *Pool) trim(keep int64) error {
	for _, size := range p.order {
		for p.stats.Registered > keep && len(p.idle[size]) > 0 {
			l := p.idle[size]
			b := l[len(l)-1]
			p.idle[size] = l[:len(l)-1]
			p.stats.Free--
			if err := b.MR.Dereg(); err != nil {
				return err
			}
			p.stats.Deregistrations++
			p.stats.DeregisteredTotal += int64(b.Size)
			p.stats.Registered -= int64(b.Size)
		}
	}
	return nil
}

// Stats returns the pool's statistics.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close deregisters every idle buffer. It fails, naming how many, if
// buffers are still lent: their owners must Put them first.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.trim(0); err != nil {
		return err
	}
	p.closed = true
	if p.stats.Lent > 0 {
		return fmt.Errorf("adaptive: pool closed with %d buffers (%d bytes) still lent", p.stats.Lent, p.stats.Registered)
	}
	return nil
}
