// Package buildinfo says which build of rdmashuffle produced a record: the
// module version and the version-control commit, read from the binary's
// build information (runtime/debug.ReadBuildInfo). Records and reports
// carry them so that a result can be traced to the code that made it.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Info is a build's provenance. A value; safe to share.
type Info struct {
	Version string `json:"version"` // module version, "(devel)" for a local build
	Commit  string `json:"commit"`  // VCS revision, with "+dirty" when the tree had changes; "unknown" when the build has none (go run, go test, -buildvcs=false)
	Go      string `json:"go"`      // Go toolchain version
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's provenance (read once).
func Get() Info {
	once.Do(func() {
		info = Info{Version: "(unknown)", Commit: "unknown"}
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		info.Version, info.Go = bi.Main.Version, bi.GoVersion
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		switch {
		case info.Commit == "":
			info.Commit = "unknown"
		case dirty:
			info.Commit += "+dirty"
		}
	})
	return info
}

// String is one line for --version.
func (i Info) String() string {
	return "rdmashuffle " + i.Version + " commit " + i.Commit + " (" + i.Go + ")"
}
