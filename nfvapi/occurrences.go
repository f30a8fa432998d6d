package nfvapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi/sol013"
)

// VnfLcmOpOcc is SOL003's VnfLcmOpOcc, as Calaf fills it from an Operation.
type VnfLcmOpOcc struct {
	ID                    string           `json:"id"`
	OperationState        string           `json:"operationState"`
	StateEnteredTime      string           `json:"stateEnteredTime"`
	StartTime             string           `json:"startTime"`
	VnfInstanceID         string           `json:"vnfInstanceId"`
	GrantID               string           `json:"grantId,omitempty"`
	Operation             string           `json:"operation"`
	IsAutomaticInvocation bool             `json:"isAutomaticInvocation"`
	OperationParams       any              `json:"operationParams,omitempty"`
	IsCancelPending       bool             `json:"isCancelPending"`
	CancelMode            string           `json:"cancelMode,omitempty"`
	Error                 *sol013.Problem  `json:"error,omitempty"`
	ResourceChanges       *ResourceChanges `json:"resourceChanges,omitempty"`
	Links                 OccurrenceLinks  `json:"_links"`
}

// ResourceChanges are the resources an occurrence changed: its pods.
type ResourceChanges struct {
	AffectedVnfcs []AffectedVnfc `json:"affectedVnfcs,omitempty"`
}

// AffectedVnfc is a pod an occurrence added, removed or replaced.
type AffectedVnfc struct {
	ID              string         `json:"id"`
	VduID           string         `json:"vduId"`
	ChangeType      string         `json:"changeType"`
	ComputeResource ResourceHandle `json:"computeResource"`
}

// OccurrenceLinks are an occurrence's links: itself, its instance, the decisions its state
// allows.
type OccurrenceLinks struct {
	Self        Link  `json:"self"`
	VnfInstance Link  `json:"vnfInstance"`
	Cancel      *Link `json:"cancel,omitempty"`
	Retry       *Link `json:"retry,omitempty"`
	Rollback    *Link `json:"rollback,omitempty"`
	Fail        *Link `json:"fail,omitempty"`
}

var occurrenceShape = shapeOf(VnfLcmOpOcc{}, []string{"id", "operationState", "stateEnteredTime", "startTime", "vnfInstanceId", "operation", "isAutomaticInvocation", "isCancelPending", "_links"},
	[]string{"operationParams", "error", "resourceChanges"})

// sol003Operations are SOL003's names of Calaf's occurrence types.
var sol003Operations = map[v1alpha1.OperationType]string{
	v1alpha1.OperationInstantiate: "INSTANTIATE", v1alpha1.OperationScale: "SCALE", v1alpha1.OperationScaleToLevel: "SCALE_TO_LEVEL",
	v1alpha1.OperationChangeFlavour: "CHANGE_FLAVOUR", v1alpha1.OperationHeal: "HEAL", v1alpha1.OperationChangePackage: "CHANGE_VNFPKG",
	v1alpha1.OperationModify: "MODIFY_INFO", v1alpha1.OperationOperate: "OPERATE", v1alpha1.OperationTerminate: "TERMINATE",
}

// rollbackable are the types SOL003 and Calaf can roll back.
var rollbackable = map[v1alpha1.OperationType]bool{
	v1alpha1.OperationInstantiate: true, v1alpha1.OperationScale: true, v1alpha1.OperationScaleToLevel: true, v1alpha1.OperationChangeFlavour: true,
	v1alpha1.OperationChangePackage: true, v1alpha1.OperationModify: true, v1alpha1.OperationOperate: true,
}

// occurrenceView builds the VnfLcmOpOcc of an Operation, with links under base.
func occurrenceView(base string, op *v1alpha1.Operation) VnfLcmOpOcc {
	state := op.Status.OperationState
	if state == "" {
		state = v1alpha1.StateStarting
	}
	entered := op.CreationTimestamp.Time
	if n := len(op.Status.Transitions); n > 0 {
		entered = op.Status.Transitions[n-1].Time.Time
	}
	self := base + "/vnflcm/v2/vnf_lcm_op_occs/" + op.Name
	v := VnfLcmOpOcc{
		ID: op.Name, OperationState: string(state), StateEnteredTime: timestamp(entered), StartTime: timestamp(op.CreationTimestamp.Time),
		VnfInstanceID: op.Spec.ServiceName, Operation: sol003Operations[op.Spec.Type], IsAutomaticInvocation: op.Spec.TriggeredBy != nil,
		OperationParams: operationParams(op), CancelMode: string(op.Spec.Cancel),
		IsCancelPending: op.Spec.Cancel != "" && !state.Final() && !apimeta.IsStatusConditionTrue(op.Status.Conditions, v1alpha1.ConditionCancelled),
		GrantID:         op.Status.GrantID,
		Links:           OccurrenceLinks{Self: Link{Href: self}, VnfInstance: Link{Href: base + "/vnflcm/v2/vnf_instances/" + op.Spec.ServiceName}},
	}
	switch state {
	case v1alpha1.StateFailedTemp:
		v.Links.Retry, v.Links.Fail = &Link{Href: self + "/retry"}, &Link{Href: self + "/fail"}
		if rollbackable[op.Spec.Type] {
			v.Links.Rollback = &Link{Href: self + "/rollback"}
		}
	case v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateRollingBack:
		v.Links.Cancel = &Link{Href: self + "/cancel"}
	}
	if state == v1alpha1.StateFailedTemp || state == v1alpha1.StateFailed || state == v1alpha1.StateRolledBack {
		v.Error = &sol013.Problem{Status: http.StatusInternalServerError, Title: string(state), Detail: failureDetail(op)}
	}
	for _, p := range op.Status.AffectedPods {
		if v.ResourceChanges == nil {
			v.ResourceChanges = &ResourceChanges{}
		}
		v.ResourceChanges.AffectedVnfcs = append(v.ResourceChanges.AffectedVnfcs, AffectedVnfc{ID: p.Pod, VduID: p.Node,
			ChangeType: string(p.ChangeType), ComputeResource: ResourceHandle{ResourceID: p.Pod, VimLevelResourceType: "Pod"}})
	}
	return v
}

func failureDetail(op *v1alpha1.Operation) string {
	if op.Status.Message != "" {
		return op.Status.Message
	}
	if n := len(op.Status.Transitions); n > 0 && op.Status.Transitions[n-1].Message != "" {
		return op.Status.Transitions[n-1].Message
	}
	return "the occurrence did not complete"
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// operationParams is the occurrence's request, as SOL003 writes the request of its type.
func operationParams(op *v1alpha1.Operation) any {
	s := op.Spec
	switch s.Type {
	case v1alpha1.OperationInstantiate:
		return s.Instantiate
	case v1alpha1.OperationScale:
		return s.Scale
	case v1alpha1.OperationScaleToLevel:
		return s.ScaleToLevel
	case v1alpha1.OperationChangeFlavour:
		return s.ChangeFlavour
	case v1alpha1.OperationOperate:
		return s.Operate
	case v1alpha1.OperationTerminate:
		if s.Terminate == nil {
			return map[string]any{"terminationType": v1alpha1.TerminationGraceful}
		}
		return map[string]any{"terminationType": s.Terminate.TerminationType, "gracefulTerminationTimeout": s.Terminate.GracefulTerminationTimeout}
	case v1alpha1.OperationHeal:
		if s.Heal == nil {
			return map[string]any{}
		}
		return map[string]any{"vnfcInstanceId": s.Heal.Pods, "cause": s.Heal.Cause, "additionalParams": s.Heal.AdditionalParams}
	case v1alpha1.OperationChangePackage:
		if s.ChangePackage == nil || s.ChangePackage.Source.VnfPackage == nil {
			return map[string]any{}
		}
		return map[string]any{"vnfdId": s.ChangePackage.Source.VnfPackage.VnfdID, "additionalParams": s.ChangePackage.AdditionalParams}
	case v1alpha1.OperationModify:
		return modifyParams(s.Modify)
	}
	return nil
}

func modifyParams(m *v1alpha1.ModifyRequest) map[string]any {
	out := map[string]any{}
	if m == nil {
		return out
	}
	if m.VnfInstanceName != nil {
		out["vnfInstanceName"] = *m.VnfInstanceName
	}
	if m.VnfInstanceDescription != nil {
		out["vnfInstanceDescription"] = *m.VnfInstanceDescription
	}
	if m.VnfdID != "" {
		out["vnfdId"] = m.VnfdID
	}
	if len(m.Inputs) > 0 {
		out["vnfConfigurableProperties"] = m.Inputs
	}
	if len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	return out
}

// listOccurrences answers the namespace's occurrences: filtered, selected, paged.
func (s *Server) listOccurrences(r *request) (int, any, error) {
	q, err := parseQuery(r, occurrenceShape)
	if err != nil {
		return 0, nil, err
	}
	list := &v1alpha1.OperationList{}
	if err := r.client.List(r.Context(), list, client.InNamespace(r.caller.Namespace)); err != nil {
		return 0, nil, err
	}
	ops := list.Items[:0]
	for _, op := range list.Items {
		if isOccurrence(&op) {
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	base := r.base(s)
	return q.page(r, s, len(ops), func(i int) (string, any) { return ops[i].Name, occurrenceView(base, &ops[i]) })
}

func (s *Server) showOccurrence(r *request) (int, any, error) {
	op, err := r.occurrence(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, occurrenceView(r.base(s), op), nil
}

// occurrence reads an occurrence of the caller's namespace (404 for CUSTOM operations and
// hooks, which SOL003 does not know).
func (r *request) occurrence(id string) (*v1alpha1.Operation, error) {
	op := &v1alpha1.Operation{}
	err := r.client.Get(r.Context(), client.ObjectKey{Namespace: r.caller.Namespace, Name: id}, op)
	if apierrors.IsNotFound(err) || err == nil && !isOccurrence(op) {
		return nil, sol013.Errorf(http.StatusNotFound, "there is no VNF LCM operation occurrence %q in namespace %s", id, r.caller.Namespace)
	}
	return op, err
}

// decisions are the task resources of an occurrence.
func (s *Server) decisions() map[string]handlerFunc {
	return map[string]handlerFunc{"retry": s.retry, "rollback": s.rollback, "fail": s.fail, "cancel": s.cancel}
}

func (s *Server) retry(r *request) (int, any, error) {
	return s.decide(r, "retry", func(op *v1alpha1.Operation) error {
		if op.Status.OperationState != v1alpha1.StateFailedTemp {
			return notInState(op, "retry", "FAILED_TEMP")
		}
		if op.Spec.Retries > op.Status.Retries {
			return sol013.Errorf(http.StatusConflict, "a retry of the occurrence %s is already asked for and not started yet", op.Name)
		}
		op.Spec.Retries++
		return nil
	}, http.StatusAccepted)
}

func (s *Server) rollback(r *request) (int, any, error) {
	return s.decide(r, "rollback", func(op *v1alpha1.Operation) error {
		if op.Status.OperationState != v1alpha1.StateFailedTemp {
			return notInState(op, "rollback", "FAILED_TEMP")
		}
		if !rollbackable[op.Spec.Type] {
			return sol013.Errorf(http.StatusConflict, "a %s occurrence cannot be rolled back", sol003Operations[op.Spec.Type])
		}
		op.Spec.Resolution = v1alpha1.ResolutionRollback
		return nil
	}, http.StatusAccepted)
}

func (s *Server) fail(r *request) (int, any, error) {
	return s.decide(r, "fail", func(op *v1alpha1.Operation) error {
		if op.Status.OperationState != v1alpha1.StateFailedTemp {
			return notInState(op, "fail", "FAILED_TEMP")
		}
		op.Spec.Resolution = v1alpha1.ResolutionFail
		return nil
	}, http.StatusOK)
}

type cancelRequest struct {
	CancelMode string `json:"cancelMode"`
}

func (s *Server) cancel(r *request) (int, any, error) {
	var req cancelRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	mode := v1alpha1.CancelMode(req.CancelMode)
	if mode != v1alpha1.CancelGraceful && mode != v1alpha1.CancelForceful {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "cancelMode must be GRACEFUL or FORCEFUL, not %q", req.CancelMode)
	}
	return s.decide(r, "cancel", func(op *v1alpha1.Operation) error {
		switch state := op.Status.OperationState; {
		case op.Spec.Cancel != "":
			return sol013.Errorf(http.StatusConflict, "the occurrence %s is already being cancelled", op.Name)
		case state != "" && state != v1alpha1.StateStarting && state != v1alpha1.StateProcessing && state != v1alpha1.StateRollingBack:
			return notInState(op, "cancel", "STARTING, PROCESSING or ROLLING_BACK")
		}
		op.Spec.Cancel = mode
		return nil
	}, http.StatusAccepted)
}

func notInState(op *v1alpha1.Operation, what, want string) error {
	return sol013.Errorf(http.StatusConflict, "the occurrence %s is %s: %s applies only while it is %s", op.Name, op.Status.OperationState, what, want)
}

// decide changes an occurrence's spec as a decision asks, against the version read (a
// conflict is a 409); a fail answers the occurrence, the others nothing.
func (s *Server) decide(r *request, what string, change func(*v1alpha1.Operation) error, status int) (int, any, error) {
	if what != "cancel" {
		var empty map[string]json.RawMessage
		if err := r.decode(&empty); err != nil {
			return 0, nil, err
		}
	}
	op, err := r.occurrence(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if err := change(op); err != nil {
		return 0, nil, err
	}
	if err := r.client.Update(r.Context(), op); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return 0, nil, sol013.Errorf(http.StatusConflict, "the occurrence %s changed meanwhile: %s was not applied; read it and ask again", op.Name, what)
		}
		return 0, nil, err
	}
	if status == http.StatusOK {
		return status, occurrenceView(r.base(s), r.awaitFinal(op)), nil
	}
	return status, nil, nil
}

// failWait bounds how long a fail's answer waits for the operator to carry it out.
const failWait = 15 * time.Second

// awaitFinal waits (a while) until the operator carried out the decision on an occurrence
// — SOL003 answers a fail with the occurrence FAILED — and returns it as it then is.
func (r *request) awaitFinal(op *v1alpha1.Operation) *v1alpha1.Operation {
	ctx, cancel := context.WithTimeout(r.Context(), failWait)
	defer cancel()
	for {
		current := &v1alpha1.Operation{}
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(op), current); err == nil {
			op = current
			if op.Status.OperationState.Final() {
				return op
			}
		}
		select {
		case <-ctx.Done():
			return op
		case <-time.After(200 * time.Millisecond):
		}
	}
}
