package sol004

import "calaf.io/calaf/tosca"

// VerifyPackage opens a package — a directory, CSAR, option 2 zip, tar or YAML file —,
// verifies the digests of its manifest and applies the policy to its signatures. The
// package is returned open (the caller closes it) unless there is an error.
func VerifyPackage(source string, limits tosca.Limits, policy Policy) (*tosca.Package, *tosca.IntegrityReport, *Verdict, error) {
	pkg, env, err := Open(source, limits)
	if err != nil {
		return nil, nil, nil, err
	}
	report, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{})
	if err != nil {
		pkg.Close()
		return nil, report, nil, err
	}
	verdict, err := policy.Check(Examine(pkg, env))
	if err != nil {
		pkg.Close()
		return nil, report, verdict, err
	}
	return pkg, report, verdict, nil
}
