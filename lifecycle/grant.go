package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvo"
)

// Granter asks an NFVO for a grant before an occurrence acts (SOL003 direct mode): a
// *nfvo.RefusedError is a refusal, any other error a failure to ask, tried again.
type Granter interface {
	Grant(ctx context.Context, req nfvo.GrantRequest) (*nfvo.Grant, error)
}

// grantWait bounds one request for a grant (an NFVO that decides later is asked how it
// decided until then).
const grantWait = 30 * time.Second

// needsGrant tells the occurrences SOL003 grants: those of a VNF instance (a Service the
// NFV API made, or of a VNF package) that change what runs, not granted yet.
func needsGrant(op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	switch op.Spec.Type {
	case v1alpha1.OperationCustom, v1alpha1.OperationModify:
		return false
	}
	vnf := svc.Labels[v1alpha1.LabelVnfInstance] == "true" || svc.Spec.Source.VnfPackage != nil || svc.Status.VNF != nil
	return vnf && op.Status.GrantID == ""
}

// grant asks the NFVO for a grant of a STARTING occurrence: granted, it is recorded and
// the occurrence starts; refused, it ends ROLLED_BACK having done nothing (SOL003
// 5.4.1.2); an NFVO that cannot be asked is asked again, until the occurrence's timeout.
func (rn *run) grant(ctx context.Context) (granted bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, grantWait)
	defer cancel()
	g, err := rn.r.Granter.Grant(ctx, grantRequest(rn.r.VNFMRoot, rn.op, rn.svc))
	var refused *nfvo.RefusedError
	switch {
	case errors.As(err, &refused):
		return false, rn.enter(v1alpha1.StateRolledBack, v1alpha1.OccurrenceGrantRefused, "the NFVO refused the grant: "+refused.Detail)
	case err != nil && rn.r.Now().Sub(rn.op.CreationTimestamp.Time) > rn.timeout():
		return false, rn.enter(v1alpha1.StateRolledBack, v1alpha1.OccurrenceGrantRefused, fmt.Sprintf("no grant from the NFVO within %v: %v", rn.timeout(), err))
	case err != nil:
		setProgress(rn.op, fmt.Sprintf("asking the NFVO for a grant: %v", err))
		rn.after = 5 * time.Second
		return false, nil
	}
	rn.op.Status.GrantID = g.ID
	return true, nil
}

// grantRequest is what the NFVO is asked: the operation, the instance and its VNFD,
// links to the VNFM's resources (under root, the NFV API's URL, when known).
func grantRequest(root string, op *v1alpha1.Operation, svc *v1alpha1.Service) nfvo.GrantRequest {
	req := nfvo.GrantRequest{VnfInstanceID: svc.Name, VnfLcmOpOccID: op.Name, VnfdID: VnfdIDOf(svc),
		Operation: sol003Operations[op.Spec.Type], IsAutomaticInvocation: op.Spec.TriggeredBy != nil,
		Links: nfvo.GrantLinks{VnfLcmOpOcc: nfvo.Link{Href: root + "/vnflcm/v2/vnf_lcm_op_occs/" + op.Name},
			VnfInstance: nfvo.Link{Href: root + "/vnflcm/v2/vnf_instances/" + svc.Name}}}
	if svc.Spec.Instantiate != nil {
		req.FlavourID, req.InstantiationLevelID = svc.Spec.Instantiate.FlavourID, svc.Spec.Instantiate.InstantiationLevelID
	}
	s := op.Spec
	switch {
	case s.Instantiate != nil:
		req.FlavourID, req.InstantiationLevelID = s.Instantiate.FlavourID, s.Instantiate.InstantiationLevelID
		req.AdditionalParams = plainParams(s.Instantiate.AdditionalParams)
	case s.ChangeFlavour != nil:
		req.FlavourID, req.InstantiationLevelID = s.ChangeFlavour.NewFlavourID, s.ChangeFlavour.InstantiationLevelID
	case s.ScaleToLevel != nil:
		req.InstantiationLevelID = s.ScaleToLevel.InstantiationLevelID
	case s.ChangePackage != nil && s.ChangePackage.Source.VnfPackage != nil:
		req.DstVnfdID = s.ChangePackage.Source.VnfPackage.VnfdID
		req.AdditionalParams = plainParams(s.ChangePackage.AdditionalParams)
	}
	return req
}

func plainParams(params map[string]apiextensionsv1.JSON) map[string]any {
	if len(params) == 0 {
		return nil
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		var value any
		if json.Unmarshal(v.Raw, &value) == nil {
			out[k] = value
		}
	}
	return out
}
