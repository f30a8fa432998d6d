//go:build !calaf_offline

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"calaf.io/calaf/profilekit"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/locked"
	"calaf.io/calaf/tosca/sol004"
)

// profileRegistryCommands are the profile commands that reach a registry.
func profileRegistryCommands() []*cobra.Command {
	return []*cobra.Command{newProfilePushCommand()}
}

// registryFlags are how a command reaches registries: credentials and plain HTTP.
type registryFlags struct {
	insecure, passwordStdin bool
	username                string
}

func (r *registryFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&r.insecure, "insecure", false, "allow plain-HTTP registries")
	cmd.Flags().StringVar(&r.username, "username", "", "registry user name (with --password-stdin; default: the Docker config's credentials)")
	cmd.Flags().BoolVar(&r.passwordStdin, "password-stdin", false, "read the registry password from standard input")
}

// options returns the registry options the flags say: the user and password given, else
// the Docker config ($DOCKER_CONFIG or ~/.docker/config.json).
func (r *registryFlags) options(stdin io.Reader) (source.OCIOptions, error) {
	opts := source.OCIOptions{Insecure: r.insecure, Keychain: authn.DefaultKeychain, UserAgent: "calaf"}
	if r.username == "" {
		return opts, nil
	}
	if !r.passwordStdin {
		return opts, usageError{fmt.Errorf("--username needs --password-stdin")}
	}
	password, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return opts, err
	}
	opts.Keychain = staticKeychain{authn.FromConfig(authn.AuthConfig{Username: r.username, Password: strings.TrimRight(string(password), "\r\n")})}
	return opts, nil
}

func newProfilePushCommand() *cobra.Command {
	var registry registryFlags
	var sign signFlags
	cmd := &cobra.Command{
		Use:   "push DIR oci://HOST/REPOSITORY:TAG",
		Short: "Publish a profile to an OCI registry, signed when given a key",
		Long: "Pack the profile DIR (its profile.yaml, renderers and test cases) into a CSAR and push it\n" +
			"as a Calaf profile artifact (config " + locked.ConfigMediaType + ", layer\n" +
			locked.LayerMediaType + "). With --key and --cert the CSAR is signed first\n" +
			"(SOL004 option 1: a manifest of every file with a CMS signature), as calaf package sign\n" +
			"signs a package. Prints the manifest digest, which a package's lock records.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := source.ParseOCIReference(args[1], registry.insecure)
			if err != nil {
				return usageError{err}
			}
			if (sign.key == "") != (sign.cert == "") {
				return usageError{fmt.Errorf("give both --key and --cert to sign, or neither")}
			}
			opts, err := registry.options(cmd.InOrStdin())
			if err != nil {
				return err
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			opts.Context = ctx
			artifact, pkg, err := profileArtifact(args[0], sign)
			if err != nil {
				return err
			}
			defer pkg.Close()
			catalog, _ := loadProfileHeader(args[0])
			digest, err := source.PushProfile(ref, artifact, pkg, catalog, opts)
			if err != nil {
				return err
			}
			signed := "unsigned"
			if sign.key != "" {
				signed = "signed"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s@%s (%s, %d bytes, profile %s)\n", args[1], digest, signed, len(artifact), pkg.Digest)
			return nil
		},
	}
	registry.register(cmd)
	cmd.Flags().StringVar(&sign.key, "key", "", "PEM private key to sign the profile with")
	cmd.Flags().StringVar(&sign.cert, "cert", "", "PEM certificate of the signer")
	cmd.Flags().StringVar(&sign.chain, "chain", "", "PEM intermediate CA certificates to include")
	return cmd
}

// profileArtifact packs a profile directory into a CSAR, signed with the flags' key when
// they give one, and returns it with the profile it holds.
func profileArtifact(dir string, sign signFlags) ([]byte, *tosca.Package, error) {
	if _, err := os.Stat(filepath.Join(dir, "profile.yaml")); err != nil {
		return nil, nil, fmt.Errorf("%s has no profile.yaml: a profile's entry is its profile.yaml", dir)
	}
	profile, err := tosca.OpenEntry(dir, "profile.yaml", tosca.DefaultLimits())
	if err != nil {
		return nil, nil, err
	}
	data, err := source.PackCSAR(profile)
	profile.Close()
	if err != nil {
		return nil, nil, err
	}
	if sign.key != "" {
		if data, err = signProfile(data, sign); err != nil {
			return nil, nil, err
		}
	}
	pkg, err := tosca.OpenArchive(data, filepath.Base(dir)+".csar", tosca.DefaultLimits())
	if err != nil {
		return nil, nil, err
	}
	if pkg.Entry != "profile.yaml" {
		pkg.Close()
		return nil, nil, fmt.Errorf("the packed profile's entry is %s, not profile.yaml", pkg.Entry)
	}
	return data, pkg, nil
}

// signProfile signs a packed profile as calaf package sign does (SOL004 option 1).
func signProfile(csar []byte, sign signFlags) ([]byte, error) {
	creds, err := sign.credentials()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "calaf-profile-*.csar")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(csar)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}
	sign.option = 1
	return sign.sign(tmp.Name(), creds)
}

func newPackageLockCommand() *cobra.Command {
	var registry registryFlags
	var update bool
	var anchors, mode string
	cmd := &cobra.Command{
		Use:   "lock DIR",
		Short: "Lock the profiles a package imports by reference: write DIR/calaf.lock with their digests",
		Long: "Resolve every import by reference of the package in DIR (oci://HOST/REPO:TAG, https://...)\n" +
			"to a digest, fetch each into the profile cache (" + "$CALAF_CACHE/profiles" + ") and write the digests\n" +
			"to DIR/calaf.lock, as helm dependency update writes Chart.lock. Imports locked already keep\n" +
			"their digest (fetched again if the cache lacks them) unless --update. With --anchors, each\n" +
			"profile's signature must chain to one of them (--mode Enforce) or is reported (Warn).\n" +
			"Calaf then deploys the locked digests only, offline from the cache where it has them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy := sol004.Policy{}
			if anchors != "" {
				var err error
				if policy, err = anchorsPolicy(anchors, mode); err != nil {
					return err
				}
			}
			opts, err := registry.options(cmd.InOrStdin())
			if err != nil {
				return err
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			pkg, err := tosca.Open(args[0], tosca.DefaultLimits())
			if err != nil {
				return err
			}
			defer pkg.Close()
			fetcher := &source.ProfileFetcher{Options: func(string) source.OCIOptions { return opts }}
			resolver := &locked.Resolver{Cache: profileCache(), Fetcher: fetcher, Policy: policy}
			lock, resolved, err := resolver.Lock(ctx, pkg, update)
			if err != nil {
				return err
			}
			data, err := lock.Marshal()
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(pkg.Root, tosca.LockFile), data, 0o644); err != nil {
				return err
			}
			for _, r := range resolved {
				fmt.Fprintf(cmd.OutOrStdout(), "locked %s at %s (%s)\n", r.Locked.URL, r.Locked.Digest, signatureText(r.Verdict))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d imports by reference\n", filepath.Join(args[0], tosca.LockFile), len(lock.Imports))
			return nil
		},
	}
	registry.register(cmd)
	cmd.Flags().BoolVar(&update, "update", false, "lock every import at what it names now, the locked ones too")
	cmd.Flags().StringVar(&anchors, "anchors", "", "PEM bundle of trust anchors the profiles' signers must chain to")
	cmd.Flags().StringVar(&mode, "mode", "Enforce", "with --anchors: Enforce (refuse) or Warn")
	return cmd
}

// signatureText says in a few words how a profile's signature was judged.
func signatureText(v *sol004.Verdict) string {
	switch {
	case v == nil || v.Mode == sol004.Off && v.Method == sol004.Unsigned:
		return "unsigned"
	case v.Mode == sol004.Off:
		return "signed, not verified (no --anchors)"
	case v.Verified && v.Signer != nil:
		return "signed by " + v.Signer.Subject + ", verified"
	}
	return v.Summary()
}

// loadProfileHeader reads the name and version a profile directory declares.
func loadProfileHeader(dir string) (source.ProfileConfig, error) {
	catalog, err := profilekit.LoadDir(dir, profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		return source.ProfileConfig{}, err
	}
	return source.ProfileConfig{Name: catalog.Name, Version: catalog.Version}, nil
}
