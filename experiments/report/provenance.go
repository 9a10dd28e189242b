package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Provenance says where the page's numbers come from: the records' own
// fields first, then version control, then the file system, and which of
// them each answer came from.
type Provenance struct {
	Dir        string
	Files      int // JSONL files read
	Records    int // lines in them
	Versions   []string
	Commits    []string
	GoVersions []string // empty when the records do not carry it
	Profiles   []ProfileInfo
	Date       string // when the records were made, as well as can be told
	DateSource string // where Date comes from
	Build      buildinfo.Info
	Command    string
}

// ProfileInfo is one hardware profile the records ran on.
type ProfileInfo struct {
	Name       string
	Records    int
	Hash       string // first 12 hex digits of a SHA-256
	HashSource string // "records", or this build's parameters
}

// provenance keys read from every record line (a record that lacks one
// simply does not contribute to it).
var (
	goKeys   = []string{"go", "go_version"}
	hashKeys = []string{"profile_hash", "profile_sha256"}
	dateKeys = []string{"date", "time", "started", "timestamp"}
)

// provenance scans every JSONL file of dir and describes b, the build
// writing the page.
func provenance(dir string, b buildinfo.Info, command string) (Provenance, error) {
	p := Provenance{Dir: dir, Build: b, Command: command}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return p, err
	}
	profiles := map[string]*ProfileInfo{}
	var dates []string
	var newest time.Time
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return p, err
		}
		newest = later(newest, st.ModTime())
		if err := scanRecords(f, &p, profiles, &dates); err != nil {
			return p, err
		}
		p.Files++
	}
	for _, name := range sortedKeys(profiles) {
		pi := profiles[name]
		if pi.Hash == "" {
			pi.Hash, pi.HashSource = profileHash(name), "parameters of the profile in this build (the records carry no hash)"
		}
		p.Profiles = append(p.Profiles, *pi)
	}
	p.Date, p.DateSource = recordsDate(dir, dates, p.Commits, newest)
	return p, nil
}

// scanRecords adds one JSONL file's provenance fields to p.
func scanRecords(path string, p *Provenance, profiles map[string]*ProfileInfo, dates *[]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // the sweep reader has already said what is wrong with it
		}
		p.Records++
		p.Versions = addString(p.Versions, m["version"])
		p.Commits = addString(p.Commits, m["commit"])
		for _, k := range goKeys {
			p.GoVersions = addString(p.GoVersions, m[k])
		}
		for _, k := range dateKeys {
			*dates = addString(*dates, m[k])
		}
		name, _ := m["profile"].(string)
		if name == "" {
			continue
		}
		pi := profiles[name]
		if pi == nil {
			pi = &ProfileInfo{Name: name}
			profiles[name] = pi
		}
		pi.Records++
		for _, k := range hashKeys {
			if h, ok := m[k].(string); ok && h != "" {
				pi.Hash, pi.HashSource = h, "records"
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// addString adds v to the sorted set xs when v is a non-empty string.
func addString(xs []string, v any) []string {
	s, ok := v.(string)
	if !ok || s == "" {
		return xs
	}
	i, found := slices.BinarySearch(xs, s)
	if found {
		return xs
	}
	return slices.Insert(xs, i, s)
}

// profileHash is sim.Profile.Hash of a built-in profile as this build
// has it (the hash records carry in profile_hash).
func profileHash(name string) string {
	prof, err := sim.LoadProfile(name)
	if err != nil {
		return "unknown (not a profile of this build)"
	}
	return prof.Hash()
}

// recordsDate says when the records were made: a date the records carry;
// else the commit date of the commit they name; else the date of the last
// commit of dir when it is tracked and unchanged; else the newest file's
// modification time. The page never shows the time it was written.
func recordsDate(dir string, dates, commits []string, newest time.Time) (string, string) {
	if len(dates) == 1 {
		return dates[0], "the records"
	}
	if len(dates) > 1 {
		return dates[0] + " to " + dates[len(dates)-1], "the records"
	}
	if len(commits) == 1 && commits[0] != "unknown" {
		c := strings.TrimSuffix(commits[0], "+dirty")
		if d := git(dir, "show", "-s", "--format=%cI", c); d != "" {
			return d, "commit date of " + c + ", named by the records"
		}
	}
	if git(dir, "status", "--porcelain", "--", ".") == "" {
		if d := git(dir, "log", "-1", "--format=%cI", "--", "."); d != "" {
			return d, "date of the last commit of " + dir + " (the records carry no date)"
		}
	}
	if newest.IsZero() {
		return "unknown", "no records"
	}
	return newest.UTC().Format(time.RFC3339), "modification time of the newest JSONL file (the records carry no date)"
}

// git runs git in dir and returns its trimmed output; "" when git is
// missing, fails, or takes more than 5 s.
func git(dir string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
