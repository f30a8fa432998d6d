package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// validate checks a request against what the Service's package allows and the state of
// the instance, when its turn comes: a *refusal says why it cannot be carried out (it
// ends FAILED), a *waitFor that the Service was not rendered yet. The shape of requests
// is checked at admission (CEL).
func validate(ctx context.Context, c client.Reader, op *v1alpha1.Operation, svc *v1alpha1.Service) error {
	if wanted(svc) == v1alpha1.NotInstantiated {
		return validateNotInstantiated(op, svc)
	}
	if op.Spec.Type == v1alpha1.OperationInstantiate {
		return refusef("Service %s is INSTANTIATED: only a NOT_INSTANTIATED Service can be instantiated (a TERMINATE with keepInstance makes it so)", svc.Name)
	}
	if svc.Status.Package == nil && needsRender(op) {
		return &waitFor{message: fmt.Sprintf("waiting for Service %s to be rendered before judging the request", svc.Name)}
	}
	switch op.Spec.Type {
	case v1alpha1.OperationChangeFlavour:
		return validateChangeFlavour(op.Spec.ChangeFlavour, svc)
	case v1alpha1.OperationModify:
		return validateModify(op.Spec.Modify, svc)
	case v1alpha1.OperationScale:
		return validateScale(op.Spec.Scale, svc)
	case v1alpha1.OperationScaleToLevel:
		return validateScaleToLevel(op.Spec.ScaleToLevel, svc)
	case v1alpha1.OperationHeal:
		return validateHeal(ctx, c, op.Spec.Heal, svc)
	case v1alpha1.OperationCustom:
		if len(svc.Status.Nodes) > 0 && !slices.ContainsFunc(svc.Status.Nodes, func(n v1alpha1.NodeStatus) bool { return n.Name == op.Spec.Node }) {
			return refusef("Service %s has no node template %s (it has %s)", svc.Name, op.Spec.Node, nodeNames(svc))
		}
	}
	return nil
}

// needsRender tells whether a request is judged from what the Service's package
// renders: all but TERMINATE, CHANGE_PACKAGE and a MODIFY of what SOL003 says of the
// instance alone.
func needsRender(op *v1alpha1.Operation) bool {
	switch op.Spec.Type {
	case v1alpha1.OperationTerminate, v1alpha1.OperationChangePackage:
		return false
	case v1alpha1.OperationModify:
		return op.Spec.Modify.Inputs != nil
	}
	return true
}

// validateNotInstantiated judges a request to a NOT_INSTANTIATED Service: it can be
// instantiated and modified, nothing else (it runs nothing; to remove it, delete it).
func validateNotInstantiated(op *v1alpha1.Operation, svc *v1alpha1.Service) error {
	switch op.Spec.Type {
	case v1alpha1.OperationInstantiate:
		return nil
	case v1alpha1.OperationModify:
		return validateModify(op.Spec.Modify, svc)
	case v1alpha1.OperationTerminate:
		return refusef("Service %s is NOT_INSTANTIATED: there is nothing to terminate (delete the Service to remove the instance)", svc.Name)
	}
	return refusef("Service %s is NOT_INSTANTIATED: %s needs an instantiated Service (INSTANTIATE it first)", svc.Name, op.Spec.Type)
}

// aspect returns the status of an aspect of the Service, or a refusal listing them.
func aspect(svc *v1alpha1.Service, id string) (v1alpha1.AspectStatus, error) {
	var ids []string
	if lc := svc.Status.Lifecycle; lc != nil {
		for _, a := range lc.Aspects {
			if a.AspectID == id {
				return a, nil
			}
			ids = append(ids, a.AspectID)
		}
	}
	if len(ids) == 0 {
		return v1alpha1.AspectStatus{}, refusef("Service %s has no scaling aspect %s (its package declares none)", svc.Name, id)
	}
	return v1alpha1.AspectStatus{}, refusef("Service %s has no scaling aspect %s (its aspects: %s)", svc.Name, id, strings.Join(ids, ", "))
}

// validateScale refuses an unknown aspect, and steps that take it below level 0 or past
// its maximum.
func validateScale(req *v1alpha1.ScaleRequest, svc *v1alpha1.Service) error {
	a, err := aspect(svc, req.AspectID)
	if err != nil {
		return err
	}
	from := levelOf(svc.Spec.Scale, a.AspectID, a.ScaleLevel)
	to := from + signedSteps(req)
	switch {
	case to < 0:
		return refusef("aspect %s is at scale level %d: it cannot scale in by %d steps", a.AspectID, from, -signedSteps(req))
	case to > a.MaxScaleLevel:
		return refusef("aspect %s is at scale level %d: %d steps out would reach level %d, past its maximum %d (%s)", a.AspectID, from, signedSteps(req), to, a.MaxScaleLevel, a.Bound)
	}
	return nil
}

// validateScaleToLevel refuses an unknown instantiation level, an unknown aspect, or a
// level past an aspect's maximum.
func validateScaleToLevel(req *v1alpha1.ScaleToLevelRequest, svc *v1alpha1.Service) error {
	if req.InstantiationLevelID != "" {
		var levels []string
		if svc.Status.Lifecycle != nil {
			levels = svc.Status.Lifecycle.InstantiationLevels
		}
		if !slices.Contains(levels, req.InstantiationLevelID) {
			if len(levels) == 0 {
				return refusef("Service %s has no instantiation levels (only ETSI packages do)", svc.Name)
			}
			return refusef("instantiation level %s is not one of Service %s (its levels: %s)", req.InstantiationLevelID, svc.Name, strings.Join(levels, ", "))
		}
		return nil
	}
	for _, info := range req.ScaleInfo {
		a, err := aspect(svc, info.AspectID)
		if err != nil {
			return err
		}
		if info.ScaleLevel > a.MaxScaleLevel {
			return refusef("aspect %s: scale level %d is past its maximum %d (%s)", a.AspectID, info.ScaleLevel, a.MaxScaleLevel, a.Bound)
		}
	}
	return nil
}

// validateHeal refuses nodes the Service does not have, and pods that are missing or not
// the Service's.
func validateHeal(ctx context.Context, c client.Reader, req *v1alpha1.HealRequest, svc *v1alpha1.Service) error {
	if req == nil {
		return nil
	}
	if len(req.Pods) > 0 {
		_, err := namedPods(ctx, c, svc, req.Pods)
		return err
	}
	for _, node := range req.Nodes {
		if !slices.ContainsFunc(svc.Status.Nodes, func(n v1alpha1.NodeStatus) bool { return n.Name == node }) {
			return refusef("Service %s has no node template %s (it has %s)", svc.Name, node, nodeNames(svc))
		}
	}
	return nil
}

func nodeNames(svc *v1alpha1.Service) string {
	names := make([]string, len(svc.Status.Nodes))
	for i, node := range svc.Status.Nodes {
		names[i] = node.Name
	}
	return strings.Join(names, ", ")
}
