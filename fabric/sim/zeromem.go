package sim

// Registered memory that is not backed in size-only mode.
//
// In size-only mode the NIC moves only the first and last
// fabric.SizeOnlyWindow bytes of each message, so a region that its
// program never reads or writes (perftest's bandwidth tests register one
// 4 KiB slot per queue pair and never look at it) holds zeros for the
// whole run. Such a region starts as a view of a shared read-only zero
// mapping (zeroView): it costs address space, not memory. It gets real
// bytes (materialize) the first time its program asks for them (MR.Bytes)
// or the NIC stores a byte that is not zero into it (a message from a
// region whose program wrote it, a UD receive's GRH). Skipping the store
// of zeros into zeros changes nothing the program or the checker can
// observe, so every result is the same as with backed regions.
//
// Slices of a region's bytes kept in work requests (and the checker's
// records of them) are moved to the new bytes when it materializes:
// every such slice reaches to the end of the region (m.buf[off:off+n],
// never a three-index slice), so its offset is cap(m.buf) - cap(b) in
// the zero view and in the new bytes alike (mr.span).

// unbacked reports whether m is a view of the zero mapping.
func (m *mr) unbacked() bool { return m != nil && m.zero }

// materialize gives m bytes of its own (all zero, as the view was) and
// moves every slice of m held by the queue pairs of its NIC onto them.
func (m *mr) materialize() {
	if !m.zero {
		return
	}
	m.buf, m.zero = m.newRegionBytes(len(m.buf)), false
	for _, q := range m.nic.qps {
		if q != nil {
			q.rebase(m)
		}
	}
}

// rebased returns b, a slice of m's bytes, as the same bytes of m.buf.
func (m *mr) rebased(b []byte) []byte {
	if b == nil {
		return nil
	}
	off := cap(m.buf) - cap(b)
	return m.buf[off : off+len(b)]
}

// rebase moves q's slices of m onto m.buf: the buffers of its work
// requests (every slot: a released one is rewritten before it is used
// again), the checker's records of them, and the RDMA Reads it answers.
// (A receive names its buffer by offset, and so does the RDMA Write in
// progress.)
func (q *qp) rebase(m *mr) {
	for i := range q.sq {
		e := &q.sq[i]
		if e.mr == m {
			e.buf = m.rebased(e.buf)
		}
		if e.ck.mr == m {
			e.ck.buf = m.rebased(e.ck.buf)
		}
	}
	if q.rd != nil {
		for i := range q.rd.reads {
			if r := &q.rd.reads[i]; r.mr == m {
				r.buf = m.rebased(r.buf)
			}
		}
	}
}

// storeInto writes p's moving bytes into dst, a slice of m's bytes
// (packet.storePayload), giving m bytes of its own first unless it is
// unbacked and they are all zero.
func storeInto(m *mr, dst []byte, p *packet) {
	if m.unbacked() {
		if allZero(p.data) {
			return
		}
		m.materialize()
		dst = m.rebased(dst)
	}
	p.storePayload(dst)
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
