package controller

import (
	"context"
	"encoding/json"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/tosca"
)

// maxStatusWarnings bounds the warnings written to a Service's status.
const maxStatusWarnings = 20

// instantiateRequest reads the Service's spec.instantiate: the request for the render and
// the compile options (its flavour). A Service without one gets nil and the defaults.
func instantiateRequest(svc *v1alpha1.Service) (*etsi.Request, tosca.CompileOptions, error) {
	spec := svc.Spec.Instantiate
	if spec == nil {
		return nil, tosca.CompileOptions{}, nil
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, tosca.CompileOptions{}, err
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, tosca.CompileOptions{}, err
	}
	req, err := etsi.FromMap("spec.instantiate", raw)
	if err != nil {
		return nil, tosca.CompileOptions{}, stalled(v1alpha1.ConditionCompiled, v1alpha1.ReasonInvalidInputs, "%v", err)
	}
	return req, tosca.CompileOptions{Flavour: req.FlavourID}, nil
}

// reconcileVNFStatus reports the instance of an ETSI SOL001 VNF — who it is (its VNFD
// id, provider, product and versions, as tosca.VNFD.Identity reads them for onboarding
// too), flavour, instantiation level, each VDU's desired and ready replicas, each aspect's
// scale level — and the warnings of the render.
func (r *ServiceReconciler) reconcileVNFStatus(_ context.Context, s *scope) error {
	svc := s.Service
	svc.Status.Warnings = nil
	for i, w := range s.Result.Warnings {
		if i == maxStatusWarnings {
			break
		}
		svc.Status.Warnings = append(svc.Status.Warnings, s.Redact.String(w.String()))
	}
	vnf := s.Result.VNF
	if vnf == nil {
		svc.Status.VNF = nil
		return nil
	}
	id := vnf.Identity
	status := &v1alpha1.VNFStatus{FlavourID: vnf.Flavour, InstantiationLevelID: vnf.Level, Flavours: s.facts.flavours, VnfdID: id.DescriptorID,
		VnfProvider: id.Provider, VnfProductName: id.ProductName, VnfSoftwareVersion: id.SoftwareVersion, VnfdVersion: id.DescriptorVersion}
	for _, vdu := range vnf.VDUs {
		ready, _ := s.Attributes[vdu.Node]["ready_replicas"].(int64)
		if f, ok := s.Attributes[vdu.Node]["ready_replicas"].(float64); ok {
			ready = int64(f)
		}
		status.VDUs = append(status.VDUs, v1alpha1.VDUStatus{VduID: vdu.Node, Workload: vdu.Workload,
			DesiredReplicas: int32(vdu.Replicas), ReadyReplicas: int32(ready)})
	}
	for _, a := range vnf.Aspects {
		status.ScaleStatus = append(status.ScaleStatus, v1alpha1.ScaleInfo{AspectID: a.ID, ScaleLevel: int32(a.ScaleLevel)})
		status.MaxScaleLevels = append(status.MaxScaleLevels, v1alpha1.ScaleInfo{AspectID: a.ID, ScaleLevel: int32(a.MaxScaleLevel)})
	}
	svc.Status.VNF = status
	return nil
}
