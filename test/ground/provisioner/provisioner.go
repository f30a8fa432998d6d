package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// annProvisionedBy marks the volumes a provisioner created (the annotation the PV controller
// and external provisioners use); only those are ever deleted here.
const annProvisionedBy = "pv.kubernetes.io/provisioned-by"

// config is what the provisioner serves: the claims of one StorageClass, whose provisioner
// field must be name, get directories under root on node.
type config struct {
	root, class, name, node string
}

// key names one object to sync: a claim (namespace and name) or a volume (name only).
type key struct {
	volume          bool
	namespace, name string
}

// provisioner keeps two invariants, one object at a time:
//   - a pending claim of its class has a volume pvc-<claim UID> bound to it (claimRef);
//     kube-controller-manager's PV controller then binds the claim to it;
//   - a volume it provisioned that the PV controller marked Released (its claim is gone)
//     and whose reclaim policy is Delete is removed, directory first.
type provisioner struct {
	config
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	queue    workqueue.TypedRateLimitingInterface[key]
	events   record.EventBroadcaster
	recorder record.EventRecorder
}

func newProvisioner(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg config) (*provisioner, error) {
	p := &provisioner{
		config: cfg,
		client: client,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[key](),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "provisioner"}),
		events: record.NewBroadcaster(),
	}
	p.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	p.recorder = p.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "calaf-ground-provisioner"})

	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	classes := factory.Storage().V1().StorageClasses()
	p.claims, p.volumes, p.classes = claims.Lister(), volumes.Lister(), classes.Lister()

	onClaim := func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			p.queue.Add(key{namespace: c.Namespace, name: c.Name})
		}
	}
	onVolume := func(obj any) {
		if v, ok := obj.(*corev1.PersistentVolume); ok {
			p.queue.Add(key{volume: true, name: v.Name})
		}
	}
	// A deleted volume may leave its (still pending) claim without one.
	onVolumeDeleted := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if v, ok := obj.(*corev1.PersistentVolume); ok && v.Spec.ClaimRef != nil {
			p.queue.Add(key{namespace: v.Spec.ClaimRef.Namespace, name: v.Spec.ClaimRef.Name})
		}
	}
	// A class created or changed after its claims: look at them again.
	onClass := func(obj any) {
		if c, ok := obj.(*storagev1.StorageClass); ok && c.Name == p.class {
			p.enqueueClaimsOfClass()
		}
	}

	handlers := []struct {
		informer cache.SharedIndexInformer
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{claims.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onClaim, UpdateFunc: func(_, obj any) { onClaim(obj) }}},
		{volumes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onVolume, UpdateFunc: func(_, obj any) { onVolume(obj) }, DeleteFunc: onVolumeDeleted}},
		{classes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onClass, UpdateFunc: func(_, obj any) { onClass(obj) }}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.funcs); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *provisioner) enqueueClaimsOfClass() {
	claims, err := p.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if p.ofClass(c) {
			p.queue.Add(key{namespace: c.Namespace, name: c.Name})
		}
	}
}

// run syncs one key at a time until ctx ends; a failed sync is retried with back-off.
func (p *provisioner) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.next(ctx) {
	}
}

func (p *provisioner) next(ctx context.Context) bool {
	k, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(k)
	var err error
	if k.volume {
		err = p.syncVolume(ctx, k.name)
	} else {
		err = p.syncClaim(ctx, k.namespace, k.name)
	}
	if err != nil {
		slog.Error("sync failed; retrying", "volume", k.volume, "namespace", k.namespace, "name", k.name, "err", err)
		p.queue.AddRateLimited(k)
		return true
	}
	p.queue.Forget(k)
	return true
}

func (p *provisioner) shutdown() {
	p.queue.ShutDown()
	p.events.Shutdown()
}

func (p *provisioner) ofClass(c *corev1.PersistentVolumeClaim) bool {
	return c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == p.class
}

// dir is the directory of the volume named name.
func (p *provisioner) dir(name string) string { return filepath.Join(p.root, name) }

// volumeName is the name of the volume provisioned for a claim (as upstream provisioners do).
func volumeName(c *corev1.PersistentVolumeClaim) string { return "pvc-" + string(c.UID) }

func (p *provisioner) syncClaim(ctx context.Context, namespace, name string) error {
	claim, err := p.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.ofClass(claim) || claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil {
		return nil
	}
	if _, err := p.volumes.Get(volumeName(claim)); err == nil {
		return nil // provisioned; the PV controller binds the claim
	}
	class, err := p.classes.Get(p.class)
	if apierrors.IsNotFound(err) {
		return nil // synced again when the class appears
	}
	if err != nil {
		return err
	}
	if class.Provisioner != p.name {
		return nil
	}
	// The cache may lag: the claim must still exist, as this very claim (its UID).
	live, err := p.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && (live.UID != claim.UID || live.Spec.VolumeName != "")) {
		return nil
	}
	if err != nil {
		return err
	}
	if reason := unsupported(claim); reason != "" {
		p.recorder.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", reason)
		return nil
	}

	pv := p.volumeFor(claim, class)
	dir := pv.Spec.HostPath.Path
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // writable for any user, whatever the umask
		return err
	}
	_, err = p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		p.recorder.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "creating volume %s: %v", pv.Name, err)
		return err
	}
	slog.Info("provisioned", "claim", namespace+"/"+name, "volume", pv.Name, "path", dir)
	p.recorder.Eventf(claim, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s at %s", pv.Name, dir)
	return nil
}

// unsupported says why a claim cannot be served by a plain directory, or "".
func unsupported(c *corev1.PersistentVolumeClaim) string {
	switch {
	case c.Spec.Selector != nil:
		return "claims with a selector are not supported by the hostPath provisioner"
	case c.Spec.VolumeMode != nil && *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem:
		return fmt.Sprintf("volume mode %s is not supported by the hostPath provisioner", *c.Spec.VolumeMode)
	case c.Spec.DataSource != nil || c.Spec.DataSourceRef != nil:
		return "claims with a data source are not supported by the hostPath provisioner"
	}
	if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		return "the claim requests no storage size"
	}
	return ""
}

// volumeFor is the hostPath volume for a claim: its size and access modes, the class's
// reclaim policy (Delete unless set), pinned to the node, bound to the claim by claimRef.
func (p *provisioner) volumeFor(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) *corev1.PersistentVolume {
	name := volumeName(claim)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: p.name},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              p.class,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			ClaimRef: &corev1.ObjectReference{
				Kind:            "PersistentVolumeClaim",
				APIVersion:      "v1",
				Namespace:       claim.Namespace,
				Name:            claim.Name,
				UID:             claim.UID,
				ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: p.dir(name), Type: ptr.To(corev1.HostPathDirectory)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.node},
				}}}},
			}},
		},
	}
}

func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != p.name || pv.DeletionTimestamp != nil ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Status.Phase != corev1.VolumeReleased {
		return nil
	}
	// Only ever the directory this provisioner made for this volume.
	dir := p.dir(pv.Name)
	if pv.Spec.HostPath == nil || filepath.Clean(pv.Spec.HostPath.Path) != dir {
		p.recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete",
			"not deleting the volume: its hostPath is not %s", dir)
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		p.recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "removing %s: %v", dir, err)
		return err
	}
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To(pv.UID)},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	slog.Info("deleted", "volume", pv.Name, "path", dir)
	return nil
}
