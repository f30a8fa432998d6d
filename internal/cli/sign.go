//go:build !calaf_offline

package cli

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// signFlags are the flags of `calaf package sign`.
type signFlags struct {
	key, cert, chain string
	option           int
	output           string
}

func newSignCommand() *cobra.Command {
	var flags signFlags
	cmd := &cobra.Command{
		Use:   "sign SOURCE --key KEY --cert CERT [--chain CHAIN] [--option 1|2] -o OUT",
		Short: "Sign a package as ETSI SOL004 defines: a signed manifest (option 1) or a signed CSAR (option 2)",
		Long: "Sign a package (directory, CSAR, tar or YAML file) with a private key and its certificate.\n" +
			"Option 1 (default) writes a CSAR whose manifest ends with a CMS signature of the bytes before\n" +
			"it; a package without a manifest gets one listing every file with its SHA-256, and a manifest\n" +
			"that does not list every file is refused. Option 2 writes a zip holding the CSAR, its detached\n" +
			"CMS signature (.cms) and the certificate with its chain (.cert). Signatures use SHA-256 and\n" +
			"carry the certificate and --chain (intermediate CAs; the root is the verifier's anchor).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if flags.key == "" || flags.cert == "" || flags.output == "" {
				return usageError{fmt.Errorf("give --key, --cert and -o")}
			}
			if flags.option != 1 && flags.option != 2 {
				return usageError{fmt.Errorf("--option is 1 (signed manifest) or 2 (signed CSAR), not %d", flags.option)}
			}
			creds, err := flags.credentials()
			if err != nil {
				return err
			}
			data, err := flags.sign(args[0], creds)
			if err != nil {
				return err
			}
			if err := os.WriteFile(flags.output, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s (SOL004 option %d) as %q: %d bytes, sha256:%s\n",
				flags.output, flags.option, creds.Certificate.Subject.String(), len(data), source.SHA256(data))
			return nil
		},
	}
	cmd.Flags().StringVar(&flags.key, "key", "", "PEM private key of the signer (not encrypted)")
	cmd.Flags().StringVar(&flags.cert, "cert", "", "PEM certificate of the signer (more certificates in it join the chain)")
	cmd.Flags().StringVar(&flags.chain, "chain", "", "PEM intermediate CA certificates to include")
	cmd.Flags().IntVar(&flags.option, "option", 1, "1: sign the manifest; 2: sign the whole CSAR")
	cmd.Flags().StringVarP(&flags.output, "output", "o", "", "file to write: a CSAR (option 1) or a zip (option 2)")
	return cmd
}

func (f signFlags) credentials() (*sol004.Credentials, error) {
	key, err := os.ReadFile(f.key)
	if err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(f.cert)
	if err != nil {
		return nil, err
	}
	var chain []byte
	if f.chain != "" {
		if chain, err = os.ReadFile(f.chain); err != nil {
			return nil, err
		}
	}
	return sol004.LoadCredentials(key, cert, chain)
}

// sign writes the signed package; it refuses a package that would not verify.
func (f signFlags) sign(src string, creds *sol004.Credentials) ([]byte, error) {
	pkg, env, err := sol004.Open(src, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	if env != nil {
		return nil, fmt.Errorf("%s is already a signed SOL004 option 2 zip", src)
	}
	report, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{})
	if err != nil {
		return nil, err
	}
	if f.option == 2 {
		csar, err := csarBytes(src, pkg)
		if err != nil {
			return nil, err
		}
		return sol004.WrapCSAR(filepath.Base(f.output), csar, creds)
	}
	manifestPath, manifest := report.Manifest, []byte(nil)
	if manifestPath == "" {
		manifestPath = strings.TrimSuffix(path.Base(pkg.Entry), path.Ext(pkg.Entry)) + ".mf"
		manifest = pkg.WriteManifest(manifestPath, nil)
	} else if manifest, err = pkg.ReadFile(manifestPath); err != nil {
		return nil, err
	}
	signed, err := sol004.SignManifest(manifest, creds)
	if err != nil {
		return nil, err
	}
	data, err := source.PackCSARWith(pkg, map[string][]byte{manifestPath: signed})
	if err != nil {
		return nil, err
	}
	return data, checkSigned(data)
}

// csarBytes returns a CSAR file byte for byte, or packs any other package into one.
func csarBytes(src string, pkg *tosca.Package) ([]byte, error) {
	if isZipFile(src) {
		return os.ReadFile(src)
	}
	return source.PackCSAR(pkg)
}

// checkSigned reopens a signed CSAR and refuses it when its signature would not verify
// for what it holds (a file the manifest does not list, above all).
func checkSigned(csar []byte) error {
	pkg, err := tosca.OpenArchive(csar, "signed.csar", tosca.DefaultLimits())
	if err != nil {
		return err
	}
	defer pkg.Close()
	if _, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{}); err != nil {
		return err
	}
	evidence := sol004.Examine(pkg, nil)
	problems := evidence.Problems
	for _, sig := range evidence.Signatures {
		if sig.Problem != "" {
			problems = append(problems, tosca.Diagnostic{File: sig.File, Line: sig.Line, Message: sig.Problem})
		}
	}
	if len(problems) > 0 {
		return &tosca.IntegrityError{Diagnostics: problems}
	}
	return nil
}

func newVerifyCommand() *cobra.Command {
	var anchors, mode string
	cmd := &cobra.Command{
		Use:   "verify PACKAGE --anchors FILE",
		Short: "Verify a package's SOL004 signature against trust anchors",
		Long: "Verify a package (directory, CSAR, SOL004 option 2 zip, tar): the digests of its manifest,\n" +
			"its CMS signature (signed manifest or signed CSAR) and those of its signed artifacts, each\n" +
			"signer's chain up to an anchor of --anchors (a PEM bundle), validity dates and key usage.\n" +
			"Exit code 1 with the reasons when it does not verify (with --mode Warn, they are printed and\n" +
			"the exit code is 0).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if anchors == "" {
				return usageError{fmt.Errorf("give the trust anchors with --anchors")}
			}
			policy, err := anchorsPolicy(anchors, mode)
			if err != nil {
				return err
			}
			pkg, report, verdict, err := sol004.VerifyPackage(args[0], tosca.DefaultLimits(), policy)
			if err != nil {
				return err
			}
			defer pkg.Close()
			printVerdict(cmd.OutOrStdout(), verdict)
			fmt.Fprintf(cmd.OutOrStdout(), "integrity: %s\n", report.Summary())
			return nil
		},
	}
	cmd.Flags().StringVar(&anchors, "anchors", "", "PEM bundle of the trusted CA certificates")
	cmd.Flags().StringVar(&mode, "mode", "Enforce", "Enforce (exit 1 when not verified) or Warn")
	return cmd
}
