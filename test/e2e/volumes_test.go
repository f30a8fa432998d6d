//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

const volumesPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    db:
      type: calaf.nodes.StatefulSet
      properties:
        image: busybox:1.36
        command: [ sh, -c, 'echo kept > /data/proof && exec sleep 3600' ]
        replicas: 2
        volume_claims:
        - { name: data, size: 16Mi, mount_path: /data }
    web:
      type: calaf.nodes.Deployment
      requirements:
      - connects_to: db
      properties:
        image: busybox:1.36
        command: [ sleep, '3600' ]
`

// Deleting a Service deletes the claims its StatefulSets made from their
// volumeClaimTemplates (Kubernetes keeps them), and calaf delete --wait says node by node
// where the deletion stands; with retainVolumes the claims stay, without Calaf's labels.
func TestDeleteReleasesVolumes(t *testing.T) {
	c := framework.Connect(t)
	for _, retain := range []bool{false, true} {
		name := map[bool]string{false: "deleted", true: "retained"}[retain]
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ns := c.Namespace(t, "e2e-volumes")
			dir := t.TempDir()
			g.Expect(os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(volumesPackage), 0o644)).To(Succeed())
			calaf(t, "deploy", "core", dir, "-n", ns, "--wait", "--wait-timeout=3m")
			claims := labelledClaims(t, c, ns, "core")
			g.Expect(claims).To(HaveLen(2), "the StatefulSet's claims carry the Service's label")

			if retain {
				svc := getService(t, ns, "core")
				patch := client.MergeFrom(svc.DeepCopy())
				svc.Spec.RetainVolumes = true
				g.Expect(suite.client.Patch(context.Background(), svc, patch)).To(Succeed())
			}
			out := calaf(t, "delete", "core", "-n", ns, "--wait", "--timeout=3m")
			t.Logf("calaf delete --wait:\n%s", out)
			g.Expect(out).To(ContainSubstring("deleting node web"), "progress per node")
			g.Expect(out).To(ContainSubstring("deleting node db"))
			g.Expect(strings.Index(out, "deleting node web")).To(BeNumerically("<", strings.Index(out, "deleting node db")), "dependents first")

			left, err := c.Clientset.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			if !retain {
				g.Expect(left.Items).To(BeEmpty(), "claims left behind by a deleted Service")
				return
			}
			g.Expect(left.Items).To(HaveLen(2), "retained claims")
			for _, claim := range left.Items {
				g.Expect(claim.DeletionTimestamp).To(BeNil())
				g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))
				g.Expect(claim.Labels).NotTo(HaveKey(v1alpha1.LabelService), "a retained claim no longer names the deleted Service")
			}
		})
	}
}

// labelledClaims lists the claims labelled for a Service.
func labelledClaims(t *testing.T, c *framework.Cluster, ns, service string) []corev1.PersistentVolumeClaim {
	t.Helper()
	var list *corev1.PersistentVolumeClaimList
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		list, err = c.Clientset.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelService + "=" + service})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).NotTo(BeEmpty())
	}, 30*time.Second, time.Second).Should(Succeed())
	return list.Items
}
