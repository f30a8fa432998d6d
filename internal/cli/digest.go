//go:build !calaf_offline

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"calaf.io/calaf/tosca"
)

func newDigestCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "digest DIRECTORY",
		Short: "Rewrite the digests of a package directory's TOSCA.meta and manifest from its files (before signing)",
		Long: "Compute again, from the files of a package directory, every digest its TOSCA.meta per-file blocks\n" +
			"(Name / Algorithm / Hash) and its SOL004 manifest (Source / Algorithm / Hash) give, with each block's\n" +
			"algorithm, and write them in place; nothing else of those files changes. Do it after changing a\n" +
			"package's files and before signing it (calaf package sign): a signed manifest is refused, as its\n" +
			"signature would no longer verify. A block naming a file the package lacks is an error (exit code 1).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rewriteDigests(cmd.OutOrStdout(), args[0])
		},
	}
}

// rewriteDigests rewrites the digests of the package directory dir and says which.
func rewriteDigests(out io.Writer, dir string) error {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return usageError{fmt.Errorf("%s is not a package directory: unpack the package, rewrite its digests, then pack it (calaf package pack)", dir)}
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return err
	}
	defer pkg.Close()
	files, changes, err := pkg.RewriteDigests()
	if err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, content, info.Mode().Perm()); err != nil {
			return err
		}
	}
	for _, c := range changes {
		fmt.Fprintf(out, "%s:%d: %s: %s digest rewritten\n", c.File, c.Line, c.Name, c.Algorithm)
	}
	fmt.Fprintf(out, "%d digests rewritten\n", len(changes))
	return nil
}
