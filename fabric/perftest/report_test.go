package perftest_test

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// perftest's printf formats, as linux-rdma/perftest release 26.04.17
// defines them (src/perftest_parameters.h: RESULT_LINE, RESULT_FMT,
// RESULT_FMT_G, RESULT_FMT_LAT, RESULT_FMT_LAT_DUR, RESULT_EXT,
// REPORT_FMT, REPORT_FMT_EXT, REPORT_FMT_LAT, REPORT_FMT_LAT_DUR,
// REPORT_EXT; src/perftest_communication.h: BASIC_ADDR_FMT, READ_FMT,
// RDMA_FMT, PERF_GID_FMT), with PRIu64 as glibc defines it on 64-bit
// Linux ("lu"). They are the reference the report is compared with,
// through cprintf below, a C printf for the conversions they use.
const (
	cResultLine      = "---------------------------------------------------------------------------------------\n"
	cResultFmt       = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	cResultFmtG      = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	cResultFmtLat    = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99" + "%" + " percentile[usec]   99.9" + "%" + " percentile[usec] "
	cResultFmtLatDur = " #bytes        #iterations       t_avg[usec]    tps average"
	cResultExt       = "\n"
	cReportFmt       = " %-7lu    %-10" + "lu" + "       %-7.2lf            %-7.2lf\t\t     %-7.6lf"
	cReportFmtExt    = " %-7lu    %" + "lu" + "           %-7.6lf            %-7.6lf            %-7.6lf"
	cReportFmtLat    = " %-7lu %" + "lu" + "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
	cReportFmtLatDur = " %-7lu       %" + "lu" + "            %-7.2f        %-7.2f"
	cReportExt       = "\n"
	cBasicAddrFmt    = " %s address: LID %#04x QPN %#06x PSN %#06x"
	cReadFmt         = " OUT %#04x"
	cRDMAFmt         = " RKey %#08x VAddr %#016llx"
	cGIDFmt          = " %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n"
)

// cprintf formats as C's printf does for the conversions above: flags
// '-', '0' and '#', a width, a precision, the length modifiers l and ll,
// and d, u, x, f, g, s and %%.
func cprintf(format string, args ...any) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		i++
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		var left, zero, alt bool
		for ; strings.IndexByte("-0#", format[i]) >= 0; i++ {
			left, zero, alt = left || format[i] == '-', zero || format[i] == '0', alt || format[i] == '#'
		}
		width, prec := 0, -1
		for ; format[i] >= '0' && format[i] <= '9'; i++ {
			width = width*10 + int(format[i]-'0')
		}
		if format[i] == '.' {
			prec = 0
			for i++; format[i] >= '0' && format[i] <= '9'; i++ {
				prec = prec*10 + int(format[i]-'0')
			}
		}
		for format[i] == 'l' {
			i++
		}
		arg := args[0]
		args = args[1:]
		var prefix, body string
		switch format[i] {
		case 'd', 'u':
			body = fmt.Sprint(arg)
		case 'x':
			v := toUint(arg)
			body = strconv.FormatUint(v, 16)
			if alt && v != 0 {
				prefix = "0x"
			}
		case 'f':
			if prec < 0 {
				prec = 6
			}
			body = strconv.FormatFloat(arg.(float64), 'f', prec, 64)
		case 'g':
			body = cG(arg.(float64))
		case 's':
			body = fmt.Sprint(arg)
		default:
			panic("cprintf: conversion " + string(format[i]))
		}
		pad := width - len(prefix) - len(body)
		switch {
		case pad <= 0:
			b.WriteString(prefix + body)
		case left:
			b.WriteString(prefix + body + strings.Repeat(" ", pad))
		case zero:
			b.WriteString(prefix + strings.Repeat("0", pad) + body)
		default:
			b.WriteString(strings.Repeat(" ", pad) + prefix + body)
		}
	}
	return b.String()
}

func toUint(a any) uint64 {
	switch v := a.(type) {
	case int:
		return uint64(v)
	case uint8:
		return uint64(v)
	case uint16:
		return uint64(v)
	case uint32:
		return uint64(v)
	case uint64:
		return v
	case fabric.PSN:
		return uint64(v)
	}
	panic(fmt.Sprintf("toUint %T", a))
}

// cG is C's %g: six significant digits, the exponent form when the
// exponent is below -4 or at least 6, trailing zeros removed, an exponent
// of at least two digits.
func cG(v float64) string {
	if v == 0 {
		return "0"
	}
	e := strconv.FormatFloat(v, 'e', 5, 64)
	x, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	trim := func(s string) string {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	if x < -4 || x >= 6 {
		m, exp, _ := strings.Cut(e, "e")
		sign := exp[0]
		digits := exp[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return trim(m) + "e" + string(sign) + digits
	}
	return trim(strconv.FormatFloat(v, 'f', 5-x, 64))
}

func TestCPrintf(t *testing.T) {
	for _, tc := range []struct {
		format string
		args   []any
		want   string
	}{
		{"%#04x", []any{1}, "0x01"},
		{"%#04x", []any{0}, "0000"},
		{"%#06x", []any{0x3f1a2b}, "0x3f1a2b"},
		{"%#016llx", []any{uint64(0x7f0000)}, "0x000000007f0000"},
		{"%-7lu|", []any{65536}, "65536  |"},
		{"%-7.2lf|", []any{1.5}, "1.50   |"},
		{"%02d", []any{7}, "07"},
		{"%g", []any{1.2345678}, "1.23457"},
		{"%g", []any{0.5}, "0.5"},
		{"%g", []any{1234567.0}, "1.23457e+06"},
		{"%g", []any{0.00001}, "1e-05"},
	} {
		if got := cprintf(tc.format, tc.args...); got != tc.want {
			t.Errorf("cprintf(%q, %v) = %q, want %q", tc.format, tc.args, got, tc.want)
		}
	}
}

// runPair runs cfg on two simulated nodes of the default profile.
func runPair(t *testing.T, cfg perftest.Config) *perftest.Result {
	t.Helper()
	prof, err := sim.LoadProfile(sim.DefaultProfileName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := cfg.Normalize(2); err != nil {
		t.Fatal(err)
	}
	r, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	return r
}

// mibps is perftest's MiB/sec: 2^20 bytes a second.
func mibps(gbps float64) float64 { return gbps * 1e9 / 8 / (1 << 20) }

// TestReportMatchesPerftestFormats compares the report's rule, headers
// and rows byte for byte with perftest's printf formats rendered with the
// same values, for the bandwidth and latency tests, every size of -a, in
// MiB/sec and Gb/sec, in iteration and duration mode.
func TestReportMatchesPerftestFormats(t *testing.T) {
	sizes := perftest.AllSizes("send_bw", fabric.RC, 4096)
	if len(sizes) != 23 || sizes[0] != 2 || sizes[22] != 8388608 {
		t.Fatalf("-a sizes %v: want 2 to 8388608, 23 of them (perftest's 1 << 1 .. 1 << 23)", sizes)
	}
	if ud := perftest.AllSizes("send_bw", fabric.UD, 2048); ud[len(ud)-1] != 2048 {
		t.Errorf("-a over UD with a 2048-byte MTU ends at %d", ud[len(ud)-1])
	}
	type row struct {
		test string
		unit perftest.Unit
		res  perftest.Result
	}
	var rows []row
	for _, test := range []string{"send_bw", "write_bw", "read_bw", "send_lat", "write_lat", "read_lat"} {
		for i, s := range sizes {
			r := perftest.Result{Test: test, Bytes: s, Iterations: 1000, QPs: 1 + i%3, BWPeakGbps: 99.37 - float64(i),
				BWAvgGbps: 97.25 - float64(i), MsgRateMpps: 12.345678 / float64(i+1)}
			for k := range 1000 {
				r.Samples = append(r.Samples, fabric.Duration(800_000+37*int64((k*7919)%1000)+int64(i)*1000)) // 0.8 us and up
			}
			rows = append(rows, row{test, perftest.Unit(i % 2), r})
		}
	}
	slow := perftest.Result{Test: "write_bw", Bytes: 2, Iterations: 50, QPs: 1, BWPeakGbps: 0.09, BWAvgGbps: 0.0812345, MsgRateMpps: 5.07}
	dur := perftest.Result{Test: "send_bw", Bytes: 65536, Iterations: 123456, QPs: 2, BWAvgGbps: 96.5, MsgRateMpps: 0.184, RunS: 5}
	latDur := perftest.Result{Test: "write_lat", Bytes: 8, Iterations: 2000000, RunS: 5, TAvgUS: 1.2345, TPS: 405060.7}
	rows = append(rows, row{"write_bw", perftest.GbPerSec, slow}, row{"write_bw", perftest.MiBPerSec, slow},
		row{"send_bw", perftest.GbPerSec, dur}, row{"write_lat", 0, latDur})
	for _, tc := range rows {
		r := tc.res
		name := fmt.Sprintf("%s -s %d %v duration=%v", tc.test, r.Bytes, tc.unit, r.RunS > 0)
		var got bytes.Buffer
		var want string
		if strings.HasSuffix(tc.test, "_bw") {
			perftest.WriteBWHeader(&got, tc.unit)
			perftest.WriteBWRow(&got, &r, tc.unit)
			header, conv := cResultFmt, mibps
			if tc.unit == perftest.GbPerSec {
				header, conv = cResultFmtG, func(g float64) float64 { return g }
			}
			iters := r.Iterations * r.QPs
			if r.RunS > 0 {
				iters = r.Iterations
			}
			format := cReportFmt
			if tc.unit == perftest.GbPerSec && r.BWAvgGbps < 0.1 {
				format = cReportFmtExt
			}
			want = cResultLine + header + cResultExt + cprintf(format, r.Bytes, iters, conv(r.BWPeakGbps), conv(r.BWAvgGbps), r.MsgRateMpps) + cReportExt
		} else if r.RunS > 0 {
			perftest.WriteLatHeader(&got, true)
			perftest.WriteLatRow(&got, &r, perftest.LatOptions{})
			want = cResultLine + cResultFmtLatDur + cResultExt + cprintf(cReportFmtLatDur, r.Bytes, r.Iterations, r.TAvgUS, r.TPS) + cReportExt
		} else {
			perftest.WriteLatHeader(&got, false)
			perftest.WriteLatRow(&got, &r, perftest.LatOptions{})
			f := perftest.Figures(r.Samples)
			want = cResultLine + cResultFmtLat + cResultExt + cprintf(cReportFmtLat, r.Bytes, r.Iterations,
				f.MinUS, f.MaxUS, f.TypicalUS, f.AvgUS, f.StdevUS, f.P99US, f.P999US) + cReportExt
		}
		if got.String() != want {
			t.Errorf("%s:\ngot  %q\nwant %q", name, got.String(), want)
		}
	}
}

// TestAwkFields: the fields a script splits a row into (awk's default,
// on runs of spaces and tabs) are the columns the header names, at the
// field numbers perftest's rows have them.
func TestAwkFields(t *testing.T) {
	r := perftest.Result{Test: "send_bw", Bytes: 65536, Iterations: 1000, QPs: 1, BWPeakGbps: 99.37, BWAvgGbps: 98.21, MsgRateMpps: 0.187323}
	var b bytes.Buffer
	perftest.WriteBWRow(&b, &r, perftest.MiBPerSec)
	f := strings.Fields(b.String())
	if len(f) != 5 || f[0] != "65536" || f[1] != "1000" || f[2] != fmt.Sprintf("%.2f", mibps(99.37)) ||
		f[3] != fmt.Sprintf("%.2f", mibps(98.21)) || f[4] != "0.187323" {
		t.Errorf("bandwidth row fields %q", f)
	}
	var samples []fabric.Duration
	for k := 1; k <= 100; k++ {
		samples = append(samples, fabric.Duration(k)*fabric.Microsecond)
	}
	lat := perftest.Result{Test: "send_lat", Bytes: 2, Iterations: 100, Samples: samples}
	b.Reset()
	perftest.WriteLatRow(&b, &lat, perftest.LatOptions{})
	f = strings.Fields(b.String())
	// 98 samples kept (1..98 us), the two longest left out.
	want := []string{"2", "100", "1.00", "99.00", "49.50", "49.50", fmt.Sprintf("%.2f", math.Sqrt((98*98-1)/12.0)), "99.00", "99.00"}
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("latency row fields %q, want %q ($7 t_stdev, $8 99%% percentile)", f, want)
	}
}

// TestFigures checks perftest's latency rules: the two longest samples
// left out of the count, the median of an even count the mean of the
// middle two, t_max the second longest sample, the percentiles at
// ceil(0.99 n) and ceil(0.999 n).
func TestFigures(t *testing.T) {
	us := func(v ...float64) []fabric.Duration {
		var d []fabric.Duration
		for _, x := range v {
			d = append(d, fabric.Duration(x*1e6))
		}
		return d
	}
	for _, tc := range []struct {
		samples []fabric.Duration
		want    perftest.LatencyFigures
	}{
		{us(5, 1, 4, 2, 3, 100), perftest.LatencyFigures{MinUS: 1, MaxUS: 5, TypicalUS: 2.5, AvgUS: 2.5, StdevUS: math.Sqrt(1.25), P99US: 5, P999US: 5}},
		{us(3, 1, 2, 9, 8), perftest.LatencyFigures{MinUS: 1, MaxUS: 8, TypicalUS: 2, AvgUS: 2, StdevUS: math.Sqrt(2.0 / 3), P99US: 8, P999US: 8}},
		{us(7), perftest.LatencyFigures{MinUS: 7, MaxUS: 7, TypicalUS: 7, AvgUS: 7, P99US: 7, P999US: 7}},
	} {
		got := perftest.Figures(tc.samples)
		same := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
		if !same(got.MinUS, tc.want.MinUS) || !same(got.MaxUS, tc.want.MaxUS) || !same(got.TypicalUS, tc.want.TypicalUS) ||
			!same(got.AvgUS, tc.want.AvgUS) || !same(got.StdevUS, tc.want.StdevUS) || !same(got.P99US, tc.want.P99US) || !same(got.P999US, tc.want.P999US) {
			t.Errorf("Figures(%v) = %+v, want %+v", tc.samples, got, tc.want)
		}
	}
}

// TestPreamble runs each perftest test on the simulator and checks its
// preamble: the settings lines, with the run's values, and the address
// lines against perftest's formats filled from the run's queue pairs.
func TestPreamble(t *testing.T) {
	for _, tc := range []struct {
		cfg   perftest.Config
		title string
		lines []string
	}{
		{perftest.Config{Test: "send_bw", Iters: 20, QPs: 2}, "Send BW Test",
			[]string{" Number of qps   : 2\t\tTransport type : IB", " Connection type : RC\t\tUsing SRQ      : OFF", " TX depth        : 128",
				" CQ Moderation   : 100", " CQE Poll Batch  : 64", " Mtu             : 4096[B]", " Link type       : IB", " Max inline data : 220[B]",
				" rdma_cm QPs\t : OFF", " Data ex. method : Ethernet"}},
		{perftest.Config{Test: "write_bw", Iters: 20, Bidirectional: true, MTU: 1024, PostList: 4}, "RDMA_Write Bidirectional Post List BW Test",
			[]string{" Post List       : 4", " Mtu             : 1024[B]"}},
		{perftest.Config{Test: "read_bw", Iters: 20, Outs: 4}, "RDMA_Read BW Test", []string{" Outstand reads  : 4"}},
		{perftest.Config{Test: "send_lat", Iters: 20, Conn: fabric.UD}, "Send Latency Test", []string{" Connection type : UD\t\tUsing SRQ      : OFF"}},
		{perftest.Config{Test: "write_lat", Iters: 20}, "RDMA_Write Latency Test", []string{" TX depth        : 128"}},
		{perftest.Config{Test: "read_lat", Iters: 20}, "RDMA_Read Latency Test", []string{" Outstand reads  : 16"}},
	} {
		r := runPair(t, tc.cfg)
		cfg := tc.cfg
		cfg.Normalize(2)
		var b bytes.Buffer
		if err := perftest.WritePreamble(&b, &cfg, r.Setup, 0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if lines[0]+"\n" != cResultLine || lines[1] != strings.Repeat(" ", 20)+tc.title {
			t.Errorf("%s: starts %q", cfg.Test, lines[:2])
		}
		for _, l := range append(tc.lines, " Dual-port       : OFF\t\tDevice         : sim0", " GID index       : 0") {
			if !strings.Contains(out, "\n"+l+"\n") {
				t.Errorf("%s: no line %q in\n%s", cfg.Test, l, out)
			}
		}
		s := r.Setup
		if !s.Client || len(s.Local) != cfg.QPs || len(s.Remote) != cfg.QPs {
			t.Fatalf("%s: set-up %+v", cfg.Test, s)
		}
		var want strings.Builder
		for _, side := range []struct {
			name  string
			infos []fabric.QPInfo
		}{{"local", s.Local}, {"remote", s.Remote}} {
			for _, q := range side.infos {
				want.WriteString(cprintf(cBasicAddrFmt, side.name, q.LID, q.QPN, q.PSN))
				if strings.HasPrefix(cfg.Test, "read") {
					want.WriteString(cprintf(cReadFmt, s.Outs))
				}
				if !strings.HasPrefix(cfg.Test, "send") {
					want.WriteString(cprintf(cRDMAFmt, q.RKey, q.Addr))
				}
				want.WriteString("\n")
				g := make([]any, 0, 17)
				g = append(g, "GID")
				for _, x := range q.GID {
					g = append(g, int(x))
				}
				want.WriteString(cprintf(cGIDFmt, g...))
			}
		}
		if !strings.HasSuffix(out, cResultLine+want.String()) {
			t.Errorf("%s: address lines\n%s\nwant after the rule\n%s", cfg.Test, out, want.String())
		}
	}
}

// TestBidirectional: both nodes of a pair send; the bandwidth is the sum
// of the directions, each about what one direction alone gets on a full
// duplex link, and the record says so.
func TestBidirectional(t *testing.T) {
	for _, test := range []string{"send_bw", "write_bw", "read_bw"} {
		one := runPair(t, perftest.Config{Test: test, Size: 65536, Iters: 200})
		both := runPair(t, perftest.Config{Test: test, Size: 65536, Iters: 200, Bidirectional: true})
		if !both.Bidirectional || len(both.Sides) != 2 {
			t.Fatalf("%s -b: %+v", test, both)
		}
		sum := both.Sides[0].BWAvgGbps + both.Sides[1].BWAvgGbps
		if math.Abs(sum-both.BWAvgGbps) > 1e-9*sum || both.BWAvgGbps < 1.8*one.BWAvgGbps || both.BWAvgGbps > 2.05*one.BWAvgGbps {
			t.Errorf("%s: one way %.2f Gb/s, both ways %.2f (sides %.2f + %.2f)", test, one.BWAvgGbps, both.BWAvgGbps, both.Sides[0].BWAvgGbps, both.Sides[1].BWAvgGbps)
		}
	}
	cfg := perftest.Config{Test: "send_lat", Bidirectional: true}
	if err := cfg.Normalize(2); err == nil {
		t.Error("send_lat with Bidirectional was accepted")
	}
}

// TestOptions: perftest's -N, -m, -o, -u and -l reach the run, and
// values outside their range are refused by their field.
func TestOptions(t *testing.T) {
	if r := runPair(t, perftest.Config{Test: "write_bw", Iters: 100, NoPeak: true}); r.BWPeakGbps != 0 || r.BWAvgGbps <= 0 {
		t.Errorf("NoPeak: peak %.2f, average %.2f", r.BWPeakGbps, r.BWAvgGbps)
	}
	small := runPair(t, perftest.Config{Test: "write_bw", Size: 65536, Iters: 100, MTU: 256})
	full := runPair(t, perftest.Config{Test: "write_bw", Size: 65536, Iters: 100})
	if small.Setup.MTU != 256 || small.BWAvgGbps >= full.BWAvgGbps {
		t.Errorf("MTU 256: path MTU %d, %.2f Gb/s against %.2f at 4096", small.Setup.MTU, small.BWAvgGbps, full.BWAvgGbps)
	}
	one := runPair(t, perftest.Config{Test: "read_bw", Size: 64, Iters: 400, Outs: 1})
	many := runPair(t, perftest.Config{Test: "read_bw", Size: 64, Iters: 400})
	if one.Setup.Outs != 1 || one.MsgRateMpps >= many.MsgRateMpps {
		t.Errorf("Outs 1: %d reads in flight, %.3f Mpps against %.3f with 16", one.Setup.Outs, one.MsgRateMpps, many.MsgRateMpps)
	}
	if r := runPair(t, perftest.Config{Test: "write_bw", Iters: 100, PostList: 1, QPTimeout: perftest.NoTimeout}); r.BWAvgGbps <= 0 {
		t.Errorf("PostList 1: %+v", r)
	}
	for _, tc := range []struct {
		cfg   perftest.Config
		field string
	}{
		{perftest.Config{Test: "write_bw", MTU: 1500}, "MTU 1500"},
		{perftest.Config{Test: "write_bw", Outs: 4}, "Outs 4"},
		{perftest.Config{Test: "write_bw", QPTimeout: 32}, "QPTimeout 32"},
		{perftest.Config{Test: "write_bw", PostList: 4, Interleave: true}, "PostList 4"},
		{perftest.Config{Test: "write_bw", PostList: 256}, "PostList 256"},
		{perftest.Config{Test: "send_bw", Conn: fabric.UD, MTU: 1024, Size: 2048}, "Size 2048"},
	} {
		if err := tc.cfg.Normalize(2); err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("%+v: %v, want a refusal of %s", tc.cfg, err, tc.field)
		}
	}
}

// TestAtomicsRefused: perftest's atomic tests are refused, naming what
// the fabric contract lacks.
func TestAtomicsRefused(t *testing.T) {
	for _, test := range perftest.AtomicTests {
		cfg := perftest.Config{Test: test}
		err := cfg.Normalize(2)
		if err == nil || !strings.Contains(err.Error(), "fabric.Opcode has no atomic opcode") {
			t.Errorf("%s: %v", test, err)
		}
	}
}
