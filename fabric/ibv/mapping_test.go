//go:build ibverbs

package ibv

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestStatusOf(t *testing.T) {
	want := map[uint32]fabric.Status{
		ibvWCSuccess:        fabric.StatusSuccess,
		ibvWCLocLenErr:      fabric.StatusLocalLength,
		ibvWCLocProtErr:     fabric.StatusLocalProtection,
		ibvWCLocAccessErr:   fabric.StatusLocalProtection,
		ibvWCWRFlushErr:     fabric.StatusFlushed,
		ibvWCRemAccessErr:   fabric.StatusRemoteAccess,
		ibvWCRemInvReqErr:   fabric.StatusRemoteInvalid,
		ibvWCRetryExcErr:    fabric.StatusRetryExceeded,
		ibvWCRNRRetryExcErr: fabric.StatusRNRRetryExceeded,
		ibvWCLocQPOpErr:     fabric.StatusGeneral,
		ibvWCRemOpErr:       fabric.StatusGeneral,
		ibvWCBadRespErr:     fabric.StatusGeneral,
		ibvWCGeneralErr:     fabric.StatusGeneral,
		999:                 fabric.StatusGeneral,
	}
	for s, w := range want {
		if got := statusOf(s); got != w {
			t.Errorf("statusOf(%d) = %v, want %v", s, got, w)
		}
	}
	// Every contract status is reachable from some ibv status.
	seen := map[fabric.Status]bool{}
	for s := uint32(0); s < ibvWCStatusEnumLimit; s++ {
		seen[statusOf(s)] = true
	}
	for s := fabric.StatusSuccess; s <= fabric.StatusGeneral; s++ {
		if !seen[s] {
			t.Errorf("no ibv_wc_status maps to %v", s)
		}
	}
}

func TestOpcodeMaps(t *testing.T) {
	if recvOpOf(ibvWCSuccess, ibvWCRecvRDMAWithImm) != fabric.OpRecvWriteImm || recvOpOf(ibvWCSuccess, ibvWCRecv) != fabric.OpRecv {
		t.Error("receive opcodes")
	}
	if recvOpOf(ibvWCWRFlushErr, ibvWCRecvRDMAWithImm) != fabric.OpRecv {
		t.Error("a failed receive's opcode is undefined in ibv_wc and must read as OpRecv")
	}
	for op, want := range map[fabric.Opcode]int32{fabric.OpSend: ibvWRSend, fabric.OpSendImm: ibvWRSendWithImm,
		fabric.OpWrite: ibvWRRDMAWrite, fabric.OpWriteImm: ibvWRRDMAWriteWithImm, fabric.OpRead: ibvWRRDMARead} {
		if got, ok := wrOpcodeOf(op); !ok || got != want {
			t.Errorf("wrOpcodeOf(%v) = %d, %v", op, got, ok)
		}
	}
	for _, op := range []fabric.Opcode{0, fabric.OpRecv, fabric.OpRecvWriteImm, 99} {
		if _, ok := wrOpcodeOf(op); ok {
			t.Errorf("wrOpcodeOf(%v) accepted a receive-side or unknown opcode", op)
		}
	}
	if sendFlagsOf(fabric.Signaled|fabric.Inline) != ibvSendSignaled|ibvSendInline || sendFlagsOf(0) != 0 {
		t.Error("send flags")
	}
}

func TestAccessAndTypes(t *testing.T) {
	all := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	if accessOf(all) != ibvAccessLocalWrite|ibvAccessRemoteWrite|ibvAccessRemoteRead {
		t.Error("accessOf")
	}
	if qpAccessFor(fabric.RC, all) != ibvAccessRemoteWrite|ibvAccessRemoteRead {
		t.Error("RC QP access keeps remote read and write")
	}
	if qpAccessFor(fabric.UC, all) != ibvAccessRemoteWrite {
		t.Error("UC has no RDMA Read: remote read must be dropped")
	}
	for typ, want := range map[fabric.QPType]int32{fabric.RC: ibvQPTRC, fabric.UC: ibvQPTUC, fabric.UD: ibvQPTUD,
		fabric.XRCSend: ibvQPTXRCSend, fabric.XRCRecv: ibvQPTXRCRecv, fabric.DCI: ibvQPTDriver, fabric.DCT: ibvQPTDriver} {
		if got, ok := qpTypeOf(typ); !ok || got != want {
			t.Errorf("qpTypeOf(%v) = %d", typ, got)
		}
	}
	if _, ok := qpTypeOf(0); ok {
		t.Error("qpTypeOf(0) accepted")
	}
	for _, s := range []fabric.QPState{fabric.StateReset, fabric.StateInit, fabric.StateRTR, fabric.StateRTS, fabric.StateError} {
		if stateOf(ibvStateOf(s)) != s {
			t.Errorf("state %v does not round-trip", s)
		}
	}
	if stateOf(ibvQPSSQD) != fabric.StateRTS || stateOf(ibvQPSSQE) != fabric.StateError || stateOf(7) != fabric.StateError {
		t.Error("SQD reads as RTS, SQE and unknown as ERROR")
	}
}

func TestMTUAndRate(t *testing.T) {
	for e, b := range map[int32]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096, 0: 0, 6: 0} {
		if mtuBytes(e) != b {
			t.Errorf("mtuBytes(%d) = %d, want %d", e, mtuBytes(e), b)
		}
		if b != 0 {
			if got, ok := mtuEnum(b); !ok || got != e {
				t.Errorf("mtuEnum(%d) = %d", b, got)
			}
		}
	}
	for _, b := range []int{0, 100, 1500, 8192} {
		if _, ok := mtuEnum(b); ok {
			t.Errorf("mtuEnum(%d) accepted", b)
		}
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	for _, tc := range []struct {
		w, s uint8
		gbps float64
	}{{2, 4, 32}, {2, 16, 4 * 14.0625 * 64 / 66}, {2, 32, 100}, {2, 64, 200}, {1, 1, 2}, {8, 2, 48}, {16, 128, 200}, {3, 4, 0}, {2, 3, 0}} {
		if got := portRateGbps(tc.w, tc.s); !near(got, tc.gbps) {
			t.Errorf("portRateGbps(width %d, speed %d) = %v, want %v", tc.w, tc.s, got, tc.gbps)
		}
	}
	if linkLayerName(ibvLinkLayerEthernet) != "Ethernet" || linkLayerName(ibvLinkLayerIB) != "InfiniBand" || linkLayerName(0) != "InfiniBand" {
		t.Error("link layer names")
	}
}

func TestTransitions(t *testing.T) {
	states := []fabric.QPState{fabric.StateReset, fabric.StateInit, fabric.StateRTR, fabric.StateRTS, fabric.StateError}
	legal := map[[2]fabric.QPState]bool{
		{fabric.StateReset, fabric.StateInit}: true, {fabric.StateInit, fabric.StateInit}: true,
		{fabric.StateInit, fabric.StateRTR}: true, {fabric.StateRTR, fabric.StateRTS}: true,
	}
	for _, from := range states {
		for _, to := range states {
			want := legal[[2]fabric.QPState{from, to}] || to == fabric.StateReset || to == fabric.StateError
			if ok, why := legalTransition(from, to); ok != want || (!ok && why == "") {
				t.Errorf("legalTransition(%v, %v) = %v %q, want %v", from, to, ok, why, want)
			}
		}
	}
	if ok, _ := legalTransition(fabric.StateReset, 42); ok {
		t.Error("unknown state accepted")
	}
}

// TestModifyMasks checks the masks against the IBTA table as ibv_modify_qp(3)
// and the rdma-core examples (rc_pingpong, uc_pingpong, ud_pingpong) use it.
func TestModifyMasks(t *testing.T) {
	type key struct {
		t  fabric.QPType
		to fabric.QPState
	}
	want := map[key]int32{
		{fabric.RC, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags,
		{fabric.UC, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags,
		{fabric.UD, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPQKey,
		{fabric.RC, fabric.StateRTR}: ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN |
			ibvQPMaxDestRdAtomc | ibvQPMinRNRTimer,
		{fabric.UC, fabric.StateRTR}: ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN,
		{fabric.UD, fabric.StateRTR}: ibvQPState,
		{fabric.RC, fabric.StateRTS}: ibvQPState | ibvQPSQPSN | ibvQPTimeout | ibvQPRetryCnt | ibvQPRNRRetry | ibvQPMaxQPRdAtomic,
		{fabric.UC, fabric.StateRTS}: ibvQPState | ibvQPSQPSN,
		{fabric.UD, fabric.StateRTS}: ibvQPState | ibvQPSQPSN,
		// XRC as the kernel's ib_modify_qp_is_ok table has it.
		{fabric.XRCSend, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags,
		{fabric.XRCRecv, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags,
		{fabric.XRCSend, fabric.StateRTR}:  ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN,
		{fabric.XRCRecv, fabric.StateRTR}: ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN |
			ibvQPMaxDestRdAtomc | ibvQPMinRNRTimer,
		{fabric.XRCSend, fabric.StateRTS}: ibvQPState | ibvQPSQPSN | ibvQPTimeout | ibvQPRetryCnt | ibvQPRNRRetry | ibvQPMaxQPRdAtomic,
		{fabric.XRCRecv, fabric.StateRTS}: ibvQPState | ibvQPSQPSN | ibvQPTimeout,
		// DC as the kernel mlx5 driver's tables have it (a DCI's
		// modify_dci_qp_is_ok, a DCT's mlx5_ib_modify_dct): no
		// destination; the address vector carries the port (and GID
		// index); a DCT has no RTS.
		{fabric.DCI, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort,
		{fabric.DCT, fabric.StateInit}: ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags,
		{fabric.DCI, fabric.StateRTR}:  ibvQPState | ibvQPPathMTU | ibvQPAV,
		{fabric.DCT, fabric.StateRTR}:  ibvQPState | ibvQPPathMTU | ibvQPAV | ibvQPMinRNRTimer,
		{fabric.DCI, fabric.StateRTS}:  ibvQPState | ibvQPSQPSN | ibvQPTimeout | ibvQPRetryCnt | ibvQPRNRRetry | ibvQPMaxQPRdAtomic,
	}
	for _, typ := range []fabric.QPType{fabric.RC, fabric.UC, fabric.UD, fabric.XRCSend, fabric.XRCRecv, fabric.DCI, fabric.DCT} {
		for _, to := range []fabric.QPState{fabric.StateInit, fabric.StateRTR, fabric.StateRTS, fabric.StateReset, fabric.StateError} {
			w, ok := want[key{typ, to}]
			if !ok {
				w = ibvQPState
			}
			if got := modifyMask(typ, to); got != w {
				t.Errorf("modifyMask(%v, %v) = %#x, want %#x", typ, to, got, w)
			}
		}
	}
}

func TestErrnoMapping(t *testing.T) {
	for errno, want := range map[syscall.Errno]error{
		syscall.ENOMEM: fabric.ErrLimit, syscall.EINVAL: fabric.ErrInvalidArg, syscall.EBUSY: fabric.ErrBusy,
		syscall.ENODEV: fabric.ErrNoDevice, syscall.ENOSYS: fabric.ErrNoDevice, syscall.EPERM: fabric.ErrInvalidArg,
		syscall.EAGAIN: fabric.ErrLimit,
	} {
		err := errnoErr("ibv_x", errno, "a hint")
		if !errors.Is(err, want) || !errors.Is(err, errno) {
			t.Errorf("errnoErr(%v) = %v: want both %v and the errno", errno, err, want)
		}
	}
	if err := errnoErr("ibv_x", nil, ""); !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("errnoErr without errno: %v", err)
	}
	if err := errnoErr("ibv_x", errors.New("odd"), ""); !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("errnoErr of a non-errno: %v", err)
	}
	if !errors.Is(postErr("ibv_post_send", syscall.ENOMEM, 3), fabric.ErrQueueFull) ||
		!errors.Is(postErr("ibv_post_send", syscall.EINVAL, 0), fabric.ErrInvalidWR) ||
		!errors.Is(postErr("ibv_post_send", syscall.EIO, 0), fabric.ErrInvalidWR) {
		t.Error("post errors")
	}
}

func TestImmediateByteOrder(t *testing.T) {
	v := htonl(0x01020304)
	if b := *(*[4]byte)(unsafe.Pointer(&v)); b != [4]byte{1, 2, 3, 4} {
		t.Fatalf("htonl(0x01020304) is stored as %x, want 01020304 (network order)", b)
	}
	for _, x := range []uint32{0, 1, 0xdeadbeef, 42, 1 << 31} {
		if ntohl(htonl(x)) != x {
			t.Errorf("ntohl(htonl(%#x)) = %#x", x, ntohl(htonl(x)))
		}
	}
}

// TestAsyncEventErrors: error events become an error naming the device,
// the event and what it hit; informational events are not errors.
func TestAsyncEventErrors(t *testing.T) {
	for _, tc := range []struct {
		typ  int
		want string // "" for no error
	}{
		{ibvEventPortErr, "port 1 went down (IBV_EVENT_PORT_ERR)"},
		{ibvEventQPFatal, "queue pair 0x2a hit an error"},
		{ibvEventQPAccessErr, "queue pair 0x2a received a request it may not serve"},
		{ibvEventCQErr, "IBV_EVENT_CQ_ERR"},
		{ibvEventDeviceFatal, "IBV_EVENT_DEVICE_FATAL"},
		{ibvEventPortActive, ""},
		{ibvEventCommEst, ""},
		{ibvEventLIDChange, ""},
		{ibvEventQPLastWQEReached, ""},
	} {
		err := asyncEventError("mlx5_0", tc.typ, 0x2a, 1)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("event %d: %v, want none (informational)", tc.typ, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrAsyncEvent) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mlx5_0")):
			t.Errorf("event %d: %v, want an ErrAsyncEvent naming mlx5_0 and %q", tc.typ, err, tc.want)
		}
	}
}

// TestMRSizeLimit: ConnectX devices report max_mr_size as all ones; the
// backend must read that as no limit, not as -1 (which refused every
// registration on the software device, as it would have on a ConnectX).
func TestMRSizeLimit(t *testing.T) {
	for _, c := range []struct {
		in   uint64
		want int64
	}{{0xffffffffffffffff, 1<<63 - 1}, {1 << 63, 1<<63 - 1}, {1 << 40, 1 << 40}, {0, 0}} {
		if got := mrSizeLimit(c.in); got != c.want {
			t.Errorf("mrSizeLimit(%#x) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestRouteEvent: an asynchronous event fails what it names, not the whole
// device: a queue pair's error its queue pair, a port's going down only the
// port in use (until it comes back), a fatal error the device; a shared
// receive queue's limit event fails nothing and is reported by its queue.
func TestRouteEvent(t *testing.T) {
	d := &device{name: "mlx5_0", port: 1, pds: map[*pd]bool{}, cqs: map[*cq]bool{}, qps: map[uint32]*qp{}}
	q, other := &qp{qpn: 0x105}, &qp{qpn: 0x106}
	d.qps[q.qpn], d.qps[other.qpn] = q, other
	d.routeEvent(ibvEventQPAccessErr, 0x105, 0, 0)
	if q.event.Load() == nil || other.event.Load() != nil || d.fault.Load() != nil || d.portDown.Load() != nil {
		t.Fatalf("a queue pair's access error: on it %v, on another %v, device %v, port %v",
			q.event.Load(), other.event.Load(), d.fault.Load(), d.portDown.Load())
	}
	d.routeEvent(ibvEventQPFatal, 0x999, 0, 0) // a queue pair already destroyed
	d.routeEvent(ibvEventPortErr, 0, 2, 0)
	if d.portDown.Load() != nil || d.fault.Load() != nil {
		t.Fatal("port 2 going down failed a device used on port 1")
	}
	d.routeEvent(ibvEventPortErr, 0, 1, 0)
	if d.portDown.Load() == nil {
		t.Fatal("port 1 going down was not kept")
	}
	d.routeEvent(ibvEventPortActive, 0, 1, 0)
	if d.portDown.Load() != nil {
		t.Fatal("port 1 coming back did not clear its fault")
	}
	// A shared receive queue's limit event is no fault: it goes to the
	// queue it names (here one whose handle is nil, so at address 0).
	s := &srq{}
	d.pds[&pd{d: d, srqs: map[*srq]bool{s: true}}] = true
	d.routeEvent(ibvEventSRQLimitReached, 0, 0, 0x40)
	if s.LimitReached() {
		t.Fatal("the limit event of another shared receive queue reached this one")
	}
	d.routeEvent(ibvEventSRQLimitReached, 0, 0, 0)
	if !s.LimitReached() || s.LimitReached() || d.fault.Load() != nil {
		t.Fatalf("a limit event: reported %v, device fault %v; want reported once, no fault", s.fired.Load(), d.fault.Load())
	}
	d.routeEvent(ibvEventCommEst, 0x105, 0, 0)
	d.routeEvent(ibvEventDeviceFatal, 0, 0, 0)
	if e := d.fault.Load(); e == nil || !errors.Is(*e, ErrAsyncEvent) {
		t.Fatalf("a fatal device error: %v", e)
	}
}

// TestErrnoWithoutCode: a verb that fails with -1 (ibv_query_gid does) or
// without errno is reported as failing without an error number, never as
// "errno -1".
func TestErrnoWithoutCode(t *testing.T) {
	for _, err := range []error{nil, syscall.Errno(0), syscall.Errno(^uintptr(0))} {
		got := errnoErr("ibv_query_gid(mlx5_0, port 1, index 3)", err, "")
		if msg := got.Error(); strings.Contains(msg, "errno") || !strings.Contains(msg, "without an error number") || !errors.Is(got, fabric.ErrInvalidArg) {
			t.Errorf("%v: %q", err, msg)
		}
	}
}
