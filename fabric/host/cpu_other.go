//go:build !linux

package host

import "errors"

func affinityCPUs() []int { return nil }

func pinTo(cpu int) error { return errors.New("thread pinning needs Linux") }
