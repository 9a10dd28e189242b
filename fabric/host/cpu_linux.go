//go:build linux

package host

import (
	"syscall"
	"unsafe"
)

// cpuMask is a Linux cpu_set_t of 1024 CPUs.
type cpuMask [1024 / 64]uint64

func affinityCPUs() []int {
	var m cpuMask
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m)))
	if e != 0 {
		return nil
	}
	var out []int
	for i := range len(m) * 64 {
		if m[i/64]&(1<<(i%64)) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// pinTo binds the calling OS thread to cpu (the caller has locked its
// goroutine to the thread).
func pinTo(cpu int) error {
	var m cpuMask
	if cpu < 0 || cpu >= len(m)*64 {
		return syscall.EINVAL
	}
	m[cpu/64] |= 1 << (cpu % 64)
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m)))
	if e != 0 {
		return e
	}
	return nil
}
