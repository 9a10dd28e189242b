package main

// cli.go: what makes the command line easy to use rather than what it
// runs: help with the flags in groups, shell-completion values (designs,
// tests, figures, profiles, patterns, ...) and messages for a missing or
// unknown argument that list the choices.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// flagGroup is one section of a command's help: a title and which flags
// it lists. A flag goes to the first group that takes it.
type flagGroup struct {
	title string
	takes func(f *pflag.Flag) bool
}

// hwFlagNames are the flags hwFlags registers (the hardware path).
func hwFlagNames() []string {
	var h hwFlags
	fs := pflag.NewFlagSet("hw", pflag.ContinueOnError)
	h.register(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

func named(names ...string) func(*pflag.Flag) bool {
	return func(f *pflag.Flag) bool { return slices.Contains(names, f.Name) }
}

// runGroups are explore run's help sections.
func runGroups() []flagGroup {
	return []flagGroup{
		{"Shuffle flags (one sweep parameter each, docs/sweeps.md)", func(f *pflag.Flag) bool {
			return slices.Contains(sweep.Params(), f.Name) || f.Name == "timeout" || f.Name == "no-memory-check" || f.Name == "max-memory"
		}},
		{"Network flags (the simulator only; docs/topology.md)", named(netFlagNames...)},
		{"Fault flags (the simulator only; docs/reliability.md)", func(f *pflag.Flag) bool { return strings.HasPrefix(f.Name, "fault") }},
		{"Hardware-path flags (--backend ibv, loopback or tcp; docs/hardware.md)", named(hwFlagNames()...)},
		{"Output flags", named("json")},
	}
}

// benchGroups are explore bench's help sections.
func benchGroups() []flagGroup {
	return []flagGroup{
		{"Output flags", named("json", "output", "report_gbits")},
		{"Network flags (the simulator only; docs/topology.md)", named(netFlagNames...)},
		{"Hardware-path flags (--backend ibv, loopback or tcp; docs/hardware.md)", named(hwFlagNames()...)},
		{"Benchmark flags (perftest's names)", func(f *pflag.Flag) bool { return f.Name != "help" }},
	}
}

// setGroupedUsage makes cmd's help list its flags in groups (those no
// group takes under "Other flags").
func setGroupedUsage(cmd *cobra.Command, groups []flagGroup) {
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
		if c.HasExample() {
			fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
		}
		sets := make([]*pflag.FlagSet, len(groups)+1)
		for i := range sets {
			sets[i] = pflag.NewFlagSet("", pflag.ContinueOnError)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			i := slices.IndexFunc(groups, func(g flagGroup) bool { return g.takes(f) })
			if i < 0 {
				i = len(groups)
			}
			sets[i].AddFlag(f)
		})
		// Help in the groups' order, not the order they take flags in.
		order := make([]int, 0, len(sets))
		for i := range groups {
			order = append(order, i)
		}
		slices.SortStableFunc(order, func(a, b int) int { return groupRank(groups[a].title) - groupRank(groups[b].title) })
		order = append(order, len(groups))
		for _, i := range order {
			if !sets[i].HasAvailableFlags() {
				continue
			}
			title := "Other flags"
			if i < len(groups) {
				title = groups[i].title
			}
			fmt.Fprintf(w, "\n%s:\n%s", title, sets[i].FlagUsages())
		}
		return nil
	})
}

// groupRank orders help sections: what the command does first, output last.
func groupRank(title string) int {
	for i, p := range []string{"Shuffle", "Benchmark", "Fault", "Hardware", "Output"} {
		if strings.HasPrefix(title, p) {
			return i
		}
	}
	return 99
}

// Completion values.

func figureIDList() []string {
	var ids []string
	for _, f := range figures.AllFigures() {
		ids = append(ids, f.ID)
	}
	return ids
}

func designList() []string { return experiments.DesignNames(nil) }

func patternList() []string { return []string{"repartition", "broadcast", "multicast:2"} }

func fixed(values func() []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values(), cobra.ShellCompDirectiveNoFileComp
	}
}

// flagCompletions are the values offered for flags of these names, in
// every command that has one.
var flagCompletions = map[string]func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective){
	"design":     fixed(designList),
	"pattern":    fixed(patternList),
	"backend":    fixed(func() []string { return []string{"sim", "ibv", "loopback", "tcp"} }),
	"connection": fixed(func() []string { return []string{"RC", "UC", "UD"} }),
	"output":     fixed(func() []string { return []string{"table", "plain"} }),
	"schedule":   fixed(func() []string { return []string{"random", "rr"} }),
	"scenarios":  fixed(func() []string { return faults.Scenarios }),
	"designs":    fixed(designList),
	"figures":    fixed(func() []string { return append(figureIDList(), benchJudgeIDs()...) }),
	"figure":     fixed(func() []string { return []string{"fig26", "fig27"} }),
	// Profiles: a built-in name, or a .yaml file.
	"profile": profileCompletion, "base": profileCompletion, "target": profileCompletion,
}

func profileCompletion(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return sim.BuiltinProfiles(), cobra.ShellCompDirectiveDefault
}

// addCompletions registers the completion values on every command below
// root.
func addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		addCompletions(c)
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if fn := flagCompletions[f.Name]; fn != nil && f.Value.Type() != "bool" {
				c.RegisterFlagCompletionFunc(f.Name, fn)
			}
		})
	}
}

// Arguments.

// oneOf checks a command's single argument against choices: a missing,
// extra or unknown one gets a message that lists them, with an example.
func oneOf(what, example string, choices func() []string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		list := strings.Join(choices(), ", ")
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s needs a %s: one of %s (e.g. %s)", cmd.Name(), what, list, example)
		case len(args) > 1:
			return fmt.Errorf("%s takes one %s, got %d (%s): one of %s", cmd.Name(), what, len(args), strings.Join(args, " "), list)
		case !slices.Contains(choices(), args[0]):
			return fmt.Errorf("%s: %q is not a %s: choose one of %s (e.g. %s)", cmd.Name(), args[0], what, list, example)
		}
		return nil
	}
}

// specArg checks sweep's one argument, a spec file, naming the specs in
// experiments/specs when it is missing.
func specArg(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		return nil
	}
	specs, _ := filepath.Glob(filepath.Join("experiments", "specs", "*.yaml"))
	hint := "a YAML file as docs/sweeps.md describes"
	if len(specs) > 0 {
		hint += "; this tree has " + strings.Join(specs, ", ")
	}
	if len(args) == 0 {
		return fmt.Errorf("%s needs a sweep spec: %s (e.g. explore %s experiments/specs/example.yaml)", cmd.Name(), hint, cmd.Name())
	}
	return fmt.Errorf("%s takes one sweep spec, got %d (%s): run one sweep per invocation", cmd.Name(), len(args), strings.Join(args, " "))
}

func specCompletion(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// tests are bench's tests.
func tests() []string { return perftest.Tests }

// atLeast is cobra.MinimumNArgs(n) with a message that says what the
// arguments are, with an example.
func atLeast(n int, what, example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return fmt.Errorf("%s needs %s (e.g. %s)", cmd.Name(), what, example)
		}
		return nil
	}
}

// exactly is cobra.ExactArgs(n) with such a message.
func exactly(n int, what, example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s needs %s, got %d arguments (e.g. %s)", cmd.Name(), what, len(args), example)
		}
		return nil
	}
}

// flagsOnly is cobra.NoArgs with a message that points to the flags.
func flagsOnly(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes flags only, not %q: explore %s --help lists them", cmd.Name(), strings.Join(args, " "), cmd.Name())
	}
	return nil
}
