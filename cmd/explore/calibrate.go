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
// which checks the procedure against a known answer.
func (h *hwFlags) factory(target string) (calibrate.FabricFactory, error) {
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
	if !h.local {
		return nil, fmt.Errorf("--backend %s: calibrate and validate run both nodes in this process: add --local (one machine, one device; the adapter loops the traffic back)", h.backend)
	}
	return func(n int) (fabric.Fabric, error) { return h.open(n, "calibrate") }, nil
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
			open, err := hw.factory(target)
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
			t := newTable(w)
			t.Header("measurement", "fabric", "base "+b.Name, "calibrated", "unit", "sets")
			for _, m := range cal.Measurements {
				t.Append(m.Name, fmt.Sprintf("%.3f", m.Fabric), fmt.Sprintf("%.3f", m.Base), fmt.Sprintf("%.3f", m.Calibrated), m.Unit, m.Sets)
			}
			t.Render()
			if out != "" {
				fmt.Fprintf(w, "wrote %s; use it with --profile %s\n", out, out)
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

With --backend sim the "hardware" is the simulator running --target.`,
		Example: `  explore validate --backend ibv --local --profile measured.yaml --design MESQ/SR --nodes 2 --threads 4
  explore validate --backend sim --target fdr-cx3 --profile edr-cx4 --design MEMQ/SR`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Pattern = algos.Pattern(pattern)
			open, err := hw.factory(target)
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
			t := newTable(w)
			t.Header("metric", "fabric", "model "+cfg.Profile, "model error")
			for _, r := range rows {
				rel := fmt.Sprintf("%+.1f%%", 100*r.RelErr)
				if math.IsInf(r.RelErr, 0) {
					rel = "n/a (0 on the fabric)"
				}
				t.Append(r.Metric, fmt.Sprintf("%.4g", r.Fabric), fmt.Sprintf("%.4g", r.Model), rel)
			}
			return t.Render()
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
