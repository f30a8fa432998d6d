//go:build e2e

package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/test/e2e/framework"
)

// A ClusterIP Service is given an address from the service range.
func TestServiceGetsClusterIP(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-service")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	svc, err := c.Clientset.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	ip := net.ParseIP(svc.Spec.ClusterIP)
	g.Expect(ip).NotTo(BeNil(), "clusterIP %q", svc.Spec.ClusterIP)
	g.Expect(ip.IsUnspecified()).To(BeFalse())
	t.Logf("service %s/web got ClusterIP %s", ns, ip)
}
