package perftest

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// perftest's text report: what ib_send_bw, ib_write_bw, ib_read_bw,
// ib_send_lat, ib_write_lat and ib_read_lat print at their default
// verbosity, written from a Result so that scripts that read perftest's
// output read ours. The layouts are those of linux-rdma/perftest release
// 26.04.17 (commit 720b610):
//
//   - src/perftest_parameters.h: the rule (RESULT_LINE), the table
//     headers (RESULT_FMT, RESULT_FMT_G, RESULT_FMT_LAT,
//     RESULT_FMT_LAT_DUR, RESULT_EXT) and rows (REPORT_FMT,
//     REPORT_FMT_EXT, REPORT_FMT_LAT, REPORT_FMT_LAT_DUR, REPORT_EXT);
//   - src/perftest_parameters.c: the preamble (ctx_print_test_info), the
//     bandwidth figures and their units (print_report_bw,
//     print_full_bw_report: MiB/sec is 2^20 bytes a second, Gb/sec 10^9
//     bits; six decimals below 0.1 Gb/sec), and the latency figures
//     (print_report_lat, print_report_lat_duration);
//   - src/perftest_communication.h and .c: the address lines
//     (BASIC_ADDR_FMT, READ_FMT, RDMA_FMT, PERF_GID_FMT, printed by
//     ctx_print_pingpong_data).
//
// Column positions, spaces and tabs are perftest's, so that a field
// number in awk means what it means there: on a bandwidth row $4 is the
// average bandwidth, on a latency row $7 the standard deviation and $8 the
// 99th percentile.

// Rule is the dashed line perftest prints around its sections.
const Rule = "---------------------------------------------------------------------------------------"

// Unit is a bandwidth report's unit.
type Unit int

const (
	MiBPerSec Unit = iota // 2^20 bytes a second, perftest's default
	GbPerSec              // 10^9 bits a second, perftest's report_gbits
)

// Of converts gbps, in Gb/s, to u.
func (u Unit) Of(gbps float64) float64 {
	if u == GbPerSec {
		return gbps
	}
	return gbps * 1e9 / 8 / (1 << 20)
}

func (u Unit) String() string {
	if u == GbPerSec {
		return "Gb/sec"
	}
	return "MiB/sec"
}

// verbs names perftest's tests by the name its preamble prints
// (testsStr in perftest_parameters.c).
var verbs = map[string]string{
	"send_bw": "Send", "send_lat": "Send",
	"write_bw": "RDMA_Write", "write_lat": "RDMA_Write",
	"read_bw": "RDMA_Read", "read_lat": "RDMA_Read",
}

// IsPerftest says whether test is one of perftest's own tests, whose
// report has perftest's preamble; the others (alltoall_bw, incast_bw,
// ebb, shift_bw, reg_mr) have perftest's table only.
func IsPerftest(test string) bool { _, ok := verbs[test]; return ok }

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// hex formats v as C's printf does with "%#0<width>x": "0x" and the hex
// digits, zero-padded to width characters in all; zero is printed
// without the prefix, as width zeros.
func hex(v uint64, width int) string {
	if v == 0 {
		return strings.Repeat("0", width)
	}
	d := strconv.FormatUint(v, 16)
	if n := width - 2 - len(d); n > 0 {
		d = strings.Repeat("0", n) + d
	}
	return "0x" + d
}

// WritePreamble writes what perftest prints before its table for test
// cfg.Test from the node that saw s: the test's name and settings
// (ctx_print_test_info) and the address of every queue pair of the node
// and of its peer (ctx_print_pingpong_data). gidIndex is the GID index
// asked for, or -1 for the automatic choice; the GID of each address is
// printed, as perftest does, when a GID index was given or the link is
// Ethernet. Settings perftest has and this package does not (dual port,
// SRQ, relaxed ordering, lock-free queues, the ibv_wr API, rdma_cm) are
// printed off, and the data exchange as perftest's socket exchange
// ("Ethernet").
func WritePreamble(w io.Writer, cfg *Config, s *Setup, gidIndex int) error {
	p := &printer{w: w}
	bw := cfg.bandwidth()
	title := verbs[cfg.Test] + " "
	if bw && cfg.Bidirectional {
		title += "Bidirectional "
	}
	if bw && cfg.PostList > 1 {
		title += "Post List "
	}
	if bw {
		title += "BW "
	} else {
		title += "Latency "
	}
	p.printf("%s\n%20s%sTest\n", Rule, "", title)
	p.printf(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", s.Device)
	p.printf(" Number of qps   : %d\t\tTransport type : %s\n", cfg.QPs, "IB")
	p.printf(" Connection type : %s\t\tUsing SRQ      : %s\n", cfg.Conn, "OFF")
	p.printf(" PCIe relax order: %s\t\tLock-free\t: %s\n", "Unsupported", "Unsupported")
	p.printf(" ibv_wr* API     : %s\t\tUsing Enhanced Reorder      : %s\n", "OFF", "OFF")
	if s.Client || cfg.Bidirectional {
		p.printf(" TX depth        : %d\n", cfg.TxDepth)
	}
	if bw && cfg.PostList > 1 {
		p.printf(" Post List       : %d\n", cfg.PostList)
	}
	if strings.HasPrefix(cfg.Test, "send_") && (!s.Client || cfg.Bidirectional) {
		p.printf(" RX depth        : %d\n", cfg.RxDepth)
	}
	if bw {
		p.printf(" CQ Moderation   : %d\n", cfg.CQMod)
		p.printf(" CQE Poll Batch  : %d\n", s.PollBatch)
	}
	p.printf(" Mtu             : %d[B]\n", s.MTU)
	p.printf(" Link type       : %s\n", linkType(s.LinkLayer))
	if gidIndex >= 0 {
		p.printf(" GID index       : %d\n", gidIndex)
	}
	read := strings.HasPrefix(cfg.Test, "read_")
	if read {
		p.printf(" Outstand reads  : %d\n", s.Outs)
	} else {
		p.printf(" Max inline data : %d[B]\n", s.MaxInline)
	}
	p.printf(" rdma_cm QPs\t : %s\n", "OFF")
	p.printf(" Data ex. method : %s\n", "Ethernet")
	p.printf("%s\n", Rule)
	gid := gidIndex >= 0 || s.LinkLayer == "Ethernet"
	for _, side := range []struct {
		name  string
		infos []fabric.QPInfo
	}{{"local", s.Local}, {"remote", s.Remote}} {
		for _, q := range side.infos {
			p.printf(" %s address: LID %s QPN %s PSN %s", side.name, hex(uint64(q.LID), 4), hex(uint64(q.QPN), 6), hex(uint64(q.PSN), 6))
			if read {
				p.printf(" OUT %s", hex(uint64(s.Outs), 4))
			}
			if read || strings.HasPrefix(cfg.Test, "write_") {
				p.printf(" RKey %s VAddr %s", hex(uint64(q.RKey), 8), hex(q.Addr, 16))
			}
			p.printf("\n")
			if gid {
				p.printf(" GID: %s\n", decimalGID(q.GID))
			}
		}
	}
	return p.err
}

// linkType is perftest's name of a link layer (link_layer_str).
func linkType(layer string) string {
	switch layer {
	case "InfiniBand", "":
		return "IB"
	case "Ethernet":
		return "Ethernet"
	}
	return "Unknown"
}

// decimalGID prints a GID as perftest's address lines do: each byte in
// decimal, at least two digits (PERF_GID_FMT's %02d).
func decimalGID(g fabric.GID) string {
	parts := make([]string, len(g))
	for i, b := range g {
		parts[i] = fmt.Sprintf("%02d", b)
	}
	return strings.Join(parts, ":")
}

// WriteBWHeader writes the rule and the header of perftest's bandwidth
// table in unit u.
func WriteBWHeader(w io.Writer, u Unit) error {
	_, err := fmt.Fprintf(w, "%s\n #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", Rule, u, u)
	return err
}

// WriteBWRow writes r as a row of perftest's bandwidth table in unit u:
// #iterations is the messages of all queue pairs (perftest's iterations
// times queue pairs; in duration mode, the messages measured).
func WriteBWRow(w io.Writer, r *Result, u Unit) error {
	return writeBW(w, r.Bytes, bwIterations(r), r.BWPeakGbps, r.BWAvgGbps, r.MsgRateMpps, u)
}

// WriteBWSide writes one direction of a bidirectional result r as a row
// of perftest's bandwidth table (its local or remote results).
func WriteBWSide(w io.Writer, r *Result, s Side, u Unit) error {
	return writeBW(w, r.Bytes, bwIterations(r), s.BWPeakGbps, s.BWAvgGbps, s.MsgRateMpps, u)
}

func bwIterations(r *Result) int {
	if r.RunS > 0 {
		return r.Iterations
	}
	return r.Iterations * r.QPs
}

func writeBW(w io.Writer, size, iters int, peakGbps, avgGbps, mpps float64, u Unit) error {
	peak, avg := u.Of(peakGbps), u.Of(avgGbps)
	format := " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n"
	if u == GbPerSec && avg < 0.1 { // perftest's extra accuracy for slow links
		format = " %-7d    %d           %-7.6f            %-7.6f            %-7.6f\n"
	}
	_, err := fmt.Fprintf(w, format, size, iters, peak, avg, mpps)
	return err
}

// WriteLatHeader writes the rule and the header of perftest's latency
// table: of duration mode (#bytes, #iterations, t_avg, tps) or of
// iteration mode (nine columns).
func WriteLatHeader(w io.Writer, duration bool) error {
	h := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
	if duration {
		h = " #bytes        #iterations       t_avg[usec]    tps average"
	}
	_, err := fmt.Fprintf(w, "%s\n%s\n", Rule, h)
	return err
}

// LatOptions are perftest's latency report options.
type LatOptions struct {
	Unsorted  bool // list every sample in the order taken first (perftest's report-unsorted)
	Histogram bool // list the samples the figures are made of, sorted (perftest's report-histogram)
}

// WriteLatRow writes r as a row of perftest's latency table, with its
// figures computed from r's samples as perftest computes them
// (LatencyFigures); a duration-mode result as perftest's duration row.
// With o's lists, the samples come first, and the rule and header again
// before the row, as perftest prints them.
func WriteLatRow(w io.Writer, r *Result, o LatOptions) error {
	if r.RunS > 0 {
		_, err := fmt.Fprintf(w, " %-7d       %d            %-7.2f        %-7.2f\n", r.Bytes, r.Iterations, r.TAvgUS, r.TPS)
		return err
	}
	p := &printer{w: w}
	f := Figures(r.Samples)
	if o.Unsorted {
		writeSamples(p, r.Samples)
	}
	if o.Histogram {
		writeSamples(p, f.kept)
	}
	if o.Unsorted || o.Histogram {
		if err := WriteLatHeader(w, false); err != nil {
			return err
		}
	}
	p.printf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		r.Bytes, r.Iterations, f.MinUS, f.MaxUS, f.TypicalUS, f.AvgUS, f.StdevUS, f.P99US, f.P999US)
	return p.err
}

// writeSamples lists samples as perftest does: a "#, usec" line, then
// the sample's number from 1 and its microseconds as C's %g prints them.
func writeSamples(p *printer, samples []fabric.Duration) {
	p.printf("#, usec\n")
	for i, d := range samples {
		p.printf("%d, %s\n", i+1, strconv.FormatFloat(d.Microseconds(), 'g', 6, 64))
	}
}

// latencyTail is how many of the longest samples perftest's report
// leaves out of its figures (LAT_MEASURE_TAIL).
const latencyTail = 2

// LatencyFigures are the columns of perftest's latency row, microseconds.
type LatencyFigures struct {
	MinUS, MaxUS, TypicalUS, AvgUS, StdevUS, P99US, P999US float64
	kept                                                   []fabric.Duration // the samples the figures are made of, sorted
}

// Figures computes a latency row's figures from samples as perftest's
// print_report_lat does: sorted, the two longest left out of the count n
// (none when there are two or fewer); t_typical the median of the n (the
// mean of the middle two when n is even), t_avg their mean, t_stdev their
// standard deviation; t_min the shortest sample, and t_max, the 99% and
// 99.9% percentiles the samples at index n, ceil(0.99 n) and ceil(0.999 n)
// of the sorted list (so t_max is the second longest sample). perftest
// truncates each deviation to whole microseconds before squaring it,
// which makes its t_stdev 0.00 for spreads under a microsecond; this
// deviation is exact.
func Figures(samples []fabric.Duration) LatencyFigures {
	if len(samples) == 0 {
		return LatencyFigures{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	if n > latencyTail {
		n -= latencyTail
	}
	at := func(i int) float64 { return s[min(i, len(s)-1)].Microseconds() }
	typical := s[n/2]
	if n%2 == 0 {
		typical = (s[n/2-1] + s[n/2]) / 2
	}
	var sum float64
	for _, d := range s[:n] {
		sum += d.Microseconds()
	}
	avg := sum / float64(n)
	var sq float64
	for _, d := range s[:n] {
		sq += (avg - d.Microseconds()) * (avg - d.Microseconds())
	}
	return LatencyFigures{MinUS: at(0), MaxUS: at(n), TypicalUS: typical.Microseconds(), AvgUS: avg,
		StdevUS: math.Sqrt(sq / float64(n)), P99US: at(int(math.Ceil(float64(n) * 0.99))),
		P999US: at(int(math.Ceil(float64(n) * 0.999))), kept: s[:n]}
}

// AllSizes are the message sizes perftest's all-sizes mode (-a) runs for
// test over conn: every power of two from 2 bytes to 8 MiB (2^23, its
// MAX_SIZE; send_bw.c and the others loop to 1 << 23), over UD up to the
// MTU mtu. reg_mr, not a perftest test, runs 4 KiB to 1 GiB.
func AllSizes(test string, conn fabric.QPType, mtu int) []int {
	lo, hi := 2, 1<<23
	if test == "reg_mr" {
		lo, hi = 4096, 1<<30
	}
	if conn == fabric.UD && test != "reg_mr" && mtu > 0 {
		hi = min(hi, mtu)
	}
	var sizes []int
	for s := lo; s <= hi; s *= 2 {
		sizes = append(sizes, s)
	}
	return sizes
}
