package fabric

import "fmt"

// The rules of the verbs objects' lifecycle and the checks of their
// arguments, for the backends that keep the objects themselves (sim,
// loopback): an object is closed once (ErrClosed the second time), not
// while other objects use it (ErrBusy), and not used once closed; an
// object handed to a verb must be of the node (of the backend) the verb
// runs on. Each function reports what is wrong as the error the verb
// returns, worded alike in every backend, or nil. The backends keep
// their own object types and locking: they find out whether an object
// is theirs (mine) and closed (dead), and apply these under their lock
// (loopback holds the NIC's mu, sim has entered the cluster).

// limitSource is " (name)" for the name of the configuration value a
// limit comes from (a simulator profile's field), or "".
func limitSource(source string) string {
	if source == "" {
		return ""
	}
	return " (" + source + ")"
}

// CheckPDAlive reports a verb called on a protection domain that was
// deallocated (dead).
func CheckPDAlive(dead bool) error {
	if dead {
		return fmt.Errorf("%w: protection domain deallocated", ErrClosed)
	}
	return nil
}

// CheckDeallocPD checks PD.Dealloc of a protection domain used by users
// memory regions, queue pairs, address handles, SRQs and XRC domains.
func CheckDeallocPD(dead bool, users int) error {
	if dead {
		return fmt.Errorf("%w: protection domain deallocated twice", ErrClosed)
	}
	if users > 0 {
		return fmt.Errorf("%w: protection domain still has %d memory regions, queue pairs or address handles", ErrBusy, users)
	}
	return nil
}

// CheckCQDepth checks the depth of a completion queue against the
// device's most (max_cqe, from source: see limitSource).
func CheckCQDepth(depth, most int, source string) error {
	if depth < 1 || depth > most {
		return fmt.Errorf("%w: CQ depth %d outside 1..%d%s", ErrLimit, depth, most, limitSource(source))
	}
	return nil
}

// CheckDestroyCQ checks CQ.Destroy of a completion queue used by users
// queue pairs and XRC SRQs.
func CheckDestroyCQ(dead bool, users int) error {
	if dead {
		return fmt.Errorf("%w: completion queue destroyed twice", ErrClosed)
	}
	if users > 0 {
		return fmt.Errorf("%w: completion queue still used by %d queue pairs", ErrBusy, users)
	}
	return nil
}

// CheckRegMR checks PD.RegMR's arguments, as ibv_reg_mr does: a length
// in 1..most (max_mr_size, from source: see limitSource), and remote
// write access only with local write access.
func CheckRegMR(length int, most int64, access Access, source string) error {
	if length < 1 || int64(length) > most {
		return fmt.Errorf("%w: memory region of %d bytes outside 1..%d%s", ErrInvalidArg, length, most, limitSource(source))
	}
	if access&AccessRemoteWrite != 0 && access&AccessLocalWrite == 0 {
		return fmt.Errorf("%w: remote write access requires local write access (as in ibv_reg_mr)", ErrInvalidArg)
	}
	return nil
}

// CheckDeregMR checks MR.Dereg of the region with key key.
func CheckDeregMR(key uint32, dead bool) error {
	if dead {
		return fmt.Errorf("%w: memory region %#x deregistered twice", ErrClosed, key)
	}
	return nil
}

// CheckDestroyAH checks AH.Destroy.
func CheckDestroyAH(dead bool) error {
	if dead {
		return fmt.Errorf("%w: address handle destroyed twice", ErrClosed)
	}
	return nil
}

// CheckDestroyQP checks QP.Destroy of q.
func CheckDestroyQP(q fmt.Stringer, destroyed bool) error {
	if destroyed {
		return fmt.Errorf("%w: %v destroyed twice", ErrClosed, q)
	}
	return nil
}

// CheckSRQInit checks the sizes in an SRQ's arguments: a depth in
// 1..maxWR (max_qp_wr, from source: see limitSource) and at most one
// scatter/gather element, which is what device (named in the error)
// has.
func CheckSRQInit(init SRQInit, maxWR int, source, device string) error {
	if init.MaxWR < 1 || init.MaxWR > maxWR {
		return fmt.Errorf("%w: shared receive queue depth %d outside 1..%d%s", ErrLimit, init.MaxWR, maxWR, limitSource(source))
	}
	if init.MaxSGE < 0 || init.MaxSGE > 1 {
		return fmt.Errorf("%w: %d scatter/gather elements per receive; %s has 1", ErrLimit, init.MaxSGE, device)
	}
	return nil
}

// CheckSRQAlive reports a verb called on s once destroyed (dead).
func CheckSRQAlive(s fmt.Stringer, dead bool) error {
	if dead {
		return fmt.Errorf("%w: %v", ErrClosed, s)
	}
	return nil
}

// CheckSRQLimit checks the limit SRQ.ArmLimit (or SRQInit.Limit) arms on
// s, of depth maxWR: 0 disarms, and an armed limit is below the depth.
func CheckSRQLimit(s fmt.Stringer, limit, maxWR int) error {
	if limit < 0 || limit >= maxWR {
		return fmt.Errorf("%w: %v: limit %d outside 0..%d (below its depth)", ErrInvalidArg, s, limit, maxWR-1)
	}
	return nil
}

// SRQLimitFires reports whether the limit event of an SRQ with limit
// armed (0: disarmed) fires now that left receives remain in it: the
// first time they fall below the limit. The SRQ then disarms.
func SRQLimitFires(limit, left int) bool {
	return limit > 0 && left < limit
}

// CheckDestroySRQ checks SRQ.Destroy of s, to which users queue pairs
// are attached.
func CheckDestroySRQ(s fmt.Stringer, dead bool, users int) error {
	if dead {
		return fmt.Errorf("%w: %v destroyed twice", ErrClosed, s)
	}
	if users > 0 {
		return fmt.Errorf("%w: %v still has %d queue pairs attached", ErrBusy, s, users)
	}
	return nil
}

// CheckAttachSRQ checks the shared receive queue s in a queue pair's
// arguments (what is not for that queue pair to attach to): one of this
// node's (mine; else ErrInvalidArg naming device, where it must come
// from), alive, and of the queue pair's protection domain (samePD). An
// XRC SRQ, which no queue pair attaches to, is the caller's to refuse.
func CheckAttachSRQ(s fmt.Stringer, mine, dead, samePD bool, device string) error {
	switch {
	case !mine:
		return fmt.Errorf("%w: CreateQP with a shared receive queue that is not %s", ErrInvalidArg, device)
	case dead:
		return fmt.Errorf("%w: CreateQP with a destroyed shared receive queue", ErrClosed)
	case !samePD:
		return fmt.Errorf("%w: %v belongs to another protection domain", ErrInvalidArg, s)
	}
	return nil
}

// CheckCloseXRCD checks XRCD.Close of d, in which users XRC SRQs and
// target queue pairs are open.
func CheckCloseXRCD(d fmt.Stringer, dead bool, users int) error {
	if dead {
		return fmt.Errorf("%w: %v closed twice", ErrClosed, d)
	}
	if users > 0 {
		return fmt.Errorf("%w: %v still has %d XRC SRQs and target queue pairs", ErrBusy, d, users)
	}
	return nil
}

// CheckXRCD checks the XRC domain in the arguments of verb what: one of
// this node's (mine), alive.
func CheckXRCD(what string, mine, dead bool) error {
	switch {
	case !mine:
		return fmt.Errorf("%w: %s with an XRC domain that is not this node's", ErrInvalidArg, what)
	case dead:
		return fmt.Errorf("%w: %s with a closed XRC domain", ErrClosed, what)
	}
	return nil
}

// CheckSRQCQ checks the completion queue in an SRQ's arguments, as
// ibv_create_srq_ex does: only an XRC SRQ (init.XRCD set) has one, and it
// needs one. For an XRC SRQ, mine and dead tell whether init.CQ is of
// this node and destroyed; the caller checks init.XRCD (CheckXRCD) first.
func CheckSRQCQ(init SRQInit, mine, dead bool) error {
	switch {
	case init.XRCD == nil && init.CQ != nil:
		return fmt.Errorf("%w: CreateSRQ with a completion queue but no XRC domain (only XRC SRQs have a CQ)", ErrInvalidArg)
	case init.XRCD == nil:
		return nil
	case !mine:
		return fmt.Errorf("%w: an XRC SRQ needs a completion queue of this node", ErrInvalidArg)
	case dead:
		return fmt.Errorf("%w: CreateSRQ with a destroyed CQ", ErrClosed)
	}
	return nil
}

// XRCSRQObjects checks the XRC part of an SRQ's arguments and returns
// the backend's XRC domain and completion queue for an XRC SRQ (zero
// values for any other SRQ): the domain first, with domain (which checks
// it as CheckXRCD does, for verb CreateSRQ), then the completion queue
// (CheckSRQCQ), which cq converts, reporting whether it is of this node
// (mine) and destroyed (dead).
func XRCSRQObjects[D, Q any](init SRQInit, domain func(XRCD, string) (D, error), cq func(CQ) (q Q, mine, dead bool)) (D, Q, error) {
	var d D
	var zq Q
	if init.XRCD != nil {
		var err error
		if d, err = domain(init.XRCD, "CreateSRQ"); err != nil {
			return d, zq, err
		}
	}
	q, mine, dead := cq(init.CQ)
	if err := CheckSRQCQ(init, mine, dead); err != nil || init.XRCD == nil {
		var zd D
		return zd, zq, err
	}
	return d, q, nil
}

// CheckXRCQPInit checks what an XRC queue pair's arguments name, as
// ibv_create_qp_ex does: no shared receive queue; an XRCRecv queue pair
// needs an XRC domain (the caller then checks it, CheckXRCD), and only
// it is created in one.
func CheckXRCQPInit(init QPInit) error {
	switch {
	case init.SRQ != nil:
		return fmt.Errorf("%w: an %v queue pair takes no shared receive queue", ErrInvalidArg, init.Type)
	case init.Type == XRCRecv && init.XRCD == nil:
		return fmt.Errorf("%w: an XRC_RECV queue pair needs an XRC domain", ErrInvalidArg)
	case init.Type != XRCRecv && init.XRCD != nil:
		return fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", ErrInvalidArg)
	}
	return nil
}

// CheckSendCQ checks the send completion queue of an XRCSend queue pair:
// one of device's (mine, device names it in the error), not destroyed.
func CheckSendCQ(mine, dead bool, device string) error {
	switch {
	case !mine:
		return fmt.Errorf("%w: CreateQP needs a send CQ of %s", ErrInvalidArg, device)
	case dead:
		return fmt.Errorf("%w: CreateQP with a destroyed CQ", ErrClosed)
	}
	return nil
}

// CheckDCQPInit checks what a DC queue pair's arguments name, as
// mlx5dv_create_qp does: no XRC domain; a DCI no shared receive queue
// (it receives nothing); a DCT a shared receive queue (the caller then
// checks it, CheckAttachSRQ, and refuses an XRC one) and a receive
// completion queue (the caller checks it is of its node, CheckSendCQ's
// way).
func CheckDCQPInit(init QPInit) error {
	switch {
	case init.XRCD != nil:
		return fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", ErrInvalidArg)
	case init.Type == DCI && init.SRQ != nil:
		return fmt.Errorf("%w: a DCI takes no shared receive queue (it receives nothing)", ErrInvalidArg)
	case init.Type == DCT && init.SRQ == nil:
		return fmt.Errorf("%w: a DCT needs a shared receive queue", ErrInvalidArg)
	case init.Type == DCT && init.RecvCQ == nil:
		return fmt.Errorf("%w: a DCT needs a completion queue (RecvCQ)", ErrInvalidArg)
	case init.Type == DCI && init.SendCQ == nil:
		return fmt.Errorf("%w: a DCI needs a send completion queue", ErrInvalidArg)
	}
	return nil
}

// CheckPostRecvDC refuses PostRecv on q, a DC queue pair of type typ
// (nil for any other type): a DCI receives nothing, a DCT takes its
// receives from its shared receive queue.
func CheckPostRecvDC(q fmt.Stringer, typ QPType) error {
	switch typ {
	case DCI:
		return fmt.Errorf("%w: %v has no receive queue (a DCI only sends)", ErrInvalidArg, q)
	case DCT:
		return fmt.Errorf("%w: %v has no receive queue (a DCT takes its receives from its SRQ: post them there)", ErrInvalidArg, q)
	}
	return nil
}

// Lifecycle is a verbs object's life in a backend that keeps its objects
// itself (sim, loopback), as QPAttr.Transition is a queue pair's states:
// how many objects use it (made in it, attached to it) and whether it was
// closed. A backend embeds one in each object and calls it under its own
// lock.
type Lifecycle struct {
	users int
	dead  bool
}

// Dead reports whether the object was closed.
func (l *Lifecycle) Dead() bool { return l.dead }

// Users is how many objects use it.
func (l *Lifecycle) Users() int { return l.users }

// Use counts one more object using it.
func (l *Lifecycle) Use() { l.users++ }

// Release counts one object fewer using it.
func (l *Lifecycle) Release() { l.users-- }

// End closes the object unless refused, the backend's verdict on the
// close (CheckDeallocPD and the like, which read Dead and Users), is an
// error, which End returns; the objects it used (used) each count one
// user fewer.
func (l *Lifecycle) End(refused error, used ...*Lifecycle) error {
	if refused != nil {
		return refused
	}
	l.dead = true
	for _, u := range used {
		u.users--
	}
	return nil
}

// Domain is a protection domain's lifecycle: the memory regions, queue
// pairs, address handles, SRQs and XRC domains made in it.
type Domain struct{ Lifecycle }

// Alive reports a verb called on the domain once deallocated.
func (d *Domain) Alive() error { return CheckPDAlive(d.dead) }

// Register checks PD.RegMR's arguments on the domain (alive, and
// CheckRegMR's length in 1..most and access) and counts the region in it.
func (d *Domain) Register(length int, most int64, access Access, source string) error {
	if err := d.Alive(); err != nil {
		return err
	}
	if err := CheckRegMR(length, most, access, source); err != nil {
		return err
	}
	d.Use()
	return nil
}

// Free deallocates the domain (PD.Dealloc): refused twice, and while
// objects are still made in it.
func (d *Domain) Free() error { return d.End(CheckDeallocPD(d.dead, d.users)) }

// Region is a memory region's identity and lifecycle in those backends:
// the node it is on, its key (the same lkey and rkey), its first address,
// its access, and the domain it was registered in. It implements MR's
// Addr, LKey, RKey, SGE and String; the backend keeps the memory.
type Region struct {
	Lifecycle
	Node   int
	Key    uint32
	Base   uint64
	Access Access
	Domain *Domain
}

func (r *Region) Addr() uint64   { return r.Base }
func (r *Region) LKey() uint32   { return r.Key }
func (r *Region) RKey() uint32   { return r.Key }
func (r *Region) String() string { return fmt.Sprintf("MR(node %d, key %#x)", r.Node, r.Key) }

// SGE is n bytes of the region from offset off.
func (r *Region) SGE(off, n int) SGE {
	return SGE{Addr: r.Base + uint64(off), Length: uint32(n), LKey: r.Key}
}

// Deregister ends the region (MR.Dereg; ErrClosed the second time) and
// counts it out of its domain.
func (r *Region) Deregister() error {
	return r.End(CheckDeregMR(r.Key, r.dead), &r.Domain.Lifecycle)
}

// Offset is where [addr, addr+n) starts in the region, whose memory is
// size bytes, and false when the range does not lie inside it. The check
// cannot overflow: addr+n may wrap around 2^64 for addresses a peer or a
// caller made up.
func (r *Region) Offset(addr, n uint64, size int) (uint64, bool) {
	s := uint64(size)
	if addr < r.Base || addr-r.Base > s || n > s-(addr-r.Base) {
		return 0, false
	}
	return addr - r.Base, true
}

// The checks a backend that keeps its own queues (sim, loopback) makes of
// a send at PostSend, beside CheckOp, worded alike in every backend.

// CheckSendSlot refuses a send on q when its send queue, depth requests
// deep, holds used requests already (ErrQueueFull).
func CheckSendSlot(q fmt.Stringer, used uint64, depth int) error {
	if used >= uint64(depth) {
		return fmt.Errorf("%w: %v send queue holds %d requests; poll completions (a slot is free again once its completion, or for an unsignaled request a later one, has been polled)",
			ErrQueueFull, q, depth)
	}
	return nil
}

// CheckUDSend checks a UD send's address handle and length: a live
// handle of this device (live; device names the backend), of the queue
// pair's protection domain (samePD), and a message within the path MTU.
func CheckUDSend(live, samePD bool, length, mtu int, device string) error {
	switch {
	case !live:
		return fmt.Errorf("%w: UD send needs a live address handle of this %s", ErrInvalidWR, device)
	case !samePD:
		return fmt.Errorf("%w: address handle from another protection domain", ErrInvalidWR)
	case length > mtu:
		return fmt.Errorf("%w: UD message of %d bytes exceeds the MTU of %d bytes", ErrMsgTooLarge, length, mtu)
	}
	return nil
}

// CheckSize checks wr's length on a queue pair of type typ: at most 2 GiB
// on every type but UD (whose limit is the MTU: CheckUDSend), and at most
// maxInline bytes when it is inline.
func (wr *SendWR) CheckSize(typ QPType, maxInline int) error {
	n := int(wr.Local.Length)
	if typ != UD && int64(n) > 1<<31 {
		return fmt.Errorf("%w: message of %d bytes exceeds 2 GiB", ErrMsgTooLarge, n)
	}
	if wr.Flags&Inline != 0 && n > maxInline {
		return fmt.Errorf("%w: %d bytes inline, queue pair allows %d", ErrInlineTooLarge, n, maxInline)
	}
	return nil
}

// CheckPostRecv checks PostRecv on q, a queue pair of type typ in state
// state: not destroyed, of a type with a receive queue of its own (not
// XRC, not DC: CheckPostRecvDC), not taking its receives from an SRQ
// (attached: then srq names it), and past RESET.
func CheckPostRecv(q fmt.Stringer, typ QPType, state QPState, destroyed bool, srq fmt.Stringer, attached bool) error {
	switch {
	case destroyed:
		return fmt.Errorf("%w: %v", ErrClosed, q)
	case typ == XRCSend || typ == XRCRecv:
		return fmt.Errorf("%w: %v has no receive queue (XRC receives are posted to an XRC SRQ)", ErrInvalidArg, q)
	}
	if err := CheckPostRecvDC(q, typ); err != nil {
		return err
	}
	switch {
	case attached:
		return fmt.Errorf("%w: %v takes its receives from %v: post them there", ErrInvalidArg, q, srq)
	case state == StateReset:
		return fmt.Errorf("%w: %v is in RESET; PostRecv needs INIT or later", ErrBadState, q)
	}
	return nil
}
