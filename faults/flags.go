package faults

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are the command-line form of a schedule (AddFlags); Schedule
// merges them with the --faults file.
type Flags struct {
	File                                 string
	Loss, Corrupt, Duplicate, Reorder    float64
	Transport                            string
	Drops, LinkDown, SlowReceiver, Crash []string
	RCRetry                              string
	QPCacheEntries                       int
}

// AddFlags registers the fault flags on fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.File, "faults", "", "fault schedule, a YAML file (docs/reliability.md)")
	fs.Float64Var(&f.Loss, "fault-loss", 0, "lose each packet with this probability")
	fs.Float64Var(&f.Corrupt, "fault-corrupt", 0, "corrupt each packet with this probability (the ICRC check drops it; counted apart)")
	fs.Float64Var(&f.Duplicate, "fault-duplicate", 0, "deliver each packet twice with this probability")
	fs.Float64Var(&f.Reorder, "fault-reorder", 0, "hold each packet back 2us with this probability (later ones overtake it)")
	fs.StringVar(&f.Transport, "fault-transport", "any", "the rate faults hit only this transport: any, UD, RC or UC")
	fs.StringArrayVar(&f.Drops, "fault-drop", nil, "lose chosen packets, e.g. src=2,dst=0,kind=eos or kind=credit,nth=3 or src=1,dst=0,packet=17 (repeatable)")
	fs.StringArrayVar(&f.LinkDown, "fault-link-down", nil, "take a node's link down, e.g. node=1,from=100us,to=300us (repeatable)")
	fs.StringArrayVar(&f.SlowReceiver, "fault-slow-receiver", nil, "a node's receivers post nothing in a window (RNR), e.g. node=1,from=0us,to=200us (repeatable)")
	fs.StringArrayVar(&f.Crash, "fault-crash", nil, "crash a node, e.g. node=2,at=500us (repeatable)")
	fs.StringVar(&f.RCRetry, "fault-rc-retry", "", "cap RC retries and set the ACK timeout code, e.g. retry_cnt=1,timeout=8")
	fs.IntVar(&f.QPCacheEntries, "fault-qp-cache", 0, "NIC context-cache entries (a small value thrashes it)")
	return f
}

// Schedule builds the schedule the flags describe (nil when none).
func (f *Flags) Schedule() (*Schedule, error) {
	s := &Schedule{}
	if f.File != "" {
		t, err := Load(f.File)
		if err != nil {
			return nil, err
		}
		s = t
	}
	tr := ""
	if f.Transport != "any" {
		tr = f.Transport
	}
	if !contains(Transports, f.Transport) {
		return nil, fmt.Errorf("--fault-transport %s: not one of %s", f.Transport, strings.Join(Transports, ", "))
	}
	for _, r := range []struct {
		flag string
		rate float64
		list *[]RateFault
	}{{"--fault-loss", f.Loss, &s.Loss}, {"--fault-corrupt", f.Corrupt, &s.Corrupt}, {"--fault-duplicate", f.Duplicate, &s.Duplicate}, {"--fault-reorder", f.Reorder, &s.Reorder}} {
		if r.rate == 0 {
			continue
		}
		if !(r.rate > 0 && r.rate <= 1) {
			return nil, fmt.Errorf("%s %v: not a probability in (0, 1]", r.flag, r.rate)
		}
		*r.list = append(*r.list, RateFault{Selector: Selector{Transport: tr}, Rate: r.rate})
	}
	for _, spec := range f.Drops {
		d, err := ParseDrop(spec)
		if err != nil {
			return nil, fmt.Errorf("--fault-drop %q: %w", spec, err)
		}
		s.Drop = append(s.Drop, d)
	}
	for _, g := range []struct {
		flag  string
		specs []string
		list  *[]Window
	}{{"--fault-link-down", f.LinkDown, &s.LinkDown}, {"--fault-slow-receiver", f.SlowReceiver, &s.SlowReceiver}} {
		for _, spec := range g.specs {
			w, err := ParseWindow(spec)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", g.flag, spec, err)
			}
			*g.list = append(*g.list, w)
		}
	}
	for _, spec := range f.Crash {
		c, err := ParseCrash(spec)
		if err != nil {
			return nil, fmt.Errorf("--fault-crash %q: %w", spec, err)
		}
		s.Crash = append(s.Crash, c)
	}
	if f.RCRetry != "" {
		r, err := ParseRCRetry(f.RCRetry)
		if err != nil {
			return nil, fmt.Errorf("--fault-rc-retry %q: %w", f.RCRetry, err)
		}
		s.RCRetry = &r
	}
	if f.QPCacheEntries < 0 {
		return nil, fmt.Errorf("--fault-qp-cache %d: must not be negative", f.QPCacheEntries)
	}
	if f.QPCacheEntries > 0 {
		s.QPCacheEntries = f.QPCacheEntries
	}
	if err := s.Validate(0); err != nil {
		return nil, err
	}
	if s.Empty() {
		return nil, nil
	}
	return s, nil
}

// keyValues splits "a=1,b=2" and checks every key is allowed and given once.
func keyValues(spec string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("empty; want key=value pairs separated by commas (keys: %s)", strings.Join(allowed, ", "))
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value (keys: %s)", kv, strings.Join(allowed, ", "))
		}
		if !contains(allowed, k) {
			return nil, fmt.Errorf("unknown key %q (keys: %s)", k, strings.Join(allowed, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("key %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func atoi(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not an integer", key, v)
	}
	if n < 0 {
		return 0, fmt.Errorf("%s=%d must not be negative", key, n)
	}
	return n, nil
}

func dur(key, v string) (Duration, error) {
	d, err := ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return d, nil
}

// ParseDrop parses a --fault-drop spec: src, dst, transport, kind, nth,
// count, packet, from, to.
func ParseDrop(spec string) (Drop, error) {
	var d Drop
	kv, err := keyValues(spec, "src", "dst", "transport", "kind", "nth", "count", "packet", "from", "to")
	if err != nil {
		return d, err
	}
	if err := selector(kv, &d.Selector); err != nil {
		return d, err
	}
	for _, g := range []struct {
		key string
		p   *int
	}{{"nth", &d.Nth}, {"count", &d.Count}, {"packet", &d.Packet}} {
		key, p := g.key, g.p
		if v, ok := kv[key]; ok {
			if *p, err = atoi(key, v); err != nil {
				return d, err
			}
		}
	}
	s := Schedule{Drop: []Drop{d}}
	if err := s.Validate(0); err != nil {
		return d, err
	}
	return d, nil
}

func selector(kv map[string]string, x *Selector) error {
	for _, key := range []string{"src", "dst"} {
		if v, ok := kv[key]; ok {
			n, err := atoi(key, v)
			if err != nil {
				return err
			}
			if key == "src" {
				x.Src = &n
			} else {
				x.Dst = &n
			}
		}
	}
	x.Transport, x.Kind = kv["transport"], kv["kind"]
	var err error
	if v, ok := kv["from"]; ok {
		if x.From, err = dur("from", v); err != nil {
			return err
		}
	}
	if v, ok := kv["to"]; ok {
		if x.To, err = dur("to", v); err != nil {
			return err
		}
	}
	return nil
}

// ParseWindow parses a node window: node, from, to.
func ParseWindow(spec string) (Window, error) {
	var w Window
	kv, err := keyValues(spec, "node", "from", "to")
	if err != nil {
		return w, err
	}
	for _, k := range []string{"node", "from", "to"} {
		if _, ok := kv[k]; !ok {
			return w, fmt.Errorf("missing %s (want node=N,from=T,to=T)", k)
		}
	}
	if w.Node, err = atoi("node", kv["node"]); err != nil {
		return w, err
	}
	if w.From, err = dur("from", kv["from"]); err != nil {
		return w, err
	}
	if w.To, err = dur("to", kv["to"]); err != nil {
		return w, err
	}
	if w.To <= w.From {
		return w, fmt.Errorf("to %v is not after from %v", w.To, w.From)
	}
	return w, nil
}

// ParseCrash parses a crash: node, at.
func ParseCrash(spec string) (Crash, error) {
	var c Crash
	kv, err := keyValues(spec, "node", "at")
	if err != nil {
		return c, err
	}
	if _, ok := kv["node"]; !ok {
		return c, fmt.Errorf("missing node (want node=N,at=T)")
	}
	if _, ok := kv["at"]; !ok {
		return c, fmt.Errorf("missing at (want node=N,at=T)")
	}
	if c.Node, err = atoi("node", kv["node"]); err != nil {
		return c, err
	}
	c.At, err = dur("at", kv["at"])
	return c, err
}

// ParseRCRetry parses retry_cnt and timeout.
func ParseRCRetry(spec string) (RCRetry, error) {
	var r RCRetry
	kv, err := keyValues(spec, "retry_cnt", "timeout")
	if err != nil {
		return r, err
	}
	if v, ok := kv["retry_cnt"]; ok {
		if r.RetryCnt, err = atoi("retry_cnt", v); err != nil {
			return r, err
		}
	}
	if v, ok := kv["timeout"]; ok {
		t, err := atoi("timeout", v)
		if err != nil {
			return r, err
		}
		if t > 31 {
			return r, fmt.Errorf("timeout=%d outside 0..31 (4.096 us * 2^code)", t)
		}
		r.Timeout = uint8(t)
	}
	s := Schedule{RCRetry: &r}
	return r, s.Validate(0)
}
