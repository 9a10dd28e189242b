package faults

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

const example = `
loss:
  - rate: 0.001
    transport: UD
corrupt:
  - rate: 0.0005
duplicate:
  - rate: 0.01
    src: 1
reorder:
  - rate: 0.05
    delay: 3us
drop:
  - src: 2
    dst: 0
    kind: eos
  - kind: credit
    nth: 3
  - src: 1
    dst: 0
    packet: 17
link_down:
  - node: 1
    from: 100us
    to: 300us
slow_receiver:
  - node: 3
    from: 0us
    to: 200us
crash:
  - node: 2
    at: 1.5ms
rc_retry:
  retry_cnt: 1
  timeout: 8
qp_cache_entries: 2
`

func TestParseExample(t *testing.T) {
	s, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Drop) != 3 || *s.Drop[0].Src != 2 || s.Drop[0].Kind != "eos" || s.Crash[0].At != Duration(1500*fabric.Microsecond) ||
		s.Reorder[0].Delay != Duration(3*fabric.Microsecond) || s.QPCacheEntries != 2 || s.RCRetry.Timeout != 8 {
		t.Fatalf("parsed %+v", s)
	}
	p, err := s.Plan(4)
	if err != nil {
		t.Fatal(err)
	}
	// loss, corrupt, dup, reorder, eos drop, credit drop (UD and RC),
	// packet drop, link down, starve, crash.
	if len(p.Rules) != 11 || p.RetryCnt != 1 || p.AckTimeout != 8 {
		t.Fatalf("plan %+v", p)
	}
	if _, err := s.Plan(2); err == nil || !strings.Contains(err.Error(), "drop[0].src: node 2 outside the 2-node cluster") {
		t.Fatalf("plan on 2 nodes: %v", err)
	}
	prof := sim.DefaultProfile()
	s.ProfileOverride()(prof)
	if prof.NIC.QPCacheEntries != 2 {
		t.Fatal("profile override not applied")
	}
	// The YAML form parses back to the same schedule.
	back, err := Parse([]byte(s.YAML()))
	if err != nil {
		t.Fatalf("%v\n%s", err, s.YAML())
	}
	if back.YAML() != s.YAML() {
		t.Fatalf("round trip:\n%s\n%s", s.YAML(), back.YAML())
	}
}

// BadSchedules are schedules Parse rejects and the error each gets
// (docs/reliability.md lists them).
var BadSchedules = []struct{ yaml, want string }{
	{"loss:\n  - rate: 2\n", "loss[0].rate: 2 is not a probability in (0, 1]"},
	{"loss:\n  - rate: 0.1\n    transport: TCP\n", `loss[0].transport: "TCP" is not one of any, UD, RC, UC`},
	{"drop:\n  - kind: ack\n", `drop[0].kind: "ack" is not one of any, data, eos, credit`},
	{"drop:\n  - packet: 3\n", "drop[0].packet: needs src and dst"},
	{"drop:\n  - kind: data\n    nth: 2\n    count: 9223372036854775807\n", "must be at most 2147483647"},
	{"link_down:\n  - node: 1\n    from: 300us\n    to: 100us\n", "link_down[0]: to 100.000us is not after from 300.000us"},
	{"crash:\n  - node: 1\n    at: 500\n", `"500" has no unit`},
	{"crash:\n  - node: -1\n    at: 5us\n", "crash[0].node: node -1 is negative"},
	{"rc_retry:\n  retry_cnt: 9\n", "rc_retry.retry_cnt: 9 outside 0..7"},
	{"loss:\n  - rate: 0.1\n    delay: 2us\n", "loss[0].delay: only reorder faults have a delay"},
	{"los:\n  - rate: 0.1\n", `unknown field "los" in the schedule`},
	{"crash:\n  - node: 1\n    when: 5us\n", `unknown field "when" in a crash`},
	{"qp_cache_entries: many\n", "field qp_cache_entries: cannot unmarshal"},
	{"link_down:\n  - node: 1\n    from: 100us\n", "link_down[0].to: missing: when the window ends"},
	{"slow_receiver:\n  - node: 1\n", "slow_receiver[0].to: missing"},
	{"switch_down:\n  - from: 1ms\n", "switch_down[0].switch: missing"},
	{"switch_down:\n  - switch: spine-0\n    from: 2ms\n    to: 1ms\n", "switch_down[0]: to 1.000ms is not after from 2.000ms"},
	{"switch_down:\n  - switch: spine-0\n    port: 3\n", `unknown field "port" in a switch_down`},
}

// A switch_down becomes a SwitchDown rule of the plan, and the schedule's
// YAML form reads back the same.
func TestSwitchDownPlan(t *testing.T) {
	s, err := Parse([]byte("switch_down:\n  - {switch: spine-1, from: 2ms, to: 5ms}\n  - {switch: '#3', from: 1ms}\nreroute_after: 300ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(4)
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Rule{
		{Action: sim.SwitchDown, Switch: "spine-1", From: fabric.Time(2 * fabric.Millisecond), To: fabric.Time(5 * fabric.Millisecond)},
		{Action: sim.SwitchDown, Switch: "#3", From: fabric.Time(fabric.Millisecond)},
	}
	if len(p.Rules) != 2 || p.Rules[0].Action != want[0].Action || p.Rules[0].Switch != want[0].Switch || p.Rules[0].From != want[0].From ||
		p.Rules[0].To != want[0].To || p.Rules[1].Switch != want[1].Switch || p.Rules[1].To != 0 || p.Reroute != 300*fabric.Millisecond {
		t.Fatalf("plan %+v", p)
	}
	back, err := Parse([]byte(s.YAML()))
	if err != nil || back.YAML() != s.YAML() {
		t.Fatalf("round trip: %v\n%s\n%s", err, s.YAML(), back.YAML())
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range BadSchedules {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v does not wrap ErrInvalid", tc.yaml, err)
		}
	}
}

// TestLoadEmpty: a schedule file that injects nothing is an error, not a
// fault-free run that looks like a fault test.
func TestLoadEmpty(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"empty": "", "comments": "# nothing yet\n", "empty lists": "loss: []\ncrash: []\n"} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "injects no fault") {
			t.Errorf("%s: got %v", name, err)
		}
	}
	path := filepath.Join(dir, "bad.yaml")
	os.WriteFile(path, []byte("crash: [{node: -1, at: 1us}]\n"), 0o644)
	if _, err := Load(path); err == nil || strings.Count(err.Error(), "fault schedule") != 1 || !errors.Is(err, ErrInvalid) {
		t.Errorf("prefix repeated, or ErrInvalid not wrapped: %v", err)
	}
}

func TestSpecs(t *testing.T) {
	d, err := ParseDrop("src=2,dst=0,kind=eos,nth=2")
	if err != nil || *d.Src != 2 || *d.Dst != 0 || d.Kind != "eos" || d.Nth != 2 {
		t.Fatalf("%+v %v", d, err)
	}
	w, err := ParseWindow("node=1,from=100us,to=0.3ms")
	if err != nil || w.Node != 1 || w.To != Duration(300*fabric.Microsecond) {
		t.Fatalf("%+v %v", w, err)
	}
	for _, tc := range []struct {
		spec, want string
		parse      func(string) error
	}{
		{"src=2,dst=0,kind=eos,kind=data", `key "kind" given twice`, func(s string) error { _, err := ParseDrop(s); return err }},
		{"src=x", `src="x" is not an integer`, func(s string) error { _, err := ParseDrop(s); return err }},
		{"node=1,from=1us", "missing to", func(s string) error { _, err := ParseWindow(s); return err }},
		{"node=1,at=5us,x=1", `unknown key "x"`, func(s string) error { _, err := ParseCrash(s); return err }},
		{"retry_cnt=1,timeout=40", "timeout=40 outside 0..31", func(s string) error { _, err := ParseRCRetry(s); return err }},
		{"", "empty", func(s string) error { _, err := ParseCrash(s); return err }},
	} {
		if err := tc.parse(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want %q wrapping ErrInvalid", tc.spec, err, tc.want)
		}
	}
	for _, s := range []string{"1.5ms", "20us", "500ns", "2s", "0us"} {
		if _, err := ParseDuration(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"5", "-1us", "NaNus", "1e30s", "us"} {
		if _, err := ParseDuration(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalid", s, err)
		}
	}
}

func TestRandomIsValidAndSeeded(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		a, na := Random(rand.New(rand.NewPCG(seed, 1)), 4, Phases{Setup: fabric.Millisecond, Data: fabric.Millisecond})
		b, _ := Random(rand.New(rand.NewPCG(seed, 1)), 4, Phases{Setup: fabric.Millisecond, Data: fabric.Millisecond})
		if a.YAML() != b.YAML() {
			t.Fatal("not deterministic")
		}
		if _, err := a.Plan(4); err != nil {
			t.Fatalf("seed %d %v: %v\n%s", seed, na, err, a.YAML())
		}
	}
}

// FuzzParseSchedule: the parser never panics, and whatever it accepts
// validates, renders and parses back.
func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte(example))
	for _, tc := range BadSchedules {
		f.Add([]byte(tc.yaml))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if _, err := s.Plan(1 << 15); err != nil && !strings.Contains(err.Error(), "outside") {
			t.Fatalf("accepted schedule has no plan: %v", err)
		}
		if _, err := Parse([]byte(s.YAML())); err != nil {
			t.Fatalf("rendered schedule does not parse: %v\n%s", err, s.YAML())
		}
	})
}

// FuzzParseSpecs: the flag spec parsers never panic.
func FuzzParseSpecs(f *testing.F) {
	for _, s := range []string{"src=2,dst=0,kind=eos", "node=1,from=100us,to=300us", "node=2,at=1ms", "retry_cnt=1,timeout=8", "1.5ms", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseDrop(s)
		ParseWindow(s)
		ParseCrash(s)
		ParseRCRetry(s)
		ParseDuration(s)
	})
}

// TestYAMLTypeNamesListEveryField: the field lists that errors print name
// exactly the YAML fields of each type, so that a new field is never
// missing from the help an error gives.
func TestYAMLTypeNamesListEveryField(t *testing.T) {
	for _, v := range []any{Schedule{}, RateFault{}, Drop{}, Window{}, Crash{}, Cable{}, RCRetry{}} {
		typ := reflect.TypeOf(v)
		var want []string
		var walk func(reflect.Type)
		walk = func(tt reflect.Type) {
			for i := 0; i < tt.NumField(); i++ {
				f := tt.Field(i)
				tag := f.Tag.Get("yaml")
				if strings.Contains(tag, "inline") {
					walk(f.Type)
					continue
				}
				if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
					want = append(want, name)
				}
			}
		}
		walk(typ)
		desc, ok := yamlTypeNames[typ.String()]
		if !ok {
			t.Errorf("%s has no entry in yamlTypeNames", typ)
			continue
		}
		_, list, _ := strings.Cut(desc, "(fields: ")
		got := strings.Split(strings.TrimSuffix(list, ")"), ", ")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s lists fields %v; the type has %v", typ, got, want)
		}
	}
}

// A second YAML document is refused, not ignored: the crash after the
// --- used to be dropped and the run delivered as if there were none.
func TestParseRefusesSecondDocument(t *testing.T) {
	_, err := Parse([]byte("loss: [{rate: 1e-300}]\n---\ncrash: [{node: 1, at: 1us}]\n"))
	if err == nil || !strings.Contains(err.Error(), "a second YAML document starts at line 3") {
		t.Fatalf("got %v", err)
	}
}

// TestUnknownScenario: a scenario name outside Scenarios is refused with
// ErrUnknownScenario, and the message lists the names there are.
func TestUnknownScenario(t *testing.T) {
	_, err := Scenario(rand.New(rand.NewPCG(1, 1)), "earthquake", 4, Phases{Setup: fabric.Millisecond, Data: fabric.Millisecond})
	if !errors.Is(err, ErrUnknownScenario) || !strings.Contains(err.Error(), Scenarios[0]) {
		t.Errorf("got %v, want ErrUnknownScenario listing the scenarios", err)
	}
}
