package nfvapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/nfvapi/sol013"
)

// annotationOccurrence on a Service names the last occurrence the NFV API started for it:
// replicas take turns through it (an update with the Service's resourceVersion), so two
// tasks on one instance cannot both start.
const annotationOccurrence = "calaf.io/nfv-occurrence"

// tasks are the task resources of a VNF instance, by path.
func (s *Server) tasks() map[string]handlerFunc {
	return map[string]handlerFunc{
		"instantiate": s.instantiate, "terminate": s.terminate, "scale": s.scale, "scale_to_level": s.scaleToLevel,
		"heal": s.heal, "operate": s.operate, "change_vnfpkg": s.changeVnfPkg, "change_flavour": s.changeFlavour,
		"change_ext_conn": notServed("changing external connectivity"), "create_snapshot": notServed("snapshots"),
		"revert_to_snapshot": notServed("snapshots"),
	}
}

func notServed(what string) handlerFunc {
	return func(r *request) (int, any, error) {
		return 0, nil, sol013.Errorf(http.StatusNotImplemented, "%s is not available on this VNFM (docs/nfv-api.md lists what is)", what)
	}
}

// instantiateVnfRequest is SOL003's InstantiateVnfRequest, the members Calaf reads.
type instantiateVnfRequest struct {
	FlavourID            string                     `json:"flavourId"`
	InstantiationLevelID string                     `json:"instantiationLevelId"`
	ExtVirtualLinks      []json.RawMessage          `json:"extVirtualLinks"`
	AdditionalParams     map[string]json.RawMessage `json:"additionalParams"`
	VimConnectionInfo    json.RawMessage            `json:"vimConnectionInfo"`
}

func (s *Server) instantiate(r *request) (int, any, error) {
	var req instantiateVnfRequest
	svc, err := r.taskTarget(&req, v1alpha1.NotInstantiated)
	if err != nil {
		return 0, nil, err
	}
	spec := &v1alpha1.InstantiateRequest{FlavourID: req.FlavourID, InstantiationLevelID: req.InstantiationLevelID,
		AdditionalParams: rawMap(req.AdditionalParams)}
	for _, link := range req.ExtVirtualLinks {
		spec.ExtVirtualLinks = append(spec.ExtVirtualLinks, apiextensionsv1.JSON{Raw: link})
	}
	target, err := r.vimTarget(svc, req.VimConnectionInfo)
	if err != nil {
		return 0, nil, err
	}
	return r.startOccurrenceWith(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate, Instantiate: spec}, target)
}

// vimTarget stores the Kubernetes VIM of an instantiate request's vimConnectionInfo in a
// Secret of the Service's (written as the caller, owned by the Service) and returns the
// change that deploys the Service into it (spec.kubeConfig), made with the instance's
// turn; nil when the request names no VIM but the VNFM's own. The Secret is named after
// its content, so that the caller needs only to create Secrets, as an NFVO's Role
// allows, never to read or overwrite one. A VIM that cannot be used is a 422 saying why,
// never its credentials.
func (r *request) vimTarget(svc *v1alpha1.Service, raw json.RawMessage) (func(*v1alpha1.Service), error) {
	vim, err := kubeconfig.FromVimConnectionInfo(raw)
	switch {
	case errors.Is(err, kubeconfig.ErrNoVIM):
		return nil, nil
	case err != nil:
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	secret := vim.Secret(svc.Namespace, svc.Name)
	sum := sha256.Sum256(append([]byte(vim.VimID+"\x00"), vim.Kubeconfig...))
	secret.Name = vimSecretName(svc.Name, hex.EncodeToString(sum[:5]))
	if err := controllerutil.SetOwnerReference(svc, secret, r.client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.client.Create(r.Context(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("storing the VIM's kubeconfig in Secret %s: %w", secret.Name, err)
	}
	return func(turn *v1alpha1.Service) {
		turn.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: secret.Name, Key: kubeconfig.SecretKey}}
	}, nil
}

// vimSecretName is the name of the Secret of a VIM of a Service: "<service>-vim-<digest
// of the VIM>", the Service's name cut to fit.
func vimSecretName(service, digest string) string {
	suffix := "-vim-" + digest
	if len(service)+len(suffix) > 253 {
		service = strings.TrimRight(service[:253-len(suffix)], "-.")
	}
	return service + suffix
}

type terminateVnfRequest struct {
	TerminationType            string `json:"terminationType"`
	GracefulTerminationTimeout int32  `json:"gracefulTerminationTimeout"`
}

func (s *Server) terminate(r *request) (int, any, error) {
	var req terminateVnfRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	t := v1alpha1.TerminationType(req.TerminationType)
	if t != v1alpha1.TerminationForceful && t != v1alpha1.TerminationGraceful {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "terminationType must be FORCEFUL or GRACEFUL, not %q", req.TerminationType)
	}
	if req.GracefulTerminationTimeout < 0 || req.GracefulTerminationTimeout > 86400 {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "gracefulTerminationTimeout must lie within 0 and 86400 seconds")
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate,
		Terminate: &v1alpha1.TerminateRequest{TerminationType: t, GracefulTerminationTimeout: req.GracefulTerminationTimeout, KeepInstance: true}})
}

type scaleVnfRequest struct {
	Type             string                     `json:"type"`
	AspectID         string                     `json:"aspectId"`
	NumberOfSteps    *int32                     `json:"numberOfSteps"`
	AdditionalParams map[string]json.RawMessage `json:"additionalParams"`
}

func (s *Server) scale(r *request) (int, any, error) {
	var req scaleVnfRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	dir := v1alpha1.ScaleDirection(req.Type)
	steps := int32(1)
	if req.NumberOfSteps != nil {
		steps = *req.NumberOfSteps
	}
	switch {
	case dir != v1alpha1.ScaleOut && dir != v1alpha1.ScaleIn:
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "type must be SCALE_OUT or SCALE_IN, not %q", req.Type)
	case req.AspectID == "":
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "aspectId is required")
	case steps < 1 || steps > 1000:
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "numberOfSteps must lie within 1 and 1000")
	}
	if err := checkScale(svc, req.AspectID, dir, steps); err != nil {
		return 0, nil, err
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationScale,
		Scale: &v1alpha1.ScaleRequest{AspectID: req.AspectID, Type: dir, NumberOfSteps: steps, AdditionalParams: rawMap(req.AdditionalParams)}})
}

// checkScale refuses (422) an unknown aspect, or steps past its bounds, when the
// Service's status says its aspects.
func checkScale(svc *v1alpha1.Service, aspectID string, dir v1alpha1.ScaleDirection, steps int32) error {
	lc := svc.Status.Lifecycle
	if lc == nil || len(lc.Aspects) == 0 {
		return nil
	}
	var ids []string
	for _, a := range lc.Aspects {
		if a.AspectID != aspectID {
			ids = append(ids, a.AspectID)
			continue
		}
		level := a.ScaleLevel + steps
		if dir == v1alpha1.ScaleIn {
			level = a.ScaleLevel - steps
		}
		if level < 0 || level > a.MaxScaleLevel {
			return sol013.Errorf(http.StatusUnprocessableEntity, "aspect %s is at level %d of at most %d: %s by %d steps would take it to %d", aspectID, a.ScaleLevel, a.MaxScaleLevel, dir, steps, level)
		}
		return nil
	}
	return sol013.Errorf(http.StatusUnprocessableEntity, "the VNF instance %s has no scaling aspect %q (it has %s)", svc.Name, aspectID, strings.Join(ids, ", "))
}

type scaleToLevelRequest struct {
	InstantiationLevelID string                     `json:"instantiationLevelId"`
	ScaleInfo            []v1alpha1.ScaleInfo       `json:"scaleInfo"`
	AdditionalParams     map[string]json.RawMessage `json:"additionalParams"`
}

func (s *Server) scaleToLevel(r *request) (int, any, error) {
	var req scaleToLevelRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	if (req.InstantiationLevelID == "") == (len(req.ScaleInfo) == 0) {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "give either instantiationLevelId or scaleInfo")
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationScaleToLevel,
		ScaleToLevel: &v1alpha1.ScaleToLevelRequest{InstantiationLevelID: req.InstantiationLevelID, ScaleInfo: req.ScaleInfo, AdditionalParams: rawMap(req.AdditionalParams)}})
}

type healVnfRequest struct {
	VnfcInstanceID   []string                   `json:"vnfcInstanceId"`
	Cause            string                     `json:"cause"`
	AdditionalParams map[string]json.RawMessage `json:"additionalParams"`
}

func (s *Server) heal(r *request) (int, any, error) {
	var req healVnfRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	if len(req.VnfcInstanceID) > 64 || len(req.Cause) > 1024 {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "at most 64 vnfcInstanceIds and a cause of 1024 characters")
	}
	pods, err := r.vnfcPods(svc, req.VnfcInstanceID)
	if err != nil {
		return 0, nil, err
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationHeal,
		Heal: &v1alpha1.HealRequest{Pods: pods, Cause: req.Cause, AdditionalParams: rawMap(req.AdditionalParams)}})
}

// vnfcPods maps VNFC instance ids ("<vdu>-<pod>", or a pod's name) to the Service's pods;
// an id that is neither is refused (422).
func (r *request) vnfcPods(svc *v1alpha1.Service, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	byService, err := podsOf(r.Context(), r.client, svc.Namespace, svc.Name)
	if err != nil {
		return nil, err
	}
	known := map[string]string{}
	for _, pod := range byService[svc.Name] {
		if node := podNode(svc, &pod); node != "" {
			known[pod.Name], known[node+"-"+pod.Name] = pod.Name, pod.Name
		}
	}
	var pods []string
	for _, id := range ids {
		pod, ok := known[id]
		if !ok {
			return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the VNF instance %s has no VNFC instance %q", svc.Name, id)
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

type operateVnfRequest struct {
	ChangeStateTo string `json:"changeStateTo"`
}

func (s *Server) operate(r *request) (int, any, error) {
	var req operateVnfRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	to := v1alpha1.ChangeStateTo(req.ChangeStateTo)
	if to != v1alpha1.ChangeStateStarted && to != v1alpha1.ChangeStateStopped {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "changeStateTo must be STARTED or STOPPED, not %q", req.ChangeStateTo)
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationOperate, Operate: &v1alpha1.OperateRequest{ChangeStateTo: to}})
}

type changeVnfPkgRequest struct {
	VnfdID           string                     `json:"vnfdId"`
	AdditionalParams map[string]json.RawMessage `json:"additionalParams"`
}

// changeVnfPkg moves the instance to the package of another VNFD id; the additionalParams
// Tacker's clients send (lcm-kubernetes-def-files, helm_value_names, …) replace those of
// the instance's instantiate request, and reach the change's hooks.
func (s *Server) changeVnfPkg(r *request) (int, any, error) {
	var req changeVnfPkgRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	if req.VnfdID == "" {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "vnfdId is required")
	}
	if _, err := usablePackage(r.Context(), r.client, svc.Namespace, req.VnfdID); err != nil {
		return 0, nil, err
	}
	if upgrade, ok := req.AdditionalParams["upgrade_type"]; ok && string(upgrade) != `"RollingUpdate"` {
		return 0, nil, sol013.Errorf(http.StatusUnprocessableEntity, "upgrade_type %s is not available: a change of package is a rolling update", upgrade)
	}
	change := &v1alpha1.ChangePackageRequest{Source: v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: req.VnfdID}},
		AdditionalParams: rawMap(req.AdditionalParams)}
	if svc.Spec.Instantiate != nil || len(req.AdditionalParams) > 0 {
		instantiate := svc.Spec.Instantiate.DeepCopy()
		if instantiate == nil {
			instantiate = &v1alpha1.InstantiateRequest{}
		}
		if instantiate.AdditionalParams == nil {
			instantiate.AdditionalParams = map[string]apiextensionsv1.JSON{}
		}
		for k, v := range rawMap(req.AdditionalParams) {
			instantiate.AdditionalParams[k] = v
		}
		change.Instantiate = instantiate
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage, ChangePackage: change})
}

type changeVnfFlavourRequest struct {
	NewFlavourID         string                     `json:"newFlavourId"`
	InstantiationLevelID string                     `json:"instantiationLevelId"`
	AdditionalParams     map[string]json.RawMessage `json:"additionalParams"`
}

func (s *Server) changeFlavour(r *request) (int, any, error) {
	var req changeVnfFlavourRequest
	svc, err := r.taskTarget(&req, v1alpha1.Instantiated)
	if err != nil {
		return 0, nil, err
	}
	if req.NewFlavourID == "" {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "newFlavourId is required")
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationChangeFlavour,
		ChangeFlavour: &v1alpha1.ChangeFlavourRequest{NewFlavourID: req.NewFlavourID, InstantiationLevelID: req.InstantiationLevelID, AdditionalParams: rawMap(req.AdditionalParams)}})
}

// taskTarget reads a task's request body and its instance, which must be in a state
// (409 otherwise).
func (r *request) taskTarget(body any, want v1alpha1.InstantiationState) (*v1alpha1.Service, error) {
	if err := r.decode(body); err != nil {
		return nil, err
	}
	svc, err := r.service(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if state := instantiationState(svc); state != want {
		return nil, sol013.Errorf(http.StatusConflict, "the VNF instance %s is %s; this task needs it %s", svc.Name, state, want)
	}
	if !svc.DeletionTimestamp.IsZero() {
		return nil, sol013.Errorf(http.StatusConflict, "the VNF instance %s is being deleted", svc.Name)
	}
	return svc, nil
}

// startOccurrence creates the occurrence of a task on a Service: 409 while another one
// of the instance is in progress; 202 with its Location.
func (r *request) startOccurrence(s *Server, svc *v1alpha1.Service, spec v1alpha1.OperationSpec) (int, any, error) {
	return r.startOccurrenceWith(s, svc, spec, nil)
}

// startOccurrenceWith is startOccurrence with a change of the Service made with the
// instance's turn (nil: none).
func (r *request) startOccurrenceWith(s *Server, svc *v1alpha1.Service, spec v1alpha1.OperationSpec, change func(*v1alpha1.Service)) (int, any, error) {
	if busy, err := r.activeOccurrence(s, svc); err != nil || busy != "" {
		return 0, nil, orConflict(err, svc, busy)
	}
	spec.ServiceName = svc.Name
	op := &v1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: occurrencePrefix(svc.Name, spec.Type), Namespace: svc.Namespace,
			Labels: map[string]string{v1alpha1.LabelService: svc.Name}},
		Spec: spec,
	}
	turn, err := r.takeTurn(s, svc, change)
	if err != nil {
		return 0, nil, err
	}
	if err := r.client.Create(r.Context(), op); err != nil {
		return 0, nil, err
	}
	patch := client.MergeFrom(turn.DeepCopy())
	turn.Annotations[annotationOccurrence] = op.Name
	_ = r.client.Patch(r.Context(), turn, patch)
	r.header.Set("Location", r.base(s)+"/vnflcm/v2/vnf_lcm_op_occs/"+op.Name)
	return http.StatusAccepted, nil, nil
}

// takeTurn takes the instance's turn (an update of the Service version read): a request
// on another replica that read the same version fails its update; one that reads the turn
// sees it taken until the occurrence is there to be found. An update refused only because
// the operator changed the Service meanwhile (its status, a finalizer) reads it again and
// tries again; a turn another request took is a 409.
func (r *request) takeTurn(s *Server, svc *v1alpha1.Service, change func(*v1alpha1.Service)) (*v1alpha1.Service, error) {
	var turn *v1alpha1.Service
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if turn != nil { // an earlier attempt was refused: read the Service again
			current, err := r.service(svc.Name)
			if err != nil {
				return err
			}
			if busy, err := r.activeOccurrence(s, current); err != nil || busy != "" {
				return orConflict(err, current, busy)
			}
			svc = current
		}
		turn = svc.DeepCopy()
		if turn.Annotations == nil {
			turn.Annotations = map[string]string{}
		}
		turn.Annotations[annotationOccurrence] = pendingPrefix + s.cfg.Now().UTC().Format(time.RFC3339)
		if change != nil {
			change(turn)
		}
		return r.client.Update(r.Context(), turn)
	})
	if apierrors.IsConflict(err) {
		return nil, sol013.Errorf(http.StatusConflict, "another request on the VNF instance %s is being carried out; ask again", svc.Name)
	}
	return turn, err
}

// pendingPrefix marks a turn taken whose occurrence is being created; a turn older than
// pendingTurn was abandoned (its request failed).
const (
	pendingPrefix = "pending@"
	pendingTurn   = 30 * time.Second
)

// activeOccurrence names a lifecycle occurrence of the Service that is not over, or a turn
// another request took a moment ago ("" when none).
func (r *request) activeOccurrence(s *Server, svc *v1alpha1.Service) (string, error) {
	list := &v1alpha1.OperationList{}
	if err := r.client.List(r.Context(), list, client.InNamespace(svc.Namespace)); err != nil {
		return "", err
	}
	for _, op := range list.Items {
		if op.Spec.ServiceName == svc.Name && isOccurrence(&op) && !op.Status.OperationState.Final() {
			return op.Name, nil
		}
	}
	if at, ok := strings.CutPrefix(svc.Annotations[annotationOccurrence], pendingPrefix); ok {
		if t, err := time.Parse(time.RFC3339, at); err == nil && s.cfg.Now().Sub(t) < pendingTurn {
			return "one being created", nil
		}
	}
	return "", nil
}

// isOccurrence tells an operation occurrence SOL003 knows of (not a CUSTOM operation, not
// a hook of another occurrence).
func isOccurrence(op *v1alpha1.Operation) bool {
	return op.Spec.Type != v1alpha1.OperationCustom && op.Spec.Type != "" && op.Labels[v1alpha1.LabelOccurrence] == ""
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

func occurrencePrefix(service string, t v1alpha1.OperationType) string {
	prefix := strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(service+"-"+string(t)), "-"), "-")
	if len(prefix) > 50 {
		prefix = strings.TrimRight(prefix[:50], "-")
	}
	return prefix + "-"
}

// rawMap keeps free-form JSON members as they came.
func rawMap(m map[string]json.RawMessage) map[string]apiextensionsv1.JSON {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]apiextensionsv1.JSON, len(m))
	for k, v := range m {
		out[k] = apiextensionsv1.JSON{Raw: v}
	}
	return out
}
