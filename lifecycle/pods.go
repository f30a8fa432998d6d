package lifecycle

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// PodClient reads and deletes the pods of a Service: what a HEAL, the record of the
// pods an occurrence affects and the restart of stuck pods do to them.
type PodClient interface {
	client.Reader
	Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error
}

// operatorPods reads pods from the API server and deletes them as the operator.
type operatorPods struct {
	client.Reader
	deleter client.Writer
}

func (p operatorPods) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return p.deleter.Delete(ctx, obj, opts...)
}

// pods returns the client of the cluster the Service's pods run in: its target cluster
// (spec.kubeConfig, through the Reconciler's Pods), else the operator's.
func (rn *run) pods(ctx context.Context) (PodClient, error) {
	if rn.svc != nil && rn.svc.Spec.KubeConfig != nil {
		if rn.r.Pods == nil {
			return nil, fmt.Errorf("the pods of Service %s run in another cluster (spec.kubeConfig), which this operator does not reach", rn.svc.Name)
		}
		return rn.r.Pods(ctx, rn.svc)
	}
	return operatorPods{Reader: rn.r.APIReader, deleter: rn.r.Client}, nil
}

// servicePods is the Reconciler's Pods field: given a Service with spec.kubeConfig, the
// client of its target cluster.
type servicePods = func(ctx context.Context, svc *v1alpha1.Service) (PodClient, error)
