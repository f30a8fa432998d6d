package cli

import (
	"strings"
	"testing"

	"calaf.io/calaf/api/v1alpha1"
)

// calaf status shows a VNF's flavour, level, each VDU's ready/desired replicas, each
// aspect's level and the warnings.
func TestDescribeVNF(t *testing.T) {
	svc := &v1alpha1.Service{}
	svc.Namespace, svc.Name = "telco", "cnf"
	svc.Status.VNF = &v1alpha1.VNFStatus{FlavourID: "simple", InstantiationLevelID: "instantiation_level_2",
		VDUs:           []v1alpha1.VDUStatus{{VduID: "front", Workload: "ReplicaSet/front", DesiredReplicas: 2, ReadyReplicas: 1}},
		ScaleStatus:    []v1alpha1.ScaleInfo{{AspectID: "front_aspect", ScaleLevel: 1}},
		MaxScaleLevels: []v1alpha1.ScaleInfo{{AspectID: "front_aspect", ScaleLevel: 2}}}
	svc.Status.Warnings = []string{`Files/kubernetes/front.yaml:21: Service "front": its namespace "default" is replaced`}
	text := describe(svc)
	for _, want := range []string{"VNF: flavour simple, instantiation level instantiation_level_2", "front  ReplicaSet/front  1/2",
		"aspect front_aspect: scale level 1 of 2", "Warnings:\n  Files/kubernetes/front.yaml:21:"} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not show %q:\n%s", want, text)
		}
	}
	svc.Status.VNF, svc.Status.Warnings = nil, nil
	if text := describe(svc); strings.Contains(text, "VNF:") || strings.Contains(text, "Warnings:") {
		t.Errorf("a Service without VNF shows one:\n%s", text)
	}
}
