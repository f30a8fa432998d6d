//go:build !calaf_offline

package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/policy"
	"calaf.io/calaf/worker"
)

// registerIsolationFlags adds the flags of the operator's worker processes, where
// packages are compiled and rendered, and of its render policy (read before the operator
// starts).
func registerIsolationFlags(cmd *cobra.Command, opts *operator.Options) {
	var policyFile string
	cmd.Flags().StringVar(&policyFile, "render-policy", "", "render policy file (kind RenderPolicy): the kinds packages may render, cluster-scoped objects, pod exceptions by namespace (default: the built-in policy)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if policyFile == "" {
			return nil
		}
		p, err := policy.Load(policyFile)
		if err != nil {
			return usageError{err}
		}
		opts.RenderPolicy = p
		return nil
	}
	w := &opts.Workers
	cmd.Flags().IntVar(&w.Size, "workers", w.Size, "worker processes compiling and rendering packages at once")
	cmd.Flags().Var(bytesFlag{&w.Limits.Memory}, "worker-memory", "memory limit of each worker process, e.g. 512Mi")
	cmd.Flags().IntVar(&w.GCPercent, "worker-gc-percent", w.GCPercent, "garbage collection target of each worker process, as GOGC (0 or less: Go's 100)")
	cmd.Flags().DurationVar(&w.CompileTimeout, "compile-timeout", w.CompileTimeout, "wall deadline of one compile in a worker (a render's is --script-timeout once for every 100 node templates, plus 20s)")
	cmd.Flags().BoolVar(&opts.InProcess, "in-process", false, "compile and render in the operator's own process, without workers (a package can then crash the operator)")
	cmd.Flags().Var(confinementFlag{&w.Confinement}, "worker-confinement", "best-effort: workers confine themselves with Landlock where the kernel has it, and the log says when it has not; required: workers that cannot are refused (no compile nor render then)")
}

// confinementFlag is whether workers must be confined (docs/security.md).
type confinementFlag struct{ c *worker.Confinement }

func (f confinementFlag) String() string {
	if f.c.Required {
		return "required"
	}
	return "best-effort"
}

func (f confinementFlag) Set(s string) error {
	switch s {
	case "required", "best-effort":
		f.c.Required = s == "required"
		return nil
	}
	return fmt.Errorf("%q: best-effort or required", s)
}

func (f confinementFlag) Type() string { return "mode" }

// credentialFiles are the files of the operator's credentials that its workers must not
// read, besides its service account's token: its kubeconfig and its receivers' tokens.
func credentialFiles(kubeconfig string, tokenFiles ...string) []string {
	var files []string
	for _, file := range append(append([]string{kubeconfig}, tokenFiles...), filepath.SplitList(os.Getenv("KUBECONFIG"))...) {
		if file != "" {
			files = append(files, file)
		}
	}
	return files
}

// bytesFlag is a byte count written as a resource quantity (e.g. 512Mi).
type bytesFlag struct{ n *int64 }

func (f bytesFlag) String() string { return resource.NewQuantity(*f.n, resource.BinarySI).String() }

func (f bytesFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*f.n = q.Value()
	return nil
}

func (f bytesFlag) Type() string { return "quantity" }
