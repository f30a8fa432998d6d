package cmmode

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Store reads and writes Services and Operations as their ConfigMaps.
type Store struct {
	Schemas *Schemas
	// Client writes ConfigMaps, and reads them where a write needs what is stored now.
	Client client.Client
}

// read returns the object key names, of kind k, from its ConfigMaps read with reader
// (NotFound for the API's kind when there is none, or no spec was admitted yet).
func (s *Store) read(ctx context.Context, reader client.Reader, k kind, key client.ObjectKey) (client.Object, pair, error) {
	p, err := readPair(ctx, reader, k, key)
	if err != nil {
		return nil, p, err
	}
	if !p.admitted() {
		return nil, p, k.notFound(key.Name)
	}
	obj, err := p.object(k, ownerKinds(ctx, reader, key.Namespace))
	return obj, p, err
}

// readPair reads the ConfigMaps of one object (status nil when there is no companion).
func readPair(ctx context.Context, reader client.Reader, k kind, key client.ObjectKey) (pair, error) {
	spec := &corev1.ConfigMap{}
	if err := reader.Get(ctx, key, spec); err != nil {
		if apierrors.IsNotFound(err) {
			return pair{}, k.notFound(key.Name)
		}
		return pair{}, err
	}
	if KindOf(spec) != k.name {
		return pair{}, k.notFound(key.Name)
	}
	p := pair{spec: spec}
	status := &corev1.ConfigMap{}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: StatusName(key.Name)}, status); {
	case err == nil:
		p.status = status
	case !apierrors.IsNotFound(err):
		return p, err
	}
	return p, nil
}

// list returns the objects of kind k that opts select, read with reader: two lists (the
// specs, the companions) joined by name.
func (s *Store) list(ctx context.Context, reader client.Reader, k kind, opts ...client.ListOption) ([]client.Object, error) {
	options := (&client.ListOptions{}).ApplyOptions(opts)
	specs, err := listKind(ctx, reader, k.name, options)
	if err != nil {
		return nil, err
	}
	statuses, err := listKind(ctx, reader, statusKind(k.name), &client.ListOptions{Namespace: options.Namespace})
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.ConfigMap{}
	for i := range statuses {
		byName[statuses[i].Namespace+"/"+statuses[i].Name] = &statuses[i]
	}
	all := map[string]*corev1.ConfigMap{}
	for i := range specs {
		all[specs[i].Namespace+"/"+specs[i].Name] = &specs[i]
	}
	owners := func(namespace string) func(string) string {
		return func(name string) string {
			if cm := all[namespace+"/"+name]; cm != nil {
				return KindOf(cm)
			}
			return ownerKinds(ctx, reader, namespace)(name)
		}
	}
	var out []client.Object
	for i := range specs {
		p := pair{spec: &specs[i], status: byName[specs[i].Namespace+"/"+StatusName(specs[i].Name)]}
		if KindOf(p.spec) != k.name || !p.admitted() {
			continue
		}
		obj, err := p.object(k, owners(p.spec.Namespace))
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// listKind lists the ConfigMaps labelled kindLabel that options select.
func listKind(ctx context.Context, reader client.Reader, kindLabel string, options *client.ListOptions) ([]corev1.ConfigMap, error) {
	selector := labels.NewSelector()
	if options.LabelSelector != nil {
		if reqs, selectable := options.LabelSelector.Requirements(); selectable {
			selector = selector.Add(reqs...)
		} else {
			return nil, nil // a selector that selects nothing
		}
	}
	is, err := labels.NewRequirement(LabelKind, selection.Equals, []string{kindLabel})
	if err != nil {
		return nil, err
	}
	list := &corev1.ConfigMapList{}
	if err := reader.List(ctx, list, client.InNamespace(options.Namespace), client.MatchingLabelsSelector{Selector: selector.Add(*is)}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// create admits obj as new and writes its ConfigMaps.
func (s *Store) create(ctx context.Context, k kind, obj client.Object) error {
	source, err := toMap(obj)
	if err != nil {
		return err
	}
	candidate := admissionObject(k, obj, source["spec"], nil)
	if err := s.Schemas.Admit(ctx, k.name, candidate, nil); err != nil {
		return err
	}
	text, err := specYAML(candidate["spec"])
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName(), GenerateName: obj.GetGenerateName(),
		Labels: withModeLabels(obj.GetLabels(), k.name), Annotations: obj.GetAnnotations(), Finalizers: obj.GetFinalizers(),
		OwnerReferences: writeOwners(obj.GetOwnerReferences())}, Data: map[string]string{KeySpec: text}}
	if err := s.Client.Create(ctx, cm); err != nil {
		return err
	}
	p := pair{spec: cm}
	if err := s.record(ctx, k, &p, candidate["spec"], sourceHashOf(cm), ""); err != nil {
		return err
	}
	return s.into(ctx, k, p, obj)
}

// into fills obj with the object of p as now stored.
func (s *Store) into(ctx context.Context, k kind, p pair, obj client.Object) error {
	fresh, err := p.object(k, ownerKinds(ctx, s.Client, p.spec.Namespace))
	if err != nil {
		return err
	}
	data, err := json.Marshal(fresh)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, obj)
}

// update writes obj's metadata and spec over the object p holds, as an update of the
// main resource: the status is left as it is; a changed spec is admitted as an update
// first, and refused with the API server's error as a whole.
func (s *Store) update(ctx context.Context, k kind, p pair, obj client.Object) error {
	current, err := p.object(k, nil)
	if err != nil {
		return err
	}
	desired, err := toMap(obj)
	if err != nil {
		return err
	}
	stored, err := toMap(current)
	if err != nil {
		return err
	}
	cm := p.spec.DeepCopy()
	cm.Labels = withModeLabels(obj.GetLabels(), k.name)
	cm.Annotations, cm.Finalizers = obj.GetAnnotations(), obj.GetFinalizers()
	cm.OwnerReferences = writeOwners(obj.GetOwnerReferences())
	specChanged := hashOf(desired["spec"]) != hashOf(stored["spec"])
	var admitted any
	if specChanged {
		candidate := admissionObject(k, obj, desired["spec"], nil)
		old := admissionObject(k, current, stored["spec"], stored["status"])
		if err := s.Schemas.Admit(ctx, k.name, candidate, old); err != nil {
			return err
		}
		admitted = candidate["spec"]
		text, err := specYAML(admitted)
		if err != nil {
			return err
		}
		cm.Data = map[string]string{KeySpec: text} // dotted keys are folded into spec.yaml
	}
	if err := s.Client.Update(ctx, cm); err != nil {
		return err
	}
	p.spec = cm
	if specChanged {
		if err := s.record(ctx, k, &p, admitted, sourceHashOf(cm), ""); err != nil {
			return err
		}
	}
	return s.into(ctx, k, p, obj)
}

// updateStatus writes obj's status into the companion of p (the condition SpecAccepted,
// which the companion's refusal says, left out).
func (s *Store) updateStatus(ctx context.Context, k kind, p pair, obj client.Object) error {
	if conditions := conditionsOf(obj); conditions != nil {
		kept := (*conditions)[:0:0]
		for _, c := range *conditions {
			if c.Type != ConditionSpecAccepted {
				kept = append(kept, c)
			}
		}
		*conditions = kept
	}
	m, err := toMap(obj)
	if err != nil {
		return err
	}
	text := ""
	if status, ok := m["status"].(map[string]any); ok && len(status) > 0 {
		data, err := yaml.Marshal(status)
		if err != nil {
			return err
		}
		text = string(data)
	}
	cm := p.status.DeepCopy()
	cm.Data = maps.Clone(cm.Data)
	cm.Data[KeyStatus] = text
	if err := s.Client.Update(ctx, cm); err != nil {
		return err
	}
	p.status = cm
	return s.into(ctx, k, p, obj)
}

// record writes what an admission decided into the companion of p, made when missing
// (owned by the spec ConfigMap): an admitted spec (nil when refused), the hash of the
// source looked at, the refusal. The generation moves when the admitted spec changed.
// A conflict with another writer is retried on what is stored.
func (s *Store) record(ctx context.Context, k kind, p *pair, admitted any, sourceHash, refused string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		status := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: p.spec.Namespace, Name: StatusName(p.spec.Name)}
		err := s.Client.Get(ctx, key, status)
		switch {
		case apierrors.IsNotFound(err):
			status = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		case err != nil:
			return err
		case !metav1.IsControlledBy(status, p.spec):
			// The companion of an earlier object of this name, not collected yet.
			if err := s.Client.Delete(ctx, status, client.Preconditions{UID: ptr.To(status.UID)}); client.IgnoreNotFound(err) != nil {
				return err
			}
			return apierrors.NewConflict(corev1.Resource("configmaps"), key.Name, fmt.Errorf("stale companion removed"))
		}
		status.Labels = map[string]string{LabelKind: statusKind(k.name), LabelVersion: p.spec.Labels[LabelVersion]}
		status.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: p.spec.Name, UID: p.spec.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		status.Data = maps.Clone(status.Data)
		if status.Data == nil {
			status.Data = map[string]string{}
		}
		applyDecision(status.Data, admitted, sourceHash, refused)
		if status.ResourceVersion == "" {
			err = s.Client.Create(ctx, status)
		} else {
			err = s.Client.Update(ctx, status)
		}
		if err == nil {
			p.status = status
		}
		return err
	})
}

// applyDecision sets the keys of an admission's decision in a companion's data.
func applyDecision(data map[string]string, admitted any, sourceHash, refused string) {
	data[KeySourceHash], data[KeyRefused] = sourceHash, refused
	if admitted == nil {
		return
	}
	hash := hashOf(admitted)
	if data[KeySpecHash] == hash {
		return
	}
	text, _ := specYAML(admitted)
	generation, _ := strconv.ParseInt(data[KeyGeneration], 10, 64)
	data[KeyAdmitted], data[KeySpecHash], data[KeyGeneration] = text, hash, strconv.FormatInt(generation+1, 10)
}

// Admit looks at the spec a ConfigMap of a Service or Operation holds, as the API server
// would at a create or an update: admitted, it becomes what the reconcilers see (a new
// generation when it changed); refused, the admitted one stays and the companion says
// why. It returns the refusal (nil when admitted or already looked at).
func (s *Store) Admit(ctx context.Context, cm *corev1.ConfigMap) (refused error, err error) {
	k, ok := kinds()[KindOf(cm)]
	if !ok || cm.DeletionTimestamp != nil {
		return nil, nil
	}
	p, err := readPair(ctx, s.Client, k, client.ObjectKeyFromObject(cm))
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	spec, sourceErr := specSource(p.spec.Data, s.Schemas.structural(k.name))
	sourceHash := sourceHashOf(p.spec)
	if p.status != nil && p.status.Data[KeySourceHash] == sourceHash && metav1.IsControlledBy(p.status, p.spec) {
		return nil, nil
	}
	if sourceErr != nil {
		refused = fmt.Errorf("ConfigMap %s: %w", p.spec.Name, sourceErr)
	} else {
		refused = s.admitSpec(ctx, k, p, spec)
	}
	if refused != nil {
		return refused, s.record(ctx, k, &p, nil, sourceHash, oneLine(refused.Error()))
	}
	return nil, s.record(ctx, k, &p, spec, sourceHash, "")
}

// admitSpec admits spec (changed in place: pruned, defaulted) as the spec of p: a create when nothing was
// admitted yet, else an update of the object as stored.
func (s *Store) admitSpec(ctx context.Context, k kind, p pair, spec map[string]any) error {
	candidate := admissionObject(k, p.spec, spec, nil)
	var old map[string]any
	if p.admitted() {
		current, err := p.object(k, nil)
		if err != nil {
			return err
		}
		stored, err := toMap(current)
		if err != nil {
			return err
		}
		old = admissionObject(k, current, stored["spec"], stored["status"])
	}
	return s.Schemas.Admit(ctx, k.name, candidate, old)
}

// sourceHashOf is the hash of what an admission of cm looks at: its data and labels.
func sourceHashOf(cm *corev1.ConfigMap) string {
	return hashOf(map[string]any{"data": cm.Data, "labels": withoutModeLabels(cm.Labels)})
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
