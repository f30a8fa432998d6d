// Package cli implements the calaf command line: offline package commands (validate,
// compile, render, graph) and the commands that drive the operator.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/internal/front"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca"
)

// Exit codes of calaf. calaf diff answers as kubectl diff does: 0 no differences,
// ExitDifferences when there are, ExitDiffFailed (or ExitUsage) when it could not tell.
const (
	ExitOK          = 0
	ExitInvalid     = 1 // invalid package or inputs, or a failed operation
	ExitUsage       = 2 // wrong command line
	ExitDifferences = 1 // calaf diff: the deployment would change something
	ExitDiffFailed  = 3 // calaf diff: an error (an invalid package, the cluster)
)

// usageError marks errors of the command line itself.
type usageError struct{ error }

// differencesFound is what calaf diff returns when it printed differences.
type differencesFound struct{ changes int }

func (d differencesFound) Error() string { return fmt.Sprintf("%d differences", d.changes) }

// diffFailed marks the errors of calaf diff, which exit with ExitDiffFailed.
type diffFailed struct{ error }

func (e diffFailed) Unwrap() error { return e.error }

// Streams are where a command reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Front is the channel to calaf's front, when it started this process (package front).
	Front *front.Channel
}

// Execute runs calaf with os.Args and returns its exit code.
func Execute() int {
	return Run(os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Front: front.Child()})
}

// Run runs calaf with args and returns its exit code.
func Run(args []string, streams Streams) int {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(context.WithValue(context.Background(), frontKey{}, streams.Front))
	if err == nil {
		return ExitOK
	}
	if streams.Front != nil && errors.Is(err, chart.ErrNoEngine) {
		streams.Front.NeedsCharts() // the front runs the command again in calaf-full
		return ExitInvalid
	}
	var usage usageError
	var differences differencesFound
	var failedDiff diffFailed
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(streams.Err, "Error: %s\nRun '%s --help' for usage.\n", oneLine(err), root.Name())
		return ExitUsage
	case errors.As(err, &differences):
		return ExitDifferences
	case errors.As(err, &failedDiff):
		printError(streams.Err, failedDiff.error)
		return ExitDiffFailed
	}
	printError(streams.Err, err)
	return ExitInvalid
}

// frontKey is the context key of the channel to calaf's front.
type frontKey struct{}

// frontOf returns the channel to calaf's front in ctx; nil when the front did not start
// this process.
func frontOf(ctx context.Context) *front.Channel {
	channel, _ := ctx.Value(frontKey{}).(*front.Channel)
	return channel
}

// printError writes an error, one diagnostic per line for invalid packages (each once, a
// bounded number of them: tosca.Lines), each line escaped and bounded (oneLine).
func printError(w io.Writer, err error) {
	var integrity *tosca.IntegrityError
	if errors.As(err, &integrity) {
		for _, line := range tosca.Lines(integrity.Diagnostics) {
			fmt.Fprintf(w, "error: integrity: %s\n", line)
		}
		return
	}
	if tosca.IsInvalid(err) {
		for _, line := range tosca.Lines(tosca.DiagnosticsOf(err)) {
			fmt.Fprintf(w, "error: %s\n", line)
		}
		return
	}
	fmt.Fprintf(w, "error: %s\n", oneLine(err))
}

// oneLine is an error that is no package's diagnostic as one line: escaped (text.Escape)
// and at most tosca.MaxDiagnosticLength characters long.
func oneLine(err error) string {
	return text.Elide(text.Escape(err.Error()), tosca.MaxDiagnosticLength)
}

// NewRootCommand returns the calaf command tree.
func NewRootCommand(streams Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "calaf",
		Short: "Calaf deploys and runs network services described in TOSCA on Kubernetes",
		Long: "Calaf deploys and runs network services described in TOSCA on Kubernetes.\n\n" +
			"The operator reconciles Service resources (kind Service, group calaf.io): with kubectl,\n" +
			"use their short name csvc — kubectl get csvc, kubectl explain csvc.spec.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newValidateCommand(),
		newCompileCommand(),
		newRenderCommand(),
		newGraphCommand(),
		newWorkerCommand(),
		newProfileCommand(),
		newExplainCommand(),
	)
	root.AddCommand(clusterCommands()...)
	wrapArgs(root)
	return root
}

// wrapArgs makes argument validation failures usage errors, recursively.
func wrapArgs(cmd *cobra.Command) {
	if validate := cmd.Args; validate != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := validate(c, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, child := range cmd.Commands() {
		wrapArgs(child)
	}
}
