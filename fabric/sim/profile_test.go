package sim_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func defaultYAML(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("profiles", sim.DefaultProfileName+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBuiltinProfiles: every built-in profile loads, validates, names
// itself after its file and builds a working cluster.
func TestBuiltinProfiles(t *testing.T) {
	names := sim.BuiltinProfiles()
	if !slices.Contains(names, sim.DefaultProfileName) {
		t.Fatalf("built-in profiles %v lack the default %q", names, sim.DefaultProfileName)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := sim.LoadProfile(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != name || p.Source() != "builtin" {
				t.Errorf("profile %q: name %q, source %q", name, p.Name, p.Source())
			}
			if err := p.Validate(); err != nil {
				t.Error(err)
			}
			if r := p.DataRateBps(); !(r > 0) || math.IsInf(r, 0) {
				t.Errorf("data rate %v", r)
			}
			c := newCluster(t, sim.Config{Nodes: 2, Profile: p})
			if a := c.Node(1).Device().Attr(); a.MTU != p.Link.MTU || a.RateGbps != p.DataRateBps()/1e9 || a.MaxQPWR != p.NIC.MaxQPWR {
				t.Errorf("device attributes %+v do not match the profile", a)
			}
			if c.Node(0).Cores() != p.Host.Cores {
				t.Errorf("%d cores, profile says %d", c.Node(0).Cores(), p.Host.Cores)
			}
		})
	}

	// The default is EDR: 4 lanes of 25.78125 Gbaud, 64b/66b = 100 Gb/s.
	d := sim.DefaultProfile()
	if r := d.DataRateBps(); math.Abs(r-100e9) > 1 {
		t.Errorf("default profile data rate %v, want 100 Gb/s", r)
	}
	// DefaultProfile returns a fresh copy each time.
	d.Host.GHz = 99
	if sim.DefaultProfile().Host.GHz == 99 {
		t.Error("changing one DefaultProfile() changed the next")
	}
}

// TestProfileRejected: a profile with a missing, impossible or unknown
// value is rejected with an error naming the field, whether parsed or
// loaded from a file.
func TestProfileRejected(t *testing.T) {
	base := defaultYAML(t)
	set := func(old, new string) func(string) string {
		return func(s string) string {
			if !strings.Contains(s, old) {
				panic(fmt.Sprintf("default profile lacks %q", old))
			}
			return strings.Replace(s, old, new, 1)
		}
	}
	cases := []struct {
		name  string
		edit  func(string) string
		field string // must appear in the error
	}{
		{"mtu-3000", set("mtu: 4096", "mtu: 3000"), "link.mtu"},
		{"mtu-8192", set("mtu: 4096", "mtu: 8192"), "link.mtu"},
		{"mtu-null", set("mtu: 4096", "mtu: ~"), "link.mtu"},
		{"ghz-0", set("ghz: 2.4", "ghz: 0"), "host.ghz"},
		{"ghz-in-mhz", set("ghz: 2.4", "ghz: 2400"), "host.ghz"},
		{"ghz-nan", set("ghz: 2.4", "ghz: .nan"), "host.ghz"},
		{"gbaud-inf", set("lane_gbaud: 25.78125", "lane_gbaud: .inf"), "link.lane_gbaud"},
		{"encoding", set("encoding: 64b/66b", "encoding: 128b/130b"), "link.encoding"},
		{"cores-negative", set("cores: 28", "cores: -1"), "host.cores"},
		{"propagation-negative", set("propagation_ns: 10", "propagation_ns: -5"), "link.propagation_ns"},
		{"rd-atomic-0", set("max_rd_atomic: 16", "max_rd_atomic: 0"), "nic.max_rd_atomic"},
		{"lock-handoff-negative", set("lock_handoff_ns: 45", "lock_handoff_ns: -100"), "host.lock_handoff_ns"},
		{"sockets-uneven", set("sockets: 2", "sockets: 3"), "host.sockets"},
		{"sockets-many", set("sockets: 2", "sockets: 65"), "host.sockets"},
		{"rtt-inf", set("rtt_us: 50", "rtt_us: .inf"), "oob.rtt_us"},
		{"read-request-3000", set("read_request_bytes: 4096", "read_request_bytes: 3000"), "pcie.read_request_bytes"},
		{"read-request-64", set("read_request_bytes: 4096", "read_request_bytes: 64"), "pcie.read_request_bytes"},
		{"read-request-8192", set("read_request_bytes: 4096", "read_request_bytes: 8192"), "pcie.read_request_bytes"},
		{"read-request-negative", set("read_request_bytes: 4096", "read_request_bytes: -1"), "pcie.read_request_bytes"},
		{"name-empty", set("name: edr-cx4", `name: ""`), "name"},
		{"unknown-field", set("  mtu: 4096", "  mtu: 4096\n  speed_gbps: 100"), "speed_gbps"},
		{"unknown-section", func(s string) string { return s + "gpu:\n  count: 8\n" }, "gpu"},
		{"misspelled-field", set("lane_gbaud:", "lane_gbuad:"), "lane_gbuad"},
		{"missing-section", func(s string) string { return s[:strings.Index(s, "oob:")] }, "oob.rtt_us"},
		{"empty-document", func(string) string { return "" }, "YAML"},
		{"not-a-mapping", func(string) string { return "- edr\n" }, "YAML"},
	}
	// Leaving out any field (except the free-text description) is an
	// error that names it.
	section := ""
	for _, line := range strings.Split(base, "\n") {
		k, _, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(line, "#") || k == "description" || k == "read_request_bytes" { // optional (omitempty)
			continue
		}
		if !strings.HasPrefix(line, " ") {
			if strings.TrimSpace(strings.SplitN(line, ":", 2)[1]) == "" {
				section = k + "."
				continue
			}
			section = ""
		}
		drop := line
		cases = append(cases, struct {
			name  string
			edit  func(string) string
			field string
		}{"missing-" + section + k, func(s string) string { return strings.Replace(s, drop+"\n", "", 1) }, section + k})
	}

	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.edit(base)
			p, err := sim.ParseProfile([]byte(doc))
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if p != nil {
				t.Errorf("returned a profile along with error %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = sim.LoadProfile(path)
			if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), path) {
				t.Errorf("LoadProfile(%s): %v; want an error naming the file and %s", path, err, tc.field)
			}
		})
	}
}

// TestProfileRanges: numbers beyond what the model can represent are
// rejected with the field, its unit and the allowed range (1e13 us of
// memory registration overflowed to a shorter setup before).
func TestProfileRanges(t *testing.T) {
	base := defaultYAML(t)
	for _, tc := range []struct{ old, new, want string }{
		{"reg_mr_us: 20", "reg_mr_us: 1e13", "setup.reg_mr_us: 10000000000000 us outside the range 0 to 1000000 us"},
		{"create_qp_us: 100", "create_qp_us: 2e6", "setup.create_qp_us: 2000000 us outside the range 0 to 1000000 us"},
		{"reg_mr_per_page_ns: 400", "reg_mr_per_page_ns: 1e9", "setup.reg_mr_per_page_ns: 1000000000 ns outside the range 0 to 1000000 ns"},
		{"tx_latency_ns: 250", "tx_latency_ns: 5e6", "nic.tx_latency_ns: 5000000 ns outside the range 0 to 1000000 ns"},
		{"max_qp: 262144", "max_qp: 1000000000", "nic.max_qp: 1000000000 queue pairs outside the range above 0 to 16777216 queue pairs"},
		{"lanes: 4", "lanes: 40", "link.lanes: 40 lanes outside the range above 0 to 12 lanes"},
		{"cores: 28", "cores: 100000", "host.cores: 100000 cores outside the range above 0 to 4096 cores"},
		{"memcpy_gbps: 7", "memcpy_gbps: 1e300", "host.memcpy_gbps: 1" /* then 300 zeros */},
		{"rtt_us: 50", "rtt_us: 1e7", "oob.rtt_us: 10000000 us outside the range 0 to 1000000 us"},
	} {
		t.Run(tc.new, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("default profile lacks %q", tc.old)
			}
			_, err := sim.ParseProfile([]byte(strings.Replace(base, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// The bounds themselves are accepted.
	p := sim.DefaultProfile()
	p.Setup.RegMRUS = 1e6
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestProfileLoadErrors(t *testing.T) {
	_, err := sim.LoadProfile("no-such-profile")
	if err == nil || !strings.Contains(err.Error(), sim.DefaultProfileName) {
		t.Errorf("unknown profile name: %v; want an error listing the built-in profiles", err)
	}
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	if _, err := sim.LoadProfile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("absent file: %v", err)
	}
	// A valid file loads and remembers where it came from.
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(defaultYAML(t), "mtu: 4096", "mtu: 2048", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := sim.LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source() != path || p.Link.MTU != 2048 {
		t.Errorf("loaded %s: source %q, MTU %d", path, p.Source(), p.Link.MTU)
	}
	// sim.New validates the profile it is given.
	bad := sim.DefaultProfile()
	bad.Host.GHz = 0
	if _, err := sim.New(sim.Config{Nodes: 2, Profile: bad}); err == nil || !strings.Contains(err.Error(), "host.ghz") {
		t.Errorf("sim.New with host.ghz 0: %v", err)
	}
	for _, cfg := range []sim.Config{{Nodes: 0}, {Nodes: 2, TimeLimit: -1}} {
		if _, err := sim.New(cfg); err == nil {
			t.Errorf("sim.New(%+v) succeeded", cfg)
		}
	}
}

// FuzzParseProfile: ParseProfile never panics; what it accepts is valid
// and survives a YAML round trip unchanged.
//
// The fuzzer's input is an edit of the default profile, not a whole
// document: replace the first occurrence of old (at most 40 bytes) by new
// (at most 80), then append tail (at most 200); with old empty, tail alone
// is the document. Inputs stay a few dozen bytes, so each new interesting
// input is minimized in a few hundred executions instead of the fuzzer's
// whole budget (a 2 KB document took a minute per input, 368 executions in
// 60 s), while every field of a realistic profile is still within reach.
func FuzzParseProfile(f *testing.F) {
	base := defaultYAML(f)
	f.Add("", "", []byte(base[:200]))
	f.Add("x", "", []byte(""))
	f.Add("", "", []byte("{}"))
	f.Add("", "", []byte("name: x\nlink: {lanes: 1}\n"))
	f.Add("mtu: 4096", "mtu: 3000", []byte(""))
	f.Add("ghz: 2.4", "ghz: .nan", []byte(""))
	f.Add("reg_mr_us: 20", "reg_mr_us: 1e13", []byte(""))
	f.Add("link:", "link: &l", []byte("x: *l\n"))
	f.Add("", "", []byte("a: &a [*a]"))
	f.Fuzz(func(t *testing.T, old, new string, tail []byte) {
		if len(old) > 40 || len(new) > 80 || len(tail) > 200 {
			return
		}
		data := tail
		if old != "" {
			data = append([]byte(strings.Replace(base, old, new, 1)), tail...)
		}
		p, err := sim.ParseProfile(data)
		if err != nil {
			if p != nil {
				t.Fatalf("profile returned along with error %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseProfile accepted a profile that Validate rejects: %v", err)
		}
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		q, err := sim.ParseProfile(out)
		if err != nil {
			t.Fatalf("round trip rejected: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the profile:\n%+v\n%+v", p, q)
		}
	})
}

func TestParseProfileRefusesSecondDocument(t *testing.T) {
	data, err := os.ReadFile("profiles/edr-cx4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.ParseProfile(append(data, []byte("---\nname: other\n")...)); err == nil || !strings.Contains(err.Error(), "a second YAML document") {
		t.Fatalf("got %v", err)
	}
}

// Rates below the least the clock can hold are refused: a lane at 1e-15
// Gbaud panicked with an event in the past, and a core or a memcpy at
// 1e-15 made work free; at the bound itself the profile is valid.
func TestProfileRatesBounded(t *testing.T) {
	for _, field := range []func(*sim.Profile) *float64{
		func(p *sim.Profile) *float64 { return &p.Link.LaneGbaud },
		func(p *sim.Profile) *float64 { return &p.Host.GHz },
		func(p *sim.Profile) *float64 { return &p.Host.MemcpyGBps },
		func(p *sim.Profile) *float64 { return &p.PCIe.GBps },
	} {
		for _, tc := range []struct {
			v  float64
			ok bool
		}{{1e-3, true}, {9.99e-4, false}, {1e-15, false}} {
			p := sim.DefaultProfile()
			*field(p) = tc.v
			err := p.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("%v: %v", tc.v, err)
			}
		}
	}
}

// Every InfiniBand profile's port is a width and speed of the table of
// link speeds, whose rate is exactly the profile's, so that a fabric
// file's cables of the profile's generation change nothing.
func TestProfileLinkRate(t *testing.T) {
	for _, name := range sim.BuiltinProfiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := sim.ProfileLink(p)
		if name == "iwarp-1g" {
			if ok {
				t.Errorf("%s: an Ethernet profile has link %v", name, l)
			}
			continue
		}
		if !ok || sim.LinkRateBps(l, p) != p.DataRateBps() {
			t.Errorf("%s: link %v (%v), rate %v, want %v", name, l, ok, sim.LinkRateBps(l, p), p.DataRateBps())
		}
	}
}
