package tosca

import (
	"strings"
	"testing"
)

// RewriteDigests computes the stale digests of TOSCA.meta and the manifest again, with
// each block's algorithm, keeps everything else of both files byte for byte, leaves
// external artifacts alone, and the package then verifies.
func TestRewriteDigests(t *testing.T) {
	script := "echo configured\n"
	meta := "TOSCA-Meta-File-Version: 1.0\nCreated-by: a vendor tool\nCSAR-Version: 1.1\nEntry-Definitions: service.yaml\nETSI-Entry-Manifest: service.mf\n\n" +
		"Name: scripts/configure.sh\nContent-Type: text/x-sh\nAlgorithm: SHA-512\nHash: " + sum512("old") + "\n\n" +
		"Name: service.yaml\nContent-Type: application/yaml\nAlgorithm: SHA-256\nHash: " + sum256(manifestTemplate) + "\n"
	manifest := "metadata:\n  vnf_product_name: demo\n\n" +
		"Source: service.yaml\nAlgorithm: SHA-256\nHash:  " + sum256("stale") + "\n\n" +
		"Source: https://vendor.example/image.qcow2\nAlgorithm: SHA-256\nHash: " + sum256("elsewhere") + "\n\n" +
		"Source: scripts/configure.sh\n"
	pkg := openFiles(t, map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, MetaPath: meta, "service.mf": manifest})
	defer pkg.Close()
	if _, err := pkg.VerifyIntegrity(IntegrityOptions{}); err == nil || !strings.Contains(err.Error(), "`calaf package digest` rewrites the package's digests") {
		t.Fatalf("the stale package: %v, want a refusal that names calaf package digest", err)
	}
	files, changes, err := pkg.RewriteDigests()
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := strings.Replace(meta, sum512("old"), sum512(script), 1)
	wantManifest := strings.Replace(manifest, "Hash:  "+sum256("stale"), "Hash: "+sum256(manifestTemplate), 1)
	if got := string(files[MetaPath]); got != wantMeta {
		t.Errorf("TOSCA.meta:\n%s\nwant:\n%s", got, wantMeta)
	}
	if got := string(files["service.mf"]); got != wantManifest {
		t.Errorf("service.mf:\n%s\nwant:\n%s", got, wantManifest)
	}
	want := []DigestChange{{File: MetaPath, Line: 10, Name: "scripts/configure.sh", Algorithm: "SHA-512"}, {File: "service.mf", Line: 6, Name: "service.yaml", Algorithm: "SHA-256"}}
	if len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] {
		t.Errorf("changes %+v, want %+v", changes, want)
	}
	fixed := openFiles(t, map[string]string{"service.yaml": manifestTemplate, "scripts/configure.sh": script, MetaPath: string(files[MetaPath]), "service.mf": string(files["service.mf"])})
	defer fixed.Close()
	if _, err := fixed.VerifyIntegrity(IntegrityOptions{}); err != nil {
		t.Errorf("the rewritten package does not verify: %v", err)
	}
	if again, changes, err := fixed.RewriteDigests(); err != nil || len(changes) != 0 || len(again) != 0 {
		t.Errorf("a second rewrite changes %v (%v)", changes, err)
	}
}

// What RewriteDigests refuses, each with the file and line of the block.
func TestRewriteDigestsRefusals(t *testing.T) {
	meta := func(block string) string {
		return "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nEntry-Definitions: service.yaml\n\n" + block
	}
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"a block naming a missing file", map[string]string{MetaPath: meta("Name: Files/gone.yaml\nAlgorithm: SHA-256\nHash: 00\n")},
			"TOSCA-Metadata/TOSCA.meta:5: Files/gone.yaml: listed, but missing from the package"},
		{"an unknown algorithm", map[string]string{MetaPath: meta("Name: service.yaml\nAlgorithm: MD5\nHash: 00\n")},
			`TOSCA-Metadata/TOSCA.meta:5: service.yaml: unsupported digest algorithm "MD5"`},
		{"a hash without algorithm", map[string]string{MetaPath: meta("Name: service.yaml\nHash: 00\n")},
			"TOSCA-Metadata/TOSCA.meta:5: service.yaml: Hash without Algorithm"},
		{"a signed manifest", map[string]string{"service.mf": "Source: service.yaml\nAlgorithm: SHA-256\nHash: 00\n\n-----BEGIN CMS-----\nMIIB\n-----END CMS-----\n"},
			"service.mf: the manifest is signed: rewriting its digests would break its signature"},
		{"a path leaving the package", map[string]string{MetaPath: meta("Name: ../etc/passwd\nAlgorithm: SHA-256\nHash: 00\n")},
			`TOSCA-Metadata/TOSCA.meta:5: "../etc/passwd": path "../etc/passwd" leaves the package`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"service.yaml": manifestTemplate}
			for name, content := range c.files {
				files[name] = content
			}
			pkg := openFiles(t, files)
			defer pkg.Close()
			_, _, err := pkg.RewriteDigests()
			if err == nil || !strings.Contains(err.Error(), c.want) || !IsIntegrity(err) {
				t.Errorf("got %v, want an integrity error saying %q", err, c.want)
			}
		})
	}
}
