// Command explore is the rdmashuffle command-line tool: microbenchmarks on
// the simulated (or real) fabric, and the experiments built on them.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/spf13/cobra"
)

func main() {
	os.Exit(execute(newRoot(), os.Stderr))
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "explore",
		Short: "Explore RDMA data-shuffling designs on a simulated InfiniBand cluster",
		Long: `explore runs perftest-style microbenchmarks and experiments on a deterministic
simulated InfiniBand cluster (the default) or, in builds with the ibverbs tag, on
real hardware.`,
		SilenceUsage:  true,
		Version:       buildinfo.Get().String(),
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	profiling = cpuProfile{}
	profiling.register(root)
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		cmd.SetOut(cmd.ErrOrStderr())
		cmd.Help()
		return errors.New("no command given: choose one of the commands above (explore run runs one shuffle)")
	}
	root.AddCommand(benchCmd(), overviewCmd(), profilesCmd(), runCmd())
	root.AddCommand(sweepCmd())
	root.AddCommand(mergeCmd())
	root.AddCommand(plotCmd())
	root.AddCommand(figureCmd(), reproduceCmd())
	root.AddCommand(calibrateCmd(), validateCmd(), launchCmd())
	root.AddCommand(queryCmd(), soakCmd(), evidenceCmd(), reportCmd())
	root.AddCommand(sensitivityCmd(), fabricCmd(), traceCmd(), adviseCmd())
	addCompletions(root)
	// cobra's completion command prints its help and exits 0 for a shell
	// it does not know: name the shells instead.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return errors.New("completion needs a shell: bash, fish, powershell or zsh (e.g. explore completion bash)")
				}
				return fmt.Errorf("completion %q: not a shell this tool writes completions for: choose bash, fish, powershell or zsh", args[0])
			}
		}
	}
	return root
}
