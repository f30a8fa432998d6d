package tosca

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strings"
)

// MetaPath is where a CSAR keeps its TOSCA metadata.
const MetaPath = "TOSCA-Metadata/TOSCA.meta"

// findEntry chooses the entry service template: Entry-Definitions of TOSCA.meta when the
// package has one, otherwise the only service template YAML at the package root.
func (p *Package) findEntry() error {
	if p.has(MetaPath) {
		data, err := p.ReadFile(MetaPath)
		if err != nil {
			return Invalid(MetaPath, "%v", err)
		}
		meta, err := parseMeta(data)
		if err != nil {
			return err
		}
		p.Meta = meta
		entry := meta["Entry-Definitions"]
		if entry == "" {
			return Invalid(MetaPath, "no Entry-Definitions key")
		}
		clean, err := cleanRelative(entry)
		if err != nil {
			return Invalid(MetaPath, "Entry-Definitions: %v", err)
		}
		if !p.has(clean) {
			return Invalid(MetaPath, "Entry-Definitions %q is not a file in the package", entry)
		}
		p.Entry = clean
		return nil
	}
	var yamls, templates []string
	for _, f := range p.Files {
		if strings.Contains(f.Path, "/") {
			continue
		}
		if ext := path.Ext(f.Path); ext != ".yaml" && ext != ".yml" {
			continue
		}
		yamls = append(yamls, f.Path)
		if data, err := p.ReadFile(f.Path); err == nil && declaresTOSCA(data) {
			templates = append(templates, f.Path)
		}
	}
	switch {
	case len(templates) == 1:
		p.Entry = templates[0]
	case len(templates) > 1:
		return Invalid("", "no %s and several service templates at the package root (%s): add a TOSCA.meta with Entry-Definitions", MetaPath, strings.Join(templates, ", "))
	case len(yamls) == 1:
		p.Entry = yamls[0]
	default:
		return Invalid("", "no %s and no service template YAML at the package root", MetaPath)
	}
	return nil
}

func (p *Package) has(rel string) bool {
	for _, f := range p.Files {
		if f.Path == rel {
			return true
		}
	}
	return false
}

// declaresTOSCA tells whether a YAML document names a TOSCA version at its top level.
func declaresTOSCA(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("tosca_definitions_version:")) {
			return true
		}
	}
	return false
}

// metaKeys remembers where each key of a TOSCA.meta was given: the keys of a file's block
// (Name, Content-Type, Algorithm, Hash) once per block, which Name starts, every other key
// once in the whole file.
type metaKeys struct {
	global map[string]int
	block  map[string]int
}

// add records a key given on line row, refusing one given before: a duplicated key
// (two Entry-Definitions) would make the package mean what its last one says.
func (k *metaKeys) add(key string, row int) error {
	lower := strings.ToLower(key)
	seen := &k.global
	switch lower {
	case "name":
		k.block = nil
		seen = &k.block
	case "content-type", "algorithm", "hash":
		seen = &k.block
	}
	if *seen == nil {
		*seen = map[string]int{}
	}
	if first, dup := (*seen)[lower]; dup {
		return &InvalidError{Diagnostics: []Diagnostic{{File: MetaPath, Line: row, Message: fmt.Sprintf("%s is given twice (first on line %d): a key may appear once", key, first)}}}
	}
	(*seen)[lower] = row
	return nil
}

// parseMeta reads the "Key: value" blocks of TOSCA.meta (TOSCA 1.x and ETSI SOL004). The
// YAML spelling of TOSCA 2.0 (entry_definitions: ...) is accepted as well. A key given
// twice is refused (metaKeys).
func parseMeta(data []byte) (map[string]string, error) {
	meta := map[string]string{}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	scanner := bufio.NewScanner(bytes.NewReader(data))
	row := 0
	keys := metaKeys{}
	for scanner.Scan() {
		row++
		line := strings.TrimRight(scanner.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, &InvalidError{Diagnostics: []Diagnostic{{File: MetaPath, Line: row, Message: fmt.Sprintf("malformed line %q, expected \"Key: value\"", line)}}}
		}
		key = strings.TrimSpace(key)
		switch strings.ToLower(strings.ReplaceAll(key, "-", "_")) {
		case "entry_definitions":
			key = "Entry-Definitions"
		case "entry_manifest":
			key = "Entry-Manifest"
		case "csar_version":
			key = "CSAR-Version"
		}
		if err := keys.add(key, row); err != nil {
			return nil, err
		}
		meta[key] = strings.Trim(strings.TrimSpace(value), `"'`)
	}
	if err := scanner.Err(); err != nil {
		return nil, Invalid(MetaPath, "%v", err)
	}
	return meta, nil
}
