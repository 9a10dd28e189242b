package setting

import (
	"errors"
	"fmt"
	"testing"
)

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{"Threads": "threads", "BytesPerNode": "bytes-per-node", "QPNumbering": "qp-numbering",
		"PinnedCapMiB": "pinned-cap-mib", "UDRecovery": "ud-recovery", "QPs": "q-ps", "SL": "sl", "CQMod": "cq-mod", "MsgBytes": "msg-bytes"} {
		if got := Kebab(in); got != want {
			t.Errorf("Kebab(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestError(t *testing.T) {
	sentinel := errors.New("bad config")
	err := fmt.Errorf("point 3: %w", New("Threads", 9, "use 1..%d", 4).Sentinel(sentinel))
	se, ok := As(err)
	if !ok || se.Setting != "Threads" || se.Value != 9 || se.Error() != "Threads 9: use 1..4" || !errors.Is(err, sentinel) {
		t.Fatalf("%v: %+v", err, se)
	}
	if got := New("Design", nil, "pick one").Error(); got != "Design: pick one" {
		t.Errorf("without a value: %q", got)
	}
}

// TestRenamed: a refused setting is shown under another name, the rest of
// the message kept, and the error still matches what it wrapped.
func TestRenamed(t *testing.T) {
	sentinel := errors.New("bad")
	err := fmt.Errorf("point 2: %w", New("Threads", 9, "use 1..4").Sentinel(sentinel))
	got := Renamed(err, "--threads")
	if got.Error() != "point 2: --threads 9: use 1..4" || !errors.Is(got, sentinel) {
		t.Errorf("%v", got)
	}
	if se, ok := As(got); !ok || se.Setting != "Threads" {
		t.Errorf("the original setting is lost: %+v", se)
	}
	plain := errors.New("plain")
	if Renamed(plain, "--x") != plain || Reworded(plain, "plain") != plain {
		t.Error("an error without a setting, or with its own words, came back changed")
	}
}
