package controller_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
)

func sha256Hex(s string) string { return source.SHA256([]byte(s)) }

// overrunZip is a zip of one template whose local header gives its name a length that runs
// past the end of the archive.
func overrunZip(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.Create("service.yaml")
	if err == nil {
		_, err = f.Write([]byte(layeredPackage()["service.yaml"]))
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	binary.LittleEndian.PutUint16(data[26:], 0xffff) // the local header's name length
	return data
}

// waitStalled waits until the Service is Stalled with reason, and returns it.
func waitStalled(t *testing.T, key client.ObjectKey, reason string) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = getService(g, key)
		stalled := condition(svc, v1alpha1.ConditionStalled)
		g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", svc.Status.Conditions)
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(reason))
		g.Expect(stalled.ObservedGeneration).To(Equal(svc.Generation))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	return svc
}

// hasWarning tells whether a Warning event with reason was recorded for the Service.
func hasWarning(g Gomega, ns, name, reason string) bool {
	var list eventsv1.EventList
	g.Expect(env.client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for _, event := range list.Items {
		if event.Regarding.Name == name && event.Type == "Warning" && event.Reason == reason {
			return true
		}
	}
	return false
}

// A broken package or bad inputs stall the Service with a clear message and an event;
// what already runs is untouched; fixing the spec recovers.
func TestBadChangeStallsAndKeepsRunningObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := createService(t, ns, "demo", upload(t, ns, "demo", layeredPackage()), map[string]string{"greeting": `"hello"`})
	waitReady(t, key)
	running := getConfigMap(g, ns, "demo-base")

	// A mistyped input.
	updateService(t, key, func(svc *v1alpha1.Service) { svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `[1, 2]`}) })
	svc := waitStalled(t, key, v1alpha1.ReasonInvalidInputs)
	ready := condition(svc, v1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(ContainSubstring(`inputs["greeting"]`))
	g.Eventually(func(g Gomega) { g.Expect(hasWarning(g, ns, "demo", v1alpha1.ReasonInvalidInputs)).To(BeTrue()) }, 10*time.Second).Should(Succeed())

	// A broken package: an unknown node type.
	files := layeredPackage()
	files["service.yaml"] = strings.Replace(files["service.yaml"], "type: calaf.nodes.Secret", "type: calaf.nodes.NoSuchType", 1)
	broken := upload(t, ns, "demo", files)
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source = broken
		svc.Spec.Inputs = nil
	})
	svc = waitStalled(t, key, v1alpha1.ReasonInvalidPackage)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring("calaf.nodes.NoSuchType"))
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring("service.yaml:"))

	// A package that is not an archive at all.
	garbage := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "garbage"}, BinaryData: map[string][]byte{"package.tar.gz": []byte("not a package")}}
	g.Expect(env.client.Create(ctx, garbage)).To(Succeed())
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source = v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: "garbage", SHA256: sha256Hex("not a package")}}
	})
	waitStalled(t, key, v1alpha1.ReasonInvalidPackage)

	// A hostile zip whose local header claims a name running past the end of the archive
	// (it panicked the package loader in the reconcile before 7742577).
	hostile := overrunZip(t)
	g.Expect(env.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hostile"}, BinaryData: map[string][]byte{source.UploadKey: hostile}})).To(Succeed())
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source = v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: "hostile", SHA256: source.SHA256(hostile)}}
	})
	svc = waitStalled(t, key, v1alpha1.ReasonInvalidPackage)
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring(`entry "service.yaml": its local header's name and extra field run past the end of the archive`))

	// Nothing that ran was touched meanwhile.
	still := getConfigMap(g, ns, "demo-base")
	g.Expect(still.UID).To(Equal(running.UID))
	g.Expect(still.ResourceVersion).To(Equal(running.ResourceVersion))
	g.Expect(still.Data).To(HaveKeyWithValue("greeting", "hello"))

	// Fixing the spec recovers.
	good := upload(t, ns, "demo", layeredPackage())
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source = good
		svc.Spec.Inputs = jsonInputs(map[string]string{"greeting": `"fixed"`})
	})
	svc = waitReady(t, key)
	g.Expect(condition(svc, v1alpha1.ConditionStalled)).To(BeNil())
	g.Expect(getConfigMap(g, ns, "demo-base").Data).To(HaveKeyWithValue("greeting", "fixed"))
}
