package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestQueueLimitInFlagWords: a design whose queue pairs do not fit the
// device is refused before it runs, with a device-limit error that names
// the flag that sets the depths and the largest value that fits.
func TestQueueLimitInFlagWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--design", "MEMQ/RD", "--buffers", "10000"},
			"--buffers 10000: MQ/RD's queue pair per peer needs a send queue of at least 40040 requests at 2 nodes, above the 32768 its device accepts (max_qp_wr of sim0); at most 8182 fits"},
		{[]string{"--design", "SEMQ/SR", "--buffers", "20000"},
			"--buffers 20000: MQ/SR's queue pair per peer needs a receive queue of 40000 requests at 2 nodes, above 32768 (max_qp_wr of sim0); at most 8182 fits"},
	} {
		args := append([]string{"run", "--nodes", "2", "--msg-bytes", "256", "--bytes-per-node", "1MiB"}, c.args...)
		_, err := run(t, args...)
		if !errors.Is(err, fabric.ErrLimit) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant a device limit ending %s", strings.Join(c.args, " "), err, c.want)
		}
	}
}
