package controller

import (
	"context"

	"calaf.io/calaf/api/v1alpha1"
)

// scaleLevels returns the scale levels of a Service's spec.scale, by aspect: what the
// SCALE and SCALE_TO_LEVEL occurrences left (nil when none did).
func scaleLevels(svc *v1alpha1.Service) map[string]int64 {
	if len(svc.Spec.Scale) == 0 {
		return nil
	}
	levels := make(map[string]int64, len(svc.Spec.Scale))
	for _, info := range svc.Spec.Scale {
		levels[info.AspectID] = int64(info.ScaleLevel)
	}
	return levels
}

// reconcileLifecycleStatus records what lifecycle operations read of the package: its
// scaling aspects and their levels, its instantiation levels, the nodes' hooks and the
// alert rules (nil when the package has none of them).
func (r *ServiceReconciler) reconcileLifecycleStatus(_ context.Context, s *scope) error {
	lc := s.Result.Lifecycle
	if lc == nil || len(lc.Aspects) == 0 && len(lc.InstantiationLevels) == 0 && len(lc.Hooks) == 0 && len(lc.AlertRules) == 0 {
		s.Service.Status.Lifecycle = nil
		return nil
	}
	s.Service.Status.Lifecycle = lc.DeepCopy()
	return nil
}

// skipsTeardown tells whether a deleted Service goes without its nodes' stop and delete
// operations (a FORCEFUL termination, or a graceful one past its timeout).
func skipsTeardown(svc *v1alpha1.Service) bool {
	return svc.Annotations[v1alpha1.AnnotationTeardown] == v1alpha1.TeardownSkip
}
