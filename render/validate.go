package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca"
)

// Size limits of rendered objects.
const (
	// MaxObjectBytes is the largest object the API server stores: etcd refuses requests
	// above 1.5 MiB.
	MaxObjectBytes = 3 << 19
	// MaxRenderBytes bounds the objects of one render together.
	MaxRenderBytes = 16 << 20
)

// ValidateObjects checks every object of a render against Kubernetes' own rules, before
// any of it reaches an API server: each is plain JSON data (no NaN, Infinity or function)
// within MaxObjectBytes, all together within MaxRenderBytes; its metadata is valid (name by
// its kind's rule, labels, annotations); a built-in kind converts to its typed form (every
// field of its type: quantities, ports, integers), and its pods and ports are checked as
// the API server checks them. Every problem is a diagnostic of the *tosca.InvalidError
// returned; the CLI and the operator call it on every render, so that what validate
// accepts is what the operator applies.
func ValidateObjects(entry string, nodes []*Node) error {
	var diags []tosca.Diagnostic
	total := 0
	defined := packageKinds(nodes)
	for _, node := range nodes {
		for _, obj := range node.Objects {
			size, problems := validateObject(obj, defined)
			total += size
			for _, problem := range problems {
				diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("node %s: %s: %s", tosca.Echo(node.Name), objectRef(obj), problem)})
			}
		}
		for _, problem := range validateAttributes(node) {
			diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("node %s: %s", tosca.Echo(node.Name), problem)})
		}
	}
	diags = append(diags, checkValues(entry, nodes)...)
	if total > MaxRenderBytes {
		diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("the objects rendered take %d bytes, more than the limit of %d MiB per package", total, MaxRenderBytes>>20)})
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	return nil
}

// validateObject returns an object's size as JSON and its problems: of its identity first
// (validateIdentity; such an object is checked no further), then of its data, size,
// metadata and typed form. An object refused for its size counts 0 towards the package's
// total, so that it is reported once.
func validateObject(obj *unstructured.Unstructured, defined definedKinds) (int, []string) {
	if problems := validateIdentity(obj, defined); len(problems) > 0 {
		return 0, problems
	}
	if problem := checkData(obj.Object, nil, 0); problem != "" {
		return 0, []string{problem}
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return 0, []string{err.Error()}
	}
	if len(data) > MaxObjectBytes {
		return 0, []string{fmt.Sprintf("%d bytes, more than the API server's limit of 1.5 MiB per object", len(data))}
	}
	problems := fieldProblems(apivalidation.ValidateObjectMetaAccessor(obj, obj.GetNamespace() != "", nameRule(obj.GroupVersionKind()), field.NewPath("metadata")))
	return len(data), append(problems, validateTyped(obj, data)...)
}

// fieldProblems words the errors of Kubernetes' validation, each value they repeat cut to
// tosca.MaxEcho characters.
func fieldProblems(errs field.ErrorList) []string {
	problems := make([]string, 0, len(errs))
	for _, e := range errs {
		if value, ok := e.BadValue.(string); ok {
			short := *e
			short.BadValue = text.Shorten(value, tosca.MaxEcho)
			e = &short
		}
		problems = append(problems, e.Error())
	}
	return problems
}

// nameRule is how the API server validates the names of a kind.
func nameRule(gvk schema.GroupVersionKind) apivalidation.ValidateNameFunc {
	switch {
	case gvk.Group == "" && gvk.Kind == "Service":
		return apivalidation.NameIsDNS1035Label
	case gvk.Group == "" && gvk.Kind == "Namespace":
		return apivalidation.NameIsDNSLabel
	case gvk.Group == "rbac.authorization.k8s.io":
		return path.ValidatePathSegmentName
	}
	return apivalidation.NameIsDNSSubdomain
}

// checkData returns why a value is not plain JSON data ("" when it is): NaN and the
// infinities are no JSON numbers, functions and other script values no data at all.
func checkData(value any, at []string, depth int) string {
	if depth > 100 {
		return where(at) + "nested more than 100 levels deep"
	}
	switch v := value.(type) {
	case nil, string, bool, int64, int, int32:
		return ""
	case float64:
		switch {
		case math.IsNaN(v):
			return where(at) + "NaN is not a JSON number"
		case math.IsInf(v, 0):
			return where(at) + "Infinity is not a JSON number"
		}
		return ""
	case map[string]any:
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if problem := checkData(v[key], append(at, key), depth+1); problem != "" {
				return problem
			}
		}
		return ""
	case []any:
		for i, item := range v {
			if problem := checkData(item, append(at, fmt.Sprintf("[%d]", i)), depth+1); problem != "" {
				return problem
			}
		}
		return ""
	}
	return where(at) + strings.TrimPrefix(tosca.KindOf(value), "a value of ") + " is not data"
}

func where(at []string) string {
	if len(at) == 0 {
		return ""
	}
	return strings.ReplaceAll(strings.Join(at, "."), ".[", "[") + ": "
}

// validateTyped decodes an object of a built-in kind (its JSON, data) into its typed form
// as the API server does, refusing fields of the wrong type, and checks its pods and
// ports.
func validateTyped(obj *unstructured.Unstructured, data []byte) []string {
	typed, err := clientgoscheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		return nil // not a built-in kind: the API server checks it against its schema
	}
	if err := json.Unmarshal(data, typed); err != nil {
		return []string{conversionMessage(err)}
	}
	return fieldProblems(validateKind(typed))
}

// conversionMessage words a failed conversion to a typed object: the field and the kinds
// of value, not the Go types the JSON decoder names.
func conversionMessage(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("%s: %s where %s is expected", typeErr.Field, jsonKind(typeErr.Value), goKind(typeErr.Type))
	}
	message := err.Error()
	if i := strings.Index(message, "json: "); i >= 0 {
		message = message[i+len("json: "):]
	}
	return "a field of the wrong type: " + message
}

// jsonKind names the kind of a JSON value as the JSON decoder describes it ("string",
// "number 3.5", "array", "object", "bool").
func jsonKind(value string) string {
	switch kind, _, _ := strings.Cut(value, " "); kind {
	case "string":
		return "text"
	case "number":
		return "a number"
	case "array":
		return "a list"
	case "object":
		return "a map"
	case "bool":
		return "true or false"
	}
	return value
}

// goKind names what a Go type holds as a kind of JSON value.
func goKind(t reflect.Type) string {
	switch {
	case t == nil:
		return "another kind of value"
	case t.Kind() == reflect.Pointer:
		return goKind(t.Elem())
	case t.Name() == "IntOrString":
		return "an integer or text"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a map"
}

// checkValues reports the values of a render besides its objects that are not plain data:
// node properties and operation inputs (which operations receive as JSON).
func checkValues(entry string, nodes []*Node) []tosca.Diagnostic {
	var diags []tosca.Diagnostic
	for _, node := range nodes {
		if problem := checkData(node.Properties, []string{"properties"}, 0); problem != "" {
			diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("node %s: %s", tosca.Echo(node.Name), problem)})
		}
		for _, op := range node.Operations {
			if problem := checkData(op.Inputs, []string{"inputs"}, 0); problem != "" {
				diags = append(diags, tosca.Diagnostic{File: entry, Message: fmt.Sprintf("node %s: operation %s: %s", tosca.Echo(node.Name), op.QualifiedName(), problem)})
			}
		}
	}
	return diags
}

// ValidateOutputs reports the outputs that are not plain data (status holds them as JSON).
func ValidateOutputs(entry string, outputs map[string]any) error {
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if problem := checkData(outputs[name], nil, 0); problem != "" {
			return tosca.Invalid(entry, "output %s: %s", tosca.Echo(name), problem)
		}
	}
	return nil
}
