package cli

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// csar is a valid CSAR's entries (TOSCA.meta and the template) followed by extra.
func csar(extra ...entry) []entry {
	return append(csarEntries(serviceYAML("", "", "")), extra...)
}

// directories is a zip of a valid CSAR and n empty directories.
func directories(n int) func(*testing.T) []byte {
	return func(t *testing.T) []byte {
		entries := csar()
		for i := range n {
			entries = append(entries, entry{name: fmt.Sprintf("d/%d/", i)})
		}
		return zipBytes(t, entries...)
	}
}

// mismatchedHeaders is a CSAR whose template's local header names another file than its
// central directory entry does.
func mismatchedHeaders(t *testing.T) []byte {
	data := zipBytes(t, csar()...)
	local := []byte("PK\x03\x04")
	name := []byte("Definitions/service.yaml")
	at := bytes.Index(data, name)
	if at < 0 || !bytes.Equal(data[at-30:at-26], local) {
		t.Fatal("no local header of the template")
	}
	copy(data[at:], "Definitions/servicf.yaml")
	return data
}

// nameOverrun is a CSAR whose last local header (the template's) gives its name a length
// that runs past the end of the archive (FuzzOpenArchive found it: it panicked the zip
// layout check).
func nameOverrun(t *testing.T) []byte {
	data := zipBytes(t, csar()...)
	at := bytes.Index(data, []byte("Definitions/service.yaml")) - 30
	if at < 0 || string(data[at:at+4]) != "PK\x03\x04" {
		t.Fatal("no local header of the template")
	}
	binary.LittleEndian.PutUint16(data[at+26:], 0xffff) // its name length
	return data
}

// concatenated is a CSAR followed by another: the central directory of the second names
// its own entries.
func concatenated(t *testing.T) []byte {
	first := zipBytes(t, csar()...)
	second := zipBytes(t, csarEntries(serviceYAML("", "", "    evil:\n      type: calaf.nodes.ConfigMap\n"))...)
	return append(first, second...)
}

// manifestPackage is a package whose manifest lists the template but not the type file
// the template imports.
func manifestPackage() map[string]string {
	types := "tosca_definitions_version: tosca_simple_yaml_1_3\nnode_types:\n  x.Thing:\n    derived_from: calaf.nodes.Root\n"
	template := strings.Replace(serviceYAML("", "", ""), "imports:\n", "imports:\n- types/types.yaml\n", 1)
	manifest := "metadata:\n  vnf_product_name: x\n  vnf_provider_id: x\n  vnf_package_version: '1'\n  vnf_release_date_time: 2026-01-01T00:00:00+00:00\n\n" +
		"Source: service.yaml\nAlgorithm: SHA-256\nHash: " + sha256Hex(template) + "\n"
	return map[string]string{"service.yaml": template, "types/types.yaml": types, "service.mf": manifest}
}

func archiveCases() []untrustedCase {
	meta := "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/service.yaml\nEntry-Definitions: Definitions/evil.yaml\n"
	return []untrustedCase{
		{classArchive, "100,000 directories", archive("dirs.csar", directories(100000)),
			"dirs.csar: package has more than 4096 entries (files and directories)"},
		{classArchive, "a directory entry twice", archive("twice.csar", func(t *testing.T) []byte { return zipBytes(t, csar(entry{name: "Files/"}, entry{name: "Files/"})...) }),
			"Files: the archive holds this entry twice"},
		{classArchive, "a file entry twice", archive("twice.csar", func(t *testing.T) []byte {
			return zipBytes(t, csar(entry{name: "Definitions/service.yaml", body: "tosca_definitions_version: tosca_simple_yaml_1_3\n"})...)
		}),
			"Definitions/service.yaml: the archive holds this entry twice"},
		{classArchive, "mismatched local and central zip headers", archive("mismatch.csar", mismatchedHeaders),
			`mismatch.csar: ambiguous zip archive: entry "Definitions/service.yaml" is named "Definitions/servicf.yaml" in its local header: mismatched headers are not allowed`},
		{classArchive, "a local header's name runs past the end", archive("overrun.csar", nameOverrun),
			`overrun.csar: ambiguous zip archive: entry "Definitions/service.yaml": its local header's name and extra field run past the end of the archive`},
		{classArchive, "two zips concatenated", archive("twice.csar", concatenated),
			`twice.csar: ambiguous zip archive: entry "TOSCA-Metadata/TOSCA.meta": the central directory places it at byte 721, not after the previous entry: hidden or overlapping entries are not allowed`},
		{classArchive, "two Entry-Definitions in TOSCA.meta", archive("meta.csar", func(t *testing.T) []byte {
			return zipBytes(t, entry{name: "TOSCA-Metadata/TOSCA.meta", body: meta}, entry{name: "Definitions/service.yaml", body: serviceYAML("", "", "")}, entry{name: "Definitions/evil.yaml", body: serviceYAML("", "", "")})
		}),
			"TOSCA-Metadata/TOSCA.meta:5: Entry-Definitions is given twice (first on line 4): a key may appear once"},
		{classArchive, "an import the manifest does not list", dirPackage(manifestPackage()),
			"integrity: service.mf: types/types.yaml is not listed in the manifest, and service.yaml imports or refers to it: an unlisted template, script or artifact is refused"},
		{classArchive, "an entry name that forges a line", archive("forge.csar", func(t *testing.T) []byte {
			return zipBytes(t, csar(entry{name: "../\x1b[2K\rvalid: forged.csar\n", body: "x"})...)
		}),
			`../\x1b[2K\rvalid: forged.csar\n: path "../\x1b[2K\rvalid: forged.csar\n" leaves the package`},
		{classArchive, "a file where a directory must be (an OS error)", archive("clash.csar", func(t *testing.T) []byte {
			return zipBytes(t, csar(entry{name: "Files/x", body: "x"}, entry{name: "Files/x/y", body: "y"})...)
		}),
			"Files/x/y: cannot extract: mkdir Files/x: not a directory"},
	}
}

// inputsTemplate maps a map input onto a ConfigMap's data and has a secret input.
const inputsTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- ` + profileImport + `
topology_template:
  inputs:
    secret:
      type: string
      default: hunter2
    labels:
      type: map
      entry_schema: string
      default: {}
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
      properties:
        data: { get_input: labels }
`

// inputsFile writes a YAML file of inputs next to the package and names it with --inputs.
func inputsFile(text string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		args := service(inputsTemplate)(t, dir)
		return append(args, "--inputs", writeFile(t, dir, "inputs.yaml", []byte(text)))
	}
}

func inputCases() []untrustedCase {
	const labels = `service.yaml:9:5: topology_template.inputs["labels"]["leak"]: "map" instead of "string"`
	return []untrustedCase{
		{classInputs, "get_input in an input value (-i)", service(inputsTemplate, "-i", "labels={leak: {get_input: secret}}"), labels},
		{classInputs, "concat in an input value (-i)", service(inputsTemplate, "-i", "labels={leak: {concat: [a, b]}}"), labels},
		{classInputs, "get_property in an inputs file", inputsFile("labels:\n  leak: { get_property: [ SELF, data ] }\n"), labels},
		{classInputs, "a Service name that is no Kubernetes name", service(inputsTemplate, "--service", "Bad_Name"),
			`--service "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{classInputs, "a Service name that forges a line", service(inputsTemplate, "--service", "demo\nvalid: x"),
			`--service "demo\nvalid: x": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{classInputs, "a namespace that is no Kubernetes name", service(inputsTemplate, "-n", "kube system"),
			`--namespace "kube system": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	}
}
