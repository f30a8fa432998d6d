package cli

import (
	"github.com/spf13/cobra"

	"calaf.io/calaf/policy"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// renderPolicy is the render policy an offline command checks its render against, as the
// operator does: the built-in policy, or the file --policy names (what the operator is
// given with --render-policy).
type renderPolicy struct {
	file string
	// loaded is the policy, once read.
	loaded *policy.Policy
}

func (p *renderPolicy) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.file, "policy", "", "render policy file (kind RenderPolicy) the render must pass, as the operator's --render-policy (default: the built-in policy)")
}

// load reads the policy, once: before the package work, which confines the process to
// read the package alone.
func (p *renderPolicy) load() (*policy.Policy, error) {
	if p.loaded != nil {
		return p.loaded, nil
	}
	rules := &policy.Policy{}
	if p.file != "" {
		var err error
		if rules, err = policy.Load(p.file); err != nil {
			return nil, usageError{err}
		}
	}
	p.loaded = rules
	return rules, nil
}

// check refuses what the policy refuses of a render for a Service in namespace, whose
// package's signature, when verified (validate --anchors), was made by signer.
func (p *renderPolicy) check(compiled *tosca.Compiled, namespace string, signer *sol004.Verdict, result *render.Result) error {
	rules, err := p.load()
	if err != nil {
		return err
	}
	entry := compiled.Package.Entry
	if vnfd := compiled.VNFD(); vnfd != nil {
		entry = vnfd.FlavourFile
	}
	return rules.CheckTarget(entry, policy.Target{Namespace: namespace, Signer: verifiedSigner(signer)}, result.Nodes, policy.Offline)
}

// verifiedSigner is the signer of a package whose signature verified, for the policy.
func verifiedSigner(v *sol004.Verdict) *policy.Signer {
	if v == nil || !v.Verified || v.Signer == nil {
		return nil
	}
	return &policy.Signer{Subject: v.Signer.Subject, Issuer: v.Signer.Issuer}
}
