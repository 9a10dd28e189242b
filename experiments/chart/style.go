package chart

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot/vg/draw"
)

// Series styles: a colour from a palette that colour-blind readers can
// tell apart (Okabe and Ito, "Color Universal Design", 2008, and four of
// Tol's) and a marker shape. Twelve colours and seven shapes cycle
// together, so the first 84 styles differ from each other in colour or
// shape (12 and 7 are coprime) and every series is told apart in grey
// print too. In a figure, series whose styles would share a colour take
// the unused colours instead (distinctColours), so that up to twelve
// series never do. A design keeps its
// style in every figure: its index in Spec.StyleOrder (the design
// catalogue) picks it.

var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xff}, // blue
	color.RGBA{0xE6, 0x9F, 0x00, 0xff}, // orange
	color.RGBA{0x00, 0x9E, 0x73, 0xff}, // bluish green
	color.RGBA{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	color.RGBA{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	color.RGBA{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	color.RGBA{0xF0, 0xE4, 0x42, 0xff}, // yellow
	color.RGBA{0x00, 0x00, 0x00, 0xff}, // black
	// Four more from Paul Tol's "muted" scheme (also told apart by
	// colour-blind readers; personal.sron.nl/~pault), so that a figure of
	// up to twelve series, such as figure 19's eleven designs as bars,
	// gives each its own colour.
	color.RGBA{0x88, 0x22, 0x55, 0xff}, // wine
	color.RGBA{0x99, 0x99, 0x33, 0xff}, // olive
	color.RGBA{0x33, 0x22, 0x88, 0xff}, // indigo
	color.RGBA{0x88, 0x88, 0x88, 0xff}, // grey
}

var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{},
}

// style is how one series is drawn.
type style struct {
	color color.Color
	shape draw.GlyphDrawer
}

func styleAt(i int) style { return style{palette[i%len(palette)], shapes[i%len(shapes)]} }

// seriesStyles gives each of names a style: a name of order its index's
// (the design catalogue, so that a design keeps its style in every
// figure), any other series the lowest index no series of this figure
// uses.
func seriesStyles(names, order []string) []style {
	idx := make([]int, len(names))
	used := map[int]bool{}
	for i, n := range names {
		idx[i] = slices.Index(order, n)
		if idx[i] >= 0 {
			used[idx[i]] = true
		}
	}
	next := 0
	for i := range names {
		if idx[i] >= 0 {
			continue
		}
		for used[next] {
			next++
		}
		idx[i], used[next] = next, true
	}
	out := make([]style, len(names))
	for i, k := range idx {
		out[i] = styleAt(k)
	}
	distinctColours(out)
	return out
}

// distinctColours gives each style that shares its colour with an earlier
// one the first palette colour no style uses, while any is left.
func distinctColours(st []style) {
	used := map[color.Color]bool{}
	for _, s := range st {
		used[s.color] = true
	}
	seen := map[color.Color]bool{}
	for i := range st {
		if !seen[st[i].color] {
			seen[st[i].color] = true
			continue
		}
		for _, c := range palette {
			if !used[c] {
				st[i].color, used[c], seen[c] = c, true, true
				break
			}
		}
	}
}

// axisLabels are the labels, with units, of the run record's metrics and
// the sweep parameters that figures and `explore plot` put on axes.
var axisLabels = map[string]string{
	"throughput_gibps":          "receive throughput per node [GiB/s]",
	"response_s":                "response time [s]",
	"setup_ms":                  "setup time [ms]",
	"qps_per_node":              "queue pairs per node",
	"registered_bytes_per_node": "registered memory per node [bytes]",
	"credit_writes":             "credit write-backs",
	"credit_repeats":            "credit repeats (SQ/SR)",
	"credit_owed":               "credit sent late (SQ/SR)",
	"credit_stalls":             "credit stalls",
	"qp_cache_miss_rate":        "QP-context cache miss rate",
	"sender_idle":               "sending threads' idle fraction",
	"receiver_idle":             "receiving threads' idle fraction",
	"release_ms_per_gib":        "Release time per GiB received [ms]",
	"slot_return_us":            "slot return latency [us]",
	"writes_per_transfer":       "RDMA Writes per transfer",
	"recv_buffers_mean":         "receive buffers per node (time mean)",
	"retransmits":               "retransmitted messages",
	"sim_events":                "simulated events",
	"wall_s":                    "wall time [s]",
	"nodes":                     "nodes",
	"threads":                   "threads per node",
	"msg-bytes":                 "message size [bytes]",
	"msg_bytes":                 "message size [bytes]",
	"buffers":                   "buffers per thread and destination",
	"credit-every":              "receives per credit write-back",
	"credit_every":              "receives per credit write-back",
	"cycles-per-tuple":          "processing per tuple [cycles]",
	"cycles_per_tuple":          "processing per tuple [cycles]",
	"bytes-per-node":            "input per node [bytes]",
	"bytes_per_node":            "input per node [bytes]",
}

// AxisLabel is the label, with its unit, of a record metric or sweep
// parameter on a plot axis; an unknown name is its own label.
func AxisLabel(name string) string {
	if l, ok := axisLabels[name]; ok {
		return l
	}
	return name
}
