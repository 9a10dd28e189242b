//go:build unix

package sweep

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockOutput takes the lock of a sweep's output file (a file beside it,
// out+".lock", held with flock for the sweep's life), so that two sweeps,
// say two shards given the same --out, cannot write one file and lose each
// other's points. unlock releases it.
func lockOutput(out string) (unlock func(), err error) {
	path := out + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (its lock %s is held): give each shard its own output file and merge them", ErrOutputBusy, out, path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}
