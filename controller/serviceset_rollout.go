package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

// rollOut gives the change to the sites that lack it, in order, while fewer than
// MaxConcurrent sites are taking it (Progressing), and none failed with it (unless the
// rollout continues on failure). A site waiting for its turn keeps running what it ran.
func (r *ServiceSetReconciler) rollOut(ctx context.Context, set *v1alpha1.ServiceSet, sites []*site) error {
	maxConcurrent := int(max(set.Spec.Rollout.MaxConcurrent, 1))
	inFlight, failed := 0, ""
	for _, s := range sites {
		s.status = v1alpha1.SiteStatus{Name: s.name, Cluster: s.cluster, Service: s.desired.Name}
		if s.child == nil || s.child.Annotations[AnnotationSetHash] != s.hash {
			continue
		}
		siteStand(s)
		switch s.status.Phase {
		case v1alpha1.SiteProgressing:
			inFlight++
		case v1alpha1.SiteFailed:
			if failed == "" {
				failed = s.name
			}
		}
	}
	for _, s := range sites {
		if s.status.Phase != "" {
			continue
		}
		switch {
		case failed != "" && !set.Spec.Rollout.ContinueOnFailure:
			s.status.Phase, s.status.Reason, s.status.Message = v1alpha1.SitePending, v1alpha1.ReasonRolloutStopped, "the rollout stopped at site "+failed+", which failed"
		case inFlight >= maxConcurrent:
			s.status.Phase, s.status.Reason, s.status.Message = v1alpha1.SitePending, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for its turn: %d of %d sites at a time take the change", inFlight, maxConcurrent)
		default:
			if err := r.apply(ctx, s.desired); err != nil {
				return fmt.Errorf("site %s: applying Service %s: %w", s.name, s.desired.Name, err)
			}
			inFlight++
			s.status.Phase, s.status.Reason, s.status.Message = v1alpha1.SiteProgressing, v1alpha1.ReasonProgressing, "taking the change"
		}
		if s.child != nil {
			s.status.Revision = s.child.Status.LastAppliedRevision
		}
	}
	return nil
}

// siteStand sets the phase of a site that has the change from its Service's conditions:
// Ready for its generation, failed (Stalled, or not Ready for a failure, not progress),
// else progressing.
func siteStand(s *site) {
	svc := s.child
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	stalledCondition := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled)
	s.status.Revision = svc.Status.LastAppliedRevision
	switch {
	case ready == nil || ready.ObservedGeneration != svc.Generation:
		s.status.Phase, s.status.Reason, s.status.Message = v1alpha1.SiteProgressing, v1alpha1.ReasonProgressing, "its Service has not looked at the change yet"
		return
	case ready.Status == metav1.ConditionTrue && svc.Status.ObservedGeneration == svc.Generation:
		s.status.Phase = v1alpha1.SiteReady
	case stalledCondition != nil && stalledCondition.Status == metav1.ConditionTrue,
		ready.Status == metav1.ConditionFalse && ready.Reason != v1alpha1.ReasonProgressing:
		s.status.Phase = v1alpha1.SiteFailed
	default:
		s.status.Phase = v1alpha1.SiteProgressing
	}
	s.status.Reason, s.status.Message = ready.Reason, text.Truncate(ready.Message, 512)
}

// apply creates or updates a ServiceSet's Service (server-side apply: the fields the
// ServiceSet owns, nothing else).
func (r *ServiceSetReconciler) apply(ctx context.Context, svc *v1alpha1.Service) error {
	obj, err := toApply(svc)
	if err != nil {
		return err
	}
	return r.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(setFieldManager))
}

// pruneSites deletes the Services of the ServiceSet's sites that are no longer selected,
// or, when the ServiceSet keeps them, returns their sites (Deselected).
func (r *ServiceSetReconciler) pruneSites(ctx context.Context, set *v1alpha1.ServiceSet, sites []*site) ([]v1alpha1.SiteStatus, error) {
	wanted := map[string]bool{}
	for _, s := range sites {
		wanted[s.desired.Name] = true
	}
	list := &v1alpha1.ServiceList{}
	if err := r.List(ctx, list, client.InNamespace(set.Namespace), client.MatchingLabels{v1alpha1.LabelServiceSet: set.Name}); err != nil {
		return nil, err
	}
	var kept []v1alpha1.SiteStatus
	for i := range list.Items {
		svc := &list.Items[i]
		if wanted[svc.Name] || !metav1.IsControlledBy(svc, set) || svc.DeletionTimestamp != nil {
			continue
		}
		if set.Spec.DeselectedSites == v1alpha1.DeselectedSitesKeep {
			kept = append(kept, v1alpha1.SiteStatus{Name: svc.Labels[v1alpha1.LabelSite], Service: svc.Name, Phase: v1alpha1.SiteDeselected,
				Revision: svc.Status.LastAppliedRevision, Reason: v1alpha1.ReasonDeselected, Message: "no longer selected: its Service is kept (deselectedSites: Keep)"})
			continue
		}
		if err := r.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting Service %s of a site no longer selected: %w", svc.Name, err)
		}
	}
	slices.SortFunc(kept, func(a, b v1alpha1.SiteStatus) int { return strings.Compare(a.Name, b.Name) })
	return kept, nil
}

// setSetStatus aggregates the sites: the count of sites Ready with the change, each
// site's phase (and the deselected sites whose Services are kept, listed, not counted),
// and the conditions — Ready once every site is, else why not (the rollout stopped at a
// failed site, or goes on).
func setSetStatus(set *v1alpha1.ServiceSet, sites []*site, deselected []v1alpha1.SiteStatus) {
	st := &set.Status
	st.Sites, st.ReadySites, st.TotalSites = nil, 0, int32(len(sites))
	var failed, waiting []string
	for _, s := range sites {
		st.Sites = append(st.Sites, s.status)
		switch s.status.Phase {
		case v1alpha1.SiteReady:
			st.ReadySites++
		case v1alpha1.SiteFailed:
			failed = append(failed, s.name+" ("+s.status.Reason+": "+s.status.Message+")")
		default:
			waiting = append(waiting, s.name)
		}
	}
	st.Sites = append(st.Sites, deselected...) // listed, not counted
	st.Summary = fmt.Sprintf("%d/%d", st.ReadySites, st.TotalSites)
	switch {
	case len(failed) > 0 && !set.Spec.Rollout.ContinueOnFailure:
		setSetCondition(set, metav1.ConditionFalse, v1alpha1.ReasonRolloutStopped,
			text.Truncate(fmt.Sprintf("%s sites ready; the rollout stopped: site %s failed; waiting: %s", st.Summary, strings.Join(failed, ", site "), orNone(waiting)), 1024))
	case len(failed) > 0 || len(waiting) > 0:
		setSetCondition(set, metav1.ConditionFalse, v1alpha1.ReasonProgressing,
			text.Truncate(fmt.Sprintf("%s sites ready; failed: %s; rolling out to: %s", st.Summary, orNone(failed), orNone(waiting)), 1024))
	default:
		st.ObservedGeneration = set.Generation
		setSetCondition(set, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("%s sites ready", st.Summary))
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// setSetCondition sets Ready and, as kstatus has them, Reconciling or Stalled.
func setSetCondition(set *v1alpha1.ServiceSet, status metav1.ConditionStatus, reason, message string) {
	conditions := &set.Status.Conditions
	apimeta.SetStatusCondition(conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: set.Generation})
	apimeta.RemoveStatusCondition(conditions, v1alpha1.ConditionReconciling)
	apimeta.RemoveStatusCondition(conditions, v1alpha1.ConditionStalled)
	switch {
	case status == metav1.ConditionTrue:
	case reason == v1alpha1.ReasonRolloutStopped || reason == v1alpha1.ReasonSelectionFailed:
		apimeta.SetStatusCondition(conditions, metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: set.Generation})
	default:
		apimeta.SetStatusCondition(conditions, metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: set.Generation})
	}
}

// patchSetStatus writes the status when it changed.
func (r *ServiceSetReconciler) patchSetStatus(ctx context.Context, before, set *v1alpha1.ServiceSet) error {
	if apiequality.Semantic.DeepEqual(before.Status, set.Status) {
		return nil
	}
	return client.IgnoreNotFound(r.Status().Patch(ctx, set, client.MergeFrom(before)))
}
