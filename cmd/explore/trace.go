package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim/trace"
)

// exitStatus ends the command with its value as the exit code and no
// message (what it had to say is printed): explore trace diff exits 1
// when the traces differ, as diff(1) does.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Exit codes (docs/results.md): 0 success, 1 a finding (a check found
// what it looks for: an integrity failure, points outside tolerance, a
// soak's silent failures, traces that differ), 2 an error (bad usage, a
// run that could not be made), 130 interrupted.
const (
	exitFinding = 1
	exitError   = 2
)

// finding is an error that reports a finding, not a failure to run:
// the command exits 1 (exitFinding) with its message.
type finding struct{ error }

func (f finding) Unwrap() error { return f.error }

// findingf is a finding's error, formatted.
func findingf(format string, args ...any) error { return finding{fmt.Errorf(format, args...)} }

func traceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Read event traces of simulated runs (explore run --trace) and find where two runs part",
		Long: `A trace holds every event of a simulated run in order (time, node, component,
event, packet): exactly what the run's trace hash is made of. explore run --trace FILE
writes one; trace show prints it; trace diff prints the first event in which two
traces differ, with the events around it.`,
		Args: flagsOnly,
	}
	cmd.AddCommand(traceDiffCmd(), traceShowCmd())
	return cmd
}

func openTrace(path string) (*trace.Reader, func(), error) {
	r, c, err := trace.Open(path)
	if err != nil {
		if errors.Is(err, trace.ErrNotTrace) || errors.Is(err, trace.ErrCorrupt) {
			err = fmt.Errorf("%w (write one with explore run --trace FILE)", err)
		}
		return nil, nil, err
	}
	return r, func() { c.Close() }, nil
}

func traceDiffCmd() *cobra.Command {
	var context int
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Print the first event in which two traces differ (exit 1 if they do)",
		Example: `  explore run --design MESQ/SR --nodes 4 --seed 1 --trace a.trace
  explore run --design MESQ/SR --nodes 4 --seed 2 --trace b.trace
  explore trace diff a.trace b.trace`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if context < 0 {
				return fmt.Errorf("--context %d: want 0 or more events", context)
			}
			a, closeA, err := openTrace(args[0])
			if err != nil {
				return err
			}
			defer closeA()
			b, closeB, err := openTrace(args[1])
			if err != nil {
				return err
			}
			defer closeB()
			d, err := trace.Diff(a, b, context)
			if err != nil {
				return err
			}
			if jsonOut {
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(d); err != nil {
					return err
				}
			} else {
				d.Format(cmd.OutOrStdout(), args[0], args[1])
			}
			if !d.Identical() {
				return exitStatus(1)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&context, "context", 5, "events shown before the divergence, and after it from each trace")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the divergence as one JSON object (index 0: identical)")
	return cmd
}

func traceShowCmd() *cobra.Command {
	var from, count uint64
	var node int
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print a trace's header and events",
		Example: `  explore trace show a.trace --from 1200 --count 20
  explore trace show a.trace --node 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from < 1 {
				return fmt.Errorf("--from %d: events are numbered from 1", from)
			}
			r, done, err := openTrace(args[0])
			if err != nil {
				return err
			}
			defer done()
			return showTrace(cmd.OutOrStdout(), r, showOptions{from, count, node, cmd.Flags().Changed("node"), jsonOut})
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first event to print (numbered from 1)")
	cmd.Flags().Uint64Var(&count, "count", 0, "events to print (0: to the end)")
	cmd.Flags().IntVar(&node, "node", 0, "print only this node's events (-1: the switches')")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object per event (with its position, seq), and the count and hash last")
	return cmd
}

// showOptions are trace show's choices of events and format.
type showOptions struct {
	from, count uint64
	node        int
	onlyNode    bool
	jsonOut     bool
}

func showTrace(w io.Writer, r *trace.Reader, o showOptions) error {
	enc := json.NewEncoder(w)
	if o.jsonOut {
		if err := enc.Encode(map[string]any{"run": r.Header.Run}); err != nil {
			return err
		}
	} else {
		hdr, _ := json.Marshal(r.Header.Run)
		fmt.Fprintf(w, "run %s\n", hdr)
	}
	h := trace.NewHasher()
	var i, shown uint64
	for {
		e, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		i++
		h.Add(&e)
		if i < o.from || o.count > 0 && shown >= o.count || o.onlyNode && e.Node != o.node {
			continue
		}
		if o.jsonOut {
			if err := enc.Encode(struct {
				Seq uint64 `json:"seq"`
				trace.Event
			}{i, e}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "#%-9d %s\n", i, e.String())
		}
		shown++
	}
	if o.jsonOut {
		return enc.Encode(map[string]any{"events": i, "trace_hash": fmt.Sprintf("%016x", h.Sum())})
	}
	fmt.Fprintf(w, "%d events, trace hash %016x\n", i, h.Sum())
	return nil
}

// newTraceWriter creates FILE for explore run --trace, its header
// describing the run: its configuration and the flags given (which name
// fault schedules and other options the configuration does not hold).
func newTraceWriter(path string, cfg experiments.RunConfig, flags *pflag.FlagSet) (*trace.Writer, error) {
	run := map[string]any{}
	b, err := json.Marshal(cfg)
	if err == nil {
		err = json.Unmarshal(b, &run)
	}
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	flags.Visit(func(f *pflag.Flag) {
		if f.Name != "trace" {
			run["--"+f.Name] = f.Value.String()
		}
	})
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	w, err := trace.NewWriter(f, trace.Header{Run: run})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return w, nil
}
