package tosca

import (
	"errors"
	"slices"

	"github.com/dop251/goja"
	"github.com/tliron/go-ard"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"
)

// valueCoercer evaluates every value of a TOSCA Clout in place, as Puccini's
// traversal.coerce does, walking the Clout in Go: a walk in JavaScript wraps every Go map
// it passes through, which was most of the time it took. Two passes, as there: every value
// becomes a coercible first, so that a function reading another value (get_property,
// get_attribute) finds it coercible wherever it is; then each is coerced. A value that
// fails is reported as a problem and left as it was; a JavaScript exception, a deadline or
// a runaway recursion ends the walk.
type valueCoercer struct {
	api     *js.CloutAPI
	runtime *goja.Runtime
	probs   *problems.Problems
	// evaluate coerces one value, noting it in evaluating: a loop of values is
	// reported once, as the loop.
	evaluate   func(value any) (any, error)
	evaluating *evaluating
}

// changeFunc replaces one value; site, source and target are its function's context.
type changeFunc func(value any, site, source, target any) (any, error)

// coerce runs both passes over the whole Clout.
func (c *valueCoercer) coerce() error {
	first := func(value any, site, source, target any) (any, error) {
		if err := checkValue(value); err != nil {
			return nil, err
		}
		return c.api.NewCoercible(c.runtime.ToValue(value), site, source, target)
	}
	second := func(value any, _, _, _ any) (any, error) {
		return c.evaluate(value)
	}
	if err := c.eachValues(first); err != nil {
		return err
	}
	return c.eachValues(second)
}

// eachValues changes every map of values of the topology, in the context its functions are
// evaluated in: the inputs and outputs, and of every node template, relationship, group,
// policy and substitution the properties, attributes, interface and operation inputs,
// operation and notification outputs, capabilities, artifacts (and an artifact's
// credential). Vertexes go in the order of their IDs.
func (c *valueCoercer) eachValues(change changeFunc) error {
	w := walk{change: change, probs: c.probs, evaluating: c.evaluating}
	if tosca, ok := ard.With(c.api.Properties).Get("tosca").StringMap(); ok && isTosca(c.api.Metadata, "") {
		w.holder(tosca["inputs"], nil, nil, nil)
		w.holder(tosca["outputs"], nil, nil, nil)
	}
	for _, id := range sortedKeys(c.api.Vertexes) {
		vertex := c.api.Vertexes[id]
		switch {
		case isTosca(vertex.Metadata, "NodeTemplate"):
			w.nodeTemplate(vertex)
		case isTosca(vertex.Metadata, "Group"):
			w.holder(vertex.Properties["properties"], vertex, nil, nil)
			w.interfaces(vertex.Properties["interfaces"], vertex, nil, nil)
		case isTosca(vertex.Metadata, "Policy"), isTosca(vertex.Metadata, "Substitution"):
			w.holder(vertex.Properties["properties"], vertex, nil, nil)
		}
		if w.err != nil {
			return w.err
		}
	}
	return w.err
}

// walk is one pass of eachValues; it stops at the first error that is not a problem.
type walk struct {
	change     changeFunc
	probs      *problems.Problems
	evaluating *evaluating
	err        error
}

func (w *walk) nodeTemplate(vertex *cloutpkg.Vertex) {
	template := vertex.Properties
	w.holder(template["properties"], vertex, nil, nil)
	w.holder(template["attributes"], vertex, nil, nil)
	w.interfaces(template["interfaces"], vertex, nil, nil)
	capabilities, _ := template["capabilities"].(ard.StringMap)
	for _, name := range sortedKeys(capabilities) {
		capability, _ := capabilities[name].(ard.StringMap)
		w.holder(capability["properties"], vertex, nil, nil)
		w.holder(capability["attributes"], vertex, nil, nil)
	}
	artifacts, _ := template["artifacts"].(ard.StringMap)
	for _, name := range sortedKeys(artifacts) {
		artifact, _ := artifacts[name].(ard.StringMap)
		w.holder(artifact["properties"], vertex, nil, nil)
		if artifact["credential"] != nil {
			w.replace(artifact, "credential", vertex, nil, nil)
		}
	}
	for _, edge := range vertex.EdgesOut {
		if !isTosca(edge.Metadata, "Relationship") {
			continue
		}
		relationship := edge.Properties
		w.holder(relationship["properties"], edge, vertex, edge.Target)
		w.holder(relationship["attributes"], edge, vertex, edge.Target)
		w.interfaces(relationship["interfaces"], edge, vertex, edge.Target)
	}
}

func (w *walk) interfaces(value any, site, source, target any) {
	interfaces, _ := value.(ard.StringMap)
	for _, name := range sortedKeys(interfaces) {
		interface_, _ := interfaces[name].(ard.StringMap)
		w.holder(interface_["inputs"], site, source, target)
		operations, _ := interface_["operations"].(ard.StringMap)
		for _, name := range sortedKeys(operations) {
			operation, _ := operations[name].(ard.StringMap)
			w.holder(operation["inputs"], site, source, target)
			w.holder(operation["outputs"], site, source, target)
		}
		notifications, _ := interface_["notifications"].(ard.StringMap)
		for _, name := range sortedKeys(notifications) {
			notification, _ := notifications[name].(ard.StringMap)
			w.holder(notification["outputs"], site, source, target)
		}
	}
}

// holder changes every value of a map of values, in the order of their names.
func (w *walk) holder(value any, site, source, target any) {
	holder, _ := value.(ard.StringMap)
	for _, key := range sortedKeys(holder) {
		w.replace(holder, key, site, source, target)
	}
}

// replace changes one value of holder. A failure is reported as a problem, except those
// JavaScript would not catch either (its exceptions, a deadline, a runaway recursion),
// which end the walk.
func (w *walk) replace(holder ard.StringMap, key string, site, source, target any) {
	if w.err != nil {
		return
	}
	value, err := w.change(holder[key], site, source, target)
	if err == nil {
		holder[key] = value
		return
	}
	if ends(err) {
		w.err = err
		return
	}
	if loop, found := w.evaluating.found(); found {
		if loop != nil {
			w.probs.ReportError(loop)
		}
		return
	}
	w.probs.ReportError(err)
}

// ends tells an error that ends a scriptlet's run from a value's problem.
func ends(err error) bool {
	if _, ok := err.(*goja.Exception); ok {
		return true
	}
	var interrupted *goja.InterruptedError
	var overflow *goja.StackOverflowError
	return errors.As(err, &interrupted) || errors.As(err, &overflow)
}

// isTosca tells whether metadata is of a TOSCA entity of Puccini's, of kind unless empty.
func isTosca(metadata ard.StringMap, kind string) bool {
	puccini, ok := metadata["puccini"].(ard.StringMap)
	if !ok || puccini["version"] != "1.0" {
		return false
	}
	return kind == "" || puccini["kind"] == kind
}

// sortedKeys are the keys of a map in order, gathered into a slice of their number (a walk
// sorts every map of values it passes: slices.Collect's growing was 7% of a driver run).
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}
