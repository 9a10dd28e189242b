package algos

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Words that a remote node's NIC writes into registered memory and a
// thread polls (credit words, FreeArr entries, the seals and sequence
// numbers of notices and descriptors) are read with loadWord, never with a
// plain load.
//
// The CPU side. A poller reads a descriptor's sequence word and, when it
// is the one expected, the descriptor's other fields and the buffer it
// names. On x86 (TSO) loads are not reordered with other loads, so plain
// loads in program order were enough; on a weakly ordered CPU (arm64:
// NVIDIA Grace with ConnectX-7) the later loads may be satisfied before
// the sequence word's, and see the fields from before the write. Go has no
// standalone fence, and Thread.Sync, called before a scan, could not order
// loads made after it anyway: the order needed is between the sequence
// word's load and the loads that follow it. loadWord is an atomic load
// (sync/atomic: sequentially consistent, so an acquire), which the
// compiler does not reorder with later loads and which arm64 issues as
// LDAR: loads after it in program order are observed after it (Arm,
// ARMv8-A Programmer's Guide, "One-way barriers": for accesses in the
// shareability domain of the address). It is also single-copy atomic: a
// plain binary.LittleEndian read may be split into narrower loads and see
// half of a word the NIC is writing. On x86 it is a plain MOV, so the
// simulator runs as before. rdma-core's own from-device barrier
// (udma_from_device_barrier, util/udma_barrier.h) is "dsb ld" on aarch64,
// a full-system barrier, where LDAR is ordered within the address's
// shareability domain; whether that difference matters for a PCIe
// device's writes on Grace is for the first run on one to show.
//
// The NIC side: what the verbs promise, and what these designs rely on
// beyond it. rdma-core's ibv_reg_mr(3) (ORDERING SEMANTICS) keeps
// write-after-write order only between writes to the same bytes, does not
// order the writes within one message ("many NICs and platforms
// additionally place the writes of a single message in ascending address
// order, though this is not guaranteed"), and guarantees placed data only
// once a completion has been seen; IBV_ACCESS_RELAXED_ORDERING, which no
// design sets, gives up even that. libibverbs' ibv_query_qp_data_in_order
// reports in-order placement within a message at most, and on x86 only:
// it returns 0 on every other architecture ("most non-x86 platforms are
// known to be OOO", libibverbs/verbs.c). So the memory-polling variants
// (MQ/WR poll-buffers and poll-queue, MQ/WR+cw's credit word, MQ/RD's
// descriptor and FreeArr rings, HyPer's credit and barrier words) rely on
// two things the verbs do not promise: a notice or descriptor written
// after a buffer lands after it, and a descriptor's bytes land in
// ascending address order. For the second, each descriptor is one inline
// write that keeps its sequence word last (at its highest address) and
// lies within one 64-byte cache line (entries aligned to their size, the
// region's memory aligned to 64 bytes: fabric.MRAlign), so a platform
// that places a message in ascending order shows the sequence word only
// after the fields. The default notification, poll-CQ, relies on
// completions only, as the verbs ask.

// loadWord reads the little-endian 64-bit word at mem[0:8] with an atomic
// (acquire) load. mem's first byte must be 8-byte aligned (polledAt
// checks the rings at set-up).
func loadWord(mem []byte) uint64 {
	_ = mem[7]
	v := atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[0])))
	if bigEndian {
		v = bits.ReverseBytes64(v)
	}
	if wordLoaded != nil {
		wordLoaded(mem)
	}
	return v
}

// wordLoaded, when set (by tests), is told of every loadWord.
var wordLoaded func(mem []byte)

// bigEndian is whether this machine stores words big-end first; the words
// in registered memory are little-endian (binary.LittleEndian).
var bigEndian = binary.NativeEndian.Uint16([]byte{1, 0}) != 1

// cacheLine is the unit a descriptor must not straddle.
const cacheLine = 64

// alignUp rounds off up to a multiple of a (a power of two).
func alignUp(off, a int) int { return (off + a - 1) &^ (a - 1) }

// polledAt checks that count entries of size bytes from mem[off] can be
// polled: each 8-byte aligned (loadWord) and none straddling a cache line
// (size at most 64 and dividing it, off aligned to it). The layouts align
// their rings; the region's memory must be aligned as the contract says
// (fabric.MRAlign), which this checks on the real address.
func polledAt(what string, mem []byte, off, size, count int) error {
	if count == 0 {
		return nil
	}
	if off < 0 || off+size*count > len(mem) {
		return fmt.Errorf("algos: %s: %d entries of %d bytes at offset %d outside the %d-byte region", what, count, size, off, len(mem))
	}
	addr := uintptr(unsafe.Pointer(&mem[off]))
	if size > cacheLine || cacheLine%size != 0 || size%8 != 0 || addr%uintptr(size) != 0 {
		return fmt.Errorf("%w: %s: %d-byte entries at address %#x (offset %d) would straddle %d-byte cache lines or misalign their words (the region's memory must be %d-byte aligned)",
			fabric.ErrInvalidArg, what, size, addr, off, cacheLine, fabric.MRAlign)
	}
	return nil
}
