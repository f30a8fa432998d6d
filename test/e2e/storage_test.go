//go:build e2e

package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"calaf.io/calaf/test/e2e/framework"
)

// A StatefulSet with a volumeClaimTemplate and no storage class (as Calaf's examples render
// it) gets a volume from the cluster's default StorageClass: the claim is Bound and the pod
// Ready; a file written to the volume outlives the pod; deleting the claim deletes the volume.
func TestStatefulSetVolumeIsProvisionedAndReclaimed(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-storage")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	claims := c.Clientset.CoreV1().PersistentVolumeClaims(ns)
	volumes := c.Clientset.CoreV1().PersistentVolumes()
	const claimName = "data-store-0" // <template>-<statefulset>-<ordinal>

	created := time.Now()
	_, err := c.Clientset.AppsV1().StatefulSets(ns).Create(ctx, store("store"), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	var claim *corev1.PersistentVolumeClaim
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		claim, err = claims.Get(ctx, claimName, metav1.GetOptions{})
		return err == nil && claim.Status.Phase == corev1.ClaimBound, nil
	})
	g.Expect(err).NotTo(HaveOccurred(), "claim %s not Bound: %+v", claimName, claim)
	t.Logf("claim %s Bound to %s %v after the StatefulSet was created (class %s)", claimName,
		claim.Spec.VolumeName, time.Since(created).Round(time.Millisecond), ptr.Deref(claim.Spec.StorageClassName, ""))
	g.Expect(claim.Spec.StorageClassName).NotTo(BeNil(), "the default StorageClass was assigned")

	pod, err := c.WaitForPodRunning(ctx, ns, "app=store", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("pod %s Running %v after the StatefulSet was created", pod.Name, time.Since(created).Round(time.Millisecond))
	g.Eventually(func() int32 {
		set, err := c.Clientset.AppsV1().StatefulSets(ns).Get(ctx, "store", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return set.Status.ReadyReplicas
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(int32(1)), "StatefulSet ready")

	out, err := c.Exec(ctx, ns, pod.Name, "main", "sh", "-c", "echo kept > /data/proof && id -u")
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", out.Stderr)
	g.Expect(out.Stdout).To(Equal("1000\n"), "the pod runs as a non-root user")

	// A new pod (same name, new UID) mounts the same volume. The deleted pod is skipped by
	// WaitForPodRunning as soon as it carries a deletion timestamp, which Delete sets.
	g.Expect(c.Clientset.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})).To(Succeed())
	again, err := c.WaitForPodRunning(ctx, ns, "app=store", time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.UID).NotTo(Equal(pod.UID), "a new pod")
	out, err = c.Exec(ctx, ns, again.Name, "main", "cat", "/data/proof")
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", out.Stderr)
	g.Expect(out.Stdout).To(Equal("kept\n"))

	// The volume's directory, when it lives on this machine (the test ground's node).
	pv, err := volumes.Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
	localDir := ""
	if pv.Spec.HostPath != nil {
		if _, err := os.Stat(pv.Spec.HostPath.Path + "/proof"); err == nil {
			localDir = pv.Spec.HostPath.Path
		}
	}

	// StatefulSets keep their claims; once the set and the claim are deleted, the volume goes.
	g.Expect(c.Clientset.AppsV1().StatefulSets(ns).Delete(ctx, "store", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
	})).To(Succeed())
	g.Expect(claims.Delete(ctx, claimName, metav1.DeleteOptions{})).To(Succeed())
	deleted := time.Now()
	g.Eventually(func() bool {
		_, err := volumes.Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "volume %s deleted", pv.Name)
	t.Logf("volume %s deleted %v after its claim", pv.Name, time.Since(deleted).Round(time.Millisecond))
	if localDir != "" {
		g.Expect(localDir).NotTo(BeAnExistingFile(), "the volume's directory is removed")
	}
}

// store is a one-replica StatefulSet of the busybox image, labelled app=NAME, running as a
// non-root user with a volumeClaimTemplate "data" mounted at /data and no storage class.
func store(name string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
					Containers: []corev1.Container{{
						Name:            "main",
						Image:           framework.BusyboxImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"sleep", "3600"},
						VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")},
					},
				},
			}},
		},
	}
}
