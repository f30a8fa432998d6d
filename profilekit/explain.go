package profilekit

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
)

// Explain describes a type, or a property of it and the fields of that property's data
// type, as `kubectl explain` describes a resource: "acme.nodes.Cache",
// "acme.nodes.Cache.eviction", "acme.nodes.Cache.eviction.policy". Type names hold dots:
// the longest prefix that names a type is the type.
func Explain(c *Catalog, what string) (string, error) {
	parts := strings.Split(what, ".")
	for i := len(parts); i > 0; i-- {
		t := c.Find(strings.Join(parts[:i], "."))
		if t == nil {
			continue
		}
		if i == len(parts) {
			return explainType(c, t), nil
		}
		return explainField(c, t, parts[i:])
	}
	return "", fmt.Errorf("no type %q in the profile (calaf explain lists the types with --list)", what)
}

// explainType describes a type: what it derives from, its renderer, and its fields.
func explainType(c *Catalog, t *Type) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "TYPE:        %s (%s type%s)\n", t.Name, t.Kind, originText(c, t))
	if chain := c.Ancestors(t); len(chain) > 1 {
		names := make([]string, 0, len(chain)-1)
		for _, a := range chain[1:] {
			names = append(names, a.Name)
		}
		fmt.Fprintf(&b, "DERIVED FROM: %s\n", strings.Join(names, " → "))
	}
	if t.Kind == NodeKind {
		if name, _ := c.Renderer(t); name != "" {
			fmt.Fprintf(&b, "RENDERER:    %s\n", name)
		}
	}
	describe(&b, t.Description)
	fieldTable(&b, "PROPERTIES", c.Properties(t))
	fieldTable(&b, "ATTRIBUTES", c.Attributes(t))
	if t.Kind == NodeKind {
		if reqs := c.Requirements(t); len(reqs) > 0 {
			fmt.Fprintf(&b, "\nREQUIREMENTS:\n")
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			for _, r := range reqs {
				fmt.Fprintf(tw, "   %s\t<%s>\t%s\t%s\n", r.Name, r.Capability, r.Relationship, occurrencesText(r.Occurrences))
			}
			tw.Flush()
		}
		if caps := c.Capabilities(t); len(caps) > 0 {
			fmt.Fprintf(&b, "\nCAPABILITIES:\n")
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			for _, cp := range caps {
				fmt.Fprintf(tw, "   %s\t<%s>\n", cp.Name, cp.Type)
			}
			tw.Flush()
		}
	}
	if ifaces := c.Interfaces(t); len(ifaces) > 0 {
		fmt.Fprintf(&b, "\nINTERFACES:\n")
		for _, it := range ifaces {
			fmt.Fprintf(&b, "   %s <%s>\n", it.Name, it.Type)
		}
	}
	return b.String()
}

// explainField describes a property of t, then the fields of its data type, following path.
func explainField(c *Catalog, t *Type, path []string) (string, error) {
	props := c.Properties(t)
	var field *Property
	for depth, name := range path {
		field = nil
		for _, p := range props {
			if p.Name == name {
				field = p
			}
		}
		if field == nil {
			return "", fmt.Errorf("%s has no property %q", strings.Join(append([]string{t.Name}, path[:depth]...), "."), name)
		}
		props = nil
		if data := fieldDataType(c, field); data != nil {
			props = c.Properties(data)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "TYPE:   %s (%s type%s)\n", t.Name, t.Kind, originText(c, t))
	fmt.Fprintf(&b, "FIELD:  %s <%s>\n", strings.Join(path, "."), fieldType(field))
	describe(&b, field.Description)
	var facts []string
	if field.Required && !field.HasDefault {
		facts = append(facts, "required")
	}
	if field.HasDefault {
		facts = append(facts, "default: "+flowYAML(field.Default))
	}
	for _, cn := range field.Constraints {
		facts = append(facts, cn.String())
	}
	if len(facts) > 0 {
		fmt.Fprintf(&b, "\n%s\n", strings.Join(facts, "\n"))
	}
	fieldTable(&b, "FIELDS", props)
	return b.String(), nil
}

// fieldDataType returns the complex data type of a property's values (its entries', for a
// list or a map); nil for primitives.
func fieldDataType(c *Catalog, p *Property) *Type {
	name := p.Type
	if (name == "list" || name == "map") && p.EntrySchema != nil {
		name = p.EntrySchema.Type
	}
	t := c.Lookup(DataKind, name)
	if t == nil || len(c.Properties(t)) == 0 {
		return nil
	}
	return t
}

func fieldType(p *Property) string {
	if p.EntrySchema != nil {
		return p.Type + " of " + p.EntrySchema.Type
	}
	return p.Type
}

func describe(b *bytes.Buffer, description string) {
	if description == "" {
		return
	}
	fmt.Fprintf(b, "\nDESCRIPTION:\n")
	for _, line := range wrap(description, 76) {
		fmt.Fprintf(b, "   %s\n", line)
	}
}

func fieldTable(b *bytes.Buffer, title string, props []*Property) {
	if len(props) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for _, p := range props {
		marker := ""
		if p.Required && !p.HasDefault && title != "ATTRIBUTES" {
			marker = " -required-"
		}
		fmt.Fprintf(b, "   %s <%s>%s\n", p.Name, fieldType(p), marker)
		for _, line := range wrap(p.Description, 72) {
			fmt.Fprintf(b, "     %s\n", line)
		}
	}
}

func originText(c *Catalog, t *Type) string {
	switch t.Origin {
	case OriginProfile:
		if c.Name != "" {
			return ", profile " + strings.TrimSpace(c.Name+" "+c.Version)
		}
		return ""
	case OriginCalaf:
		return ", Calaf Kubernetes profile"
	case OriginTOSCA:
		return ", TOSCA normative"
	}
	return ", imported from " + t.Origin
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
