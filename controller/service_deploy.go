package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/render"
)

// deployment is what the deploy phase gathers while it goes through the nodes.
type deployment struct {
	// failure is the first node that could not be applied: the nodes after it wait.
	failure *phaseError
	// recorded is what the inventory held before this apply.
	recorded inventoryIndex
	// applied are the objects now as desired, by object ID (also those of a node that
	// failed: they are recorded in the inventory, so that nothing made is forgotten).
	applied  map[string]bool
	changes  []string
	statuses []v1alpha1.NodeStatus
	// unobserved: some nodes that were applied wait only for their controllers to
	// observe them; all others are ready.
	unobserved, others bool
	// unseen: the cache has not caught up with some objects of this process's last apply.
	unseen bool
}

// reconcileDeploy applies the nodes in dependency order, in waves: the consecutive nodes
// whose dependencies are all healthy are applied at once, then each is checked and
// configured in order. A node whose dependencies are not healthy yet waits (what it runs
// from an earlier revision stays untouched); after a node fails, no further wave starts.
// Each node's phase follows from what it found.
func (r *ServiceReconciler) reconcileDeploy(ctx context.Context, s *scope) error {
	svc := s.Service
	d := &deployment{applied: map[string]bool{}, recorded: indexInventory(svc.Status.Inventory)}
	nodes := s.Result.Nodes
	for i := 0; i < len(nodes); {
		wave := max(waveLength(nodes[i:], s.Healthy), 1)
		var applies []nodeApply
		if d.failure == nil {
			applies = r.applyWave(ctx, s, d.recorded, nodes[i:i+wave])
		}
		for j, node := range nodes[i : i+wave] {
			st := s.nodeStatus(node)
			if applies != nil {
				outcome := r.deployNode(ctx, s, d, node, st, applies[j])
				setNodePhase(st, outcome, s.Redact)
				switch {
				case st.Phase == v1alpha1.NodeReady:
					s.Healthy[node.Name] = true
				case outcome.awaitsObservation():
					d.unobserved = true
				default:
					d.others = true
				}
			} else {
				d.others = true
			}
			d.statuses = append(d.statuses, *st)
		}
		i += wave
	}
	svc.Status.Nodes = d.statuses
	svc.Status.Inventory = mergeInventory(svc.Status.Inventory, s.Result, d.applied, func(id string) string {
		return r.fingerprints.get(string(svc.UID) + "/" + id).token()
	})
	s.changes = d.changes
	if d.failure != nil {
		return d.failure
	}
	s.passed.applied = true
	s.settling = (len(d.changes) > 0 || d.unseen) && d.unobserved && !d.others
	s.unseen = d.unseen
	return nil
}

// waveLength is how many nodes from the first on have every dependency healthy: they
// depend on nothing applied in the same wave.
func waveLength(nodes []*render.Node, healthy map[string]bool) int {
	for i, node := range nodes {
		if firstUnhealthy(node.DependsOn, healthy) != "" {
			return i
		}
	}
	return len(nodes)
}

// nodeApply is what applying a node's objects gave; blocked: a dependency is not
// healthy, nothing was applied.
type nodeApply struct {
	blocked bool
	result  *applyResult
	err     error
}

// applyWave applies the objects of nodes at once (one round trip for all of them), or,
// for a single node, marks it blocked when a dependency is not healthy.
func (r *ServiceReconciler) applyWave(ctx context.Context, s *scope, recorded inventoryIndex, nodes []*render.Node) []nodeApply {
	applies := make([]nodeApply, len(nodes))
	if len(nodes) == 1 && firstUnhealthy(nodes[0].DependsOn, s.Healthy) != "" {
		applies[0].blocked = true
		return applies
	}
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() {
			applies[i].result, applies[i].err = r.applyObjects(ctx, s.access.forNode(node), s.Service, recorded, node.Objects)
		})
	}
	wg.Wait()
	return applies
}

// deployNode settles one node after its apply: what it changed, its objects' health,
// and, once they are healthy, its operations; it returns what it found. The first
// failure of the reconcile is kept in d.
func (r *ServiceReconciler) deployNode(ctx context.Context, s *scope, d *deployment, node *render.Node, st *v1alpha1.NodeStatus, apply nodeApply) nodeOutcome {
	outcome := nodeOutcome{objects: len(node.Objects)}
	if apply.blocked {
		outcome.blockedBy = firstUnhealthy(node.DependsOn, s.Healthy)
		r.observe(ctx, s, node, st, nil) // its attributes: what runs now is an earlier revision, or nothing
		return outcome
	}
	result, err := apply.result, apply.err
	if result != nil {
		maps.Copy(d.applied, result.done)
		d.unseen = d.unseen || len(result.unseen) > 0
		d.changes = append(d.changes, result.changes...)
		r.Metrics.countApplied(result.created, result.configured)
		if result.missed.Load() && r.Triggers != nil {
			r.Triggers.Trigger(s.Service.Namespace, s.Service.Name)
		}
	}
	if err != nil {
		outcome.failure = err
		if d.failure == nil && !errors.As(err, &d.failure) {
			d.failure = classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, err)
		}
		return outcome
	}
	if s.access.forNode(node).watchedByOperator() {
		for _, obj := range node.Objects {
			r.ensureWatched(obj.GroupVersionKind())
		}
	}
	health := r.observe(ctx, s, node, st, result)
	outcome.health = &health
	// Every healthy node goes to the orchestrator: it runs the lifecycle operations due
	// and the Day-2 Operations requested (and refuses those naming no operation). Those of
	// a delegated Service run at its site.
	if health.current() && r.Orchestrator != nil && !delegated(s.Service) {
		outcome.operations = r.runOperations(ctx, s, node, st)
	}
	return outcome
}

// nodeStatus returns the status entry of a node, keeping what the last reconcile knew.
func (s *scope) nodeStatus(node *render.Node) *v1alpha1.NodeStatus {
	st := &v1alpha1.NodeStatus{Name: node.Name, Type: node.Type, Phase: v1alpha1.NodePending}
	if old, ok := s.nodes[node.Name]; ok {
		st.Attributes = old.Attributes
		st.Operations = old.Operations
		st.Phase = old.Phase
	}
	st.DependsOn = node.DependsOn
	for _, obj := range node.Objects {
		st.Objects = append(st.Objects, obj.GetKind()+"/"+obj.GetName())
		if isCalafService(obj.GroupVersionKind()) && !delegated(s.Service) {
			st.Service = obj.GetName()
		}
	}
	return st
}

func firstUnhealthy(names []string, healthy map[string]bool) string {
	for _, name := range names {
		if !healthy[name] {
			return name
		}
	}
	return ""
}

// observe reads the node's live objects (the applied copies when fresher, the copies the
// apply read when it read them), computes their health with kstatus, and reads the node's
// attributes from them. An object the cache has not caught up with (applyResult.unseen)
// waits for its first look, as one whose controller has not looked at it yet.
func (r *ServiceReconciler) observe(ctx context.Context, s *scope, node *render.Node, st *v1alpha1.NodeStatus, apply *applyResult) health {
	var applied, read map[string]*unstructured.Unstructured
	var unseen map[string]bool
	if apply != nil {
		applied, read, unseen = apply.applied, apply.read, apply.unseen
	}
	live := map[string]*unstructured.Unstructured{}
	var h health
	for _, obj := range node.Objects {
		ref := obj.GetKind() + "/" + obj.GetName()
		if unseen[ref] {
			h.waiting, h.unobserved = append(h.waiting, ref+": not observed yet"), h.unobserved+1
			continue
		}
		a := s.access.route(obj.GroupVersionKind())
		current, readBefore := read[ref]
		var err error
		if !readBefore {
			current, err = r.getLive(ctx, a.cached, obj)
		}
		if fresh, ok := applied[ref]; ok && (current == nil || newer(fresh, current)) {
			current, err = fresh, nil
		}
		if err != nil || current == nil {
			h.waiting = append(h.waiting, ref+" does not exist yet")
			continue
		}
		live[ref] = current
		r.check(ctx, a, &h, s.Service, node, ref, current)
	}
	s.Live[node.Name] = live
	values := node.Observe(secretless(live))
	if values == nil {
		values = map[string]any{}
	}
	maps.Copy(values, orchestration.OperationAttributes(st.Operations))
	if len(values) > 0 {
		s.Attributes[node.Name] = values
		st.Attributes = jsonvalue.Map(s.Redact.Value, values)
	}
	return h
}

// newer tells whether a's resource version is newer than b's (etcd revisions increase).
func newer(a, b *unstructured.Unstructured) bool {
	ra, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	rb, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && ra > rb
}

// secretless drops Secrets: attributes are never read from them, so no secret reaches status.
func secretless(live map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(live))
	for ref, obj := range live {
		if obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == "" {
			continue
		}
		out[ref] = obj
	}
	return out
}

// objectsReady is the message of a node whose objects are all current.
func objectsReady(n int) string { return fmt.Sprintf("%d objects ready", n) }
