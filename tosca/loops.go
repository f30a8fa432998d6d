package tosca

import (
	"regexp"
	"slices"
	"strings"

	"github.com/tliron/kutil/terminal"
	"github.com/tliron/puccini/clout/js"

	"calaf.io/calaf/internal/text"
)

// Values whose functions read each other (a.data: get_property b.data, b.data:
// get_property a.data) would be evaluated until the call stack overflows, each level
// wrapping the message of the one below: a line of tens of thousands of characters, the
// same calls repeated. The sandbox notes every value being evaluated instead and refuses
// one that is already being evaluated further up, naming the loop once.

// evaluating is the chain of values being evaluated, outermost first, and the loops found.
type evaluating struct {
	chain []js.Coercible
	// loop is the latest loop found, kept until the outermost evaluation reports it.
	loop *loopError
	// reported holds the loops reported, by their canonical text, so that every value on
	// a loop does not report it again.
	reported map[string]bool
}

// enter notes value as being evaluated; it returns the loop it closes, if it does.
func (e *evaluating) enter(value any) (leave func(), loop *loopError) {
	coercible, ok := trackable(value)
	if !ok {
		return func() {}, nil
	}
	if len(e.chain) == 0 {
		e.loop = nil // one an evaluation caught and did not fail of
	}
	if at := slices.Index(e.chain, coercible); at >= 0 {
		e.loop = newLoopError(append(slices.Clone(e.chain[at:]), coercible))
		return nil, e.loop
	}
	e.chain = append(e.chain, coercible)
	return func() { e.chain = e.chain[:len(e.chain)-1] }, nil
}

// found returns the loop that an evaluation that just failed ran into, once per loop
// (nil for one reported already, or none), and forgets it.
func (e *evaluating) found() (loop *loopError, ok bool) {
	loop, e.loop = e.loop, nil
	if loop == nil {
		return nil, false
	}
	if e.reported == nil {
		e.reported = map[string]bool{}
	}
	loop.rotate()
	key := strings.Join(loop.steps, " → ")
	if e.reported[key] {
		return nil, true
	}
	e.reported[key] = true
	return loop, true
}

// trackable returns the values that are compared by identity: function calls and values
// (pointers), never maps, which Go cannot compare.
func trackable(value any) (js.Coercible, bool) {
	switch v := value.(type) {
	case *js.FunctionCall:
		return v, v != nil
	case *js.Value:
		return v, v != nil
	}
	return nil, false
}

// loopError is a loop of values that read each other, in the order they are read: the
// last step is the first again.
type loopError struct {
	steps []string
	calls []*js.FunctionCall
}

func newLoopError(chain []js.Coercible) *loopError {
	loop := &loopError{}
	for _, c := range chain {
		call := firstCall(c, 0)
		loop.calls = append(loop.calls, call)
		loop.steps = append(loop.steps, stepName(call))
	}
	return loop
}

// rotate makes the loop start at its least step, so that a loop found from any of its
// values reads the same, and is located at the same value.
func (l *loopError) rotate() {
	n := len(l.steps) - 1
	if n < 1 {
		return
	}
	least := 0
	for i := range n {
		if l.steps[i] < l.steps[least] {
			least = i
		}
	}
	steps := append(slices.Clone(l.steps[least:n]), l.steps[:least+1]...)
	calls := append(slices.Clone(l.calls[least:n]), l.calls[:least+1]...)
	l.steps, l.calls = steps, calls
}

func (l *loopError) message() string {
	return "the values read each other in a loop: " + strings.Join(l.steps, " → ")
}

func (l *loopError) Error() string {
	return l.message()
}

// Problem locates the loop at its first value ([problems.Problematic]).
func (l *loopError) Problem(*terminal.Stylist) (string, string, string, int, int) {
	if len(l.calls) == 0 || l.calls[0] == nil {
		return "", "", l.message(), 0, 0
	}
	first := l.calls[0]
	return first.URL, first.Path, l.message(), first.Row, first.Column
}

// firstCall finds the function call a value is or holds (nil when none).
func firstCall(c js.Coercible, depth int) *js.FunctionCall {
	if depth > 20 {
		return nil
	}
	switch v := c.(type) {
	case *js.FunctionCall:
		return v
	case *js.Value:
		switch data := v.Data.(type) {
		case js.List:
			for _, item := range data {
				if call := firstCall(item, depth+1); call != nil {
					return call
				}
			}
		case js.Map:
			for _, entry := range data {
				if call := firstCall(entry.Value, depth+1); call != nil {
					return call
				}
			}
		}
	}
	return nil
}

var pathNames = regexp.MustCompile(`\["((?:[^"\\]|\\.)*)"\]`)

// stepName names a value of a loop by its function call's path, as the node template and
// the names below it: topology_template.node_templates["a"].properties["data"] is a.data.
func stepName(call *js.FunctionCall) string {
	if call == nil {
		return "a value"
	}
	var names []string
	for _, m := range pathNames.FindAllStringSubmatch(call.Path, -1) {
		names = append(names, text.Shorten(m[1], 40))
	}
	if len(names) == 0 {
		return text.Shorten(call.Path, MaxEcho)
	}
	return strings.Join(names, ".")
}
