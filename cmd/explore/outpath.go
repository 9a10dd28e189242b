package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkWritable makes sure a file can be written at path before a command
// spends minutes on what it will write there: it makes the directory and
// creates (and removes) a file in it. flag names the flag that gave path.
func checkWritable(flag, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: cannot make its directory: %w", flag, path, err)
	}
	f, err := os.CreateTemp(dir, ".explore-write-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write in %s: %w", flag, path, dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
