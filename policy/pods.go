package policy

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psa "k8s.io/pod-security-admission/api"
	pss "k8s.io/pod-security-admission/policy"
)

// PodRules are the pod part of a policy: the level of Kubernetes' Pod Security Standards
// that the pods packages render must meet.
type PodRules struct {
	// PodSecurity is the level ("privileged", "baseline" or "restricted", optionally
	// followed by ":v1.N", the Standards' version; "latest" by default) of the namespaces
	// that do not set their own in Namespaces; "baseline" when unset.
	PodSecurity string `json:"podSecurity,omitempty"`

	evaluators evaluators
}

// evaluators keeps Kubernetes' evaluators of the Standards, one for each set of checks
// lifted: making one costs far more than evaluating a pod.
type evaluators struct {
	lock   sync.Mutex
	byKeys map[string]pss.Evaluator
}

// get returns the evaluator of the Standards without the checks lifted.
func (e *evaluators) get(lifted []pss.CheckID) (pss.Evaluator, error) {
	key := fmt.Sprint(lifted)
	e.lock.Lock()
	defer e.lock.Unlock()
	if evaluator, ok := e.byKeys[key]; ok {
		return evaluator, nil
	}
	checks := slices.DeleteFunc(pss.DefaultChecks(), func(c pss.Check) bool { return slices.Contains(lifted, c.ID) })
	evaluator, err := pss.NewEvaluator(checks, nil)
	if err != nil {
		return nil, err
	}
	if e.byKeys == nil {
		e.byKeys = map[string]pss.Evaluator{}
	}
	e.byKeys[key] = evaluator
	return evaluator, nil
}

// defaultLevel is the level of a policy that sets none.
const defaultLevel = "baseline"

// parseLevel reads a level as a policy spells it: "level" or "level:version".
func parseLevel(spelled string) (psa.LevelVersion, error) {
	level, version, _ := strings.Cut(spelled, ":")
	lv := psa.LevelVersion{Version: psa.LatestVersion()}
	var err error
	if lv.Level, err = psa.ParseLevel(level); err != nil {
		return lv, err
	}
	if version != "" {
		lv.Version, err = psa.ParseVersion(version)
	}
	return lv, err
}

// checkLevels refuses a policy whose levels Kubernetes does not know; name is the file.
func (p *Policy) checkLevels(name string) error {
	if p.PodSecurity != "" {
		if _, err := parseLevel(p.PodSecurity); err != nil {
			return fmt.Errorf("render policy %s: podSecurity %q: %w", name, p.PodSecurity, err)
		}
	}
	for _, namespace := range sortedKeys(p.Namespaces) {
		if level := p.Namespaces[namespace].PodSecurity; level != "" {
			if _, err := parseLevel(level); err != nil {
				return fmt.Errorf("render policy %s: namespaces.%s.podSecurity %q: %w", name, namespace, level, err)
			}
		}
	}
	return nil
}

// levelOf returns the level the pods of a namespace's Services must meet: the
// namespace's own, else the policy's, else baseline. A level that does not parse (a
// policy not read by Parse) is restricted.
func (p *Policy) levelOf(namespace string) psa.LevelVersion {
	spelled := p.Namespaces[namespace].PodSecurity
	if spelled == "" {
		spelled = p.PodSecurity
	}
	if spelled == "" {
		spelled = defaultLevel
	}
	lv, err := parseLevel(spelled)
	if err != nil {
		return psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}
	}
	return lv
}

// lifted returns the Standards' checks a namespace's exceptions lift.
func lifted(allowed Exceptions) []pss.CheckID {
	var ids []pss.CheckID
	if allowed.Privileged {
		ids = append(ids, "privileged", "capabilities_baseline", "procMount")
	}
	if allowed.HostNamespaces {
		ids = append(ids, "hostNamespaces", "hostPorts")
	}
	if len(allowed.HostPaths) > 0 {
		ids = append(ids, "hostPathVolumes") // the paths are checked one by one instead
	}
	return ids
}

// podRefusals finds, anywhere in an object, the pods it would run — a Pod, the pod
// templates of the built-in workloads and of custom kinds alike — and refuses those that
// do not meet the namespace's Pod Security level, in the Standards' words; and, outside
// pod specs (a custom kind's, a PersistentVolume), what reaches into the node: host
// namespaces and ports, hostPath volumes, privileged containers. Services may not set
// externalIPs. The namespace's exceptions lift each of these. The data of ConfigMaps and
// Secrets is text, never looked at.
func (p *Policy) podRefusals(obj *unstructured.Unstructured, namespace string) []string {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "ConfigMap", "Secret":
		return nil
	}
	allowed := p.Namespaces[namespace]
	s := &podScan{allowed: allowed, namespace: namespace, level: p.levelOf(namespace)}
	evaluator, err := p.evaluators.get(lifted(allowed))
	if err != nil { // the Standards' own checks are invalid: nothing is admitted
		return []string{"the Pod Security Standards cannot be evaluated: " + err.Error()}
	}
	s.evaluator = evaluator
	s.externalIPs(obj)
	s.walk(obj.Object, nil)
	sort.Strings(s.refusals)
	return s.refusals
}

// podScan walks an object for the pods it runs and what reaches into the node.
type podScan struct {
	allowed   Exceptions
	namespace string
	level     psa.LevelVersion
	evaluator pss.Evaluator
	refusals  []string
}

func (s *podScan) refuse(at []string, format string, args ...any) {
	s.refusals = append(s.refusals, fieldPath(at)+": "+fmt.Sprintf(format, args...)+fmt.Sprintf(" in namespace %q", s.namespace))
}

func (s *podScan) walk(value any, at []string) {
	switch v := value.(type) {
	case map[string]any:
		if spec, ok := v["spec"].(map[string]any); ok && isPodSpec(spec) {
			s.evaluate(v, spec, append(slices.Clip(at), "spec"))
			return
		}
		s.check(v, at)
		for _, key := range sortedKeys(v) {
			s.walk(v[key], append(slices.Clip(at), key))
		}
	case []any:
		for i, item := range v {
			s.walk(item, append(slices.Clip(at), fmt.Sprintf("[%d]", i)))
		}
	}
}

// isPodSpec tells whether a map is a pod spec: it lists containers.
func isPodSpec(m map[string]any) bool {
	_, ok := m["containers"].([]any)
	return ok
}

// evaluate checks a pod — its metadata beside the spec at at — against the namespace's
// level with Kubernetes' Pod Security Standards, and its hostPath volumes against the
// paths the namespace may mount.
func (s *podScan) evaluate(pod, spec map[string]any, at []string) {
	var meta metav1.ObjectMeta
	var podSpec corev1.PodSpec
	metadata, _ := pod["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(metadata, &meta); err != nil {
		s.refuse(at, "its metadata cannot be read: %v", err)
		return
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &podSpec); err != nil {
		s.refuse(at, "not a pod spec Kubernetes can read: %v", err)
		return
	}
	result := pss.AggregateCheckResults(s.evaluator.EvaluatePod(s.level, &meta, &podSpec))
	if !result.Allowed {
		s.refuse(at, "violates PodSecurity %q: %s", s.level.String(), result.ForbiddenDetail())
	}
	if len(s.allowed.HostPaths) == 0 {
		return
	}
	volumes, _ := spec["volumes"].([]any)
	for i, volume := range volumes {
		if m, ok := volume.(map[string]any); ok {
			s.checkHostPath(m, append(slices.Clip(at), "volumes", fmt.Sprintf("[%d]", i)))
		}
	}
}

// externalIPs refuses a Service that sets external IPs: traffic to those addresses from
// any pod of the cluster would reach its endpoints (CVE-2020-8554).
func (s *podScan) externalIPs(obj *unstructured.Unstructured) {
	if obj.GroupVersionKind().GroupKind().String() != "Service" || s.allowed.ExternalIPs {
		return
	}
	ips, _, _ := unstructured.NestedSlice(obj.Object, "spec", "externalIPs")
	if len(ips) == 0 {
		return
	}
	spelled := make([]string, 0, len(ips))
	for _, ip := range ips {
		spelled = append(spelled, fmt.Sprint(ip))
	}
	s.refuse([]string{"spec", "externalIPs"}, "external IPs are not allowed (they take the traffic every pod of the cluster sends to %s: CVE-2020-8554)", strings.Join(spelled, ", "))
}

// check looks at the fields of one map, outside pod specs, that reach into the node.
func (s *podScan) check(m map[string]any, at []string) {
	if !s.allowed.HostNamespaces {
		for _, key := range []string{"hostNetwork", "hostPID", "hostIPC"} {
			if m[key] == true {
				s.refuse(append(at, key), "host namespaces are not allowed")
			}
		}
		if port, ok := m["hostPort"]; ok && nonZero(port) {
			s.refuse(append(at, "hostPort"), "host ports are not allowed")
		}
	}
	s.checkHostPath(m, at)
	if s.allowed.Privileged {
		return
	}
	if m["privileged"] == true {
		s.refuse(append(at, "privileged"), "privileged containers are not allowed")
	}
	if m["procMount"] == "Unmasked" {
		s.refuse(append(at, "procMount"), "an unmasked /proc is not allowed")
	}
	if caps, ok := m["capabilities"].(map[string]any); ok {
		add, _ := caps["add"].([]any)
		for _, c := range add {
			name, _ := c.(string)
			if !baselineCapabilities[strings.TrimPrefix(strings.ToUpper(name), "CAP_")] {
				s.refuse(append(at, "capabilities", "add"), "capability %s is not allowed (beyond Kubernetes' baseline)", name)
			}
		}
	}
}

// checkHostPath refuses a hostPath volume of a map outside the paths the namespace may
// mount.
func (s *podScan) checkHostPath(m map[string]any, at []string) {
	hostPath, ok := m["hostPath"].(map[string]any)
	if !ok {
		return
	}
	p, _ := hostPath["path"].(string)
	if !s.hostPathAllowed(p) {
		s.refuse(append(at, "hostPath"), "hostPath volumes are not allowed (path %q)", p)
	}
}

// baselineCapabilities are the capabilities Kubernetes' baseline Pod Security Standard
// lets a container add (for the kinds whose pod specs are not recognized as such).
var baselineCapabilities = map[string]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true,
	"MKNOD": true, "NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true, "SYS_CHROOT": true,
}

// hostPathAllowed tells whether the policy lets hostPath volumes mount a host path.
func (s *podScan) hostPathAllowed(p string) bool {
	clean := path.Clean("/" + p)
	for _, allowed := range s.allowed.HostPaths {
		a := path.Clean("/" + allowed)
		if a == "/" || clean == a || strings.HasPrefix(clean, a+"/") {
			return true
		}
	}
	return false
}

// nonZero tells whether a port is set: a number other than 0, or anything else.
func nonZero(v any) bool {
	switch n := v.(type) {
	case nil:
		return false
	case int64:
		return n != 0
	case int:
		return n != 0
	case float64:
		return n != 0
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func fieldPath(at []string) string {
	return strings.ReplaceAll(strings.Join(at, "."), ".[", "[")
}
