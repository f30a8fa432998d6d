package profilekit

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says what a change means for the packages written for the old version.
type Severity string

const (
	// Breaking: a package written for the old version may fail to compile, or render
	// differently.
	Breaking Severity = "BREAKING"
	// Additive: packages written for the old version are unaffected; new ones may use it.
	Additive Severity = "ADDED"
	// Note: worth reading, harmless to old packages by itself.
	Note Severity = "NOTE"
)

// Change is one difference between two versions of a profile.
type Change struct {
	Severity Severity
	// Subject is what changed: "node type acme.nodes.Cache", "test case tests/cache.yaml: x".
	Subject string
	Message string
	// Detail is more text (a difference of rendered objects), printed indented.
	Detail string
}

func (c Change) String() string {
	return fmt.Sprintf("%-9s %s: %s", c.Severity, c.Subject, c.Message)
}

// Report is what changed between two versions.
type Report struct {
	Changes []Change
}

// Count counts the changes of a severity.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, c := range r.Changes {
		if c.Severity == s {
			n++
		}
	}
	return n
}

// Breaks tells whether packages written for the old version may break.
func (r *Report) Breaks() bool { return r.Count(Breaking) > 0 }

// Verdict sums the report up in one line.
func (r *Report) Verdict() string {
	breaking, added := r.Count(Breaking), r.Count(Additive)
	if breaking > 0 {
		return fmt.Sprintf("%d breaking %s, %d %s: the new version breaks packages written for the old one", breaking, plural(breaking, "change"), added, plural(added, "addition"))
	}
	return fmt.Sprintf("no breaking change, %d %s: packages written for the old version keep working", added, plural(added, "addition"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Compare lists what changed in the own types of a profile from old to new, and whether
// each change breaks packages written for old: a type or property removed, a property
// made required without a default, a constraint narrowed, a type changed, a type that no
// longer derives from what it did, a requirement that became mandatory.
func Compare(old, new *Catalog) *Report {
	d := &differ{old: old, new: new}
	for _, kind := range Kinds() {
		for _, o := range old.Types(kind, OriginProfile) {
			n := new.Lookup(kind, o.Name)
			subject := string(kind) + " type " + o.Name
			if n == nil || n.Origin != OriginProfile {
				d.add(Breaking, subject, "removed")
				continue
			}
			d.compareType(subject, o, n)
		}
		for _, n := range new.Types(kind, OriginProfile) {
			if o := old.Lookup(kind, n.Name); o == nil || o.Origin != OriginProfile {
				d.add(Additive, string(kind)+" type "+n.Name, "added")
			}
		}
	}
	return &Report{Changes: d.changes}
}

type differ struct {
	old, new *Catalog
	changes  []Change
}

func (d *differ) add(s Severity, subject, format string, args ...any) {
	d.changes = append(d.changes, Change{Severity: s, Subject: subject, Message: fmt.Sprintf(format, args...)})
}

func (d *differ) compareType(subject string, o, n *Type) {
	d.compareDerivation(subject, o, n)
	d.compareProperties(subject, "property", d.old.Properties(o), d.new.Properties(n))
	d.compareAttributes(subject, d.old.Attributes(o), d.new.Attributes(n))
	d.compareConstraintList(subject, "values", o.Constraints, n.Constraints)
	if o.Kind == NodeKind {
		d.compareRequirements(subject, d.old.Requirements(o), d.new.Requirements(n))
		d.compareCapabilities(subject, d.old.Capabilities(o), d.new.Capabilities(n))
		or, _ := d.old.Renderer(o)
		nr, _ := d.new.Renderer(n)
		if or != nr {
			d.add(Note, subject, "renderer %s instead of %s (the test cases say whether it renders differently)", orNone(nr), orNone(or))
		}
	}
	d.compareInterfaces(subject, d.old.Interfaces(o), d.new.Interfaces(n))
	d.compareOperations(subject, o.Operations, n.Operations)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// compareDerivation: a type that no longer derives from a type it derived from breaks
// whatever expects that type (requirements, policies' targets, renderers' isA).
func (d *differ) compareDerivation(subject string, o, n *Type) {
	newAncestors := map[string]bool{}
	for _, a := range d.new.Ancestors(n) {
		newAncestors[a.Name] = true
	}
	for _, a := range d.old.Ancestors(o)[1:] {
		if !newAncestors[a.Name] {
			d.add(Breaking, subject, "no longer derives from %s (derived_from %s, was %s)", a.Name, orNone(n.DerivedFrom), orNone(o.DerivedFrom))
			return
		}
	}
	if o.DerivedFrom != n.DerivedFrom {
		d.add(Note, subject, "derived_from %s instead of %s (it still derives from everything it did)", orNone(n.DerivedFrom), orNone(o.DerivedFrom))
	}
}

// compareProperties compares the properties of a type, inherited ones included.
func (d *differ) compareProperties(subject, what string, old, new []*Property) {
	newByName := byName(new)
	for _, o := range old {
		n := newByName[o.Name]
		if n == nil {
			d.add(Breaking, subject, "%s %s removed", what, o.Name)
			continue
		}
		d.compareProperty(subject, what, o, n)
	}
	oldByName := byName(old)
	for _, n := range new {
		if oldByName[n.Name] != nil {
			continue
		}
		if n.Required && !n.HasDefault {
			d.add(Breaking, subject, "%s %s added, required and without a default: templates written for the old version do not set it", what, n.Name)
		} else {
			d.add(Additive, subject, "%s %s added (%s)", what, n.Name, optionality(n))
		}
	}
}

func optionality(p *Property) string {
	if p.HasDefault {
		return "default " + flowYAML(p.Default)
	}
	return "optional"
}

func byName(props []*Property) map[string]*Property {
	m := make(map[string]*Property, len(props))
	for _, p := range props {
		m[p.Name] = p
	}
	return m
}

func (d *differ) compareProperty(subject, what string, o, n *Property) {
	name := what + " " + o.Name
	if o.Type != n.Type {
		d.add(Breaking, subject, "%s: type %s instead of %s", name, n.Type, o.Type)
	}
	if oe, ne := schemaType(o.EntrySchema), schemaType(n.EntrySchema); oe != ne {
		d.add(Breaking, subject, "%s: entries of type %s instead of %s", name, orNone(ne), orNone(oe))
	}
	mandatory := func(p *Property) bool { return p.Required && !p.HasDefault }
	switch {
	case mandatory(n) && !mandatory(o) && o.HasDefault:
		d.add(Breaking, subject, "%s: its default %s was removed, and it is required: templates that relied on the default do not set it", name, flowYAML(o.Default))
	case mandatory(n) && !mandatory(o):
		d.add(Breaking, subject, "%s: required now, without a default: templates written for the old version may not set it", name)
	case mandatory(o) && !mandatory(n):
		d.add(Additive, subject, "%s: no longer required (%s)", name, optionality(n))
	case o.HasDefault && !n.HasDefault:
		d.add(Note, subject, "%s: its default %s was removed: templates that relied on it get no value", name, flowYAML(o.Default))
	case o.HasDefault && n.HasDefault && flowYAML(o.Default) != flowYAML(n.Default):
		d.add(Note, subject, "%s: default %s instead of %s: templates that rely on it get the new value", name, flowYAML(n.Default), flowYAML(o.Default))
	}
	d.compareConstraintList(subject, name, o.Constraints, n.Constraints)
	if o.EntrySchema != nil && n.EntrySchema != nil {
		d.compareConstraintList(subject, name+" entries", o.EntrySchema.Constraints, n.EntrySchema.Constraints)
	}
}

func schemaType(s *Schema) string {
	if s == nil {
		return ""
	}
	return s.Type
}

func (d *differ) compareAttributes(subject string, old, new []*Property) {
	newByName := byName(new)
	for _, o := range old {
		n := newByName[o.Name]
		switch {
		case n == nil:
			d.add(Breaking, subject, "attribute %s removed: outputs and operations that read it break", o.Name)
		case n.Type != o.Type:
			d.add(Breaking, subject, "attribute %s: type %s instead of %s", o.Name, n.Type, o.Type)
		}
	}
	oldByName := byName(old)
	for _, n := range new {
		if oldByName[n.Name] == nil {
			d.add(Additive, subject, "attribute %s added", n.Name)
		}
	}
}

// compareConstraintList compares the constraint clauses of a property or type by operator.
func (d *differ) compareConstraintList(subject, name string, old, new []Constraint) {
	oldBy, newBy := byOperator(old), byOperator(new)
	for op, o := range oldBy {
		n, ok := newBy[op]
		if !ok {
			d.add(Additive, subject, "%s: constraint %s dropped", name, o.String())
			continue
		}
		narrowed, widened := compareConstraint(o, n)
		switch {
		case narrowed != "":
			d.add(Breaking, subject, "%s: constraint narrowed: %s", name, narrowed)
		case widened != "":
			d.add(Additive, subject, "%s: constraint widened: %s", name, widened)
		}
	}
	for op, n := range newBy {
		if _, ok := oldBy[op]; !ok {
			d.add(Breaking, subject, "%s: constraint %s added: values the old version accepted may be refused", name, n.String())
		}
	}
}

func byOperator(cs []Constraint) map[string]Constraint {
	m := map[string]Constraint{}
	for _, c := range cs {
		m[c.Operator] = c
	}
	return m
}

// compareConstraint says how a clause changed: narrowed (values the old one accepted are
// refused) or widened. A change it cannot order (a pattern) counts as narrowed.
func compareConstraint(o, n Constraint) (narrowed, widened string) {
	if flowYAML(o.Value) == flowYAML(n.Value) {
		return "", ""
	}
	change := o.String() + " → " + n.String()
	switch o.Operator {
	case "valid_values":
		removed, added := setDifference(o.Value, n.Value), setDifference(n.Value, o.Value)
		if len(removed) > 0 {
			return change + " (no longer valid: " + strings.Join(removed, ", ") + ")", ""
		}
		if len(added) > 0 {
			return "", change
		}
		return "", ""
	case "in_range":
		return rangeChange(o.Value, n.Value, change)
	case "greater_than", "greater_or_equal", "min_length":
		return orderChange(o.Value, n.Value, change, true)
	case "less_than", "less_or_equal", "max_length":
		return orderChange(o.Value, n.Value, change, false)
	}
	return change, ""
}

// orderChange compares a bound: a lower bound that rises narrows, one that falls widens
// (the other way round for an upper bound).
func orderChange(o, n any, change string, lower bool) (string, string) {
	of, ok1 := number(o)
	nf, ok2 := number(n)
	if !ok1 || !ok2 {
		return change, ""
	}
	if (nf > of) == lower {
		return change, ""
	}
	return "", change
}

func rangeChange(o, n any, change string) (string, string) {
	ol, ok1 := o.([]any)
	nl, ok2 := n.([]any)
	if !ok1 || !ok2 || len(ol) != 2 || len(nl) != 2 {
		return change, ""
	}
	lowNarrow, lowWide := orderChange(ol[0], nl[0], change, true)
	highNarrow, highWide := orderChange(bound(ol[1]), bound(nl[1]), change, false)
	if lowNarrow != "" || highNarrow != "" {
		return change, ""
	}
	if lowWide != "" || highWide != "" {
		return "", change
	}
	return "", ""
}

// bound reads an upper bound, UNBOUNDED as the largest.
func bound(v any) any {
	if s, ok := v.(string); ok && s == "UNBOUNDED" {
		return float64(1 << 62)
	}
	return v
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// setDifference lists the values of list a not in list b, as YAML.
func setDifference(a, b any) []string {
	al, _ := a.([]any)
	bl, _ := b.([]any)
	in := map[string]bool{}
	for _, v := range bl {
		in[flowYAML(v)] = true
	}
	var out []string
	for _, v := range al {
		if !in[flowYAML(v)] {
			out = append(out, flowYAML(v))
		}
	}
	sort.Strings(out)
	return out
}

func (d *differ) compareRequirements(subject string, old, new []*Requirement) {
	newBy := map[string]*Requirement{}
	for _, r := range new {
		newBy[r.Name] = r
	}
	oldBy := map[string]*Requirement{}
	for _, o := range old {
		oldBy[o.Name] = o
		n := newBy[o.Name]
		switch {
		case n == nil:
			d.add(Breaking, subject, "requirement %s removed: templates that use it break", o.Name)
		case n.Capability != o.Capability || n.Relationship != o.Relationship || n.Node != o.Node:
			d.add(Breaking, subject, "requirement %s: capability %s, node %s, relationship %s instead of %s, %s, %s", o.Name,
				orNone(n.Capability), orNone(n.Node), orNone(n.Relationship), orNone(o.Capability), orNone(o.Node), orNone(o.Relationship))
		case lowerBound(n.Occurrences) > lowerBound(o.Occurrences):
			d.add(Breaking, subject, "requirement %s: at least %d now, %d before", o.Name, lowerBound(n.Occurrences), lowerBound(o.Occurrences))
		}
	}
	for _, n := range new {
		if oldBy[n.Name] != nil {
			continue
		}
		if lowerBound(n.Occurrences) > 0 {
			d.add(Breaking, subject, "requirement %s added, mandatory (at least %d): templates written for the old version lack it", n.Name, lowerBound(n.Occurrences))
		} else {
			d.add(Additive, subject, "requirement %s added", n.Name)
		}
	}
}

// lowerBound is a requirement's minimum occurrences: TOSCA's default is 1.
func lowerBound(occurrences []any) int {
	if len(occurrences) != 2 {
		return 1
	}
	n, ok := number(occurrences[0])
	if !ok {
		return 1
	}
	return int(n)
}

func (d *differ) compareCapabilities(subject string, old, new []*Capability) {
	compareNamed(d, subject, "capability", "requirements that target it break", old, new, func(c *Capability) (string, string) { return c.Name, c.Type })
}

func (d *differ) compareInterfaces(subject string, old, new []*Interface) {
	compareNamed(d, subject, "interface", "templates that implement its operations break", old, new, func(i *Interface) (string, string) { return i.Name, i.Type })
}

func (d *differ) compareOperations(subject string, old, new []*Operation) {
	compareNamed(d, subject, "operation", "templates that implement it break", old, new, func(op *Operation) (string, string) { return op.Name, "" })
}

// compareNamed compares two versions' members of one kind by name: one removed breaks
// (what consequence says), one whose type changed breaks, one added is additive.
func compareNamed[T any](d *differ, subject, kind, consequence string, old, new []T, identity func(T) (name, typ string)) {
	newTypes := map[string]string{}
	for _, n := range new {
		name, typ := identity(n)
		newTypes[name] = typ
	}
	oldNames := map[string]bool{}
	for _, o := range old {
		name, typ := identity(o)
		oldNames[name] = true
		switch newType, found := newTypes[name]; {
		case !found:
			d.add(Breaking, subject, "%s %s removed: %s", kind, name, consequence)
		case newType != typ:
			d.add(Breaking, subject, "%s %s: type %s instead of %s", kind, name, newType, typ)
		}
	}
	for _, n := range new {
		if name, _ := identity(n); !oldNames[name] {
			d.add(Additive, subject, "%s %s added", kind, name)
		}
	}
}

// CompareRenders compares what the old version's test cases render with the old profile
// and with the new one: each case whose objects differ, or that renders no more, breaks
// the packages it stands for.
func CompareRenders(old, new *TestRun) []Change {
	var changes []Change
	for i, o := range old.Results {
		if i >= len(new.Results) || o.Case.Error != "" {
			continue
		}
		n := new.Results[i]
		subject := "test case " + o.Case.File + ": " + o.Case.Name
		if o.Objects == nil {
			continue // the case does not render with the old version either
		}
		if n.Objects == nil {
			changes = append(changes, Change{Severity: Breaking, Subject: subject, Message: "renders no more: " + strings.Join(n.Failures, "; ")})
			continue
		}
		a, errA := ObjectsYAML(o.Objects)
		b, errB := ObjectsYAML(n.Objects)
		if errA != nil || errB != nil || string(a) == string(b) {
			continue
		}
		changes = append(changes, Change{Severity: Breaking, Subject: subject, Message: "the renderer's output changed (- old, + new)",
			Detail: TextDiff(string(a), string(b), "old", "new")})
	}
	return changes
}
