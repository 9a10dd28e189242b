package experiments

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkRunMESQSR16 measures simulated packets per wall-second for the
// shuffle design Liu19 recommends, MESQ/SR (4 KiB UD messages, an endpoint
// per thread), on 16 EDR nodes in size-only mode: `explore run --design
// MESQ/SR --nodes 16 --profile edr-cx4` with 16 MiB per node instead of
// 256 MiB, so that one iteration takes seconds. docs/performance.md sets it
// against fabric/sim's BenchmarkAllToAll16Shuffle (the same count of data
// packets per wall-second, for bulk RC messages).
func BenchmarkRunMESQSR16(b *testing.B) { benchRun(b, "MESQ/SR") }

// BenchmarkRunSESQSR16 is the same with one shared endpoint per node.
func BenchmarkRunSESQSR16(b *testing.B) { benchRun(b, "SESQ/SR") }

// BenchmarkRunMEMQSR16 is the same for MEMQ/SR (64 KiB RC messages, an
// endpoint per thread), the fastest RC design on EDR.
func BenchmarkRunMEMQSR16(b *testing.B) { benchRun(b, "MEMQ/SR") }

// BenchmarkRunMPI16 is the same for the MPI baseline (64 KiB messages,
// one library per node).
func BenchmarkRunMPI16(b *testing.B) { benchRun(b, "MPI") }

// BenchmarkRunMESQSR16NoCheck is BenchmarkRunMESQSR16 without the
// verbs-usage checker (explore run --no-check).
func BenchmarkRunMESQSR16NoCheck(b *testing.B) { benchRunOpt(b, "MESQ/SR", true) }

// benchRun runs one 16-node design per iteration (cluster setup included in
// the time) and reports data-packets/s, the tuple bytes sent divided by the
// 4 KiB MTU (the UD messages' payload, headers not counted, so a slight
// undercount of the messages sent), and packets/s, every packet on the
// wire (credit writes included), and the events fired and thread
// hand-offs per data packet (cluster setup included).
func benchRun(b *testing.B, design string) { benchRunOpt(b, design, false) }

func benchRunOpt(b *testing.B, design string, noCheck bool) {
	var pkts, data, events, handoffs int64
	for i := 0; i < b.N; i++ {
		cfg := DefaultConfig()
		cfg.Design, cfg.Nodes, cfg.Profile, cfg.BytesPerNode = design, 16, "edr-cx4", 16<<20
		var mtu int
		rec, err := RunSim(cfg, SimOptions{NoCheck: noCheck, Inspect: func(c *sim.Cluster) {
			pkts += c.Stats().PacketsSent
			events += int64(c.Events())
			handoffs += int64(sim.Handoffs(c))
			mtu = c.Profile().Link.MTU
		}})
		if err != nil {
			b.Fatal(err)
		}
		if rec.Integrity != "ok" {
			b.Fatalf("integrity: %s", rec.Integrity)
		}
		data += int64(rec.TuplesSent) * 16 / int64(mtu)
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(data)/b.Elapsed().Seconds(), "data-packets/s")
	b.ReportMetric(float64(events)/float64(data), "events/data-packet")
	b.ReportMetric(float64(handoffs)/float64(data), "handoffs/data-packet")
}
