package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Cache keeps the records of finished runs across invocations, so that
// a figure, a reproduction or a sensitivity analysis run again runs only
// the points it does not have. A record is kept under a key made of:
//
//   - the code that made it: the build's commit and Go toolchain (Code);
//     a build that names no commit, or one with uncommitted changes, has
//     no such key, and OpenCache refuses it, since its records could
//     come from any code;
//   - what runs the point (Wrap's what: the checked run, the unchecked
//     one);
//   - the point's whole configuration, and the content of every file it
//     names: the profile's parameters (sim.Profile.Hash, so a changed
//     profile file, or a changed built-in one, misses), and the network's
//     topology and routing-table files.
//
// The simulator is deterministic, so a record kept under a key is the
// one its run would make again. Runs that fail are not kept. Other
// results that a key determines with the code (a claim's verdict from a
// microbenchmark, by the parameters of the profile it ran on) are kept
// the same way (Load, Store). Entries are
// one file each, written whole (a temporary file renamed), so that
// invocations sharing a directory at the same time do no harm. A nil
// *Cache keeps nothing. Safe for concurrent use.
type Cache struct {
	dir        string // this code's entries
	code       string
	hits, kept atomic.Int64
}

// ErrNoCode is OpenCache's refusal of a build whose records cannot be
// told from another code's.
var ErrNoCode = errors.New("the build does not say which code it is")

// Code is the key part of a build's code: its commit and Go toolchain,
// or an error wrapping ErrNoCode when the build names no commit (go run,
// go test, a build outside a git checkout) or has uncommitted changes.
func Code(b buildinfo.Info) (string, error) {
	switch {
	case b.Commit == "" || b.Commit == "unknown":
		return "", fmt.Errorf("%w: it names no commit (built outside a git checkout, by go run, or without version-control stamping)", ErrNoCode)
	case strings.HasSuffix(b.Commit, "+dirty"):
		return "", fmt.Errorf("%w: it was built from %s with uncommitted changes", ErrNoCode, strings.TrimSuffix(b.Commit, "+dirty"))
	}
	return b.Commit + " " + b.Go, nil
}

// OpenCache opens the cache in dir (created when the first record is
// kept) for records made by code (Code's).
func OpenCache(dir, code string) (*Cache, error) {
	if code == "" {
		return nil, fmt.Errorf("%w: no code given", ErrNoCode)
	}
	return &Cache{dir: CodeDir(dir, code), code: code}, nil
}

// CodeDir is the directory under dir that keeps what code (Code's) made:
// the commit's first characters, made safe for a file name, and a hash
// of the whole of code (the toolchain too).
func CodeDir(dir, code string) string {
	name := strings.Fields(code + " ")[0]
	name = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, name[:min(len(name), 16)])
	sum := sha256.Sum256([]byte(code))
	return filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:4]))
}

// Hits is the number of runs (and other values) answered from the
// cache, Kept the number added to it.
func (c *Cache) Hits() int64 {
	if c == nil {
		return 0
	}
	return c.hits.Load()
}

// Kept: see Hits.
func (c *Cache) Kept() int64 {
	if c == nil {
		return 0
	}
	return c.kept.Load()
}

// Dir is where this code's records are kept.
func (c *Cache) Dir() string { return c.dir }

// Wrap returns run answered from the cache: a point whose key is kept
// takes its record; any other runs, and its record is kept. what names
// run (runs that make different records for one configuration must have
// different names). A nil *Cache returns run itself.
func (c *Cache) Wrap(what string, run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	if c == nil {
		return run
	}
	return func(cfg experiments.RunConfig) (*results.Record, error) {
		key, err := pointKey(cfg)
		if err != nil { // a file it names cannot be read: the run says why
			return run(cfg)
		}
		var rec *results.Record
		if c.Load(what, key, &rec) && rec != nil {
			return rec, nil
		}
		rec, err = run(cfg)
		if err == nil && rec != nil {
			c.Store(what, key, rec)
		}
		return rec, err
	}
}

// Load reads into v the value kept for key by what (a kind of result
// that key determines with this code: a run's record, a verdict), and
// says whether there was one. Every value Load gives counts in Hits.
func (c *Cache) Load(what, key string, v any) bool {
	if c == nil {
		return false
	}
	full := c.fullKey(what, key)
	data, err := os.ReadFile(c.path(full))
	if err != nil {
		return false
	}
	var e cacheEntry
	if json.Unmarshal(data, &e) != nil || e.Key != full || json.Unmarshal(e.Value, v) != nil {
		return false
	}
	c.hits.Add(1)
	return true
}

// Store keeps v for key by what (see Load); a value that cannot be kept
// is not, and counts nowhere.
func (c *Cache) Store(what, key string, v any) {
	if c == nil {
		return
	}
	full := c.fullKey(what, key)
	value, err := json.Marshal(v)
	if err != nil {
		return
	}
	if c.write(c.path(full), cacheEntry{Key: full, Value: value}) == nil {
		c.kept.Add(1)
	}
}

// cacheEntry is one kept value and the whole key it answers.
type cacheEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func (c *Cache) fullKey(what, key string) string {
	return fmt.Sprintf("code %s\nrun %s\n%s", c.code, what, key)
}

// pointKey is a point's part of its key (see Cache): its profile's
// parameters, the files it names, its whole configuration.
func pointKey(cfg experiments.RunConfig) (string, error) {
	name := cfg.Profile
	if name == "" {
		name = sim.DefaultProfileName
	}
	prof, err := sim.LoadProfile(name)
	if err != nil {
		return "", err
	}
	conf, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s\n", prof.Hash())
	for _, f := range []string{cfg.Network.Path, cfg.Network.LFTPath} {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "file %x\n", sha256.Sum256(data))
	}
	fmt.Fprintf(&b, "config %s\n", conf)
	return b.String(), nil
}

func (c *Cache) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	return filepath.Join(c.dir, h[:2], h[2:]+".json")
}

func (c *Cache) write(path string, e cacheEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// codeDirRE matches the directories OpenCache names (a commit's first
// 16 characters, the code's hash).
var codeDirRE = regexp.MustCompile(`^[0-9a-zA-Z._]{1,16}-[0-9a-f]{8}$`)

// ClearCache removes every record kept in dir, of every code, and
// returns how many codes' directories it removed. Only directories the
// cache names are touched; dir itself goes when nothing else is in it.
func ClearCache(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !codeDirRE.MatchString(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return n, err
		}
		n++
	}
	os.Remove(dir) // fails, as it should, when something else is in it
	return n, nil
}
