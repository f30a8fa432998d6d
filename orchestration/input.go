package orchestration

import (
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/render"
)

// Files is a read-only view of a package's files.
type Files interface {
	ReadFile(name string) ([]byte, error)
}

// Redactor hides secret values in text and values that go to status and Events.
type Redactor interface {
	String(string) string
	Value(any) any
}

// Input is what the orchestrator needs of one node of a reconcile. It reads it and
// never changes it: what it decides comes back in a Result.
type Input struct {
	// Service is the Service the node belongs to.
	Service *v1alpha1.Service
	// Files are the files of the package revision being applied.
	Files    Files
	Revision string
	Node     *render.Node
	// Attributes are the node's attributes observed this reconcile.
	Attributes map[string]any
	// Live are the node's live objects, keyed "Kind/name".
	Live map[string]*unstructured.Unstructured
	// Operations are the node's operation statuses as recorded so far.
	Operations []v1alpha1.NodeOperationStatus
	// Redact hides secret values; nil hides nothing.
	Redact Redactor
	// Reader, when set, reads the node's pods and their owners (the identity the Service
	// acts with) instead of the orchestrator's own client.
	Reader client.Reader
	// Impersonate, when set, is the user operations are executed in pods as.
	Impersonate string
	// Cluster, when set, is the cluster the node's pods run in (the Service's target
	// cluster): operations are executed there, as its connection's identity.
	Cluster *Cluster
}

// Cluster is a cluster other than the operator's that pods run in.
type Cluster struct {
	// Key identifies the cluster and the identity its Config grants.
	Key string
	// Config reaches its API server as that identity.
	Config *rest.Config
}

// Result is what a Run or a Teardown decided for a node.
type Result struct {
	// Done: for Run, every lifecycle operation ran everywhere it should (the node is
	// configured); for Teardown, the node's objects may be deleted now.
	Done bool
	// Failure is an operation that failed for good (its retries used up) or could not be
	// planned (a package problem); already redacted.
	Failure error
	// Operations are the node's operation statuses to record.
	Operations []v1alpha1.NodeOperationStatus
	// Attributes are those the node's operations set, the latest run winning; nil when
	// none did.
	Attributes map[string]any
	// Message says what runs or what is awaited; empty when nothing.
	Message string
	// RequeueAfter, when set, asks for a reconcile after it at the latest.
	RequeueAfter time.Duration
}

// OperationAttributes returns the attributes recorded operation runs set, the latest run
// winning.
func OperationAttributes(ops []v1alpha1.NodeOperationStatus) map[string]any {
	var set []v1alpha1.NodeOperationStatus
	for _, op := range ops {
		if len(op.Attributes) > 0 {
			set = append(set, op)
		}
	}
	if len(set) == 0 {
		return nil
	}
	slices.SortStableFunc(set, func(a, b v1alpha1.NodeOperationStatus) int {
		switch {
		case a.LastRunTime.Equal(b.LastRunTime):
			return 0
		case a.LastRunTime == nil || (b.LastRunTime != nil && a.LastRunTime.Before(b.LastRunTime)):
			return -1
		}
		return 1
	})
	values := map[string]any{}
	for _, op := range set {
		for name, raw := range op.Attributes {
			values[name] = jsonvalue.Decode(raw)
		}
	}
	return values
}

// nodeRun is the work on one node: the input and what the orchestrator decided so far.
type nodeRun struct {
	Input
	// st holds the operation statuses and the message as they change.
	st *v1alpha1.NodeStatus
	// attributes are the node's attributes with those its operations set.
	attributes   map[string]any
	requeueAfter time.Duration
}

func newNodeRun(in Input) *nodeRun {
	if in.Redact == nil {
		in.Redact = noRedaction{}
	}
	r := &nodeRun{Input: in, st: &v1alpha1.NodeStatus{Name: in.Node.Name, Operations: copyOperations(in.Operations)}}
	r.attributes = maps.Clone(in.Attributes)
	if r.attributes == nil {
		r.attributes = map[string]any{}
	}
	r.mergeAttributes()
	return r
}

// mergeAttributes makes the attributes the recorded runs set part of the node's.
func (r *nodeRun) mergeAttributes() {
	maps.Copy(r.attributes, OperationAttributes(r.st.Operations))
}

// requeue asks for a reconcile after d at the latest (never sooner than a second).
func (r *nodeRun) requeue(d time.Duration) {
	d = max(d, time.Second)
	if r.requeueAfter == 0 || d < r.requeueAfter {
		r.requeueAfter = d
	}
}

func (r *nodeRun) result(done bool, failure error) Result {
	return Result{
		Done:         done,
		Failure:      failure,
		Operations:   r.st.Operations,
		Attributes:   OperationAttributes(r.st.Operations),
		Message:      r.st.Message,
		RequeueAfter: r.requeueAfter,
	}
}

func (r *nodeRun) key() string { return nodeKey(r.Service, r.Node.Name) }

// noRedaction is the Redactor of an Input without one.
type noRedaction struct{}

func (noRedaction) String(s string) string { return s }
func (noRedaction) Value(v any) any        { return v }

// readerOr returns the reader of the node's pods: the Input's, else fallback.
func (r *nodeRun) readerOr(fallback client.Reader) client.Reader {
	if r.Reader != nil {
		return r.Reader
	}
	return fallback
}
