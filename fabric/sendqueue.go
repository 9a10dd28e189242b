package fabric

import "fmt"

// SendQueueLayout is how a provider lays a send queue out in memory, as far
// as that limits how deep the queue can be. Some providers size a send
// queue in fixed blocks rather than in work requests: every entry takes
// whole blocks (more blocks with more scatter/gather elements or a larger
// inline size), and the queue's bytes, rounded up to a power of two, must
// fit in Blocks blocks. The zero value is a provider that counts requests:
// the deepest send queue is then DeviceAttr.MaxQPWR requests, whatever they
// carry. MLX5SendQueue is the layout of NVIDIA's mlx5 provider
// (docs/hardware.md gives the rules and their source).
type SendQueueLayout struct {
	// BlockBytes is the unit a send-queue entry is made of; an entry
	// takes whole blocks. 0 is the zero layout.
	BlockBytes int
	// Blocks is the most blocks one send queue may span once its bytes
	// are rounded up to a power of two.
	Blocks int
	// HeadRC and HeadUD are the bytes every entry reserves ahead of its
	// data on an RC or UC queue pair and on a UD queue pair: the control
	// segment and room for the segments of the largest operation the
	// queue pair may carry (remote address, atomic, memory window) or the
	// address vector (UD).
	HeadRC, HeadUD int
	// SGEBytes is the size of one scatter/gather element in an entry.
	SGEBytes int
	// InlineHeadBytes precede an entry's inline data, and the inline
	// segment is rounded up to a multiple of InlineAlign bytes.
	InlineHeadBytes, InlineAlign int
}

// MLX5SendQueue is the send-queue layout of the mlx5 provider (ConnectX-4
// and later) on a device whose max_qp_wr is maxQPWR, for queue pairs
// created with plain ibv_create_qp: 64-byte blocks, at most max_qp_wr of
// them per send queue; an RC or UC entry reserves 192 bytes (a
// memory-window bind's segments: control 16, memory-registration control
// 48, key context 64 and 64 of translation; a queue pair created without
// a list of its operations must have room for every one), a UD entry 64
// (control 16 and address vector 48); each scatter/gather element takes
// 16 bytes, and inline data 4 bytes of header, rounded up to 16. So an RC
// request with one element takes 4 blocks and a UD request 2.
func MLX5SendQueue(maxQPWR int) SendQueueLayout {
	return SendQueueLayout{BlockBytes: 64, Blocks: maxQPWR, HeadRC: 192, HeadUD: 64, SGEBytes: 16, InlineHeadBytes: 4, InlineAlign: 16}
}

// EntryBytes is the size of one send-queue entry of a queue pair of type t
// created for sges scatter/gather elements and inline bytes of inline
// data: its head, then the larger of its elements and its inline segment,
// in whole blocks. 0 for the zero layout.
func (l SendQueueLayout) EntryBytes(t QPType, sges, inline int) int {
	if l.BlockBytes <= 0 {
		return 0
	}
	head := l.HeadRC
	if t == UD {
		head = l.HeadUD
	}
	size := head + max(sges, 0)*l.SGEBytes
	if inline > 0 {
		size = max(size, head+roundUp(l.InlineHeadBytes+inline, max(l.InlineAlign, 1)))
	}
	return roundUp(size, l.BlockBytes)
}

// MaxSendWR is the deepest send queue the device accepts for a queue pair
// of type t created with sges scatter/gather elements and inline bytes of
// inline data: MaxQPWR, or fewer when the send-queue layout makes each
// request take several blocks. (The receive queue's limit is MaxQPWR.)
func (a DeviceAttr) MaxSendWR(t QPType, sges, inline int) int {
	n := a.MaxQPWR
	l := a.SendQueue
	if e := l.EntryBytes(t, sges, inline); e > 0 {
		// The queue's bytes round up to a power of two, so they fit in
		// Blocks blocks when they fit in the largest power of two that does.
		n = min(n, floorPow2(l.Blocks*l.BlockBytes)/e)
	}
	return max(n, 0)
}

// SendLimitReason says where MaxSendWR(t, sges, inline) comes from, for
// error messages: "max_qp_wr of mlx5_0" or "mlx5_0's send queues hold
// 32768 blocks of 64 bytes (max_qp_wr), 4 per RC request".
func (a DeviceAttr) SendLimitReason(t QPType, sges, inline int) string {
	l := a.SendQueue
	e := l.EntryBytes(t, sges, inline)
	if e == 0 || a.MaxSendWR(t, sges, inline) == a.MaxQPWR {
		return "max_qp_wr of " + a.Name
	}
	kind := "RC"
	if t != RC {
		kind = t.String()
	}
	return fmt.Sprintf("%s's send queues hold %d blocks of %d bytes (max_qp_wr), %d per %s request", a.Name, l.Blocks, l.BlockBytes, e/l.BlockBytes, kind)
}

// CheckSendCaps refuses, with ErrLimit naming the limit, a send queue of
// a queue pair of type t (one scatter/gather element per request) that
// the device cannot create: a depth outside 1..MaxSendWR, or a negative
// inline size.
func (a DeviceAttr) CheckSendCaps(t QPType, caps QPCaps) error {
	if most := a.MaxSendWR(t, 1, caps.MaxInline); caps.MaxSendWR < 1 || caps.MaxSendWR > most {
		return fmt.Errorf("%w: send queue depth %d must be in 1..%d (%s)",
			ErrLimit, caps.MaxSendWR, most, a.SendLimitReason(t, 1, caps.MaxInline))
	}
	if caps.MaxInline < 0 {
		return fmt.Errorf("%w: max inline %d bytes is negative", ErrLimit, caps.MaxInline)
	}
	return nil
}

// roundUp rounds n up to a multiple of m (m > 0).
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// floorPow2 is the largest power of two not above n (0 for n < 1).
func floorPow2(n int) int {
	if n < 1 {
		return 0
	}
	p := 1
	for p <= n/2 {
		p *= 2
	}
	return p
}
