package policy

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// baselineCapabilities are the capabilities Kubernetes' baseline Pod Security Standard
// lets a container add.
var baselineCapabilities = map[string]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true,
	"MKNOD": true, "NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true, "SYS_CHROOT": true,
}

// podRefusals finds, anywhere in an object — pod templates of the built-in workloads and
// of custom kinds alike, PersistentVolumes — what reaches into the node: privileged
// containers, host namespaces and ports, hostPath volumes; each is refused unless the
// policy allows it for the namespace. The data of ConfigMaps and Secrets is text, never
// looked at.
func (p *Policy) podRefusals(obj *unstructured.Unstructured, namespace string) []string {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "ConfigMap", "Secret":
		return nil
	}
	s := &podScan{allowed: p.Namespaces[namespace], namespace: namespace}
	s.walk(obj.Object, nil)
	sort.Strings(s.refusals)
	return s.refusals
}

// podScan walks an object for what reaches into the node.
type podScan struct {
	allowed   Exceptions
	namespace string
	refusals  []string
}

func (s *podScan) refuse(at []string, format string, args ...any) {
	s.refusals = append(s.refusals, fieldPath(at)+": "+fmt.Sprintf(format, args...)+fmt.Sprintf(" in namespace %q", s.namespace))
}

func (s *podScan) walk(value any, at []string) {
	switch v := value.(type) {
	case map[string]any:
		s.check(v, at)
		for _, key := range sortedKeys(v) {
			s.walk(v[key], append(at, key))
		}
	case []any:
		for i, item := range v {
			s.walk(item, append(at, fmt.Sprintf("[%d]", i)))
		}
	}
}

// check looks at the fields of one map that reach into the node.
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
	if hostPath, ok := m["hostPath"].(map[string]any); ok {
		p, _ := hostPath["path"].(string)
		if !s.hostPathAllowed(p) {
			s.refuse(append(at, "hostPath"), "hostPath volumes are not allowed (path %q)", p)
		}
	}
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

func sortedKeys(m map[string]any) []string {
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
