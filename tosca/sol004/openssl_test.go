package sol004

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// openssl runs the openssl binary in dir; the tests need the real one.
func openssl(t *testing.T, dir string, args ...string) string {
	t.Helper()
	binary, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("these tests need the openssl binary (apt-get install openssl): %v", err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A vendor signing with openssl cms -sign, as vendors do today, produces packages Calaf
// verifies: option 1 (binary and text mode) and option 2.
func TestOpenSSLSignedPackagesVerify(t *testing.T) {
	ca := newPKI(t, "OpenSSL")
	keys := t.TempDir()
	ca.writePEM(t, keys)
	signArgs := func(in, out string, binary bool) []string {
		args := []string{"cms", "-sign", "-in", in, "-out", out, "-outform", "PEM", "-md", "sha256",
			"-signer", filepath.Join(keys, "vendor.pem"), "-inkey", filepath.Join(keys, "vendor.key"),
			"-certfile", filepath.Join(keys, "intermediate.pem")}
		if binary {
			args = append(args, "-binary")
		}
		return args
	}
	for _, binary := range []bool{true, false} {
		name := map[bool]string{true: "option 1, -binary", false: "option 1, text mode"}[binary]
		t.Run(name, func(t *testing.T) {
			files := testFiles()
			dir := t.TempDir()
			for name, content := range files {
				write(t, dir, name, content)
			}
			write(t, dir, "service.mf", manifestOf(files)+"\n")
			openssl(t, dir, signArgs("service.mf", "service.cms", binary)...)
			block := read(t, dir, "service.cms")
			if !strings.HasPrefix(block, "-----BEGIN CMS-----") {
				t.Fatalf("openssl wrote %q", block[:min(len(block), 40)])
			}
			write(t, dir, "service.mf", read(t, dir, "service.mf")+block)
			if err := os.Remove(filepath.Join(dir, "service.cms")); err != nil {
				t.Fatal(err)
			}
			verdict, err := verify(t, dir, ca.policy())
			if err != nil || !verdict.Verified || verdict.Method != SignedManifest {
				t.Fatalf("verdict %+v, %v", verdict, err)
			}
		})
	}
	t.Run("option 1, certificates beside the manifest (-nocerts)", func(t *testing.T) {
		files := testFiles()
		dir := t.TempDir()
		for name, content := range files {
			write(t, dir, name, content)
		}
		write(t, dir, "service.mf", manifestOf(files)+"\n")
		openssl(t, dir, "cms", "-sign", "-binary", "-nocerts", "-in", "service.mf", "-out", "service.cms", "-outform", "PEM",
			"-signer", filepath.Join(keys, "vendor.pem"), "-inkey", filepath.Join(keys, "vendor.key"))
		write(t, dir, "service.mf", read(t, dir, "service.mf")+read(t, dir, "service.cms"))
		if err := os.Remove(filepath.Join(dir, "service.cms")); err != nil {
			t.Fatal(err)
		}
		if _, err := verify(t, dir, ca.policy()); err == nil || !strings.Contains(err.Error(), "neither in the CMS signature nor in the package's certificate files") {
			t.Fatalf("without certificates: %v", err)
		}
		write(t, dir, "service.cert", read(t, keys, "vendor.pem")+read(t, keys, "intermediate.pem"))
		verdict, err := verify(t, dir, ca.policy())
		if err != nil || !verdict.Verified {
			t.Fatalf("verdict %+v, %v", verdict, err)
		}
	})
	t.Run("option 2", func(t *testing.T) {
		dir := t.TempDir()
		csar := zipDir(t, unsignedPackage(t))
		write(t, dir, "demo.csar", string(csar))
		openssl(t, dir, signArgs("demo.csar", "demo.cms", true)...)
		parts := map[string][]byte{"demo.csar": csar, "demo.cms": []byte(read(t, dir, "demo.cms")), "demo.cert": []byte(read(t, keys, "vendor.pem"))}
		zipped := writeFile(t, "demo.zip", zipFiles(t, []string{"demo.csar", "demo.cms", "demo.cert"}, parts))
		verdict, err := verify(t, zipped, ca.policy())
		if err != nil || !verdict.Verified || verdict.Method != SignedCSAR {
			t.Fatalf("verdict %+v, %v", verdict, err)
		}
	})
}

// What Calaf signs, openssl cms -verify accepts against the root CA: the manifest's CMS
// block over the bytes before it (option 1), and the .cms of an option 2 zip.
func TestCalafSignaturesVerifyWithOpenSSL(t *testing.T) {
	ca := newPKI(t, "Interop")
	keys := t.TempDir()
	ca.writePEM(t, keys)
	root := filepath.Join(keys, "root.pem")

	dir := signedPackage(t, ca.credentials(), nil)
	manifest := read(t, dir, "service.mf")
	begin := strings.Index(manifest, "-----BEGIN CMS-----")
	work := t.TempDir()
	write(t, work, "signed", manifest[:begin])
	write(t, work, "signature.pem", manifest[begin:])
	out := openssl(t, work, "cms", "-verify", "-binary", "-inform", "PEM", "-in", "signature.pem", "-content", "signed", "-CAfile", root, "-out", "verified")
	if read(t, work, "verified") != manifest[:begin] {
		t.Fatalf("openssl verified other content (%s)", out)
	}

	wrapped, err := WrapCSAR("demo", zipDir(t, dir), ca.credentials())
	if err != nil {
		t.Fatal(err)
	}
	parts := unzip(t, wrapped)
	for name, data := range parts {
		write(t, work, name, string(data))
	}
	openssl(t, work, "cms", "-verify", "-binary", "-inform", "PEM", "-in", "demo.cms", "-content", "demo.csar", "-CAfile", root, "-out", "/dev/null")

	// openssl refuses a tampered manifest too: the check above is not vacuous.
	write(t, work, "tampered", strings.Replace(manifest[:begin], "demo", "evil", 1))
	cmd := exec.Command("openssl", "cms", "-verify", "-binary", "-inform", "PEM", "-in", "signature.pem", "-content", "tampered", "-CAfile", root, "-out", "/dev/null")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("openssl verified a tampered manifest: %s", out)
	}
}
