package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const (
	testClass       = "calaf-local"
	testProvisioner = "test.calaf.io/hostpath"
	testNode        = "node-1"
)

// fixture is a provisioner on a fake clientset whose informer caches hold objs.
type fixture struct {
	client *fake.Clientset
	p      *provisioner
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := newProvisioner(client, factory, config{
		root: t.TempDir(), class: testClass, name: testProvisioner, node: testNode,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		p.shutdown()
		factory.Shutdown()
	})
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	return &fixture{client: client, p: p}
}

func (f *fixture) volumes(t *testing.T) []corev1.PersistentVolume {
	t.Helper()
	list, err := f.client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func class(provisioner string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: testClass},
		Provisioner:   provisioner,
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete),
	}
}

func claim(mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "0a1b", ResourceVersion: "7"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(testClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
			},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func TestSyncClaim(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		objs   []runtime.Object
		wantPV bool
	}{
		{"pending claim of the class", "provisioned",
			[]runtime.Object{class(testProvisioner), claim()}, true},
		{"claim of another class", "not ours",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.StorageClassName = ptr.To("other")
			})}, false},
		{"claim without a class", "not ours",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.StorageClassName = nil
			})}, false},
		{"bound claim", "already has a volume",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.VolumeName = "pv-1"
			})}, false},
		{"claim being deleted", "no new volume for a claim that goes",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				c.Finalizers = []string{"kubernetes.io/pvc-protection"}
			})}, false},
		{"claim with a selector", "a directory cannot match labels",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			})}, false},
		{"block claim", "a directory is no block device",
			[]runtime.Object{class(testProvisioner), claim(func(c *corev1.PersistentVolumeClaim) {
				c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
			})}, false},
		{"no class yet", "waits for the class",
			[]runtime.Object{claim()}, false},
		{"class of another provisioner", "not ours",
			[]runtime.Object{class("other.io/provisioner"), claim()}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t, tc.objs...)
			g.Expect(f.p.syncClaim(context.Background(), "ns", "data")).To(Succeed())
			g.Expect(f.volumes(t)).To(HaveLen(map[bool]int{true: 1, false: 0}[tc.wantPV]), tc.reason)
		})
	}
}

func TestProvisionedVolume(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, class(testProvisioner), claim())
	g.Expect(f.p.syncClaim(context.Background(), "ns", "data")).To(Succeed())

	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-0a1b", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(f.p.root, "pvc-0a1b")
	g.Expect(pv.Annotations).To(HaveKeyWithValue(annProvisionedBy, testProvisioner))
	g.Expect(pv.Spec.HostPath.Path).To(Equal(dir))
	g.Expect(*pv.Spec.HostPath.Type).To(Equal(corev1.HostPathDirectory))
	g.Expect(pv.Spec.ClaimRef).To(Equal(&corev1.ObjectReference{
		Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data", UID: "0a1b", ResourceVersion: "7",
	}))
	g.Expect(pv.Spec.StorageClassName).To(Equal(testClass))
	g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
	g.Expect(pv.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))
	g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("64Mi"))
	g.Expect(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions).To(ConsistOf(
		corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{testNode}}))
	info, err := os.Stat(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode()).To(Equal(os.ModeDir | 0o777))

	// A second sync (the informer has not seen the volume yet) changes nothing.
	g.Expect(f.p.syncClaim(context.Background(), "ns", "data")).To(Succeed())
	g.Expect(f.volumes(t)).To(HaveLen(1))
}

func TestSyncVolume(t *testing.T) {
	volume := func(name string, mutate ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
				Annotations: map[string]string{annProvisionedBy: testProvisioner}},
			Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{}},
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
		}
		for _, m := range mutate {
			m(v)
		}
		return v
	}
	cases := []struct {
		name       string
		reason     string
		volume     *corev1.PersistentVolume
		hostPath   string // relative to the root; default: the volume's own directory
		wantDelete bool
	}{
		{"released volume of ours", "its claim is gone", volume("pvc-1"), "", true},
		{"bound volume", "in use", volume("pvc-1", func(v *corev1.PersistentVolume) {
			v.Status.Phase = corev1.VolumeBound
		}), "", false},
		{"released volume to retain", "reclaim policy Retain", volume("pvc-1", func(v *corev1.PersistentVolume) {
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}), "", false},
		{"released volume of someone else", "not provisioned here", volume("pvc-1", func(v *corev1.PersistentVolume) {
			v.Annotations = nil
		}), "", false},
		{"released volume pointing elsewhere", "only ever its own directory", volume("pvc-1"), "pvc-2", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			rel := tc.hostPath
			if rel == "" {
				rel = tc.volume.Name
			}
			tc.volume.Spec.HostPath.Path = filepath.Join(root, rel)
			f := newFixture(t, tc.volume)
			f.p.root = root
			g.Expect(os.MkdirAll(filepath.Join(root, rel, "sub"), 0o755)).To(Succeed())

			g.Expect(f.p.syncVolume(context.Background(), tc.volume.Name)).To(Succeed())
			_, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), tc.volume.Name, metav1.GetOptions{})
			_, statErr := os.Stat(filepath.Join(root, rel))
			if tc.wantDelete {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "volume deleted: %v", err)
				g.Expect(os.IsNotExist(statErr)).To(BeTrue(), "directory removed: %v", statErr)
			} else {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
				g.Expect(statErr).NotTo(HaveOccurred(), tc.reason)
			}
		})
	}
}

// The whole loop: a claim made before its class is provisioned once the class appears, and
// its volume and directory go once the (simulated) PV controller marks the volume Released.
func TestRunProvisionsAndDeletes(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.p.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	pvs := f.client.CoreV1().PersistentVolumes()
	_, err := f.client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, claim(), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.client.StorageV1().StorageClasses().Create(ctx, class(testProvisioner), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	var pv *corev1.PersistentVolume
	g.Eventually(func() error {
		pv, err = pvs.Get(ctx, "pvc-0a1b", metav1.GetOptions{})
		return err
	}, 5*time.Second, 10*time.Millisecond).Should(Succeed())
	g.Expect(pv.Spec.HostPath.Path).To(BeADirectory())

	// The claim goes, and the PV controller marks its volume Released.
	g.Expect(f.client.CoreV1().PersistentVolumeClaims("ns").Delete(ctx, "data", metav1.DeleteOptions{})).To(Succeed())
	pv.Status.Phase = corev1.VolumeReleased
	_, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool {
		_, err := pvs.Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 5*time.Second, 10*time.Millisecond).Should(BeTrue())
	g.Expect(pv.Spec.HostPath.Path).NotTo(BeAnExistingFile())
}
