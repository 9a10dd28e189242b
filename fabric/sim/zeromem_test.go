package sim

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
)

// TestUnbackedRegions: in size-only mode a region is a view of the zero
// mapping until its program asks for its bytes or a byte that is not zero
// lands in it; the windows that move arrive intact either way, including
// into receives and reads posted while the destination was unbacked (their
// slices are moved onto the new bytes) and into a region whose program
// asked for its bytes after posting.
func TestUnbackedRegions(t *testing.T) {
	const msg, dstOff = 8192, 16384
	for _, tc := range []struct {
		name       string
		typ        fabric.QPType
		op         fabric.Opcode
		fill       bool // the source's program writes its bytes
		bytesAfter bool // the destination's program asks for its bytes after posting
		backed     bool // the destination has bytes of its own afterwards
	}{
		{"send of zeros", fabric.RC, fabric.OpSend, false, false, false},
		{"send of data", fabric.RC, fabric.OpSend, true, false, true},
		{"send into bytes asked for after the post", fabric.RC, fabric.OpSend, true, true, true},
		{"write of zeros", fabric.RC, fabric.OpWrite, false, false, false},
		{"write of data", fabric.RC, fabric.OpWrite, true, false, true},
		{"read of zeros", fabric.RC, fabric.OpRead, false, false, false},
		{"read of data", fabric.RC, fabric.OpRead, true, false, true},
		{"UD send of zeros (the GRH is not zero)", fabric.UD, fabric.OpSend, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Nodes: 2, Seed: 1, SizeOnly: true, TimeLimit: fabric.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			size := msg
			if tc.typ == fabric.UD {
				size = c.prof.Link.MTU - fabric.GRHBytes
			}
			// The reader of a read is node 0; otherwise node 1 receives.
			src, dst := 0, 1
			if tc.op == fabric.OpRead {
				src, dst = 1, 0
			}
			pattern := func(i int) byte { return byte(i*7 + 1) }
			var got []byte
			err = c.Run(func(th fabric.Thread) error {
				return th.Node().(*node).runUnbacked(th, tc.typ, tc.op, size, src, dst, tc.fill, tc.bytesAfter, pattern, &got)
			})
			if err != nil {
				t.Fatal(err)
			}
			m := c.nodes[dst].nic.mrs[0]
			if m.zero == tc.backed {
				t.Errorf("destination unbacked %v, want %v", m.zero, !tc.backed)
			}
			at := dstOff
			if tc.typ == fabric.UD {
				at += fabric.GRHBytes
			}
			for _, i := range []int{0, fabric.SizeOnlyWindow - 1, size - fabric.SizeOnlyWindow, size - 1} {
				want := byte(0)
				if tc.fill {
					want = pattern(i)
				}
				if got[at+i] != want {
					t.Errorf("byte %d of the message landed as %#x, want %#x", i, got[at+i], want)
				}
			}
		})
	}
}

// runUnbacked is one node's side of TestUnbackedRegions: a message of
// size bytes from offset 0 of node src's region to offset 16384 of node
// dst's; dst copies its region into got at the end.
func (n *node) runUnbacked(th fabric.Thread, typ fabric.QPType, op fabric.Opcode, size, src, dst int, fill, bytesAfter bool,
	pattern func(int) byte, got *[]byte) error {
	const dstOff = 16384
	cn, err := fabrictest.Connect(th, 1-n.id, fabrictest.Options{Type: typ, MRBytes: 64 << 10})
	if err != nil {
		return err
	}
	oob := n.OOB()
	if n.id == src && fill {
		b := cn.MR.Bytes()
		for i := range size {
			b[i] = pattern(i)
		}
	}
	if n.id == dst && op == fabric.OpSend {
		if _, err := cn.QP.PostRecv([]fabric.RecvWR{{ID: 1, Local: cn.MR.SGE(dstOff, 4096*4)}}); err != nil {
			return err
		}
	}
	if bytesAfter && n.id == dst {
		cn.MR.Bytes()
	}
	if err := oob.Barrier("posted"); err != nil {
		return err
	}
	poster, off, remote := src, 0, uint64(dstOff)
	if op == fabric.OpRead {
		poster, off, remote = dst, dstOff, 0
	}
	if n.id == poster {
		wr := fabric.SendWR{ID: 2, Op: op, Local: cn.MR.SGE(off, size), Flags: fabric.Signaled,
			RemoteAddr: cn.Peer.Addr + remote, RKey: cn.Peer.RKey, AH: cn.AH, RemoteQPN: cn.Peer.QPN, QKey: 0x11111111}
		if _, err := cn.QP.PostSend([]fabric.SendWR{wr}); err != nil {
			return err
		}
		if _, err := fabrictest.Await(th, cn.SCQ, 1, fabric.Millisecond); err != nil {
			return err
		}
	}
	if n.id == dst && op == fabric.OpSend {
		if wcs, err := fabrictest.Await(th, cn.RCQ, 1, fabric.Millisecond); err != nil || wcs[0].Status != fabric.StatusSuccess {
			return fmt.Errorf("receive: %v %v", wcs, err)
		}
	}
	if err := oob.Barrier("done"); err != nil {
		return err
	}
	if n.id == dst {
		m := cn.MR.(*mr)
		*got = append([]byte(nil), m.buf...) // not Bytes: that would give it bytes
	}
	return nil
}
