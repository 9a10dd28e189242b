package fabric

import "fmt"

// Opcode names the operation of a send work request and of a work completion.
type Opcode uint8

// Send-side opcodes (SendWR.Op) and the receive-side opcodes reported in a
// work completion.
const (
	OpSend         Opcode = iota + 1 // two-sided send; consumes a receive at the target
	OpSendImm                        // send with 32-bit immediate data
	OpWrite                          // RDMA Write: one-sided, no receive consumed
	OpWriteImm                       // RDMA Write with immediate: consumes a receive, reports Imm
	OpRead                           // RDMA Read: one-sided, data flows back to the requester
	OpRecv                           // completion of a receive consumed by a send
	OpRecvWriteImm                   // completion of a receive consumed by a write with immediate
)

var opNames = [...]string{"?", "SEND", "SEND_IMM", "RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "RECV", "RECV_RDMA_WITH_IMM"}

func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// HasImm reports whether the opcode carries immediate data.
func (o Opcode) HasImm() bool { return o == OpSendImm || o == OpWriteImm }

// Status is the outcome of a work request, as in ibv_wc_status.
type Status uint8

// Statuses. Any status other than StatusSuccess moves the queue pair to
// StateError and flushes every outstanding request of that queue pair with
// StatusFlushed (except receive length errors on UD and UC queue pairs,
// which affect only that receive; on UC some providers instead drop the
// message silently, without a completion).
const (
	StatusSuccess          Status = iota
	StatusLocalLength             // local length error: message longer than the receive buffer, or UD above MTU
	StatusLocalProtection         // local protection error: SGE outside a registered region or wrong lkey
	StatusFlushed                 // flushed because the queue pair entered the error state
	StatusRemoteAccess            // remote access error: bad rkey, bounds or permission at the target
	StatusRemoteInvalid           // remote invalid request: e.g. a send too long for the target's receive
	StatusRetryExceeded           // transport retry counter exceeded (no ACK after retry_cnt timeouts)
	StatusRNRRetryExceeded        // receiver-not-ready retry counter exceeded
	StatusGeneral                 // any other error
)

var statusNames = [...]string{"success", "local length error", "local protection error", "flushed",
	"remote access error", "remote invalid request", "transport retry exceeded", "RNR retry exceeded", "general error"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// SendFlags modify a send work request.
type SendFlags uint8

// Send flags.
const (
	// Signaled asks for a completion on success. Unsignaled requests
	// complete silently; their send-queue slots are released only when a
	// later signaled request on the same queue pair completes and that
	// completion has been polled (every slot is freed by polling, as in
	// libibverbs providers).
	Signaled SendFlags = 1 << iota
	// Inline copies the payload into the work request during PostSend; no
	// lkey is needed and the buffer is free again when PostSend returns.
	Inline
)

// SGE is a scatter/gather element: Length bytes at virtual address Addr of a
// memory region whose local key is LKey. Addr comes from MR.Addr.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a send work request. Fields not used by Op are ignored.
//
// Ownership: the SGE's bytes belong to the NIC until the request completes
// (see the package comment); the SendWR value itself is copied by PostSend.
type SendWR struct {
	ID    uint64 // caller's identifier, returned in the work completion (wr_id)
	Local SGE    // source (send, write) or destination (read) buffer
	Op    Opcode // OpSend, OpSendImm, OpWrite, OpWriteImm or OpRead
	Flags SendFlags
	Imm   uint32 // immediate data for OpSendImm and OpWriteImm (a value; backends convert to the wire's big-endian imm_data)

	// RDMA operations: the remote buffer.
	RemoteAddr uint64
	RKey       uint32
	// RemoteSRQN is, for a request on an XRCSend queue pair (every
	// opcode), the number of the remote XRC shared receive queue it is
	// for (wr.qp_type.xrc.remote_srqn); 0 is refused there with
	// ErrInvalidArg. Ignored by every other type.
	RemoteSRQN uint32

	// UD and DCI: destination. A QKey with the high bit set (a controlled
	// Q_Key) sends the sending queue pair's own Q_Key instead (UD only).
	// On a DCI, AH is the target's port and RemoteQPN the DCT's number;
	// both are required there (ErrInvalidWR without them).
	AH        AH
	RemoteQPN uint32
	QKey      uint32
	// DCKey is, on a DCI, the access key of the DCT the request is for
	// (mlx5dv_wr_set_dc_addr's remote_dctn key); a DCT answers a request
	// with another key than its own with a remote access error. Ignored
	// by every other type.
	DCKey uint64
}

// RecvWR is a receive work request: one buffer to be filled by an incoming
// send (or consumed by a write with immediate, which writes nothing into it).
// For UD the first 40 bytes receive the global route header (GRH); the
// payload follows. The GRH bytes are defined only for globally routed
// traffic (RoCE, or Address.UseGID): on InfiniBand hardware with LID
// routing they are reserved but not written, so designs must not read
// them (the simulator always writes a GRH).
type RecvWR struct {
	ID    uint64
	Local SGE
}

// GRHBytes is the size of the global route header placed in front of every
// UD payload in the receive buffer.
const GRHBytes = 40

// WC is a work completion.
type WC struct {
	ID     uint64 // the wr_id of the request
	Status Status
	Op     Opcode // for receives: OpRecv or OpRecvWriteImm
	Bytes  int    // bytes received (receives; includes the GRH for UD) or transferred
	Imm    uint32 // immediate data when HasImm
	HasImm bool
	QPN    uint32 // local queue pair number
	SrcQP  uint32 // UD receives: source queue pair number
	SrcLID uint16 // UD receives: source LID
	// VendorErr carries a backend-specific detail for errors (errno-like).
	VendorErr uint32
}

func (wc WC) String() string {
	return fmt.Sprintf("wc{id=%d %v %v bytes=%d qpn=%d}", wc.ID, wc.Op, wc.Status, wc.Bytes, wc.QPN)
}

// CheckOp reports whether a queue pair of type typ can post wr's opcode:
// UD posts sends only, RDMA Read needs RC or XRC_SEND and is never inline,
// only send-queue opcodes can be posted, every request of an XRC_SEND
// queue pair names its remote XRC SRQ, and every request of a DCI its
// target (address handle and DCT number). The error wraps ErrInvalidWR and
// names the rule; every backend applies it at PostSend.
func (wr *SendWR) CheckOp(typ QPType) error {
	switch wr.Op {
	case OpSend, OpSendImm:
	case OpWrite, OpWriteImm:
		if typ == UD {
			return fmt.Errorf("%w: %v on a UD queue pair (UD supports only sends)", ErrInvalidWR, wr.Op)
		}
	case OpRead:
		if typ != RC && typ != XRCSend && typ != DCI {
			return fmt.Errorf("%w: RDMA Read needs an RC, XRC_SEND or DCI queue pair, not %v", ErrInvalidWR, typ)
		}
		if wr.Flags&Inline != 0 {
			return fmt.Errorf("%w: RDMA Read cannot be inline", ErrInvalidWR)
		}
	default:
		return fmt.Errorf("%w: opcode %v cannot be posted to a send queue", ErrInvalidWR, wr.Op)
	}
	if typ == XRCSend && wr.RemoteSRQN == 0 {
		return fmt.Errorf("%w: %v on an XRC_SEND queue pair names no remote XRC SRQ (RemoteSRQN 0)", ErrInvalidWR, wr.Op)
	}
	if typ == DCI && (wr.AH == nil || wr.RemoteQPN == 0 || wr.RemoteQPN >= 1<<24) {
		return fmt.Errorf("%w: %v on a DCI needs DC addressing: an address handle and the target DCT's number (RemoteQPN %#x)", ErrInvalidWR, wr.Op, wr.RemoteQPN)
	}
	return nil
}
