//go:build !calaf_offline

package cli

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

func newPackageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "package",
		Short: "Pack, sign, verify or lock a package, rewrite its digests, or push it to an OCI registry",
	}
	cmd.AddCommand(newPackCommand(), newPushCommand(), newSignCommand(), newVerifyCommand(), newPackageLockCommand(), newDigestCommand())
	return cmd
}

// packOptions are the flags shared by pack and push.
type packOptions struct {
	manifest bool
}

func (o *packOptions) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.manifest, "manifest", false, "add an ETSI SOL004 manifest (.mf) with the SHA-256 of every file, when the package has none")
}

// csar opens a package (directory, CSAR, tar or YAML file), verifies it against its
// manifest, and returns it as a CSAR: a CSAR file is kept byte for byte, anything else is
// packed reproducibly.
func (o *packOptions) csar(source string, out io.Writer) ([]byte, *tosca.Package, error) {
	pkg, envelope, err := sol004.Open(source, tosca.DefaultLimits())
	if err != nil {
		return nil, nil, err
	}
	report, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{})
	if err != nil {
		pkg.Close()
		return nil, nil, err
	}
	if envelope != nil { // a signed CSAR (SOL004 option 2) travels with its signature
		data, err := os.ReadFile(source)
		if err != nil {
			pkg.Close()
			return nil, nil, err
		}
		fmt.Fprintf(out, "signed CSAR %s with %s, kept byte for byte\n", envelope.CSARName, envelope.SignatureName)
		return data, pkg, nil
	}
	var extra map[string][]byte
	if o.manifest && report.Manifest == "" {
		name := strings.TrimSuffix(path.Base(pkg.Entry), path.Ext(pkg.Entry)) + ".mf"
		extra = map[string][]byte{name: pkg.WriteManifest(name, nil)}
		fmt.Fprintf(out, "manifest: %s lists %d files (SHA-256)\n", name, len(pkg.Files))
	} else if report.Manifest != "" {
		fmt.Fprintf(out, "%s\n", report.Summary())
	}
	if extra == nil && isZipFile(source) {
		data, err := os.ReadFile(source)
		if err != nil {
			pkg.Close()
			return nil, nil, err
		}
		return data, pkg, nil
	}
	data, err := packCSAR(pkg, extra)
	if err != nil {
		pkg.Close()
		return nil, nil, err
	}
	if extra != nil { // reopen, so the pushed config describes what was packed
		pkg.Close()
		if pkg, err = tosca.OpenArchive(data, path.Base(source)+".csar", tosca.DefaultLimits()); err != nil {
			return nil, nil, err
		}
	}
	return data, pkg, nil
}

func packCSAR(pkg *tosca.Package, extra map[string][]byte) ([]byte, error) {
	return source.PackCSARWith(pkg, extra)
}

func isZipFile(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return string(head) == "PK\x03\x04"
}

func newPackCommand() *cobra.Command {
	var opts packOptions
	var output string
	cmd := &cobra.Command{
		Use:   "pack SOURCE -o FILE.csar",
		Short: "Pack a package (directory, CSAR, tar or YAML file) into a reproducible CSAR",
		Long: "Pack a package into a CSAR (zip) whose bytes depend only on the files: the same files\n" +
			"always give the same SHA-256. A package with a SOL004 manifest is verified first; --manifest\n" +
			"adds one to a package that has none. A package without TOSCA-Metadata gets a TOSCA.meta\n" +
			"naming its entry service template.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return usageError{fmt.Errorf("give the output file with -o")}
			}
			data, pkg, err := opts.csar(args[0], cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer pkg.Close()
			if err := os.WriteFile(output, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "packed %s: %d files, %d bytes, sha256:%s\n", output, len(pkg.Files), len(data), source.SHA256(data))
			return nil
		},
	}
	opts.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "CSAR file to write")
	return cmd
}

func newPushCommand() *cobra.Command {
	var opts packOptions
	var insecure, passwordStdin bool
	var username string
	cmd := &cobra.Command{
		Use:   "push SOURCE oci://HOST/REPOSITORY[:TAG]",
		Short: "Push a package to an OCI registry as a Calaf package artifact",
		Long: "Push a package (directory, CSAR, tar or YAML file; packed as by `calaf package pack`) to an\n" +
			"OCI registry as an artifact of its own media types (config " + source.OCIConfigMediaType + ",\n" +
			"layer " + source.OCILayerMediaType + "). Prints the manifest digest, which a Service can pin.\n" +
			"Credentials: --username with --password-stdin, otherwise the Docker config ($DOCKER_CONFIG or\n" +
			"~/.docker/config.json). Plain HTTP only with --insecure.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := source.ParseOCIReference(args[1], insecure)
			if err != nil {
				return usageError{err}
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			var keychain authn.Keychain = authn.DefaultKeychain
			if username != "" {
				if !passwordStdin {
					return usageError{fmt.Errorf("--username needs --password-stdin")}
				}
				password, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
				if err != nil {
					return err
				}
				keychain = staticKeychain{authn.FromConfig(authn.AuthConfig{Username: username, Password: strings.TrimRight(string(password), "\r\n")})}
			}
			data, pkg, err := opts.csar(args[0], cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer pkg.Close()
			digest, err := source.PushOCI(ref, data, pkg, source.OCIOptions{Insecure: insecure, Keychain: keychain, Context: ctx, UserAgent: "calaf"})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s@%s (%d bytes, package %s)\n", args[1], digest, len(data), pkg.Digest)
			return nil
		},
	}
	opts.register(cmd)
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow a plain-HTTP registry")
	cmd.Flags().StringVar(&username, "username", "", "registry user name")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the registry password from standard input")
	return cmd
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }
