//go:build ibverbs

package ibv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file is the hardware-free half of the libibverbs mapping: the numeric
// values of the verbs enums this backend uses (mirrored from
// <infiniband/verbs.h>; the ibverbs build checks each against the header in
// its tests), and the pure functions that translate between them and the
// fabric contract. They need no device, so the ibverbs build's unit tests
// check them on any machine with the libibverbs headers; the file is
// behind the ibverbs tag with the rest of the backend.

// Values of enum ibv_qp_attr_mask.
const (
	ibvQPState          = 1 << 0
	ibvQPAccessFlags    = 1 << 3
	ibvQPPKeyIndex      = 1 << 4
	ibvQPPort           = 1 << 5
	ibvQPQKey           = 1 << 6
	ibvQPAV             = 1 << 7
	ibvQPPathMTU        = 1 << 8
	ibvQPTimeout        = 1 << 9
	ibvQPRetryCnt       = 1 << 10
	ibvQPRNRRetry       = 1 << 11
	ibvQPRQPSN          = 1 << 12
	ibvQPMaxQPRdAtomic  = 1 << 13
	ibvQPMinRNRTimer    = 1 << 15
	ibvQPSQPSN          = 1 << 16
	ibvQPMaxDestRdAtomc = 1 << 17
	ibvQPDestQPN        = 1 << 20
)

// Values of enum ibv_qp_state.
const (
	ibvQPSReset = 0
	ibvQPSInit  = 1
	ibvQPSRTR   = 2
	ibvQPSRTS   = 3
	ibvQPSSQD   = 4
	ibvQPSSQE   = 5
	ibvQPSErr   = 6
)

// Values of enum ibv_qp_type.
const (
	ibvQPTRC = 2
	ibvQPTUC = 3
	ibvQPTUD = 4
	// IBV_QPT_XRC_SEND and IBV_QPT_XRC_RECV.
	ibvQPTXRCSend = 9
	ibvQPTXRCRecv = 10
	// IBV_QPT_DRIVER: a provider's own type; mlx5's DCI and DCT are
	// created with it (mlx5dv_create_qp(3)).
	ibvQPTDriver = 0xff
)

// Values of enum ibv_wr_opcode.
const (
	ibvWRRDMAWrite        = 0
	ibvWRRDMAWriteWithImm = 1
	ibvWRSend             = 2
	ibvWRSendWithImm      = 3
	ibvWRRDMARead         = 4
)

// Values of enum ibv_send_flags.
const (
	ibvSendSignaled = 1 << 1
	ibvSendInline   = 1 << 3
)

// Values of enum ibv_access_flags.
const (
	ibvAccessLocalWrite  = 1
	ibvAccessRemoteWrite = 1 << 1
	ibvAccessRemoteRead  = 1 << 2
)

// Values of enum ibv_wc_opcode and of the wc_flags bit for immediate data.
const (
	ibvWCSend            = 0
	ibvWCRDMAWrite       = 1
	ibvWCRDMARead        = 2
	ibvWCRecv            = 1 << 7
	ibvWCRecvRDMAWithImm = ibvWCRecv + 1
	ibvWCWithImm         = 1 << 1
	ibvLinkLayerIB       = 1
	ibvLinkLayerEthernet = 2
)

// Values of enum ibv_event_type.
const (
	ibvEventCQErr            = 0
	ibvEventQPFatal          = 1
	ibvEventQPReqErr         = 2
	ibvEventQPAccessErr      = 3
	ibvEventCommEst          = 4
	ibvEventSQDrained        = 5
	ibvEventPathMig          = 6
	ibvEventPathMigErr       = 7
	ibvEventDeviceFatal      = 8
	ibvEventPortActive       = 9
	ibvEventPortErr          = 10
	ibvEventLIDChange        = 11
	ibvEventPKeyChange       = 12
	ibvEventSMChange         = 13
	ibvEventSRQErr           = 14
	ibvEventSRQLimitReached  = 15
	ibvEventQPLastWQEReached = 16
	ibvEventClientRereg      = 17
	ibvEventGIDChange        = 18
	ibvEventWQFatal          = 19
)

// eventScope is what an asynchronous error event of type typ fails: the
// queue pair or completion queue it names, the port it names (when it is
// the port in use), or the whole device; scopeNone for informational
// events (a port coming up, a connection established, a changed LID).
type eventScope int

const (
	scopeNone eventScope = iota
	scopeQP
	scopeCQ
	scopePort
	scopeDevice
	scopeSRQ // a shared receive queue's limit event: no error
)

func eventScopeOf(typ int) eventScope {
	switch typ {
	case ibvEventQPFatal, ibvEventQPReqErr, ibvEventQPAccessErr, ibvEventPathMigErr:
		return scopeQP
	case ibvEventCQErr:
		return scopeCQ
	case ibvEventSRQLimitReached:
		return scopeSRQ
	case ibvEventPortErr:
		return scopePort
	case ibvEventDeviceFatal, ibvEventSRQErr, ibvEventWQFatal:
		return scopeDevice
	}
	return scopeNone
}

// ErrAsyncEvent is a fault the device reported asynchronously (a port that
// went down, a fatal error of the device, a queue pair or a completion
// queue): every later Poll of the device's completion queues returns it.
var ErrAsyncEvent = errors.New("ibv: asynchronous error event")

// asyncEventError turns an asynchronous event of device dev into the error
// a run fails with, or nil for an event that only informs (a connection
// established, a port coming up, a changed LID or GID, ...).
func asyncEventError(dev string, typ int, qpn uint32, port int) error {
	var what string
	switch typ {
	case ibvEventCQErr:
		what = "a completion queue overran (IBV_EVENT_CQ_ERR): it was sized for fewer completions than were outstanding"
	case ibvEventQPFatal:
		what = fmt.Sprintf("queue pair %#x hit an error it could not report in a completion (IBV_EVENT_QP_FATAL)", qpn)
	case ibvEventQPReqErr:
		what = fmt.Sprintf("queue pair %#x received a request that violates the transport (IBV_EVENT_QP_REQ_ERR)", qpn)
	case ibvEventQPAccessErr:
		what = fmt.Sprintf("queue pair %#x received a request it may not serve: access or key violation (IBV_EVENT_QP_ACCESS_ERR)", qpn)
	case ibvEventPathMigErr:
		what = fmt.Sprintf("queue pair %#x failed to migrate to its alternate path (IBV_EVENT_PATH_MIG_ERR)", qpn)
	case ibvEventDeviceFatal:
		what = "the device reported a fatal error (IBV_EVENT_DEVICE_FATAL): it must be reset"
	case ibvEventPortErr:
		what = fmt.Sprintf("port %d went down (IBV_EVENT_PORT_ERR): check the cable, the switch port and the subnet manager", port)
	case ibvEventSRQErr:
		what = "a shared receive queue failed (IBV_EVENT_SRQ_ERR)"
	case ibvEventWQFatal:
		what = "a work queue hit a fatal error (IBV_EVENT_WQ_FATAL)"
	default:
		return nil
	}
	return fmt.Errorf("%w on %s: %s", ErrAsyncEvent, dev, what)
}

// Values of enum ibv_wc_status.
const (
	ibvWCSuccess         = 0
	ibvWCLocLenErr       = 1
	ibvWCLocQPOpErr      = 2
	ibvWCLocEECOpErr     = 3
	ibvWCLocProtErr      = 4
	ibvWCWRFlushErr      = 5
	ibvWCMWBindErr       = 6
	ibvWCBadRespErr      = 7
	ibvWCLocAccessErr    = 8
	ibvWCRemInvReqErr    = 9
	ibvWCRemAccessErr    = 10
	ibvWCRemOpErr        = 11
	ibvWCRetryExcErr     = 12
	ibvWCRNRRetryExcErr  = 13
	ibvWCGeneralErr      = 21
	ibvWCStatusEnumLimit = 24
)

// statusOf maps an ibv_wc_status to the contract's Status. Every status the
// contract names has an exact counterpart; the rest (EE contexts, memory
// windows, tag matching, fatal and general errors) become StatusGeneral, and
// the completion's VendorErr keeps the provider's detail.
func statusOf(s uint32) fabric.Status {
	switch s {
	case ibvWCSuccess:
		return fabric.StatusSuccess
	case ibvWCLocLenErr:
		return fabric.StatusLocalLength
	case ibvWCLocProtErr, ibvWCLocAccessErr:
		// LOC_ACCESS_ERR: the local buffer lacks the access the operation
		// needs (an RDMA Read into a region without local write): a local
		// protection failure in the contract's terms.
		return fabric.StatusLocalProtection
	case ibvWCWRFlushErr:
		return fabric.StatusFlushed
	case ibvWCRemAccessErr:
		return fabric.StatusRemoteAccess
	case ibvWCRemInvReqErr:
		return fabric.StatusRemoteInvalid
	case ibvWCRetryExcErr:
		return fabric.StatusRetryExceeded
	case ibvWCRNRRetryExcErr:
		return fabric.StatusRNRRetryExceeded
	}
	return fabric.StatusGeneral
}

// recvOpOf maps the opcode of a receive completion. Only meaningful for a
// successful completion (ibv_poll_cq(3): for other statuses only wr_id,
// status, qp_num and vendor_err are valid); failed receives are OpRecv.
func recvOpOf(status, opcode uint32) fabric.Opcode {
	if status == ibvWCSuccess && opcode == ibvWCRecvRDMAWithImm {
		return fabric.OpRecvWriteImm
	}
	return fabric.OpRecv
}

// wrOpcodeOf maps a send opcode to enum ibv_wr_opcode.
func wrOpcodeOf(op fabric.Opcode) (int32, bool) {
	switch op {
	case fabric.OpSend:
		return ibvWRSend, true
	case fabric.OpSendImm:
		return ibvWRSendWithImm, true
	case fabric.OpWrite:
		return ibvWRRDMAWrite, true
	case fabric.OpWriteImm:
		return ibvWRRDMAWriteWithImm, true
	case fabric.OpRead:
		return ibvWRRDMARead, true
	}
	return 0, false
}

// sendFlagsOf maps SendFlags to ibv_send_flags.
func sendFlagsOf(f fabric.SendFlags) uint32 {
	var out uint32
	if f&fabric.Signaled != 0 {
		out |= ibvSendSignaled
	}
	if f&fabric.Inline != 0 {
		out |= ibvSendInline
	}
	return out
}

// accessOf maps Access to ibv_access_flags. For a queue pair the contract's
// Access means the remote operations allowed (qp_access_flags); local write
// is meaningless there and harmless.
func accessOf(a fabric.Access) int32 {
	var out int32
	if a&fabric.AccessLocalWrite != 0 {
		out |= ibvAccessLocalWrite
	}
	if a&fabric.AccessRemoteWrite != 0 {
		out |= ibvAccessRemoteWrite
	}
	if a&fabric.AccessRemoteRead != 0 {
		out |= ibvAccessRemoteRead
	}
	return out
}

// qpTypeOf maps a transport to enum ibv_qp_type.
func qpTypeOf(t fabric.QPType) (int32, bool) {
	switch t {
	case fabric.RC:
		return ibvQPTRC, true
	case fabric.UC:
		return ibvQPTUC, true
	case fabric.UD:
		return ibvQPTUD, true
	case fabric.XRCSend:
		return ibvQPTXRCSend, true
	case fabric.XRCRecv:
		return ibvQPTXRCRecv, true
	case fabric.DCI, fabric.DCT:
		return ibvQPTDriver, true
	}
	return 0, false
}

// stateOf maps enum ibv_qp_state to QPState. SQD and SQE (which this backend
// never requests) read as RTS and ERROR respectively: SQD still sends what
// was posted, SQE has failed a send.
func stateOf(s int32) fabric.QPState {
	switch s {
	case ibvQPSReset:
		return fabric.StateReset
	case ibvQPSInit:
		return fabric.StateInit
	case ibvQPSRTR:
		return fabric.StateRTR
	case ibvQPSRTS, ibvQPSSQD:
		return fabric.StateRTS
	}
	return fabric.StateError
}

// ibvStateOf maps QPState to enum ibv_qp_state.
func ibvStateOf(s fabric.QPState) int32 {
	switch s {
	case fabric.StateReset:
		return ibvQPSReset
	case fabric.StateInit:
		return ibvQPSInit
	case fabric.StateRTR:
		return ibvQPSRTR
	case fabric.StateRTS:
		return ibvQPSRTS
	}
	return ibvQPSErr
}

// mrSizeLimit is max_mr_size as a byte count: mlx5 devices report "no
// limit" as all ones (0xffffffffffffffff in ibv_devinfo), which converted
// to int64 is -1 and refused every registration.
func mrSizeLimit(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// mtuBytes decodes enum ibv_mtu (1..5) into bytes; 0 for anything else.
func mtuBytes(e int32) int {
	if e < 1 || e > 5 {
		return 0
	}
	return 128 << e
}

// mtuEnum encodes a path MTU in bytes as enum ibv_mtu.
func mtuEnum(bytes int) (int32, bool) {
	for e := int32(1); e <= 5; e++ {
		if 128<<e == bytes {
			return e, true
		}
	}
	return 0, false
}

// linkLayerName names enum ibv_link_layer as DeviceAttr.LinkLayer does.
// Unspecified is what old kernels report for InfiniBand ports.
func linkLayerName(l uint8) string {
	if l == ibvLinkLayerEthernet {
		return "Ethernet"
	}
	return "InfiniBand"
}

// laneGbps is the data rate of one lane after line encoding, by the
// active_speed code of struct ibv_port_attr (IBTA PortInfo LinkSpeedActive,
// extended): SDR, DDR, QDR use 8b/10b; FDR10, FDR and EDR 64b/66b; HDR and
// NDR are quoted at their data rate. (XDR needs active_speed_ex of newer
// rdma-core and reads as 0 here.)
func laneGbps(speed uint8) float64 {
	switch speed {
	case 1:
		return 2 // SDR 2.5 Gbaud
	case 2:
		return 4 // DDR 5 Gbaud
	case 4:
		return 8 // QDR 10 Gbaud
	case 8:
		return 10 // FDR10 10.3125 Gbaud
	case 16:
		return 14.0625 * 64 / 66 // FDR
	case 32:
		return 25 // EDR 25.78125 Gbaud
	case 64:
		return 50 // HDR
	case 128:
		return 100 // NDR
	}
	return 0
}

// laneCount decodes the active_width code (1x, 4x, 8x, 12x, 2x).
func laneCount(width uint8) int {
	switch width {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// portRateGbps is DeviceAttr.RateGbps: lanes times the per-lane data rate;
// 0 when the port reports codes this table does not know.
func portRateGbps(width, speed uint8) float64 {
	return float64(laneCount(width)) * laneGbps(speed)
}

// legalTransition reports whether the contract allows from -> to (see
// fabric.QPState) and, if not, why. INIT -> INIT (changing access flags or
// the Q_Key) is allowed too, as in the simulator and the IBTA state table.
func legalTransition(from, to fabric.QPState) (bool, string) {
	switch to {
	case fabric.StateReset, fabric.StateError:
		return true, ""
	case fabric.StateInit:
		if from == fabric.StateReset || from == fabric.StateInit {
			return true, ""
		}
		return false, "INIT is reached from RESET"
	case fabric.StateRTR:
		if from == fabric.StateInit {
			return true, ""
		}
		return false, "RTR is reached from INIT"
	case fabric.StateRTS:
		if from == fabric.StateRTR {
			return true, ""
		}
		return false, "RTS is reached from RTR"
	}
	return false, fmt.Sprintf("unknown state %v", to)
}

// modifyMask is the ibv_modify_qp attribute mask for moving a queue pair of
// type t to state `to`, as the IBTA state table requires (the mandatory
// attributes of each transition and no optional ones): ibv_modify_qp(3)
// rejects a mask with missing or extra bits with EINVAL.
//
//	RESET->INIT  RC, UC: STATE PKEY_INDEX PORT ACCESS_FLAGS
//	             UD:     STATE PKEY_INDEX PORT QKEY
//	INIT->RTR    RC, XRC_RECV: STATE AV PATH_MTU DEST_QPN RQ_PSN MAX_DEST_RD_ATOMIC MIN_RNR_TIMER
//	             UC, XRC_SEND: STATE AV PATH_MTU DEST_QPN RQ_PSN
//	             UD:     STATE
//	RTR->RTS     RC, XRC_SEND: STATE SQ_PSN TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC
//	             XRC_RECV: STATE SQ_PSN TIMEOUT
//	             UC, UD: STATE SQ_PSN
//	->RESET, ->ERROR:    STATE
//
// DC queue pairs (mlx5, IBV_QPT_DRIVER) follow the kernel mlx5 driver's
// own tables instead, which name no destination:
//
//	RESET->INIT  DCI: STATE PKEY_INDEX PORT
//	             DCT: STATE PKEY_INDEX PORT ACCESS_FLAGS
//	INIT->RTR    DCI: STATE PATH_MTU AV (the port, service level and GID index; no destination)
//	             DCT: STATE PATH_MTU AV MIN_RNR_TIMER (the DCT is created in the device here)
//	RTR->RTS     DCI: STATE SQ_PSN TIMEOUT RETRY_CNT RNR_RETRY MAX_QP_RD_ATOMIC
//	             DCT: never (it stays in RTR)
func modifyMask(t fabric.QPType, to fabric.QPState) int32 {
	if t.DC() {
		return dcModifyMask(t, to)
	}
	switch to {
	case fabric.StateInit:
		if t == fabric.UD {
			return ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPQKey
		}
		return ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags
	case fabric.StateRTR:
		switch t {
		case fabric.RC, fabric.XRCRecv: // the responder's attributes: an XRC target is RC's responder
			return ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN | ibvQPMaxDestRdAtomc | ibvQPMinRNRTimer
		case fabric.UC, fabric.XRCSend:
			return ibvQPState | ibvQPAV | ibvQPPathMTU | ibvQPDestQPN | ibvQPRQPSN
		}
		return ibvQPState
	case fabric.StateRTS:
		switch t {
		case fabric.RC, fabric.XRCSend:
			return ibvQPState | ibvQPSQPSN | ibvQPTimeout | ibvQPRetryCnt | ibvQPRNRRetry | ibvQPMaxQPRdAtomic
		case fabric.XRCRecv: // the kernel's table: a target's RTS takes the timeout and SQ PSN only
			return ibvQPState | ibvQPSQPSN | ibvQPTimeout
		}
		return ibvQPState | ibvQPSQPSN
	}
	return ibvQPState
}

// dcModifyMask is modifyMask for a DCI or DCT (t).
func dcModifyMask(t fabric.QPType, to fabric.QPState) int32 {
	switch to {
	case fabric.StateInit:
		if t == fabric.DCT {
			return ibvQPState | ibvQPPKeyIndex | ibvQPPort | ibvQPAccessFlags
		}
		return ibvQPState | ibvQPPKeyIndex | ibvQPPort
	case fabric.StateRTR:
		if t == fabric.DCT {
			return ibvQPState | ibvQPPathMTU | ibvQPAV | ibvQPMinRNRTimer
		}
		return ibvQPState | ibvQPPathMTU | ibvQPAV
	case fabric.StateRTS:
		if t == fabric.DCI {
			return ibvQPState | ibvQPSQPSN | ibvQPTimeout | ibvQPRetryCnt | ibvQPRNRRetry | ibvQPMaxQPRdAtomic
		}
	}
	return ibvQPState
}

// qpAccessFor is the qp_access_flags for RESET->INIT: UC has no RDMA Read,
// so remote read is dropped there rather than rejected by the provider.
func qpAccessFor(t fabric.QPType, a fabric.Access) int32 {
	acc := accessOf(a) &^ ibvAccessLocalWrite
	if t == fabric.UC {
		acc &^= ibvAccessRemoteRead
	}
	return acc
}

// errnoErr maps a failed verb's errno to the contract's errors. op names
// the verb for the message; hint, when not empty, says what to check. The
// result wraps both the contract error (for errors.Is) and the errno.
// errNoCode stands for the error number of a verb that failed without one.
var errNoCode = errors.New("failed without an error number")

func errnoErr(op string, err error, hint string) error {
	var neg syscall.Errno
	if err == nil || (errors.As(err, &neg) && (neg == 0 || neg > 4095)) { // 4095: the largest error number Linux returns
		// A verb that failed without an error number (some return -1
		// and leave errno alone): "errno -1" would say nothing.
		err = errNoCode
	}
	var sentinel error
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOMEM, syscall.ENOSPC, syscall.EMFILE, syscall.ENFILE:
			sentinel = fabric.ErrLimit
		case syscall.EBUSY:
			sentinel = fabric.ErrBusy
		case syscall.ENODEV, syscall.ENXIO, syscall.ENOSYS, syscall.ENOENT:
			sentinel = fabric.ErrNoDevice
		case syscall.EAGAIN:
			sentinel = fabric.ErrLimit
		default: // EINVAL, EOPNOTSUPP, EPERM, EACCES, EFAULT...
			sentinel = fabric.ErrInvalidArg
		}
	} else {
		sentinel = fabric.ErrInvalidArg
	}
	if hint != "" {
		return fmt.Errorf("%w: ibv: %s: %w (%s)", sentinel, op, err, hint)
	}
	return fmt.Errorf("%w: ibv: %s: %w", sentinel, op, err)
}

// postErr maps the errno of ibv_post_send or ibv_post_recv: providers
// return ENOMEM for a full work queue and EINVAL for a malformed request.
func postErr(op string, errno syscall.Errno, index int) error {
	switch errno {
	case syscall.ENOMEM:
		return fmt.Errorf("%w: ibv: %s: the provider reports its queue full at request %d (%v)", fabric.ErrQueueFull, op, index, errno)
	case syscall.EINVAL:
		return fmt.Errorf("%w: ibv: %s: the provider rejected request %d (%v)", fabric.ErrInvalidWR, op, index, errno)
	}
	return fmt.Errorf("%w: ibv: %s: request %d: %v", fabric.ErrInvalidWR, op, index, errno)
}

// htonl and ntohl convert immediate data between the contract's host value
// and the value a uint32 field must hold so that its bytes in memory are the
// wire's big-endian imm_data (__be32 in <infiniband/verbs.h>).
func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

func ntohl(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}
