package ibnet

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seed adds every testdata file matching pattern to f's corpus.
func seed(f *testing.F, patterns ...string) {
	for _, pat := range patterns {
		names, err := filepath.Glob(filepath.Join("testdata", pat))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// FuzzReadIBNetDiscover: no panics, and whatever is read is written and
// read back to the same fabric.
func FuzzReadIBNetDiscover(f *testing.F) {
	seed(f, "*.ibnetdiscover", "small.golden")
	f.Add([]byte("Switch\t4 \"S-1\"\t# \"s\" lid 1\n[1]\t\"H-2\"[1](3)\t# \"h\" lid 2\nCa\t1 \"H-2\"\t# \"h\"\n[1](3)\t\"S-1\"[1]\t# lid 2 lmc 0 \"s\" lid 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := ReadIBNetDiscover(bytes.NewReader(data), "fuzz")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteIBNetDiscover(&buf, tp); err != nil {
			if errors.Is(err, ErrUnsupported) {
				return // a name with a line break
			}
			t.Fatalf("read but cannot write: %v", err)
		}
		back, err := ReadIBNetDiscover(&buf, "fuzz")
		if err != nil {
			t.Fatalf("cannot read what was written: %v\n%s", err, buf.Bytes())
		}
		if d := diffFabric(tp, back); d != "" {
			t.Fatalf("read back differently: %s", d)
		}
	})
}

// FuzzReadLFTs: no panics against the small fabric, and tables read are
// written and read back the same.
func FuzzReadLFTs(f *testing.F) {
	seed(f, "*.ibroute", "*.lfts.golden")
	small := smallFabric(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := ReadLFTs(bytes.NewReader(data), small)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteLFTs(&buf, small, tb); err != nil {
			t.Fatalf("read but cannot write: %v", err)
		}
		back, err := ReadLFTs(&buf, small)
		if err != nil {
			t.Fatalf("cannot read what was written: %v", err)
		}
		if !reflect.DeepEqual(back.Out, tb.Out) {
			t.Fatal("read back differently")
		}
	})
}

// FuzzReadYAML: no panics; whatever is read is a valid fabric.
func FuzzReadYAML(f *testing.F) {
	seed(f, "*.yaml")
	f.Add([]byte("switches: [{name: a, ports: 2}]\nhosts: [{name: h, switch: a, port: 1}]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := ReadYAML(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if err := tp.Validate(); err != nil {
			t.Fatalf("read an invalid fabric: %v", err)
		}
	})
}
