package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
	sourcepkg "calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// scope is what the phases of one reconcile share.
type scope struct {
	Service *v1alpha1.Service
	// access is how the Service's objects are read and written (identity.go).
	access *access
	Log    logr.Logger
	Inputs map[string]any
	// Redact hides the values read from the Service's inputsFrom Secrets.
	Redact *redact.Secrets
	// secretInputs names the inputs whose value came from a Secret.
	secretInputs map[string]bool
	Artifact     *sourcepkg.Artifact
	// Compiled is the compiled package; nil when the render was cached (ensureCompiled).
	Compiled *tosca.Compiled
	Result   *render.Result
	// compileKey and compileOpts identify the compile of the Service's package and
	// inputs; facts are what the reconcile needs of it.
	compileKey  string
	compileOpts tosca.CompileOptions
	facts       compiledFacts
	// cachedRender is the render found in the renderer's cache before any compile.
	cachedRender *render.Result
	// fresh: the Service was never reconciled as far as fetching its package (nothing of
	// it was compiled or saved yet).
	fresh bool
	// Instantiate is the Service's ETSI instantiate request, if any.
	Instantiate *etsi.Request
	// Attributes observed this reconcile, by node and name.
	Attributes map[string]map[string]any
	// renderedWith are the attributes the objects were rendered with (those in status at
	// the start of the reconcile).
	renderedWith map[string]map[string]any
	// Live objects read this reconcile, by node, keyed "Kind/name".
	Live map[string]map[string]*unstructured.Unstructured
	// Healthy nodes: their objects are current (and their operations done).
	Healthy map[string]bool
	// RequeueAfter, when set, asks for an earlier reconcile than the interval.
	RequeueAfter time.Duration
	// nodes are the node statuses the reconcile started with, by name.
	nodes map[string]*v1alpha1.NodeStatus
	// passed records what the phases achieved, for the conditions (service_status.go).
	passed passed
	// stateDone receives the outcome of the state Secret's write (saveState).
	stateDone chan error
	// settling: this reconcile applied changes, or found the cache behind its last
	// apply, and all that is not ready waits only for the controllers of its objects (or
	// the cache) to observe them (reconcileDeploy).
	settling bool
	// unseen: the cache has not caught up with some objects of this process's last apply
	// (applyResult.unseen).
	unseen bool
	// changes are what the applies changed, one line per object ("ConfigMap/x created"):
	// said in an event with the status that reports them (recordEvents).
	changes []string
}

// newScope returns an empty scope for one reconcile of svc.
func newScope(ctx context.Context, svc *v1alpha1.Service) *scope {
	return &scope{
		Service:    svc,
		Log:        ctrl.LoggerFrom(ctx),
		Redact:     redact.New(),
		Attributes: map[string]map[string]any{},
		Live:       map[string]map[string]*unstructured.Unstructured{},
		Healthy:    map[string]bool{},
	}
}

// requeue asks for a reconcile after d at the latest.
func (s *scope) requeue(d time.Duration) {
	if d > 0 && (s.RequeueAfter == 0 || d < s.RequeueAfter) {
		s.RequeueAfter = d
	}
}

// phase is one stage of a reconcile; it returns a *phaseError on failure.
type phase func(ctx context.Context, s *scope) error

// reconcile runs the phases in order until one fails, then sets the conditions from what
// they achieved and decides the requeue (service_status.go); a held status goes back to
// started, the status the reconcile began with. It returns what the applies changed, for
// the events of the status patch that follows (those of a held patch wait with it).
// Nothing already running is touched before the new revision is known good.
func (r *ServiceReconciler) reconcile(ctx context.Context, svc *v1alpha1.Service, started *v1alpha1.ServiceStatus) (ctrl.Result, []string, error) {
	s := newScope(ctx, svc)
	s.fresh = svc.Status.LastAttemptedRevision == "" && !r.settled.held(svc)
	if svc.Annotations[v1alpha1.ReconcileRequestAnnotation] != "" {
		svc.Status.LastHandledReconcileAt = svc.Annotations[v1alpha1.ReconcileRequestAnnotation]
	}
	phases := []phase{r.reconcileAccess, r.reconcileSource, r.reconcileCompile, r.reconcileTarget, r.reconcileRender, r.reconcileLifecycleStatus, r.reconcileDeploy, r.reconcilePrune, r.reconcileOutputs, r.reconcileVNFStatus}
	if delegated(svc) {
		phases = r.delegatedPhases()
	}
	var err error
	for _, run := range phases {
		if err = run(ctx, s); err != nil {
			break
		}
	}
	err = targetFailure(s.access, err)
	if saveErr := s.stateSaved(); saveErr != nil && err == nil {
		err = newPhaseError(v1alpha1.ConditionCompiled, v1alpha1.ReasonInternalError, retry, saveErr)
	}
	result, err := r.finish(s, err)
	if err == nil && r.holdStatus(s, time.Now()) {
		// The controllers' first look follows in moments, with an event that reconciles
		// the Service again: one status patch says Applied and Ready together, not
		// Progressing first, and one event says what was applied and that it is ready.
		// Once per generation, and again while the cache is behind the last apply (a
		// loaded API server, for maxHold at most); checked again after the settle delay
		// at the latest.
		svc.Status = *started.DeepCopy()
		return ctrl.Result{RequeueAfter: r.settleDelay()}, nil, nil
	}
	return result, r.settled.release(svc, s.changes), err
}

// holdStatus tells whether the status patch of a reconcile that applied changes is held
// for the objects' controllers to look at them, and if so records that it was (settled).
func (r *ServiceReconciler) holdStatus(s *scope, now time.Time) bool {
	if r.SettleDelay < 0 || !s.settling {
		return false
	}
	return r.settled.hold(s.Service, s.Service.Status.Inventory, s.changes, s.unseen, now)
}

// settleDelay bounds how long a Service's status waits for its objects' controllers to
// observe them (a held status patch, settled): SettleDelay, 2 s by default.
func (r *ServiceReconciler) settleDelay() time.Duration {
	if r.SettleDelay > 0 {
		return r.SettleDelay
	}
	return 2 * time.Second
}

// settled remembers, per Service, the generation whose status patch was held, so that
// it is held once, and the inventory that patch would have written: until the status
// the operator reads says it, it is the only record of what the held reconcile created.
type settled struct {
	mu       sync.Mutex
	services map[string]*heldPatch // by Service UID
}

// maxHold bounds how long a status patch is held again while the cache is behind the
// operator's last apply: then it says what it knows.
const maxHold = 30 * time.Second

// heldPatch is what a held status patch left unsaid.
type heldPatch struct {
	generation int64
	// since is when the generation's patch was first held.
	since time.Time
	// inventory is the last inventory held or written, until a status read says it.
	inventory []v1alpha1.InventoryEntry
	// changes are what the held reconcile applied, until the next reconcile says them.
	changes []string
}

// held tells whether a Service's status patch was held (its status does not say yet what
// the reconcile did: its package was fetched and compiled, its state written).
func (h *settled) held(svc *v1alpha1.Service) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.services[string(svc.UID)]
	return ok
}

// hold tells whether a Service's status patch may be held now, and if so records that it
// was, with the inventory the reconcile reached and what it changed: once per generation,
// and again (unseen: the cache is behind the last apply) until maxHold after the first.
func (h *settled) hold(svc *v1alpha1.Service, inventory []v1alpha1.InventoryEntry, changes []string, unseen bool, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.services == nil {
		h.services = map[string]*heldPatch{}
	}
	previous, ok := h.services[string(svc.UID)]
	since := now
	if ok && previous.generation == svc.Generation {
		if !unseen || now.Sub(previous.since) >= maxHold {
			return false
		}
		since = previous.since
	}
	var unsaid []string // a held patch not released yet
	if ok {
		unsaid = previous.changes
	}
	h.services[string(svc.UID)] = &heldPatch{generation: svc.Generation, since: since, inventory: slices.Clone(inventory), changes: append(slices.Clone(unsaid), changes...)}
	return true
}

// release returns what a held reconcile of svc changed, then changes, and forgets the
// former: the reconcile after a held one says both.
func (h *settled) release(svc *v1alpha1.Service, changes []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.services[string(svc.UID)]
	if !ok || len(held.changes) == 0 {
		return changes
	}
	all := append(held.changes, changes...)
	held.changes = nil
	return all
}

// restore adds to svc's status the remembered inventory entries it lacks (the objects a
// held reconcile created, or a status read from a cache behind the last patch), so that
// this reconcile prunes or deletes them too. Once a status says them all, they are
// forgotten.
func (h *settled) restore(svc *v1alpha1.Service) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.services[string(svc.UID)]
	if !ok || held.inventory == nil {
		return
	}
	recorded := indexInventory(svc.Status.Inventory).known
	var missing []v1alpha1.InventoryEntry
	for _, entry := range held.inventory {
		if !recorded[entry.ID] {
			missing = append(missing, entry)
		}
	}
	if len(missing) == 0 {
		held.inventory = nil
		return
	}
	svc.Status.Inventory = append(svc.Status.Inventory, missing...)
}

// remember records svc's inventory, after a status patch that wrote it or failed, while
// entries are remembered: until a status read says them.
func (h *settled) remember(svc *v1alpha1.Service) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if held, ok := h.services[string(svc.UID)]; ok && held.inventory != nil {
		held.inventory = slices.Clone(svc.Status.Inventory)
		if held.inventory == nil {
			held.inventory = []v1alpha1.InventoryEntry{}
		}
	}
}

// forget drops what was remembered of a Service (deleted).
func (h *settled) forget(svc *v1alpha1.Service) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.services, string(svc.UID))
}

// saveState writes the compiled package into the Service's state Secret while the
// reconcile goes on (beside the applies: one round trip less before they start);
// stateSaved waits for it.
func (s *scope) saveState(ctx context.Context, r *ServiceReconciler, compiled *tosca.Compiled) {
	owner, done := s.Service.DeepCopy(), make(chan error, 1)
	go func() { done <- r.saveState(ctx, owner, compiled) }()
	s.stateDone = done
}

// stateSaved waits for the state Secret's write, if one was started, and returns its
// error.
func (s *scope) stateSaved() error {
	if s.stateDone == nil {
		return nil
	}
	err := <-s.stateDone
	s.stateDone = nil
	return err
}

// reconcileSource fetches the package.
func (r *ServiceReconciler) reconcileSource(ctx context.Context, s *scope) error {
	artifact, err := r.Fetcher.Fetch(ctx, s.Service)
	if err != nil {
		return classifyFetch(err)
	}
	s.Artifact = artifact
	svc := s.Service
	svc.Status.LastAttemptedRevision = artifact.Revision
	pkgStatus := &v1alpha1.PackageStatus{Revision: artifact.Revision, Digest: artifact.Package.Digest, Entry: artifact.Package.Entry,
		Signer: artifact.Signer, Verification: artifact.Verification}
	if svc.Status.Package != nil && svc.Status.Package.Digest == pkgStatus.Digest {
		pkgStatus.TemplateName, pkgStatus.TemplateVersion = svc.Status.Package.TemplateName, svc.Status.Package.TemplateVersion
	}
	r.warnUnverified(svc, svc.Status.Package, pkgStatus)
	svc.Status.Package = pkgStatus
	s.passed.revision = artifact.Revision
	if v := artifact.Verification; v != nil && v.Mode != "Off" {
		s.passed.verification = v.Message
	}
	return nil
}

// warnUnverified records a Warning Event when a package deployed under the Warn policy
// failed its verification: once per revision and finding (a resync sends nothing).
func (r *ServiceReconciler) warnUnverified(svc *v1alpha1.Service, before, now *v1alpha1.PackageStatus) {
	v := now.Verification
	if r.Recorder == nil || v == nil || v.Mode != string(v1alpha1.VerifyWarn) || v.Verified {
		return
	}
	if before != nil && before.Digest == now.Digest && before.Verification != nil && before.Verification.Message == v.Message {
		return
	}
	r.Recorder.Eventf(svc, nil, "Warning", "SignatureNotVerified", "Verify", "revision %s deployed under the Warn policy: %s",
		now.Revision, text.Truncate(v.Message, 900))
}

// reconcileCompile resolves the inputs and makes sure the package is compiled with them,
// unless the render this reconcile needs is cached: then neither a compile nor a read of
// the state Secret is needed.
func (r *ServiceReconciler) reconcileCompile(ctx context.Context, s *scope) error {
	inputs, fromSecrets, err := r.resolveInputs(ctx, s.access.local, s.Service, s.Redact)
	if err != nil {
		return err
	}
	s.Inputs, s.secretInputs = inputs, fromSecrets
	r.Secrets.Set(string(s.Service.UID), s.Redact)
	request, opts, err := instantiateRequest(s.Service)
	if err != nil {
		return err
	}
	if err := s.useTemplate(&opts); err != nil {
		return err
	}
	s.Instantiate, s.compileOpts = request, opts
	s.compileKey = tosca.CompileKey(s.Artifact.Package.Digest, inputs, opts)
	if !r.renderedBefore(s) {
		if err := r.ensureCompiled(ctx, s); err != nil {
			return err
		}
	}
	if s.facts.templateName != "" {
		s.Service.Status.Package.TemplateName, s.Service.Status.Package.TemplateVersion = s.facts.templateName, s.facts.templateVersion
	}
	s.passed.entry = s.Artifact.Package.Entry
	return nil
}

// renderedBefore tells whether the renderer still holds the render this reconcile needs
// (the attributes in status, see reconcileRender) and what the reconcile needs of the
// compiled package is known; it keeps both in the scope.
func (r *ServiceReconciler) renderedBefore(s *scope) bool {
	facts, ok := r.compiledFacts().Get(s.compileKey)
	if !ok {
		return false
	}
	result, ok := r.Renderer.Cached(s.compileKey, r.renderOptions(s, statusAttributes(s.Service)))
	if !ok {
		return false
	}
	s.facts, s.cachedRender = facts, result
	return true
}

// ensureCompiled compiles the package with the scope's inputs unless it is already: in
// the compiler's cache, bound onto the package's template, or in the state Secret (not
// read for a Service that never got that far: it has none). It starts saving the state
// when it changed, unless it was bound: one compile of the package makes it again.
func (r *ServiceReconciler) ensureCompiled(ctx context.Context, s *scope) error {
	if s.Compiled != nil {
		return nil
	}
	key := s.compileKey
	compiled, ok := r.Compiler.Bound(s.Artifact.Package, s.Inputs, s.compileOpts)
	if s.fresh {
		r.states.LoadOrStore(string(s.Service.UID), stateAbsent)
	} else if !ok {
		if compiled = r.loadState(ctx, s.Service, key, s.Artifact.Package, s.Inputs); compiled != nil {
			r.Compiler.Add(compiled)
		}
	}
	if compiled == nil {
		var err error
		if compiled, err = r.Compiler.CompileWith(ctx, s.Artifact.Package, s.Inputs, s.compileOpts); err != nil {
			return r.invalid(s, v1alpha1.ConditionCompiled, err)
		}
	}
	if compiled.Template == nil {
		s.saveState(ctx, r, compiled)
	}
	s.Compiled, s.facts = compiled, factsOf(compiled)
	r.compiledFacts().Put(key, s.facts)
	return nil
}

// invalid turns a package or inputs problem into a stall with a readable, redacted
// message (the first diagnostics).
func (r *ServiceReconciler) invalid(s *scope, condition string, err error) error {
	if !tosca.IsInvalid(err) {
		return newPhaseError(condition, v1alpha1.ReasonInternalError, retry, err)
	}
	diags := tosca.DiagnosticsOf(err)
	reason := v1alpha1.ReasonInvalidPackage
	lines := make([]string, 0, len(diags))
	for _, d := range diags {
		if strings.Contains(d.Path, "inputs[") || strings.Contains(d.Message, "input") {
			reason = v1alpha1.ReasonInvalidInputs
		}
		lines = append(lines, d.String())
	}
	if condition == v1alpha1.ConditionApplied && reason == v1alpha1.ReasonInvalidPackage {
		reason = v1alpha1.ReasonRenderFailed
	}
	const maxLines = 5
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("(and %d more problems)", len(lines)-maxLines))
	}
	return stalled(condition, reason, "%s", s.Redact.String(strings.Join(lines, "; ")))
}

// compiledFacts are what a reconcile needs of a compiled package besides its render; they
// are kept by compile key (a few strings each), so that a Service whose render is cached
// needs no compiled package.
type compiledFacts struct {
	// policyEntry is the file the render policy judges: the entry, or the flavour file
	// of a VNF package.
	policyEntry                   string
	templateName, templateVersion string
	// flavours are the deployment flavours of a VNF package.
	flavours []string
	// substitutes are the package's service templates that substitute node types
	// (substitution.go); substituteErr says why they cannot be used.
	substitutes   []tosca.Substitute
	substituteErr string
}

func factsOf(compiled *tosca.Compiled) compiledFacts {
	facts := compiledFacts{policyEntry: compiled.Package.Entry}
	if vnfd := compiled.VNFD(); vnfd != nil {
		facts.policyEntry, facts.flavours = vnfd.FlavourFile, vnfd.Flavours
	}
	facts.templateName, facts.templateVersion = templateMetadata(compiled)
	if subs, err := compiled.Package.Substitutes(); err != nil {
		facts.substituteErr = err.Error()
	} else {
		facts.substitutes = subs
	}
	return facts
}

// compiledFacts returns the facts of recent compiles, by compile key.
func (r *ServiceReconciler) compiledFacts() *lru.Cache[compiledFacts] {
	r.factsOnce.Do(func() { r.facts = lru.New[compiledFacts](4096) })
	return r.facts
}

func templateMetadata(compiled *tosca.Compiled) (string, string) {
	tosca, _ := compiled.Clout.Properties["tosca"].(map[string]any)
	metadata, _ := tosca["metadata"].(map[string]any)
	name, _ := metadata["template_name"].(string)
	version, _ := metadata["template_version"].(string)
	return name, version
}

// reconcileRender renders the objects with the attributes observed last time (so the
// render is cached while nothing changes).
func (r *ServiceReconciler) reconcileRender(ctx context.Context, s *scope) error {
	s.renderedWith = statusAttributes(s.Service)
	result := s.cachedRender
	if result == nil {
		var err error
		if result, err = r.Renderer.Render(ctx, s.Compiled, r.renderOptions(s, s.renderedWith)); err != nil {
			return r.invalid(s, v1alpha1.ConditionApplied, err)
		}
	}
	if err := r.admit(s, result); err != nil {
		return err
	}
	if err := r.authorize(ctx, s, result); err != nil {
		return err
	}
	result, err := r.substitute(s, result)
	if err != nil {
		return err
	}
	s.Result = result
	s.nodes = map[string]*v1alpha1.NodeStatus{}
	for _, old := range s.Service.Status.Nodes {
		s.nodes[old.Name] = &old
	}
	return nil
}

func (r *ServiceReconciler) renderOptions(s *scope, attributes map[string]map[string]any) render.Options {
	return render.Options{Service: s.Service.Name, Namespace: s.Service.Namespace, Attributes: attributes, Timeout: r.ScriptTimeout, Instantiate: s.Instantiate,
		Scale: scaleLevels(s.Service), Stopped: s.Service.Spec.Stopped}
}

// statusAttributes returns the attributes recorded in status, by node.
func statusAttributes(svc *v1alpha1.Service) map[string]map[string]any {
	attributes := map[string]map[string]any{}
	for _, node := range svc.Status.Nodes {
		if len(node.Attributes) == 0 {
			continue
		}
		values := map[string]any{}
		for name, raw := range node.Attributes {
			values[name] = jsonvalue.Decode(raw)
		}
		attributes[node.Name] = values
	}
	return attributes
}

// reconcileOutputs re-evaluates the outputs with the attributes observed this time: a
// render again, unless the template has no outputs or the attributes are those it was
// rendered with.
func (r *ServiceReconciler) reconcileOutputs(ctx context.Context, s *scope) error {
	result := s.Result
	hasOutputs := len(result.Outputs)+len(result.OutputErrors) > 0
	if hasOutputs && len(s.Attributes) > 0 && !sameAttributes(s.Attributes, s.renderedWith) {
		if rendered, ok := r.Renderer.Cached(s.compileKey, r.renderOptions(s, s.Attributes)); ok {
			result = rendered
		} else if r.ensureCompiled(ctx, s) == nil {
			if rendered, err := r.Renderer.Render(ctx, s.Compiled, r.renderOptions(s, s.Attributes)); err == nil {
				result = rendered
			}
		}
	}
	outputs := map[string]apiextensionsv1.JSON{}
	pending := map[string]string{}
	for name, message := range result.OutputErrors {
		pending[name] = text.Truncate(s.Redact.String(message), 256)
	}
	for name, value := range result.Outputs {
		if value == nil {
			pending[name] = "no value yet"
			continue
		}
		published, withheld := r.publishedOutput(s, result.OutputDefinitions[name], value)
		if withheld != "" {
			pending[name] = withheld
			continue
		}
		outputs[name] = jsonvalue.Encode(published)
	}
	s.Service.Status.Outputs = outputs
	if len(outputs) == 0 {
		s.Service.Status.Outputs = nil
	}
	s.Service.Status.PendingOutputs = pending
	if len(pending) == 0 {
		s.Service.Status.PendingOutputs = nil
	}
	return nil
}

// withheldSecretOutput says why an output derived from a Secret is not in status.
const withheldSecretOutput = "withheld: its value is derived from a Secret (inputsFrom); the package publishes it with the output metadata " +
	render.MetadataPublishSecret + `: "true"`

// publishedOutput returns an output's value as status publishes it, or why it is withheld.
// An output derived from a Secret — its definition reads an input that came from one, or
// its value holds one — is published only when the package marks it so
// (render.MetadataPublishSecret), and then redacted unless the cluster admin reveals such
// outputs (RevealSecretOutputs). Other outputs are published as they are.
func (r *ServiceReconciler) publishedOutput(s *scope, def render.OutputDefinition, value any) (any, string) {
	derived := slices.ContainsFunc(def.Inputs, func(input string) bool { return s.secretInputs[input] }) || s.Redact.Touches(value)
	switch {
	case !derived:
		return value, ""
	case def.Metadata[render.MetadataPublishSecret] != "true":
		return nil, withheldSecretOutput
	case r.RevealSecretOutputs:
		return value, ""
	}
	return s.Redact.Value(value), ""
}

func sameAttributes(a, b map[string]map[string]any) bool {
	return fmt.Sprint(normalize(a)) == fmt.Sprint(normalize(b))
}

func normalize(m map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for node, values := range m {
		out[node] = map[string]any{}
		for name, value := range values {
			out[node][name] = jsonvalue.Decode(jsonvalue.Encode(value))
		}
	}
	return out
}
