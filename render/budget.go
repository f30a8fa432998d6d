package render

import (
	"fmt"
	"time"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"

	"calaf.io/calaf/tosca"
)

// nodesPerTimeout is how many node templates one script timeout covers in a render's
// budget (Budget).
const nodesPerTimeout = 100

// maxBudgetTimeouts caps a budget, whatever the package's size: a hostile package of
// many trivial node templates holds a worker for at most this many script timeouts.
const maxBudgetTimeouts = 30

// Budget is how long the scriptlets of one render or evaluation of compiled may take in
// all: the timeout (tosca.DefaultScriptTimeout when zero) once, and once more for every
// started 100 node templates beyond the first 100 — a deadline that grows with the work,
// so that the default settings render a package of 1,000 node templates and an endless
// loop in a small one is still stopped after the timeout; at most 30 timeouts (3,000 node
// templates). Each node's renderer has the timeout at most, within the budget.
func Budget(compiled *tosca.Compiled, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = tosca.DefaultScriptTimeout
	}
	units := 1 + (nodeTemplateCount(compiled.Clout)-1)/nodesPerTimeout
	return timeout * time.Duration(min(max(units, 1), maxBudgetTimeouts))
}

// nodeTemplateCount counts the node templates of a Clout.
func nodeTemplateCount(clout *cloutpkg.Clout) int {
	if clout == nil {
		return 0
	}
	count := 0
	for _, vertex := range clout.Vertexes {
		if kind, _ := ard.With(vertex.Metadata).Get("puccini", "kind").String(); kind == "NodeTemplate" {
			count++
		}
	}
	return count
}

// budgetText says how a budget was set, for a message about a render that exceeded it.
func budgetText(budget, timeout time.Duration) string {
	if timeout <= 0 {
		timeout = tosca.DefaultScriptTimeout
	}
	if budget <= timeout {
		return budget.String()
	}
	return fmt.Sprintf("%s (%s for every %d node templates)", budget, timeout, nodesPerTimeout)
}
