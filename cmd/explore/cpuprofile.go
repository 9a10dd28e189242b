package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// cpuProfile is --cpuprofile: a Go CPU profile of the whole command
// (go tool pprof reads it), for measuring where a reproduction or an
// analysis spends its time (docs/performance.md).
type cpuProfile struct {
	path string
	f    *os.File
}

// profiling is the command's --cpuprofile (newRoot registers it).
var profiling cpuProfile

func (p *cpuProfile) register(root *cobra.Command) {
	root.PersistentFlags().StringVar(&p.path, "cpuprofile", "", "write a Go CPU profile of the command to this file (read it with go tool pprof)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
}

func (p *cpuProfile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.f = f
	return nil
}

// stop ends the profile, if one was started; execute calls it when the
// command returns, whatever its outcome.
func (p *cpuProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	return err
}
