package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"calaf.io/calaf/tosca"
)

// crdKind is the kind of the objects that define kinds of their own.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// definedKinds are the kinds the CustomResourceDefinitions of a render define, by group:
// each kind with the versions its definition serves.
type definedKinds map[string]map[string][]string

// packageKinds collects the kinds that the CustomResourceDefinitions among the objects of
// a render define. A definition that does not decode defines nothing (its own checks
// report it).
func packageKinds(nodes []*Node) definedKinds {
	kinds := definedKinds{}
	for _, node := range nodes {
		for _, obj := range node.Objects {
			if obj.GroupVersionKind().GroupKind() != crdKind {
				continue
			}
			data, err := json.Marshal(obj.Object)
			var crd apiextensionsv1.CustomResourceDefinition
			if err != nil || json.Unmarshal(data, &crd) != nil || crd.Spec.Group == "" || crd.Spec.Names.Kind == "" {
				continue
			}
			if kinds[crd.Spec.Group] == nil {
				kinds[crd.Spec.Group] = map[string][]string{}
			}
			for _, version := range crd.Spec.Versions {
				if version.Served {
					kinds[crd.Spec.Group][crd.Spec.Names.Kind] = append(kinds[crd.Spec.Group][crd.Spec.Names.Kind], version.Name)
				}
			}
		}
	}
	return kinds
}

// validateIdentity returns what the API server would refuse of an object's identity alone:
// an apiVersion that is no group/version, a group, version or kind of the wrong syntax
// (the rules of CustomResourceDefinitions, which every kind follows), a kind or version
// that a built-in group does not have (client-go's scheme of Kubernetes' own kinds), or
// that the package's own CustomResourceDefinition of the group does not define or serve.
// Kinds of other groups are the cluster's to know.
func validateIdentity(obj *unstructured.Unstructured, defined definedKinds) []string {
	apiVersion, kind := obj.GetAPIVersion(), obj.GetKind()
	gv, problem := parseGroupVersion(apiVersion)
	if problem != "" {
		return []string{fmt.Sprintf("apiVersion %s: %s", tosca.Echo(apiVersion), problem)}
	}
	if len(validation.IsDNS1035Label(strings.ToLower(kind))) > 0 {
		return []string{fmt.Sprintf("kind %s: a kind is a word of letters and digits that starts with a letter (ConfigMap, StatefulSet)", tosca.Echo(kind))}
	}
	gvk := gv.WithKind(kind)
	if clientgoscheme.Scheme.IsGroupRegistered(gv.Group) {
		return builtInKind(gvk)
	}
	if kinds, ok := defined[gv.Group]; ok {
		return definedKind(gvk, kinds)
	}
	return nil
}

// parseGroupVersion reads an apiVersion: "version" (the core group) or "group/version",
// the group a DNS subdomain and the version a DNS label, as the API server serves them.
func parseGroupVersion(apiVersion string) (schema.GroupVersion, string) {
	group, version, grouped := strings.Cut(apiVersion, "/")
	if !grouped {
		group, version = "", apiVersion
	}
	if strings.Contains(version, "/") || (grouped && group == "") || version == "" {
		return schema.GroupVersion{}, `it is no version ("v1") nor group/version ("apps/v1")`
	}
	if grouped {
		if problems := validation.IsDNS1123Subdomain(group); len(problems) > 0 {
			return schema.GroupVersion{}, fmt.Sprintf("group %s: %s", tosca.Echo(group), problems[0])
		}
	}
	if problems := validation.IsDNS1035Label(version); len(problems) > 0 {
		return schema.GroupVersion{}, fmt.Sprintf("version %s: a version is a lower-case word of letters and digits that starts with a letter (v1, v1beta1)", tosca.Echo(version))
	}
	return schema.GroupVersion{Group: group, Version: version}, ""
}

// builtInKind refuses a version or a kind that a built-in group does not have.
func builtInKind(gvk schema.GroupVersionKind) []string {
	scheme := clientgoscheme.Scheme
	gv := gvk.GroupVersion()
	if !scheme.IsVersionRegistered(gv) {
		var versions []string
		for _, v := range scheme.PrioritizedVersionsForGroup(gvk.Group) {
			versions = append(versions, v.Version)
		}
		return []string{fmt.Sprintf("apiVersion %s: %s of Kubernetes has the versions %s, not %s", tosca.Echo(gv.String()), groupName(gvk.Group), strings.Join(versions, ", "), tosca.Echo(gv.Version))}
	}
	if scheme.Recognizes(gvk) {
		return nil
	}
	problem := fmt.Sprintf("kind %s: Kubernetes has no such kind in %s", tosca.Echo(gvk.Kind), gv.String())
	if like := likeKind(gvk.Kind, scheme.KnownTypes(gv)); like != "" {
		problem += fmt.Sprintf(" (%s?)", like)
	}
	return []string{problem}
}

// definedKind refuses a kind that the package's definitions of its group do not define,
// or a version they do not serve.
func definedKind(gvk schema.GroupVersionKind, kinds map[string][]string) []string {
	versions, ok := kinds[gvk.Kind]
	if !ok {
		names := make([]string, 0, len(kinds))
		for name := range kinds {
			names = append(names, name)
		}
		slices.Sort(names)
		return []string{fmt.Sprintf("kind %s: the package's CustomResourceDefinitions of %s define %s only", tosca.Echo(gvk.Kind), gvk.Group, strings.Join(names, ", "))}
	}
	if !slices.Contains(versions, gvk.Version) {
		return []string{fmt.Sprintf("apiVersion %s: the package's CustomResourceDefinition serves %s in %s only", tosca.Echo(gvk.GroupVersion().String()), gvk.Kind, strings.Join(versions, ", "))}
	}
	return nil
}

func groupName(group string) string {
	if group == "" {
		return "the core group"
	}
	return "the group " + group
}

// likeKind returns the known kind that differs from kind in case only, or by one letter.
func likeKind[T any](kind string, known map[string]T) string {
	var like []string
	for name := range known {
		if strings.EqualFold(name, kind) || oneEditApart(name, kind) {
			like = append(like, name)
		}
	}
	slices.Sort(like)
	if len(like) == 0 {
		return ""
	}
	return like[0]
}

// oneEditApart tells whether a and b differ by one letter changed, added or removed, or
// two neighbours swapped.
func oneEditApart(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > 1 || a == b {
		return false
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	if len(a) != len(b) {
		return a[i+1:] == b[i:]
	}
	swapped := i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	return swapped || a[i+1:] == b[i+1:]
}
