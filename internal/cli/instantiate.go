package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"calaf.io/calaf/etsi"
	"calaf.io/calaf/tosca"
)

// etsiFlags are the flags of the commands that compile an ETSI SOL001 VNF package.
type etsiFlags struct {
	instantiate string
	strict      bool
}

func (f *etsiFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.instantiate, "instantiate", "", "an ETSI SOL003 InstantiateVnfRequest (JSON or YAML: flavourId, instantiationLevelId, additionalParams) for an ETSI SOL001 VNF package")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "refuse the real-world idioms otherwise tolerated with a warning (docs/etsi.md)")
}

// request reads the --instantiate file; nil without one.
func (f *etsiFlags) request() (*etsi.Request, error) {
	if f.instantiate == "" {
		return nil, nil
	}
	data, err := os.ReadFile(f.instantiate)
	if err != nil {
		return nil, usageError{fmt.Errorf("instantiate request: %w", err)}
	}
	return etsi.ParseRequest(f.instantiate, data)
}

// options are the compile options the flags ask for.
func (f *etsiFlags) options(req *etsi.Request) tosca.CompileOptions {
	opts := tosca.CompileOptions{Strict: f.strict}
	if req != nil {
		opts.Flavour = req.FlavourID
	}
	return opts
}

// writeWarnings prints warnings, one per line.
func writeWarnings(w io.Writer, warnings []tosca.Diagnostic) {
	for _, d := range warnings {
		fmt.Fprintf(w, "warning: %s\n", d)
	}
}
