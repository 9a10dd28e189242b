package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/calibrate"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// factory returns how calibrate and validate make fabrics: the hardware
// backend, or (--backend sim) the simulator running the target profile,
// which checks the procedure against a known answer. calibrate opens a
// two-node fabric for every measurement, which only --local gives (both
// nodes in this process); validate opens one, which may be this process's
// node of a distributed job (distributed) or every node here.
func (h *hwFlags) factory(target, signature string, distributed bool) (calibrate.FabricFactory, error) {
	if h.backend == "sim" {
		p, err := sim.LoadProfile(target)
		if err != nil {
			return nil, fmt.Errorf("--target: %w", err)
		}
		return func(n int) (fabric.Fabric, error) {
			return sim.New(sim.Config{Nodes: n, Profile: p, Seed: 1, SizeOnly: true})
		}, nil
	}
	if h.backend != "ibv" && h.backend != "tcp" {
		return nil, fmt.Errorf("--backend %q: choose sim, ibv or tcp", h.backend)
	}
	if !h.local && !distributed {
		return nil, fmt.Errorf("--backend %s: calibrate runs both nodes in this process: add --local (one machine, one device; the adapter loops the traffic back, which calibrate says, fitting only what the loopback measures)", h.backend)
	}
	return func(n int) (fabric.Fabric, error) { return h.open(n, signature) }, nil
}

func calibrateCmd() *cobra.Command {
	var hw hwFlags
	var base, name, out, target string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure a fabric with the microbenchmarks and write a simulator profile from the measurements",
		Long: `calibrate runs perftest-style microbenchmarks (8-byte send latency, 64 KiB send
bandwidth, 2-byte message rate over 8 QPs, 64 MiB registration, and the QP count
where 32-byte RDMA Reads collapse) on real hardware and on the simulator with a
base profile, fits the fields each one measures by the ratio or difference, and
writes the new profile, which --profile then loads. It prints, per measurement,
the fabric, the base profile and the calibrated profile side by side.

On hardware it needs --local: both nodes in this process, as contexts of one
adapter, which loops their traffic back. It says so, fits only what the
loopback measures (not the link's rate; latency against the base without the
link's and switch's delay; the read knee counted for both ends' contexts) and
keeps the rest from --base. A registration time that includes allocating and
zeroing the memory (a backend that cannot time ibv_reg_mr alone) is shown but
not fitted.

With --backend sim the "fabric" is the simulator running --target: a check that
the procedure recovers a known profile.`,
		Example: `  explore calibrate --backend ibv --local --device mlx5_0 --base edr-cx4 --out measured.yaml
  explore calibrate --backend sim --target hdr-cx6 --base edr-cx4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := sim.LoadProfile(base)
			if err != nil {
				return fmt.Errorf("--base: %w", err)
			}
			if out != "" {
				if err := checkWritable("--out", out); err != nil {
					return err
				}
			}
			open, err := hw.factory(target, "calibrate", false)
			if err != nil {
				return err
			}
			prog := newTask(cmd.ErrOrStderr(), "calibrate", "", 0)
			runs := 0
			cal, err := calibrate.Run(func(nodes int) (fabric.Fabric, error) {
				runs++
				prog.setDetail(fmt.Sprintf("measurement run %d", runs))
				return open(nodes)
			}, b, name)
			prog.finish()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			text, err := calibrate.ProfileYAML(cal.Profile)
			if err != nil {
				return err
			}
			if out != "" {
				if err := os.WriteFile(out, text, 0o644); err != nil {
					return err
				}
			}
			if jsonOut {
				return json.NewEncoder(w).Encode(cal.Measurements)
			}
			if cal.Loopback {
				fmt.Fprintln(w, wrapText("loopback: both nodes were contexts of one adapter in this process (--local); its traffic crossed no link or switch, and it did both nodes' work. The fit keeps the link and switch from the base profile (sets, below).", tableWidth(), ""))
			}
			var rows [][]string
			var sets []string
			for i, m := range cal.Measurements {
				rows = append(rows, []string{fmt.Sprintf("%d. %s", i+1, m.Name), fourDigits(m.Fabric), fourDigits(m.Base), fourDigits(m.Calibrated), m.Unit})
				what := m.Sets
				if m.NotFitted != "" {
					what = "not fitted: " + m.NotFitted
				}
				sets = append(sets, wrapText(fmt.Sprintf("%d. %s", i+1, what), tableWidth(), "   "))
			}
			renderFitting(w, []string{"measurement", "fabric", "base " + b.Name, "calibrated", "unit"}, rows)
			fmt.Fprintf(w, "what each measurement sets in the calibrated profile:\n%s\n", strings.Join(sets, "\n"))
			if out != "" {
				fmt.Fprintln(w, wrapText(fmt.Sprintf("wrote %s; use it with --profile %s", out, out), tableWidth(), "  "))
			} else {
				fmt.Fprintf(w, "profile (use --out FILE to save it):\n%s", text)
			}
			return nil
		},
	}
	hw.register(cmd.Flags())
	cmd.Flags().StringVar(&base, "base", sim.DefaultProfileName, "the profile the fit starts from (the closest built-in generation)")
	cmd.Flags().StringVar(&name, "name", "measured", "the new profile's name")
	cmd.Flags().StringVar(&out, "out", "", "write the profile to this YAML file")
	cmd.Flags().StringVar(&target, "target", "hdr-cx6", "--backend sim: the profile the simulated fabric runs")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the measurements as JSON")
	return cmd
}

func validateCmd() *cobra.Command {
	var hw hwFlags
	var cfg experiments.RunConfig
	var pattern, target string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Run one shuffle on a fabric and on the model, and report each metric's error",
		Long: `validate runs the same shuffle (design, nodes, threads, pattern, sizes) on real
hardware and on the simulator with --profile, and prints each metric side by side
with the model's relative error: how far the model is from your cluster.

On hardware it runs one node per process (srun, mpirun, explore launch; every
process prints the whole comparison), or with --local at most 2 nodes in this
process as contexts of one adapter: a loopback comparison, labelled as such
(more would put every node's traffic through that one adapter).

With --backend sim the "hardware" is the simulator running --target.`,
		Example: `  srun -N 8 explore validate --backend ibv --profile measured.yaml --design MESQ/SR --nodes 8 --threads 4
  explore validate --backend ibv --local --profile measured.yaml --design MESQ/SR --nodes 2
  explore validate --backend sim --target fdr-cx3 --profile edr-cx4 --design MEMQ/SR`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Pattern = algos.Pattern(pattern)
			if hw.local && hw.backend == "ibv" && cfg.Nodes > 2 {
				return fmt.Errorf("--nodes %d with --local: the nodes would be contexts of one adapter, which loops their traffic back and does the work of all %d, so the comparison would measure that adapter, not %d machines; run one process per node (srun, mpirun, explore launch) without --local, or give --nodes 2 for a loopback comparison", cfg.Nodes, cfg.Nodes, cfg.Nodes)
			}
			open, err := hw.factory(target, fmt.Sprintf("validate %s %s %d %d %d", cfg.Design, pattern, cfg.Nodes, cfg.Threads, cfg.BytesPerNode), true)
			if err != nil {
				return err
			}
			f, err := open(cfg.Nodes)
			if err != nil {
				return err
			}
			defer f.Close()
			rows, _, _, err := experiments.CompareWithModel(f, cfg)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if jsonOut {
				return json.NewEncoder(w).Encode(rows)
			}
			if len(rows) > 0 && rows[0].Loopback {
				fmt.Fprintln(w, wrapText(fmt.Sprintf("loopback: the fabric's %d nodes were contexts of one adapter in this process (--local): their traffic crossed no link or switch, and the adapter did both nodes' work; the model has an adapter and a link per node.", cfg.Nodes), tableWidth(), ""))
			}
			var cells [][]string
			for _, r := range rows {
				rel := fmt.Sprintf("%+.1f%%", 100*r.RelErr)
				if math.IsInf(r.RelErr, 0) {
					rel = "n/a (0 on the fabric)"
				}
				cells = append(cells, []string{r.Metric, fmt.Sprintf("%.4g", r.Fabric), fmt.Sprintf("%.4g", r.Model), rel})
			}
			fmt.Fprintln(w, wrapText("model: profile "+cfg.Profile, tableWidth(), "  "))
			renderFitting(w, []string{"metric", "fabric", "model", "model error"}, cells)
			return nil
		},
	}
	hw.register(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&cfg.Design, "design", "MESQ/SR", "endpoint design: "+strings.Join(experiments.DesignNames(nil), ", "))
	fl.IntVar(&cfg.Nodes, "nodes", 2, "cluster size")
	fl.IntVar(&cfg.Threads, "threads", 2, "sending (and receiving) threads per node")
	fl.StringVar(&pattern, "pattern", "repartition", "repartition, broadcast or multicast:K")
	fl.StringVar(&cfg.Profile, "profile", sim.DefaultProfileName, "the model: a built-in profile or a .yaml path (a calibrated one, say)")
	fl.Int64Var(&cfg.BytesPerNode, "bytes-per-node", 16<<20, "payload bytes each node sends")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fl.StringVar(&target, "target", "fdr-cx3", "--backend sim: the profile the simulated fabric runs")
	fl.BoolVar(&jsonOut, "json", false, "print the comparison as JSON")
	return cmd
}
