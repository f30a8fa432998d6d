package tosca

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/profiles"
)

// VNFIdentity is who a VNF is, as its VNF node says: descriptor_id, provider,
// product_name, software_version and descriptor_version (SOL003's vnfdId, vnfProvider,
// vnfProductName, vnfSoftwareVersion and vnfdVersion).
type VNFIdentity struct {
	DescriptorID      string `json:"descriptorId,omitempty"`
	Provider          string `json:"provider,omitempty"`
	ProductName       string `json:"productName,omitempty"`
	SoftwareVersion   string `json:"softwareVersion,omitempty"`
	DescriptorVersion string `json:"descriptorVersion,omitempty"`
}

// Identity returns the VNF's identity from its VNF node's properties.
func (v *VNFD) Identity() VNFIdentity {
	if v == nil {
		return VNFIdentity{}
	}
	return identityOf(v.Properties)
}

// identityOf reads the identity properties of a VNF node: the one place a VNF's identity
// is read, for onboarding (ReadVNFD) and for the VNF a Service deploys (VNFD.Identity).
func identityOf(properties map[string]any) VNFIdentity {
	return VNFIdentity{
		DescriptorID:      scalarText(properties["descriptor_id"]),
		Provider:          scalarText(properties["provider"]),
		ProductName:       scalarText(properties["product_name"]),
		SoftwareVersion:   scalarText(properties["software_version"]),
		DescriptorVersion: scalarText(properties["descriptor_version"]),
	}
}

// scalarText words a scalar property value (a version may be written as a number); ""
// for anything else.
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// Checksum is the digest of an image or artifact, with its algorithm as the package names
// it (SHA-256, sha-512, ...).
type Checksum struct {
	Algorithm string `json:"algorithm"`
	Hash      string `json:"hash"`
}

// SoftwareImage is a software image the VNFD declares: a tosca.artifacts.nfv.SwImage
// artifact, or a VDU's sw_image_data.
type SoftwareImage struct {
	// ID is the node template's name (with the artifact's when a node has several).
	ID              string    `json:"id"`
	Name            string    `json:"name,omitempty"`
	Version         string    `json:"version,omitempty"`
	Provider        string    `json:"provider,omitempty"`
	ContainerFormat string    `json:"containerFormat,omitempty"`
	DiskFormat      string    `json:"diskFormat,omitempty"`
	Size            int64     `json:"size,omitempty"`
	Checksum        *Checksum `json:"checksum,omitempty"`
	// ImagePath is the artifact's file: a package path, or an image reference when the
	// artifact names a repository.
	ImagePath string `json:"imagePath,omitempty"`
	// InPackage tells whether ImagePath is a file of the package.
	InPackage bool `json:"inPackage,omitempty"`
}

// PackageArtifact is a file of the package that is neither a VNFD file, its manifest, nor
// a software image; or an artifact outside the package its manifest lists (Path a URI).
type PackageArtifact struct {
	Path     string    `json:"path"`
	Checksum *Checksum `json:"checksum,omitempty"`
	// NonManoArtifactSetID is the non-MANO artifact set the manifest puts it in.
	NonManoArtifactSetID string `json:"nonManoArtifactSetId,omitempty"`
}

// PackageVNFD is what onboarding reads of an ETSI SOL001 VNF package, as SOL005's
// VnfPkgInfo reports it.
type PackageVNFD struct {
	Identity VNFIdentity `json:"identity"`
	// TopFile is the top-level VNFD; Files every package file of the VNFD (the top file
	// and what it imports from the package), sorted.
	TopFile string   `json:"topFile"`
	Files   []string `json:"files"`
	// Flavours are the deployment flavours, sorted.
	Flavours       []string          `json:"flavours"`
	SoftwareImages []SoftwareImage   `json:"softwareImages,omitempty"`
	Artifacts      []PackageArtifact `json:"artifacts,omitempty"`
	// CompatibleSpecificationVersions are the manifest's
	// compatible_specification_versions.
	CompatibleSpecificationVersions []string `json:"compatibleSpecificationVersions,omitempty"`
}

// Bounds of what ReadVNFD lists.
const (
	MaxSoftwareImages = 256
	MaxArtifacts      = 1024
)

// ReadVNFD reads the VNFD of an ETSI SOL001 VNF package without compiling it: its VNF
// node's identity (evaluated as for the first flavour, with the top-level inputs'
// defaults), its deployment flavours, the software images of every flavour, and the
// package's other artifacts (the manifest's entries, else the files). A package that is
// no SOL001 VNF package, or whose VNF node has no descriptor_id, is invalid.
func (p *Package) ReadVNFD() (*PackageVNFD, error) {
	etsi, err := p.checkImports(false)
	if err != nil {
		return nil, err
	}
	doc, err := p.readYAML(p.Entry)
	if err != nil {
		return nil, err
	}
	top := mappingOf(doc)
	flavours, err := p.flavourFiles(top, etsi.mapped)
	if err != nil {
		return nil, err
	}
	if len(flavours) == 0 {
		return nil, Invalid(p.Entry, "not an ETSI SOL001 VNF package: neither this file nor a file it imports has a topology template with substitution_mappings and a flavour_id")
	}
	properties, err := p.vnfProperties(top, flavours[0], nil, p.nodeTypeIndex(p.Entry, etsi.mapped))
	if err != nil {
		return nil, err
	}
	vnfd := &PackageVNFD{Identity: identityOf(properties), TopFile: p.Entry, Files: p.importClosure(etsi.mapped)}
	if vnfd.Identity.DescriptorID == "" {
		return nil, Invalid(p.Entry, "the VNF node has no descriptor_id (the VNFD id): set it on the VNF node or as its type's default")
	}
	for _, f := range flavours {
		vnfd.Flavours = append(vnfd.Flavours, f.id)
		vnfd.SoftwareImages = appendImages(vnfd.SoftwareImages, f.top, p)
	}
	if len(vnfd.SoftwareImages) > MaxSoftwareImages {
		return nil, Invalid(p.Entry, "the VNFD declares %d software images, more than %d", len(vnfd.SoftwareImages), MaxSoftwareImages)
	}
	if err := p.readArtifacts(vnfd); err != nil {
		return nil, err
	}
	return vnfd, nil
}

// VNFDFiles lists the files of the package's VNFD: the entry and every package file it
// reaches through imports (ETSI type files included), sorted; the imports are checked as
// a compile checks them first.
func (p *Package) VNFDFiles() ([]string, error) {
	etsi, err := p.checkImports(false)
	if err != nil {
		return nil, err
	}
	return p.importClosure(etsi.mapped), nil
}

// checkImports makes the checks a compile makes before Puccini reads anything (see
// planCompile): ETSI type files imported by URL are mapped to the package's copies, and
// the preflight bounds and confines every file the entry reaches.
func (p *Package) checkImports(strict bool) (*etsiImportResult, error) {
	imports, err := profiles.Imports()
	if err != nil {
		return nil, err
	}
	allowed := make(map[string]bool, len(imports))
	for public, internal := range imports {
		allowed[public], allowed[internal] = true, true
	}
	etsi, err := p.etsiImports(strict)
	if err != nil {
		return nil, err
	}
	if err := p.preflight(allowed, etsi.mapped, etsi.etsi); err != nil {
		return nil, err
	}
	return etsi, nil
}

// importClosure lists the package files the entry reaches through imports, sorted.
func (p *Package) importClosure(mapped map[string]string) []string {
	seen := map[string]bool{}
	queue := []string{p.Entry}
	for len(queue) > 0 && len(seen) <= p.limits.MaxFiles {
		file := queue[0]
		queue = queue[1:]
		if seen[file] || !p.has(file) {
			continue
		}
		seen[file] = true
		top := p.readSource(file)
		for _, target := range importTargets(mappingValue(top, "imports")) {
			if next := p.importSource(file, target, mapped); next != "" && !strings.HasPrefix(next, embeddedPrefix) {
				queue = append(queue, next)
			}
		}
	}
	files := make([]string, 0, len(seen))
	for file := range seen {
		files = append(files, file)
	}
	slices.Sort(files)
	return files
}

// appendImages adds the software images of a flavour file's node templates: their
// tosca.artifacts.nfv.SwImage artifacts and their sw_image_data properties; an image
// already listed (by ID) is not listed again.
func appendImages(images []SoftwareImage, top *yaml.Node, p *Package) []SoftwareImage {
	templates := mappingValue(mappingValue(top, "topology_template"), "node_templates")
	for i := 0; templates != nil && templates.Kind == yaml.MappingNode && i+1 < len(templates.Content); i += 2 {
		node, body := templates.Content[i].Value, templates.Content[i+1]
		var found []SoftwareImage
		artifacts := mappingValue(body, "artifacts")
		for j := 0; artifacts != nil && artifacts.Kind == yaml.MappingNode && j+1 < len(artifacts.Content); j += 2 {
			artifact := artifacts.Content[j+1]
			if t := mappingValue(artifact, "type"); t == nil || t.Value != "tosca.artifacts.nfv.SwImage" {
				continue
			}
			image := imageOf(node+"."+artifacts.Content[j].Value, decodeNode(mappingValue(artifact, "properties")))
			if file := mappingValue(artifact, "file"); file != nil && file.Kind == yaml.ScalarNode {
				image.ImagePath = file.Value
				image.InPackage = mappingValue(artifact, "repository") == nil && p.has(file.Value)
			}
			found = append(found, image)
		}
		if data := mappingValue(mappingValue(body, "properties"), "sw_image_data"); data != nil {
			found = append(found, imageOf(node+".sw_image_data", decodeNode(data)))
		}
		for k := range found {
			if len(found) == 1 {
				found[k].ID = node
			}
			if !slices.ContainsFunc(images, func(im SoftwareImage) bool { return im.ID == found[k].ID }) {
				images = append(images, found[k])
			}
		}
	}
	return images
}

// imageOf reads SOL001's SwImageData (an artifact's properties, or sw_image_data).
func imageOf(id string, value any) SoftwareImage {
	props, _ := value.(map[string]any)
	image := SoftwareImage{ID: id, Name: scalarText(props["name"]), Version: scalarText(props["version"]),
		Provider: scalarText(props["provider"]), ContainerFormat: scalarText(props["container_format"]),
		DiskFormat: scalarText(props["disk_format"]), Size: scalarBytes(props["size"])}
	switch sum := props["checksum"].(type) {
	case map[string]any:
		image.Checksum = &Checksum{Algorithm: scalarText(sum["algorithm"]), Hash: scalarText(sum["hash"])}
	case string:
		image.Checksum = &Checksum{Hash: sum}
	}
	return image
}

// scalarSize is a TOSCA scalar-unit.size: a number and a unit.
var scalarSize = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$`)

// sizeUnits are the units of TOSCA's scalar-unit.size.
var sizeUnits = map[string]float64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20,
	"gb": 1e9, "gib": 1 << 30, "tb": 1e12, "tib": 1 << 40}

// scalarBytes reads a scalar-unit.size ("1 GiB") or a number of bytes; 0 when it is
// neither.
func scalarBytes(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case string:
		m := scalarSize.FindStringSubmatch(v)
		if m == nil {
			return 0
		}
		unit, ok := sizeUnits[strings.ToLower(m[2])]
		number, err := strconv.ParseFloat(m[1], 64)
		if !ok || err != nil || number*unit > 1<<62 {
			return 0
		}
		return int64(number * unit)
	}
	return 0
}

// readArtifacts lists the package's artifacts: the manifest's entries (with the digests
// it declares), else TOSCA.meta's per-file blocks, else every file; never the VNFD's
// files, TOSCA.meta, the manifest and its signature files, nor a software image.
func (p *Package) readArtifacts(vnfd *PackageVNFD) error {
	skip := map[string]bool{MetaPath: true}
	for _, f := range vnfd.Files {
		skip[f] = true
	}
	for _, image := range vnfd.SoftwareImages {
		if image.InPackage {
			skip[image.ImagePath] = true
		}
	}
	listed, err := p.listedArtifacts(vnfd, skip)
	if err != nil {
		return err
	}
	if listed == nil {
		for _, f := range p.Files {
			if !skip[f.Path] && !isSignatureFile(f.Path) {
				listed = append(listed, PackageArtifact{Path: f.Path, Checksum: &Checksum{Algorithm: "SHA-256", Hash: f.SHA256}})
			}
		}
	}
	if len(listed) > MaxArtifacts {
		return Invalid(p.Entry, "the package has %d artifacts, more than %d", len(listed), MaxArtifacts)
	}
	vnfd.Artifacts = listed
	return nil
}

// listedArtifacts returns the artifacts the manifest lists (and reads its
// compatible_specification_versions), else those TOSCA.meta lists; nil when neither
// lists any.
func (p *Package) listedArtifacts(vnfd *PackageVNFD, skip map[string]bool) ([]PackageArtifact, error) {
	manifestPath, err := p.ManifestPath()
	if err != nil {
		return nil, err
	}
	var listed []PackageArtifact
	if manifestPath != "" {
		skip[manifestPath] = true
		data, err := p.ReadFile(manifestPath)
		if err != nil {
			return nil, Invalid(manifestPath, "%v", err)
		}
		manifest, err := ParseManifest(manifestPath, data)
		if err != nil {
			return nil, err
		}
		vnfd.CompatibleSpecificationVersions = splitList(manifest.Metadata["compatible_specification_versions"])
		for _, entry := range manifest.Entries {
			if !skip[entry.Source] && !isSignatureFile(entry.Source) {
				listed = append(listed, PackageArtifact{Path: entry.Source, Checksum: checksumOf(entry.Algorithm, entry.Hash),
					NonManoArtifactSetID: manifest.NonManoSets[entry.Source]})
			}
		}
		return listed, nil
	}
	if !p.has(MetaPath) {
		return nil, nil
	}
	data, err := p.ReadFile(MetaPath)
	if err != nil {
		return nil, Invalid(MetaPath, "%v", err)
	}
	entries, err := ParseMetaEntries(data)
	if err != nil {
		return nil, err
	}
	for _, entry := range entries {
		if !skip[entry.Name] {
			listed = append(listed, PackageArtifact{Path: entry.Name, Checksum: checksumOf(entry.Algorithm, entry.Hash)})
		}
	}
	return listed, nil
}

// checksumOf is a declared digest; nil when none is declared.
func checksumOf(algorithm, hash string) *Checksum {
	if hash == "" {
		return nil
	}
	return &Checksum{Algorithm: algorithm, Hash: hash}
}

// splitList splits a comma-separated list, trimming its items.
func splitList(s string) []string {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// String says what was read, for logs.
func (v *PackageVNFD) String() string {
	return fmt.Sprintf("VNFD %s (%s %s %s) in %s: flavours %s, %d software images, %d artifacts",
		v.Identity.DescriptorID, v.Identity.Provider, v.Identity.ProductName, v.Identity.SoftwareVersion,
		path.Base(v.TopFile), strings.Join(v.Flavours, ", "), len(v.SoftwareImages), len(v.Artifacts))
}
