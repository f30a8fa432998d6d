package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
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
	// stateAbsent records that a Service has no state Secret yet.
	stateAbsent = "-"
)

func stateName(svc *v1alpha1.Service) string {
	return svc.Name + stateSuffix
}

// stateKeys remembers which compile key each Service's state Secret holds.
type stateKeys struct {
	sync.Map // service UID → compile key
}

// loadState returns the compiled package from the state Secret when it holds this compile
// key; nil otherwise.
func (r *ServiceReconciler) loadState(ctx context.Context, svc *v1alpha1.Service, key string, pkg *tosca.Package, inputs map[string]any) *tosca.Compiled {
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: stateName(svc)}, &secret); err != nil {
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
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: stateName(svc), Namespace: svc.Namespace}}
	var existing corev1.Secret
	var err error = apierrors.NewNotFound(corev1.Resource("secrets"), stateName(svc))
	if known, _ := r.states.Load(string(svc.UID)); known != stateAbsent {
		err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: stateName(svc)}, &existing)
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
	if err := controllerutil.SetControllerReference(svc, secret, r.Scheme()); err != nil {
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
