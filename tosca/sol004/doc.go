// Package sol004 verifies and makes signed TOSCA packages as ETSI NFV SOL004 defines them:
// option 1, a manifest (.mf) whose CMS signature covers the bytes before its
// "-----BEGIN CMS-----" line and which lists the digest of every file; option 2, a zip
// holding the CSAR, a detached CMS signature of it (.cms) and the signer's certificate
// (.cert); and artifacts signed one by one (the Signature: and Certificate: keys of a
// manifest entry).
//
// Verification has two steps. Examine looks at what a package carries and checks the
// cryptography that needs nothing but the package: each CMS signature against the bytes it
// signs, and, for a signed manifest, that it lists every file. Its Evidence depends only on
// the package, so it is computed once when a package is fetched. Policy.Check then decides
// trust: each signer's chain up to the trust anchors, validity dates and key usage, and
// what the mode (Enforce or Warn) does with a failure.
//
// CMS is parsed and made with github.com/smallstep/pkcs7; chains are verified with
// crypto/x509. The package has no Kubernetes dependency: the operator, the CLI and tests
// share it.
package sol004
