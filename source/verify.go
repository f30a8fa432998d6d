package source

import (
	"context"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca/sol004"
)

// AnchorsKey is the default key of a Secret or ConfigMap holding trust anchors.
const AnchorsKey = "ca.crt"

// VerifyDefaults is the operator's signature policy, applied to every Service.
type VerifyDefaults struct {
	// Mode every Service gets at least; spec.verify.mode can only make it stricter.
	Mode sol004.Mode
	// Anchors every Service trusts, and where they come from (for messages).
	Anchors     []*x509.Certificate
	AnchorsFrom string
	// IgnoreServiceAnchors trusts only the operator's anchors: spec.verify.anchors is
	// not read, so a namespace cannot vouch for signers of its own.
	IgnoreServiceAnchors bool
}

// verify applies the Service's signature policy to a fetched package and records the
// verdict in the artifact. A package the policy refuses is an IntegrityFailed error
// naming the revision; nothing of it is used.
func (f *Fetcher) verify(ctx context.Context, svc *v1alpha1.Service, artifact *Artifact) error {
	policy, err := f.policy(ctx, svc)
	if err != nil {
		return err
	}
	evidence, ok := f.Store.Evidence(artifact.Package)
	if !ok {
		return transient(v1alpha1.ReasonFetchFailed, "revision %s left the package cache while it was verified", artifact.Revision)
	}
	verdict, err := policy.Check(evidence)
	if err != nil {
		return &Error{Reason: v1alpha1.ReasonIntegrityFailed, Err: fmt.Errorf("revision %s: package signature: %w", artifact.Revision, err)}
	}
	artifact.Verification, artifact.Signer = verificationStatus(verdict)
	artifact.OperatorAnchored = verdict.Verified && verdict.Signer != nil && f.isOperatorAnchor(verdict.Signer.AnchorCert)
	return nil
}

// isOperatorAnchor tells whether a certificate is one of the operator's trust anchors.
func (f *Fetcher) isOperatorAnchor(cert *x509.Certificate) bool {
	if cert == nil {
		return false
	}
	for _, anchor := range f.Verify.Anchors {
		if anchor.Equal(cert) {
			return true
		}
	}
	return false
}

// policy combines the operator's defaults with the Service's spec.verify: the stricter
// mode, and the anchors of both.
func (f *Fetcher) policy(ctx context.Context, svc *v1alpha1.Service) (sol004.Policy, error) {
	policy := sol004.Policy{Mode: f.Verify.Mode, Anchors: f.Verify.Anchors, AnchorsFrom: f.Verify.AnchorsFrom}
	spec := svc.Spec.Verify
	if spec == nil {
		return policy, nil
	}
	mode := sol004.Enforce
	if spec.Mode == v1alpha1.VerifyWarn {
		mode = sol004.Warn
	}
	policy.Mode = sol004.Stricter(policy.Mode, mode)
	if spec.Anchors == nil || f.Verify.IgnoreServiceAnchors {
		return policy, nil
	}
	reader, err := readerOf(f.ReaderFor, f.Reader, svc)
	if err != nil {
		return policy, err
	}
	anchors, from, err := readAnchors(ctx, reader, svc.Namespace, spec.Anchors)
	if err != nil {
		return policy, err
	}
	policy.Anchors = append(append([]*x509.Certificate(nil), f.Verify.Anchors...), anchors...)
	if policy.AnchorsFrom != "" {
		from = policy.AnchorsFrom + " and " + from
	}
	policy.AnchorsFrom = from
	return policy, nil
}

// readAnchors reads the PEM bundle a Service names. A missing object may be created
// later (transient); a missing key or a bundle without certificates needs a fix.
func readAnchors(ctx context.Context, reader client.Reader, namespace string, ref *v1alpha1.AnchorsReference) ([]*x509.Certificate, string, error) {
	key := ref.Key
	if key == "" {
		key = AnchorsKey
	}
	from := fmt.Sprintf("%s %s, key %s", ref.Kind, ref.Name, key)
	name := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	var data []byte
	var found bool
	var err error
	switch ref.Kind {
	case "Secret":
		var secret corev1.Secret
		if err = reader.Get(ctx, name, &secret); err == nil {
			data, found = secret.Data[key]
		}
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err = reader.Get(ctx, name, &cm); err == nil {
			var text string
			if text, found = cm.Data[key]; found {
				data = []byte(text)
			} else {
				data, found = cm.BinaryData[key]
			}
		}
	default:
		return nil, from, permanent(v1alpha1.ReasonInvalidSource, "trust anchors: kind %q is neither Secret nor ConfigMap", ref.Kind)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, from, transient(v1alpha1.ReasonFetchFailed, "trust anchors: %s %q not found", ref.Kind, ref.Name)
	case err != nil:
		return nil, from, transient(v1alpha1.ReasonFetchFailed, "trust anchors: reading %s %q: %v", ref.Kind, ref.Name, err)
	case !found:
		return nil, from, permanent(v1alpha1.ReasonInvalidSource, "trust anchors: %s %q has no key %q", ref.Kind, ref.Name, key)
	}
	anchors, err := sol004.ParseCertificates(data, from)
	if err != nil {
		return nil, from, permanent(v1alpha1.ReasonInvalidSource, "trust anchors: %v", err)
	}
	return anchors, from, nil
}

// verificationStatus turns a verdict into the Service's status fields.
func verificationStatus(v *sol004.Verdict) (*v1alpha1.PackageVerification, *v1alpha1.PackageSigner) {
	mode := string(v.Mode)
	if v.Mode == sol004.Off {
		mode = "Off"
	}
	verification := &v1alpha1.PackageVerification{Mode: mode, Method: string(v.Method), Verified: v.Verified, SignedArtifacts: int32(v.Artifacts), Message: text.Truncate(v.Summary(), 1024)}
	if v.Signer == nil {
		return verification, nil
	}
	return verification, &v1alpha1.PackageSigner{
		Subject: v.Signer.Subject, Issuer: v.Signer.Issuer, Serial: v.Signer.Serial,
		NotAfter: metav1.NewTime(v.Signer.NotAfter), Anchor: v.Signer.Anchor,
	}
}
