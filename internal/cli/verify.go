package cli

import (
	"fmt"
	"io"
	"os"

	"calaf.io/calaf/tosca/sol004"
)

// anchorsPolicy reads a PEM bundle of anchors into a policy of the given mode.
func anchorsPolicy(file, mode string) (sol004.Policy, error) {
	m, err := sol004.ParseMode(mode)
	if err != nil || m == sol004.Off {
		return sol004.Policy{}, usageError{fmt.Errorf("--mode is Enforce or Warn, not %q", mode)}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return sol004.Policy{}, err
	}
	certs, err := sol004.ParseCertificates(data, file)
	if err != nil {
		return sol004.Policy{}, err
	}
	return sol004.Policy{Mode: m, Anchors: certs, AnchorsFrom: file}, nil
}

// printVerdict writes what was verified, and who signed.
func printVerdict(w io.Writer, v *sol004.Verdict) {
	fmt.Fprintf(w, "signature: %s\n", v.Summary())
	if s := v.Signer; s != nil {
		fmt.Fprintf(w, "signer: %q issued by %q, serial %s, expires %s\n", s.Subject, s.Issuer, s.Serial, s.NotAfter.Format("2006-01-02T15:04:05Z07:00"))
	}
	if v.Verified {
		return
	}
	for _, d := range v.Problems {
		fmt.Fprintf(w, "warning: %s\n", d)
	}
}
