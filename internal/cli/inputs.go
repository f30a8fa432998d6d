package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"calaf.io/calaf/tosca"
)

// inputFlags are the -i/--input and --inputs flags shared by the commands that compile.
type inputFlags struct {
	values []string
	files  []string
	// given holds the text of each -i value, for inputs the template declares as text.
	given map[string]string
}

func (f *inputFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&f.values, "input", "i", nil, "an input as name=value; the value is YAML (3 is an integer, \"3\" a string)")
	cmd.Flags().StringArrayVar(&f.files, "inputs", nil, "a YAML file of inputs (a map); -i values override it")
}

// parse merges the inputs files and the -i values.
func (f *inputFlags) parse() (map[string]any, error) {
	inputs := map[string]any{}
	for _, file := range f.files {
		m, err := readInputsFile(file)
		if err != nil {
			return nil, err
		}
		for name, value := range m {
			inputs[name] = value
		}
	}
	for _, assignment := range f.values {
		name, text, ok := strings.Cut(assignment, "=")
		if !ok || name == "" {
			return nil, usageError{fmt.Errorf("input %q is not name=value", assignment)}
		}
		var value any
		if err := yaml.Unmarshal([]byte(text), &value); err != nil {
			value = text
		}
		inputs[name] = value
		if f.given == nil {
			f.given = map[string]string{}
		}
		f.given[name] = text
	}
	return inputs, nil
}

// readInputsFile reads a file of --inputs: a problem with it (it cannot be read, or is no
// YAML map of inputs: tosca.ParseInputsFile) is one of the inputs, exit 1, not of the
// command line.
func readInputsFile(file string) (map[string]any, error) {
	info, err := os.Stat(file)
	if err == nil && info.Size() > tosca.MaxInputsFileBytes {
		return nil, tosca.Invalid(file, "inputs file: %d bytes, more than the limit of %d KiB", info.Size(), tosca.MaxInputsFileBytes>>10)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, tosca.Invalid(file, "inputs file: cannot read it: %v", err)
	}
	return tosca.ParseInputsFile(file, data)
}

// retype gives the -i values of the inputs pkg declares as text (string, version,
// timestamp, scalar units) their text: `-i mcc=208` is the string "208" when mcc is a
// string, the integer 208 when it is an integer. inputs is changed in place.
func (f *inputFlags) retype(inputs map[string]any, pkg *tosca.Package) error {
	if len(f.given) == 0 {
		return nil
	}
	text, err := pkg.TextInputs()
	if err != nil {
		return err
	}
	for name, given := range f.given {
		if text[name] {
			inputs[name] = given
		}
	}
	return nil
}
