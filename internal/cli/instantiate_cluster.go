//go:build !calaf_offline

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
)

// specRequest turns a parsed request into the Service's spec.instantiate.
func specRequest(req *etsi.Request) (*v1alpha1.InstantiateRequest, error) {
	if req == nil {
		return nil, nil
	}
	spec := &v1alpha1.InstantiateRequest{FlavourID: req.FlavourID, InstantiationLevelID: req.InstantiationLevelID}
	if len(req.AdditionalParams) > 0 {
		spec.AdditionalParams = map[string]apiextensionsv1.JSON{}
		for key, value := range req.AdditionalParams {
			data, err := json.Marshal(value)
			if err != nil {
				return nil, err
			}
			spec.AdditionalParams[key] = apiextensionsv1.JSON{Raw: data}
		}
	}
	for _, link := range req.ExtVirtualLinks {
		data, err := json.Marshal(link)
		if err != nil {
			return nil, err
		}
		spec.ExtVirtualLinks = append(spec.ExtVirtualLinks, apiextensionsv1.JSON{Raw: data})
	}
	return spec, nil
}

// describeVNF writes the VNF of a Service's status — flavour, level, each VDU's replicas,
// each aspect's scale level — and its warnings.
func describeVNF(b *strings.Builder, vnf *v1alpha1.VNFStatus, warnings []string) {
	if vnf != nil {
		level := vnf.InstantiationLevelID
		if level == "" {
			level = "(none)"
		}
		fmt.Fprintf(b, "\nVNF: flavour %s, instantiation level %s\n", vnf.FlavourID, level)
		w := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "VDU\tWORKLOAD\tREADY")
		for _, vdu := range vnf.VDUs {
			fmt.Fprintf(w, "%s\t%s\t%d/%d\n", vdu.VduID, vdu.Workload, vdu.ReadyReplicas, vdu.DesiredReplicas)
		}
		w.Flush()
		for i, a := range vnf.ScaleStatus {
			maxLevel := int32(0)
			if i < len(vnf.MaxScaleLevels) {
				maxLevel = vnf.MaxScaleLevels[i].ScaleLevel
			}
			fmt.Fprintf(b, "aspect %s: scale level %d of %d\n", a.AspectID, a.ScaleLevel, maxLevel)
		}
	}
	if len(warnings) > 0 {
		b.WriteString("\nWarnings:\n")
		for _, warning := range warnings {
			fmt.Fprintf(b, "  %s\n", warning)
		}
	}
}
