package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"calaf.io/calaf/profilekit"
	"calaf.io/calaf/profiles"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// newProfileCommand is `calaf profile`: the vendor's commands on a profile directory.
func newProfileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Author a TOSCA profile: scaffold, test its renderers, document, compare versions, publish",
		Long: "A profile is a directory whose profile.yaml defines TOSCA types derived from the Calaf\n" +
			"Kubernetes profile, with JavaScript renderers, and whose tests/ holds renderer test cases\n" +
			"(docs/profiles.md).",
	}
	cmd.AddCommand(newProfileInitCommand(), newProfileTestCommand(), newProfileDocCommand(), newProfileSchemaCommand(), newProfileDiffCommand())
	cmd.AddCommand(profileRegistryCommands()...)
	return cmd
}

func newProfileInitCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "init NAME",
		Short: "Scaffold a profile: one derived node type, its renderer, a test case and a README",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				dir = args[0]
			}
			files, err := profilekit.Scaffold(dir, args[0])
			if err != nil {
				return usageError{err}
			}
			for _, f := range files {
				fmt.Fprintf(cmd.OutOrStdout(), "created %s\n", f)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "next: calaf profile test %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to create (default: NAME)")
	return cmd
}

// profileWork runs the package work of the profile commands (compile, render) in a
// worker process, as the offline package commands do.
type profileWork struct {
	isolation isolation
	timeout   time.Duration
}

func (w *profileWork) register(cmd *cobra.Command) {
	w.isolation.register(cmd)
	cmd.Flags().DurationVar(&w.timeout, "script-timeout", tosca.DefaultScriptTimeout, "deadline of each node's renderer")
}

// renderFunc compiles and renders a test case's package in the worker.
func (w *profileWork) renderFunc() profilekit.RenderFunc {
	return func(ctx context.Context, pkg *tosca.Package, inputs map[string]any, service, namespace string) (*render.Result, error) {
		compiler, err := w.isolation.compiler()
		if err != nil {
			return nil, err
		}
		renderer, err := w.isolation.renderer()
		if err != nil {
			return nil, err
		}
		compiled, err := compiler.Compile(ctx, pkg, inputs)
		if err != nil {
			return nil, err
		}
		return renderer.Render(ctx, compiled, render.Options{Service: service, Namespace: namespace, Timeout: w.timeout})
	}
}

// run runs the test cases of testsDir against the profile in dir.
func (w *profileWork) run(ctx context.Context, dir, testsDir string, update bool) (*profilekit.TestRun, error) {
	runner := &profilekit.Runner{Render: w.renderFunc(), Update: update}
	return runner.Run(ctx, dir, testsDir)
}

// check compiles the profile's entry, so that Puccini judges it before it is read.
func (w *profileWork) check(ctx context.Context, dir string) error {
	pkg, err := tosca.OpenEntry(dir, profilekit.ProfileEntry, tosca.DefaultLimits())
	if err != nil {
		return err
	}
	defer pkg.Close()
	compiler, err := w.isolation.compiler()
	if err != nil {
		return err
	}
	_, err = compiler.Compile(ctx, pkg, nil)
	return err
}

func newProfileTestCommand() *cobra.Command {
	var work profileWork
	var tests, junit string
	var update bool
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run a profile's renderer test cases; exit code 1 when one fails",
		Long: "Run the test cases under DIR/tests (or --tests): each renders a small service template\n" +
			"(a file, or node templates inline) offline and checks the objects against a golden file\n" +
			"(--update rewrites it), assertions on paths, or an expected error. Each case is\n" +
			"reported, a failure with what differs; --junit writes a JUnit XML report for CI.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			defer work.isolation.close()
			if tests == "" {
				tests = filepath.Join(args[0], profilekit.TestsDir)
			}
			run, err := work.run(ctx, args[0], tests, update)
			if err != nil {
				return err
			}
			printRun(cmd.OutOrStdout(), run)
			if junit != "" {
				var b bytes.Buffer
				if err := profilekit.JUnit(&b, filepath.Base(filepath.Clean(args[0])), run); err != nil {
					return err
				}
				if err := os.WriteFile(junit, b.Bytes(), 0o644); err != nil {
					return err
				}
			}
			if failed := run.Failed(); failed > 0 {
				return fmt.Errorf("%d of %d test cases failed", failed, len(run.Results))
			}
			return nil
		},
	}
	work.register(cmd)
	cmd.Flags().StringVar(&tests, "tests", "", "directory of the test cases (default DIR/tests)")
	cmd.Flags().BoolVar(&update, "update", false, "rewrite the golden files with what the cases render")
	cmd.Flags().StringVar(&junit, "junit", "", "write a JUnit XML report to this file")
	return cmd
}

// printRun prints one line per case, a failure's text indented under it, then the count.
func printRun(w io.Writer, run *profilekit.TestRun) {
	for _, r := range run.Results {
		status := "PASS"
		if !r.Passed() {
			status = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s/%s:%d  %s (%.2fs)\n", status, profilekit.TestsDir, r.Case.File, r.Case.Line, r.Case.Name, r.Duration.Seconds())
		for _, f := range r.Failures {
			for _, line := range strings.Split(strings.TrimRight(f, "\n"), "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", len(run.Results)-run.Failed(), run.Failed())
}

func newProfileDocCommand() *cobra.Command {
	var work profileWork
	var output, format, title string
	var noTests bool
	cmd := &cobra.Command{
		Use:   "doc DIR",
		Short: "Write the reference of a profile's types, in Markdown or HTML",
		Long: "Write the reference of the types DIR/profile.yaml defines: for each, what it derives\n" +
			"from, its properties (type, required, default, constraints), attributes, requirements,\n" +
			"capabilities and interfaces, and for node types the renderer and the kinds of objects it\n" +
			"renders on the profile's test cases (which run first, unless --no-tests).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format, "markdown", "html"); err != nil {
				return err
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			defer work.isolation.close()
			dir := args[0]
			if err := work.check(ctx, dir); err != nil {
				return err
			}
			catalog, err := profilekit.LoadDir(dir, profilekit.ProfileEntry, profilekit.LoadOptions{})
			if err != nil {
				return err
			}
			opts := profilekit.ReferenceOptions{Title: title, Source: filepath.ToSlash(dir)}
			if tests := filepath.Join(dir, profilekit.TestsDir); !noTests && isDir(tests) {
				run, err := work.run(ctx, dir, tests, false)
				if err != nil {
					return err
				}
				if failed := run.Failed(); failed > 0 {
					printRun(cmd.ErrOrStderr(), run)
					return fmt.Errorf("%d test cases failed: the reference would say what a failing renderer renders", failed)
				}
				opts.Renders = run.RenderedKinds()
			}
			doc := profilekit.Markdown(catalog, opts)
			if format == "html" {
				if doc, err = profilekit.HTML(doc, opts.Title); err != nil {
					return err
				}
			}
			return writeOutput(cmd.OutOrStdout(), output, doc)
		},
	}
	work.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default: standard output)")
	cmd.Flags().StringVar(&format, "format", "markdown", "markdown or html")
	cmd.Flags().StringVar(&title, "title", "", "title of the page (default: the profile's name and version)")
	cmd.Flags().BoolVar(&noTests, "no-tests", false, "do not run the test cases (the reference then says nothing of what node types render)")
	return cmd
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// writeOutput writes data to the file named output, or to w when output is empty.
func writeOutput(w io.Writer, output string, data []byte) error {
	if output == "" {
		_, err := w.Write(data)
		return err
	}
	return os.WriteFile(output, data, 0o644)
}

func newProfileSchemaCommand() *cobra.Command {
	var output, id string
	cmd := &cobra.Command{
		Use:   "schema [DIR|PACKAGE]",
		Short: "Write the JSON Schema of service templates written against a profile, for editors",
		Long: "Write a JSON Schema (draft-07) of service templates using the types of a profile\n" +
			"directory, or of a package (its own types and those it imports); without an argument,\n" +
			"of the Calaf Kubernetes profile. YAML language servers (yaml-language-server, the YAML\n" +
			"extensions of editors) give completion and errors with it: node types, their properties\n" +
			"with types and constraints, required properties, requirement names.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			catalog, err := loadCatalog(args)
			if err != nil {
				return err
			}
			data, err := json.MarshalIndent(profilekit.JSONSchema(catalog, id), "", "  ")
			if err != nil {
				return err
			}
			return writeOutput(cmd.OutOrStdout(), output, append(data, '\n'))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default: standard output)")
	cmd.Flags().StringVar(&id, "id", "", "the schema's $id")
	return cmd
}

// loadCatalog reads the types of a profile directory, of a package, or (no argument) of
// the Calaf Kubernetes profile embedded in calaf.
func loadCatalog(args []string) (*profilekit.Catalog, error) {
	if len(args) == 0 || args[0] == "" {
		return profilekit.LoadFS(profiles.FS(), profiles.KubernetesEntry, profilekit.LoadOptions{})
	}
	if info, err := os.Stat(filepath.Join(args[0], profilekit.ProfileEntry)); err == nil && info.Mode().IsRegular() {
		return profilekit.LoadDir(args[0], profilekit.ProfileEntry, profilekit.LoadOptions{})
	}
	pkg, err := tosca.Open(args[0], tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	resolved, err := resolveCached(context.Background(), pkg, sol004.Policy{})
	if err != nil {
		return nil, err
	}
	opts := profilekit.LoadOptions{Imports: map[string]profilekit.ImportedFiles{}}
	for _, imp := range resolved.Imports {
		opts.Imports[imp.URL] = profilekit.ImportedFiles{FS: os.DirFS(imp.Profile.Root), Entry: imp.Profile.Entry}
	}
	return profilekit.LoadDir(pkg.Root, pkg.Entry, opts)
}

func newProfileDiffCommand() *cobra.Command {
	var work profileWork
	var noTests bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Say what a new version of a profile breaks for packages written for the old one",
		Long: "Compare two versions of a profile (directories): types and properties removed,\n" +
			"properties made required without a default, constraints narrowed, types changed,\n" +
			"requirements made mandatory (breaking), and what is only added; then run OLD's test\n" +
			"cases with OLD and with NEW: a case whose objects change is breaking too (--no-tests\n" +
			"skips it). Exit code 1 when something breaks, 0 when not, 3 when it cannot tell.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			defer work.isolation.close()
			report, err := work.diff(ctx, args[0], args[1], !noTests)
			if err != nil {
				return diffFailed{err}
			}
			out := cmd.OutOrStdout()
			for _, c := range report.Changes {
				fmt.Fprintln(out, c.String())
				for _, line := range strings.Split(strings.TrimRight(c.Detail, "\n"), "\n") {
					if line != "" {
						fmt.Fprintf(out, "          %s\n", line)
					}
				}
			}
			fmt.Fprintln(out, report.Verdict())
			if report.Breaks() {
				return differencesFound{report.Count(profilekit.Breaking)}
			}
			return nil
		},
	}
	work.register(cmd)
	cmd.Flags().BoolVar(&noTests, "no-tests", false, "compare the types only, without running OLD's test cases")
	return cmd
}

// diff compares the types of two versions, then what OLD's test cases render with each.
func (w *profileWork) diff(ctx context.Context, old, new string, tests bool) (*profilekit.Report, error) {
	for _, dir := range []string{old, new} {
		if err := w.check(ctx, dir); err != nil {
			return nil, err
		}
	}
	oldCatalog, err := profilekit.LoadDir(old, profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		return nil, err
	}
	newCatalog, err := profilekit.LoadDir(new, profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		return nil, err
	}
	report := profilekit.Compare(oldCatalog, newCatalog)
	testsDir := filepath.Join(old, profilekit.TestsDir)
	if !tests || !isDir(testsDir) {
		return report, nil
	}
	oldRun, err := w.run(ctx, old, testsDir, false)
	if err != nil {
		return nil, err
	}
	newRun, err := w.run(ctx, new, testsDir, false)
	if err != nil {
		return nil, err
	}
	report.Changes = append(report.Changes, profilekit.CompareRenders(oldRun, newRun)...)
	return report, nil
}

func newExplainCommand() *cobra.Command {
	var profile string
	var list bool
	cmd := &cobra.Command{
		Use:   "explain TYPE[.PROPERTY...]",
		Short: "Describe a TOSCA type of a profile, or one of its properties, as kubectl explain does",
		Long: "Describe a type (calaf.nodes.Deployment), a property (calaf.nodes.Deployment.ports) or a\n" +
			"field of a property's data type (calaf.nodes.Deployment.ports.port), offline: of the Calaf\n" +
			"Kubernetes profile, or with --profile of a profile directory or a package.",
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			catalog, err := loadCatalog([]string{profile})
			if err != nil {
				return err
			}
			if list || len(args) == 0 {
				for _, kind := range profilekit.Kinds() {
					for _, t := range catalog.Types(kind, "") {
						fmt.Fprintf(cmd.OutOrStdout(), "%-13s %s\n", kind, t.Name)
					}
				}
				return nil
			}
			text, err := profilekit.Explain(catalog, args[0])
			if err != nil {
				return usageError{err}
			}
			_, err = io.WriteString(cmd.OutOrStdout(), text)
			return err
		},
	}
	cmd.Flags().StringVar(&profile, "profile", "", "profile directory or package whose types to explain (default: the Calaf Kubernetes profile)")
	cmd.Flags().BoolVar(&list, "list", false, "list every type")
	return cmd
}
