package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/report"
	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/faults"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Libraries refuse a setting by its configuration field (setting.Error:
// "Threads 9: ..."); the command line says which flag that is. A field's
// flag is its name in kebab case (BytesPerNode: --bytes-per-node) unless
// it is listed here.
var settingFlags = map[string]string{
	"QPs":       "qp",            // perftest.Config.QPs
	"Conn":      "connection",    // perftest.Config.Conn
	"Inline":    "inline-size",   // perftest.Config.Inline
	"SL":        "service-level", // perftest.Config.SL, experiments.RunConfig.SL
	"ControlSL": "control-service-level",
	"Timeout":   "timeout",
}

// errorHints add the flags that answer an error a library returns, for
// the commands that have the flag.
var errorHints = []struct {
	err  error
	flag string
	hint string
}{
	{experiments.ErrMemory, "no-memory-check", ", or pass --no-memory-check to run it anyway (--max-memory sets the limit)"},
	{sweep.ErrOtherSpec, "out", " (--out names the file)"},
	{sweep.ErrOutputBusy, "out", " (--out names the file)"},
	{report.ErrNoFigures, "from", " (--from names the directory, --run runs the figures)"},
	{sensitivity.ErrOtherModel, "rejudge", " (drop --rejudge, or give a new --out)"},
	{sensitivity.ErrSummaryMismatch, "resume-from", " (--resume-from names the summary, --figures the figures)"},
	{faults.ErrEmpty, "faults", ", or leave out --faults"},
	{experiments.ErrFewCores, "cores", " (--cores 2 or more: threads then share the machine's CPUs)"},
}

// flagFor is the flag of cmd that sets the field name, if it has one.
func flagFor(cmd *cobra.Command, name string) *pflag.Flag {
	n, ok := settingFlags[name]
	if !ok {
		n = setting.Kebab(name)
	}
	return cmd.Flags().Lookup(n)
}

// inFlagWords rewords err for the command cmd that returned it: a refused
// setting is named by its flag (-n or --threads), and a run refused for
// memory says how to run it anyway.
func inFlagWords(cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil {
		return err
	}
	if se, ok := setting.As(err); ok {
		if f := flagFor(cmd, se.Setting); f != nil {
			name := "--" + f.Name
			if f.Shorthand != "" {
				name = "-" + f.Shorthand
			}
			err = setting.Renamed(err, name)
		}
	}
	msg := err.Error()
	for _, h := range errorHints {
		if errors.Is(err, h.err) && cmd.Flags().Lookup(h.flag) != nil {
			msg += h.hint
		}
	}
	return setting.Reworded(err, msg)
}
