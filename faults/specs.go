package faults

import (
	"strconv"
	"strings"
)

// keyValues splits "a=1,b=2" and checks every key is allowed and given once.
func keyValues(spec string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(spec) == "" {
		return nil, invalid("empty; want key=value pairs separated by commas (keys: %s)", strings.Join(allowed, ", "))
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, invalid("%q is not key=value (keys: %s)", kv, strings.Join(allowed, ", "))
		}
		if !contains(allowed, k) {
			return nil, invalid("unknown key %q (keys: %s)", k, strings.Join(allowed, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, invalid("key %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func atoi(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, invalid("%s=%q is not an integer", key, v)
	}
	if n < 0 {
		return 0, invalid("%s=%d must not be negative", key, n)
	}
	return n, nil
}

func dur(key, v string) (Duration, error) {
	d, err := ParseDuration(v)
	if err != nil {
		return 0, invalid("%s: %w", key, err)
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
			return w, invalid("missing %s (want node=N,from=T,to=T)", k)
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
		return w, invalid("to %v is not after from %v", w.To, w.From)
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
		return c, invalid("missing node (want node=N,at=T)")
	}
	if _, ok := kv["at"]; !ok {
		return c, invalid("missing at (want node=N,at=T)")
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
			return r, invalid("timeout=%d outside 0..31 (4.096 us * 2^code)", t)
		}
		r.Timeout = uint8(t)
	}
	s := Schedule{RCRetry: &r}
	return r, s.Validate(0)
}
