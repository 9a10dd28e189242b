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
