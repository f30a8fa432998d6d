//go:build !calaf_offline

package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

// newPackagesCommand is calaf packages: the VNF packages of a namespace, or one in detail.
func newPackagesCommand() *cobra.Command {
	var kube kubeFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "packages [NAME]",
		Short: "List the VNF packages of a namespace (VnfPackages), or show one",
		Long: "List the onboarded ETSI VNF packages (VnfPackage resources) of a namespace: their VNFD id,\n" +
			"onboarding, operational and usage states, provider, product and version; or, given a name,\n" +
			"what onboarding found of one (docs/vnf-packages.md).",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				pkg := &v1alpha1.VnfPackage{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: args[0]}, pkg); err != nil {
					return err
				}
				_, err := io.WriteString(cmd.OutOrStdout(), describePackage(pkg))
				return err
			}
			var list v1alpha1.VnfPackageList
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(namespace))
			}
			if err := c.List(ctx, &list, opts...); err != nil {
				return err
			}
			return writePackages(cmd.OutOrStdout(), list.Items, time.Now())
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the packages of every namespace")
	return cmd
}

// writePackages writes a table of packages, one a line.
func writePackages(out io.Writer, pkgs []v1alpha1.VnfPackage, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tVNFD\tONBOARDING\tOPERATIONAL\tUSAGE\tPROVIDER\tPRODUCT\tVERSION\tAGE\tMESSAGE")
	for _, pkg := range pkgs {
		st := pkg.Status
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pkg.Namespace, pkg.Name, orDash(text.Truncate(st.VnfdID, 40)),
			orDash(string(st.OnboardingState)), orDash(string(pkg.Spec.OperationalState)), orDash(string(st.UsageState)),
			orDash(text.Truncate(st.VnfProvider, 24)), orDash(text.Truncate(st.VnfProductName, 24)), orDash(text.Truncate(st.VnfSoftwareVersion, 12)),
			now.Sub(pkg.CreationTimestamp.Time).Round(time.Second), text.Truncate(text.OneLine(st.OnboardingFailure, 200), 80))
	}
	return w.Flush()
}

// describePackage words what onboarding found of a package.
func describePackage(pkg *v1alpha1.VnfPackage) string {
	var b strings.Builder
	st := &pkg.Status
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%-14s %s\n", label+":", value)
		}
	}
	line("Package", pkg.Namespace+"/"+pkg.Name)
	line("Onboarding", orDash(string(st.OnboardingState)))
	line("Failure", st.OnboardingFailure)
	line("Operational", string(pkg.Spec.OperationalState))
	line("Usage", string(st.UsageState))
	line("VNFD", st.VnfdID)
	line("Provider", st.VnfProvider)
	line("Product", strings.TrimSpace(st.VnfProductName+" "+st.VnfSoftwareVersion))
	line("VNFD version", st.VnfdVersion)
	line("Flavours", strings.Join(st.Flavours, ", "))
	line("Revision", st.Revision)
	if st.Checksum != nil {
		line("Checksum", fmt.Sprintf("%s %s (%d bytes)", st.Checksum.Algorithm, st.Checksum.Hash, st.Size))
	}
	if v := st.Verification; v != nil {
		line("Signature", strings.TrimSpace(st.PackageSecurityOption+" "+v.Message))
	}
	for _, image := range st.SoftwareImages {
		line("Image", strings.TrimSpace(fmt.Sprintf("%s: %s %s %s", image.ID, image.Name, image.Version, image.ImagePath)))
	}
	if n := len(st.AdditionalArtifacts); n > 0 {
		line("Artifacts", fmt.Sprintf("%d, the first %s", n, st.AdditionalArtifacts[0].ArtifactPath))
	}
	return b.String()
}
