package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tliron/go-transcribe"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/etsi"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// packageFlags are the flags of the commands that compile a package offline.
type packageFlags struct {
	inputs    inputFlags
	etsi      etsiFlags
	service   string
	namespace string
	timeout   time.Duration
	output    string
	// anchors, when set, verifies the package's SOL004 signature against them.
	anchors string
	// isolation runs the package work in a worker process.
	isolation isolation
	// policy is the render policy the render must pass.
	policy renderPolicy
}

func (f *packageFlags) register(cmd *cobra.Command, outputs string, defaultOutput string) {
	f.inputs.register(cmd)
	f.etsi.register(cmd)
	cmd.Flags().StringVar(&f.service, "service", "demo", "name of the Calaf Service the package is rendered for")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "namespace the package is rendered for")
	cmd.Flags().DurationVar(&f.timeout, "script-timeout", tosca.DefaultScriptTimeout, "deadline of each node's renderer and, once for every 100 node templates, of all the package's scriptlets")
	f.isolation.register(cmd)
	f.policy.register(cmd)
	if outputs != "" {
		cmd.Flags().StringVarP(&f.output, "output", "o", defaultOutput, "output format: "+outputs)
	}
}

// compiled is an offline compile of a package and its inputs.
type compiled struct {
	pkg       *tosca.Package
	compiled  *tosca.Compiled
	integrity *tosca.IntegrityReport
	// signature is the verdict on the package's signature; Off without --anchors.
	signature *sol004.Verdict
	request   *etsi.Request
}

// compile checks the names the package is rendered for, then opens the package, verifies
// its integrity and compiles it with the inputs of the flags.
func (f *packageFlags) compile(ctx context.Context, source string) (*compiled, error) {
	if err := checkServiceName("--service", f.service); err != nil {
		return nil, err
	}
	if err := checkNamespace("--namespace", f.namespace); err != nil {
		return nil, err
	}
	inputs, err := f.inputs.parse()
	if err != nil {
		return nil, err
	}
	if _, err := f.policy.load(); err != nil {
		return nil, err
	}
	request, err := f.etsi.request()
	if err != nil {
		return nil, err
	}
	policy := sol004.Policy{}
	if f.anchors != "" {
		if policy, err = anchorsPolicy(f.anchors, "Enforce"); err != nil {
			return nil, err
		}
	}
	// A package with a SOL004 manifest must match it, and with --anchors carry a trusted
	// signature, before anything reads it.
	pkg, integrity, verdict, err := sol004.VerifyPackage(source, tosca.DefaultLimits(), policy)
	if err != nil {
		return nil, err
	}
	if err := f.inputs.retype(inputs, pkg); err != nil {
		pkg.Close()
		return nil, err
	}
	resolved, err := resolveCached(ctx, pkg, policy)
	if err != nil {
		pkg.Close()
		return nil, err
	}
	compiler, err := f.isolation.compiler()
	if err == nil {
		var result *tosca.Compiled
		if result, err = compiler.CompileWith(ctx, resolved, inputs, f.etsi.options(request)); err == nil {
			return &compiled{pkg: pkg, compiled: result, integrity: integrity, signature: verdict, request: request}, nil
		}
	}
	pkg.Close()
	return nil, err
}

// render renders a compiled package and prints its warnings to w.
func (f *packageFlags) render(ctx context.Context, c *compiled, w io.Writer) (*render.Result, error) {
	renderer, err := f.isolation.renderer()
	if err != nil {
		return nil, err
	}
	result, err := renderer.Render(ctx, c.compiled, render.Options{Service: f.service, Namespace: f.namespace, Timeout: f.timeout, Instantiate: c.request})
	if err != nil {
		return nil, err
	}
	if err := f.policy.check(c.compiled, f.namespace, c.signature, result); err != nil {
		return nil, err
	}
	writeWarnings(w, result.Warnings)
	return result, nil
}

func checkOutput(value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return usageError{fmt.Errorf("unknown output format %q (one of %v)", value, allowed)}
}

// commandContext is cancelled by Ctrl-C.
func commandContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt)
}

// packageCommand is the skeleton of the offline commands that act on one package
// (validate, compile, render, graph): the package flags, the output format checked
// before anything runs, the package compiled (and closed after) and, when asked,
// rendered with its warnings on stderr.
type packageCommand struct {
	use, short, long string
	// formats are the values of -o, the default first; none: no -o flag.
	formats []string
	// render renders the compiled package before run.
	render bool
	// flags adds the command's own flags.
	flags func(cmd *cobra.Command, f *packageFlags)
	run   func(ctx context.Context, cmd *cobra.Command, f *packageFlags, c *compiled, result *render.Result) error
}

// command builds the cobra command.
func (pc packageCommand) command() *cobra.Command {
	var flags packageFlags
	cmd := &cobra.Command{
		Use:   pc.use + " SOURCE",
		Short: pc.short,
		Long:  pc.long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(pc.formats) > 0 {
				if err := checkOutput(flags.output, pc.formats...); err != nil {
					return err
				}
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			flags.isolation.front = frontOf(cmd.Context())
			defer flags.isolation.close()
			c, err := flags.compile(ctx, args[0])
			if err != nil {
				return err
			}
			defer c.pkg.Close()
			var result *render.Result
			if pc.render {
				if result, err = flags.render(ctx, c, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return pc.run(ctx, cmd, &flags, c, result)
		},
	}
	if len(pc.formats) > 0 {
		flags.register(cmd, strings.Join(pc.formats, "|"), pc.formats[0])
	} else {
		flags.register(cmd, "", "")
	}
	if pc.flags != nil {
		pc.flags(cmd, &flags)
	}
	return cmd
}

func newValidateCommand() *cobra.Command {
	return packageCommand{
		use:   "validate",
		short: "Validate a TOSCA package: parse, compile, evaluate functions and render it",
		long: "Validate a package (directory, CSAR, signed zip, or YAML file) offline. Types, inputs, requirements,\n" +
			"function expressions and the renderers of its profiles are all checked. Exit code 1 and\n" +
			"one diagnostic per line on stderr when something is wrong.",
		render: true,
		flags: func(cmd *cobra.Command, f *packageFlags) {
			cmd.Flags().StringVar(&f.anchors, "anchors", "", "PEM bundle of trust anchors: the package must carry a SOL004 signature chaining to one")
		},
		run: func(_ context.Context, cmd *cobra.Command, f *packageFlags, c *compiled, result *render.Result) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "valid: %s (%s): %d node templates, %d objects, %d outputs\n",
				c.pkg.Entry, c.pkg.Digest, len(result.Nodes), len(result.Objects), len(result.Outputs))
			if c.integrity.Manifest != "" {
				fmt.Fprintf(out, "integrity: %s\n", c.integrity.Summary())
			}
			if f.anchors != "" {
				printVerdict(out, c.signature)
			}
			if n := len(c.integrity.MetaVerified); n > 0 {
				fmt.Fprintf(out, "integrity: %s digests verified (%d files)\n", tosca.MetaPath, n)
			}
			writeVNF(out, result)
			return nil
		},
	}.command()
}

func newCompileCommand() *cobra.Command {
	var coerce bool
	return packageCommand{
		use:     "compile",
		short:   "Compile a TOSCA package into its topology graph (a Puccini Clout)",
		formats: []string{"yaml", "json"},
		flags: func(cmd *cobra.Command, _ *packageFlags) {
			cmd.Flags().BoolVar(&coerce, "coerce", false, "evaluate functions and replace values by their results")
		},
		run: func(ctx context.Context, cmd *cobra.Command, f *packageFlags, c *compiled, _ *render.Result) error {
			clout, err := f.isolation.evaluate(ctx, c.compiled, f.timeout, coerce)
			if err != nil {
				return err
			}
			return transcribe.NewTranscriber().SetWriter(cmd.OutOrStdout()).SetFormat(f.output).SetIndentSpaces(2).Write(clout)
		},
	}.command()
}

func newRenderCommand() *cobra.Command {
	return packageCommand{
		use:     "render",
		short:   "Render a TOSCA package into the Kubernetes objects Calaf would apply",
		formats: []string{"yaml", "json"},
		render:  true,
		run: func(_ context.Context, cmd *cobra.Command, f *packageFlags, _ *compiled, result *render.Result) error {
			return writeObjects(cmd.OutOrStdout(), result, f.output)
		},
	}.command()
}

// writeObjects prints rendered objects as multi-document YAML (each preceded by the node
// it comes from, as helm template does) or as a JSON List.
func writeObjects(w io.Writer, result *render.Result, format string) error {
	if format == "json" {
		items := make([]any, 0, len(result.Objects))
		for _, obj := range result.Objects {
			items = append(items, obj.Object)
		}
		data, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "---\n# node: %s (%s)\n%s", node.Name, node.Type, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeVNF prints the flavour, level and VDUs of an ETSI SOL001 VNF package.
func writeVNF(w io.Writer, result *render.Result) {
	vnf := result.VNF
	if vnf == nil {
		return
	}
	level := vnf.Level
	if level == "" {
		level = "(none)"
	}
	fmt.Fprintf(w, "vnf: flavour %s, instantiation level %s\n", vnf.Flavour, level)
	for _, vdu := range vnf.VDUs {
		fmt.Fprintf(w, "vdu %s: %s, %d replicas\n", vdu.Node, vdu.Workload, vdu.Replicas)
	}
	for _, a := range vnf.Aspects {
		fmt.Fprintf(w, "aspect %s: scale level %d of %d\n", a.ID, a.ScaleLevel, a.MaxScaleLevel)
	}
}
