package tosca_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

// openTestPackage opens one of the project's SOL001 test packages (test/etsi), with extra
// files written over a copy of it.
func openTestPackage(t *testing.T, name string, extra map[string]string) *tosca.Package {
	t.Helper()
	root := filepath.Join("..", "test", "etsi", name)
	if len(extra) > 0 {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
			t.Fatal(err)
		}
		for path, content := range extra {
			full := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		root = dir
	}
	pkg, err := tosca.Open(root, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	return pkg
}

// The VNFD of a package is read without a compile: the VNF node's identity (with its
// type's defaults), the flavours, the files of the VNFD, and the artifacts TOSCA.meta lists.
func TestReadVNFD(t *testing.T) {
	vnfd, err := openTestPackage(t, "cnf-manifests", nil).ReadVNFD()
	if err != nil {
		t.Fatal(err)
	}
	want := tosca.VNFIdentity{DescriptorID: "6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30", Provider: "Calaf Test Vendor",
		ProductName: "Hello CNF", SoftwareVersion: "1.0", DescriptorVersion: "1.0"}
	if vnfd.Identity != want {
		t.Errorf("identity %+v, want %+v", vnfd.Identity, want)
	}
	if got := strings.Join(vnfd.Flavours, ","); got != "complex,simple" {
		t.Errorf("flavours %s", got)
	}
	if got := strings.Join(vnfd.Files, ","); got != "Definitions/etsi_nfv_sol001_common_types.yaml,Definitions/etsi_nfv_sol001_vnfd_types.yaml,Definitions/hello_df_complex.yaml,Definitions/hello_df_simple.yaml,Definitions/hello_top.vnfd.yaml,Definitions/hello_types.yaml" {
		t.Errorf("files %s", got)
	}
	var paths []string
	for _, a := range vnfd.Artifacts {
		paths = append(paths, a.Path)
		if a.Checksum == nil || a.Checksum.Algorithm != "SHA-256" || len(a.Checksum.Hash) != 64 {
			t.Errorf("artifact %s: checksum %+v", a.Path, a.Checksum)
		}
	}
	if got := strings.Join(paths, ","); got != "Files/kubernetes/access-check.yaml,Files/kubernetes/front.yaml,Files/kubernetes/store.yaml,Files/kubernetes/worker.yaml" {
		t.Errorf("artifacts %s", got)
	}
	if len(vnfd.SoftwareImages) != 0 {
		t.Errorf("images %+v", vnfd.SoftwareImages)
	}
}

// Software images come from the SwImage artifacts of the flavours' node templates (and
// sw_image_data); with a manifest, the artifacts are its entries, with the digests and
// the compatible specification versions it declares.
func TestReadVNFDImagesAndManifest(t *testing.T) {
	vnfd, err := openTestPackage(t, "cnf-oscontainer", nil).ReadVNFD()
	if err != nil {
		t.Fatal(err)
	}
	if len(vnfd.SoftwareImages) == 0 {
		t.Fatal("no software images")
	}
	first := vnfd.SoftwareImages[0]
	if first.Name != "busybox" || first.Version != "1.36" || first.ImagePath != "busybox" || first.InPackage {
		t.Errorf("first image %+v", first)
	}
	ids := map[string]bool{}
	for _, image := range vnfd.SoftwareImages {
		if ids[image.ID] {
			t.Errorf("image %s listed twice", image.ID)
		}
		ids[image.ID] = true
	}

	plain := openTestPackage(t, "cnf-manifests", nil)
	manifest := plain.WriteManifest("hello.mf", [][2]string{{"vnf_provider_id", "Calaf Test Vendor"}, {"compatible_specification_versions", "2.6.1, 3.3.1"}})
	pkg := openTestPackage(t, "cnf-manifests", map[string]string{
		"hello.mf":              string(manifest),
		"Files/images/disk.img": "not really a disk",
		"Definitions/hello_df_simple.yaml": strings.Replace(readTestFile(t, "cnf-manifests/Definitions/hello_df_simple.yaml"),
			"  node_templates:\n", "  node_templates:\n    disk:\n      type: tosca.nodes.nfv.Vdu.VirtualBlockStorage\n      properties:\n        virtual_block_storage_data: { size_of_storage: 1 GiB }\n        sw_image_data: { name: disk, version: '2', size: 1 GiB, checksum: { algorithm: sha-256, hash: abc }, container_format: bare, disk_format: raw }\n", 1),
	})
	vnfd, err = pkg.ReadVNFD()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(vnfd.CompatibleSpecificationVersions, "|"); got != "2.6.1|3.3.1" {
		t.Errorf("compatible versions %q", got)
	}
	var paths []string
	for _, a := range vnfd.Artifacts {
		paths = append(paths, a.Path)
	}
	if got := strings.Join(paths, ","); got != "Files/kubernetes/access-check.yaml,Files/kubernetes/front.yaml,Files/kubernetes/store.yaml,Files/kubernetes/worker.yaml" {
		t.Errorf("artifacts from the manifest %s (a file added after it is not listed, the VNFD files never)", got)
	}
	if len(vnfd.SoftwareImages) != 1 {
		t.Fatalf("images %+v", vnfd.SoftwareImages)
	}
	disk := vnfd.SoftwareImages[0]
	want := tosca.SoftwareImage{ID: "disk", Name: "disk", Version: "2", ContainerFormat: "bare", DiskFormat: "raw", Size: 1 << 30,
		Checksum: &tosca.Checksum{Algorithm: "sha-256", Hash: "abc"}}
	if disk.ID != want.ID || disk.Name != want.Name || disk.Version != want.Version || disk.Size != want.Size ||
		disk.ContainerFormat != want.ContainerFormat || disk.DiskFormat != want.DiskFormat || *disk.Checksum != *want.Checksum {
		t.Errorf("sw_image_data image %+v, want %+v", disk, want)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "test", "etsi", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A package that is no VNF package, or whose VNF node does not say its VNFD id, is
// refused with a diagnostic naming the file.
func TestReadVNFDRefuses(t *testing.T) {
	top := readTestFile(t, "cnf-manifests/Definitions/hello_top.vnfd.yaml")
	types := readTestFile(t, "cnf-manifests/Definitions/hello_types.yaml")
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"not a VNF package", map[string]string{"Definitions/hello_top.vnfd.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates: {}\n"},
			"Definitions/hello_top.vnfd.yaml: not an ETSI SOL001 VNF package"},
		{"no descriptor_id", map[string]string{
			"Definitions/hello_top.vnfd.yaml": strings.Replace(top, "        descriptor_id: 6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30\n", "", 1),
			"Definitions/hello_types.yaml":    strings.Replace(types, "        default: 6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30\n", "", 1)},
			"the VNF node has no descriptor_id"},
		{"descriptor_id from an input without a value", map[string]string{
			"Definitions/hello_top.vnfd.yaml": strings.Replace(strings.Replace(top, "descriptor_id: 6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30", "descriptor_id: { get_input: vnfd_id }", 1),
				"  inputs:\n", "  inputs:\n    vnfd_id:\n      type: string\n", 1)},
			`unassigned required input "vnfd_id"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openTestPackage(t, "cnf-manifests", c.files).ReadVNFD()
			if err == nil || !tosca.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want an invalid package saying %q", err, c.want)
			}
		})
	}
}

// The non_mano_artifact_sets block of a manifest says the set of each file it lists.
func TestManifestNonManoSets(t *testing.T) {
	manifest, err := tosca.ParseManifest("x.mf", []byte("metadata:\n  vnf_provider_id: x\n\nSource: Artifacts/ves.yaml\nAlgorithm: SHA-256\nHash: ab\n\n"+
		"non_mano_artifact_sets:\n  onap_ves_events:\n    Source: Artifacts/ves.yaml\n  prv.calaf.docs:\n    Source: README.md\n    Source: Docs/guide.md\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Artifacts/ves.yaml": "onap_ves_events", "README.md": "prv.calaf.docs", "Docs/guide.md": "prv.calaf.docs"}
	if len(manifest.NonManoSets) != len(want) {
		t.Fatalf("sets %v, want %v", manifest.NonManoSets, want)
	}
	for file, set := range want {
		if manifest.NonManoSets[file] != set {
			t.Errorf("%s: set %q, want %q", file, manifest.NonManoSets[file], set)
		}
	}
	if len(manifest.Entries) != 1 {
		t.Errorf("entries %+v: the block lists no entries", manifest.Entries)
	}
}
