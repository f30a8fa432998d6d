package tosca

import (
	"encoding/json"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/tosca/parsing"

	"calaf.io/calaf/profiles"
)

// compilePlan is what one compile hands Puccini: the entry (the chosen flavour of a SOL001
// package), the inputs, the URL mappings and quirks, and what it tolerates.
type compilePlan struct {
	entry  string
	inputs map[string]any
	// imports map the public URLs of the embedded profiles to their internal URLs.
	imports map[string]string
	// mapped maps URL imports of ETSI type files to the package's copies.
	mapped   map[string]string
	quirks   parsing.Quirks
	tolerant bool
	vnfd     *VNFD
	warnings []Diagnostic
	// tolerated are the idioms Puccini reported and the compile tolerated.
	tolerated []Diagnostic
}

// metadataKey is where Calaf keeps what it knows of a compile in the Clout's metadata.
const metadataKey = "calaf"

// planCompile checks a package before Puccini reads it (preflight, URL imports of ETSI
// type files, TOSCA.meta idioms, missing inputs) and plans its compile; a SOL001 package is
// compiled from its chosen flavour, fed by its VNF node.
func (p *Package) planCompile(inputs map[string]any, opts CompileOptions) (*compilePlan, error) {
	if err := p.CheckSize(); err != nil {
		return nil, err
	}
	imports, err := profiles.Imports()
	if err != nil {
		return nil, err
	}
	etsi, err := p.checkImports(opts.Strict)
	if err != nil {
		return nil, err
	}
	metaWarnings, err := p.metaWarnings(opts.Strict)
	if err != nil {
		return nil, err
	}
	plan := &compilePlan{entry: p.Entry, inputs: inputs, imports: imports, mapped: etsi.mapped, warnings: append(metaWarnings, etsi.warnings...)}
	sol, err := p.sol001(inputs, opts, etsi.mapped)
	if err != nil {
		return nil, err
	}
	if sol != nil {
		plan.entry, plan.inputs, plan.vnfd = sol.vnfd.FlavourFile, sol.inputs, &sol.vnfd
	} else if doc, err := p.readYAML(p.Entry); err == nil {
		if diags := missingInputs(p.Entry, mappingOf(doc), inputs); len(diags) > 0 {
			return nil, &InvalidError{Diagnostics: diags}
		}
	}
	if sol != nil || etsi.etsi {
		if err := p.planRootArtifacts(plan, opts.Strict); err != nil {
			return nil, err
		}
		// ETSI type files are TOSCA 1.2 or 1.3 whatever the VNFD declares.
		quirks := []string{string(parsing.QuirkImportsVersionPermissive), string(parsing.QuirkInterfacesOperationsPermissive)}
		if !opts.Strict {
			quirks = append(quirks, string(parsing.QuirkCapabilitiesOccurrencesPermissive))
		}
		plan.quirks, plan.tolerant = parsing.NewQuirks(quirks...), !opts.Strict
	}
	return plan, nil
}

// setCompileMetadata records the plan's VNFD and warnings in the Clout's metadata.
func setCompileMetadata(clout *cloutpkg.Clout, plan *compilePlan) {
	if plan.vnfd == nil && len(plan.warnings) == 0 {
		return
	}
	data := ard.StringMap{}
	if plan.vnfd != nil {
		data["sol001"] = toPlain(plan.vnfd)
	}
	if len(plan.warnings) > 0 {
		data["warnings"] = toPlain(plan.warnings)
	}
	clout.Metadata[metadataKey] = data
}

// toPlain turns a value into the plain maps and lists a Clout holds.
func toPlain(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var plain any
	if json.Unmarshal(data, &plain) != nil {
		return nil
	}
	return plain
}

// fromMetadata decodes an entry of Calaf's Clout metadata into v; false when absent.
func fromMetadata(clout *cloutpkg.Clout, key string, v any) bool {
	if clout == nil {
		return false
	}
	calaf, ok := ard.CopyMapsToStringMaps(clout.Metadata[metadataKey]).(ard.StringMap)
	if !ok || calaf[key] == nil {
		return false
	}
	data, err := json.Marshal(calaf[key])
	if err != nil {
		return false
	}
	return json.Unmarshal(data, v) == nil
}

// VNFDOf returns what a Clout compiled from an ETSI SOL001 package records of its VNFD;
// nil for other Clouts.
func VNFDOf(clout *cloutpkg.Clout) *VNFD {
	var vnfd VNFD
	if !fromMetadata(clout, "sol001", &vnfd) {
		return nil
	}
	return &vnfd
}

// WarningsOf returns the warnings of the compile that produced a Clout: the idioms it
// tolerated, each at its file and line.
func WarningsOf(clout *cloutpkg.Clout) []Diagnostic {
	var warnings []Diagnostic
	fromMetadata(clout, "warnings", &warnings)
	return warnings
}

// VNFD returns the VNFD of a compiled SOL001 package; nil for other packages.
func (c *Compiled) VNFD() *VNFD {
	return VNFDOf(c.Clout)
}

// Warnings returns the idioms the compile tolerated.
func (c *Compiled) Warnings() []Diagnostic {
	return WarningsOf(c.Clout)
}

// planRootArtifacts maps the artifact files an ETSI package names relative to its root
// (rootArtifacts) in the plan's URL mappings, with their warnings.
func (p *Package) planRootArtifacts(plan *compilePlan, strict bool) error {
	found, warnings, err := p.rootArtifacts(plan.entry, strict, plan.mapped)
	if err != nil {
		return err
	}
	for ref, rel := range found {
		plan.mapped[ref] = rel
	}
	plan.warnings = append(plan.warnings, warnings...)
	return nil
}
