package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	cloutpkg "github.com/tliron/puccini/clout"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca"
)

// State of a Service kept durably in an owned Secret, so that an operator restart does not
// need to recompile packages, and attributes and outputs can be recomputed without
// fetching the package again.
const (
	stateSuffix        = v1alpha1.StateSecretSuffix
	stateCloutKey      = "clout.json.gz"
	stateKeyAnnotation = v1alpha1.StateKeyAnnotation
	stateLabel         = "calaf.io/state-of"
	// stateServiceAnnotation names the Service ("namespace/name") of a state Secret kept
	// in the operator's namespace.
	stateServiceAnnotation = "calaf.io/state-of-service"
	// stateAbsent records that a Service has no state Secret yet.
	stateAbsent = "-"
)

func stateName(svc *v1alpha1.Service) string {
	return svc.Name + stateSuffix
}

// stateKey is where a Service's state Secret is: beside the Service (owned by it, so
// that it goes with it), or, with StateNamespace (lockdown mode), in the operator's own
// namespace, where no tenant reads or changes it and the operator needs no access to
// the Secrets of the Services' namespaces.
func (r *ServiceReconciler) stateKey(svc *v1alpha1.Service) types.NamespacedName {
	if r.StateNamespace == "" {
		return types.NamespacedName{Namespace: svc.Namespace, Name: stateName(svc)}
	}
	name := svc.Namespace + "." + svc.Name + stateSuffix
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(svc.Namespace + "/" + svc.Name))
		name = hex.EncodeToString(sum[:16]) + stateSuffix
	}
	return types.NamespacedName{Namespace: r.StateNamespace, Name: name}
}

// deleteState deletes the state Secret of a deleted Service kept in StateNamespace (one
// beside the Service goes with it: the Service owns it).
func (r *ServiceReconciler) deleteState(ctx context.Context, svc *v1alpha1.Service) error {
	if r.StateNamespace == "" {
		return nil
	}
	key := r.stateKey(svc)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the state Secret %s: %w", key, err)
	}
	r.states.Delete(string(svc.UID))
	return nil
}

// stateKeys remembers which compile key each Service's state Secret holds.
type stateKeys struct {
	sync.Map // service UID → compile key
}

// loadState returns the compiled package from the state Secret when it holds this compile
// key; nil otherwise.
func (r *ServiceReconciler) loadState(ctx context.Context, svc *v1alpha1.Service, key string, pkg *tosca.Package, inputs map[string]any) *tosca.Compiled {
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, r.stateKey(svc), &secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.states.Store(string(svc.UID), stateAbsent)
		}
		return nil
	}
	if secret.Annotations[stateKeyAnnotation] != key {
		return nil
	}
	reader, err := gzip.NewReader(bytes.NewReader(secret.Data[stateCloutKey]))
	if err != nil {
		return nil
	}
	clout, err := cloutpkg.Read(io.LimitReader(reader, 256<<20), "json")
	if err != nil {
		return nil
	}
	r.states.Store(string(svc.UID), key)
	return &tosca.Compiled{Clout: clout, Key: key, Digest: pkg.Digest, Inputs: inputs, Package: pkg}
}

// saveState writes the compiled package into the state Secret when its key changed.
func (r *ServiceReconciler) saveState(ctx context.Context, svc *v1alpha1.Service, compiled *tosca.Compiled) error {
	if key, ok := r.states.Load(string(svc.UID)); ok && key == compiled.Key {
		return nil
	}
	var buffer bytes.Buffer
	writer := gzip.NewWriter(&buffer)
	if err := json.NewEncoder(writer).Encode(compiled.Clout); err != nil {
		return err
	}
	if err := writer.Close(); err != nil {
		return err
	}
	key := r.stateKey(svc)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	var existing corev1.Secret
	var err error = apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	if known, _ := r.states.Load(string(svc.UID)); known != stateAbsent {
		err = r.APIReader.Get(ctx, key, &existing)
	}
	switch {
	case err == nil && existing.Annotations[stateKeyAnnotation] == compiled.Key:
		r.states.Store(string(svc.UID), compiled.Key)
		return nil
	case err == nil:
		secret = &existing
	case !apierrors.IsNotFound(err):
		return err
	}
	secret.Type = "calaf.io/state"
	secret.Labels = map[string]string{stateLabel: svc.Name}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[stateKeyAnnotation] = compiled.Key
	secret.Data = map[string][]byte{stateCloutKey: buffer.Bytes()}
	if err := r.ownState(svc, secret); err != nil {
		return err
	}
	if secret.ResourceVersion == "" {
		if err = r.Create(ctx, secret); apierrors.IsAlreadyExists(err) {
			r.states.Delete(string(svc.UID)) // someone made it meanwhile: read it next time
		}
	} else {
		err = r.Update(ctx, secret)
	}
	if err != nil {
		return err
	}
	r.states.Store(string(svc.UID), compiled.Key)
	return nil
}

// ownState marks a state Secret as the Service's: owned by it when beside it, else
// labelled and annotated with it (owners cannot be in another namespace).
func (r *ServiceReconciler) ownState(svc *v1alpha1.Service, secret *corev1.Secret) error {
	if secret.Namespace == svc.Namespace {
		return controllerutil.SetControllerReference(svc, secret, r.Scheme())
	}
	if len(svc.Name) <= 63 {
		secret.Labels[stateLabel] = svc.Name
	} else {
		delete(secret.Labels, stateLabel)
	}
	secret.Annotations[stateServiceAnnotation] = svc.Namespace + "/" + svc.Name
	return nil
}
