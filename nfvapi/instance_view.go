package nfvapi

import (
	"encoding/json"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// VnfInstance is SOL003's VnfInstance (v3.x), as Calaf fills it from a Service.
type VnfInstance struct {
	ID                        string               `json:"id"`
	VnfInstanceName           string               `json:"vnfInstanceName,omitempty"`
	VnfInstanceDescription    string               `json:"vnfInstanceDescription,omitempty"`
	VnfdID                    string               `json:"vnfdId"`
	VnfProvider               string               `json:"vnfProvider"`
	VnfProductName            string               `json:"vnfProductName"`
	VnfSoftwareVersion        string               `json:"vnfSoftwareVersion"`
	VnfdVersion               string               `json:"vnfdVersion"`
	VnfConfigurableProperties map[string]any       `json:"vnfConfigurableProperties,omitempty"`
	InstantiationState        string               `json:"instantiationState"`
	InstantiatedVnfInfo       *InstantiatedVnfInfo `json:"instantiatedVnfInfo,omitempty"`
	Metadata                  map[string]any       `json:"metadata,omitempty"`
	Links                     InstanceLinks        `json:"_links"`
}

// InstantiatedVnfInfo is the part of a VnfInstance that exists once it is instantiated.
type InstantiatedVnfInfo struct {
	FlavourID        string             `json:"flavourId"`
	VnfState         string             `json:"vnfState"`
	ScaleStatus      []ScaleInfo        `json:"scaleStatus,omitempty"`
	MaxScaleLevels   []ScaleInfo        `json:"maxScaleLevels,omitempty"`
	VnfcResourceInfo []VnfcResourceInfo `json:"vnfcResourceInfo,omitempty"`
	VnfcInfo         []VnfcInfo         `json:"vnfcInfo,omitempty"`
}

// ScaleInfo is the scale level of an aspect.
type ScaleInfo struct {
	AspectID   string `json:"aspectId"`
	ScaleLevel int32  `json:"scaleLevel"`
}

// VnfcResourceInfo is a pod of a VDU (a VNFC's compute resource).
type VnfcResourceInfo struct {
	ID              string         `json:"id"`
	VduID           string         `json:"vduId"`
	ComputeResource ResourceHandle `json:"computeResource"`
}

// ResourceHandle names a resource at the VIM: a pod, of its workload's kind.
type ResourceHandle struct {
	ResourceID           string `json:"resourceId"`
	VimLevelResourceType string `json:"vimLevelResourceType,omitempty"`
}

// VnfcInfo is a VNFC instance (the ids a HealVnfRequest names: "<vdu>-<pod>").
type VnfcInfo struct {
	ID                 string `json:"id"`
	VduID              string `json:"vduId"`
	VnfcResourceInfoID string `json:"vnfcResourceInfoId"`
	VnfcState          string `json:"vnfcState"`
}

// Link is a SOL013 link.
type Link struct {
	Href string `json:"href"`
}

// InstanceLinks are a VnfInstance's links: itself, and the tasks its state allows.
type InstanceLinks struct {
	Self          Link  `json:"self"`
	Instantiate   *Link `json:"instantiate,omitempty"`
	Terminate     *Link `json:"terminate,omitempty"`
	Scale         *Link `json:"scale,omitempty"`
	ScaleToLevel  *Link `json:"scaleToLevel,omitempty"`
	ChangeFlavour *Link `json:"changeFlavour,omitempty"`
	Heal          *Link `json:"heal,omitempty"`
	Operate       *Link `json:"operate,omitempty"`
	ChangeVnfPkg  *Link `json:"changeVnfPkg,omitempty"`
}

// instanceShape is what the selectors and filters know of a VnfInstance.
var instanceShape = shapeOf(VnfInstance{}, []string{"id", "vnfdId", "vnfProvider", "vnfProductName", "vnfSoftwareVersion", "vnfdVersion", "instantiationState", "_links"},
	[]string{"vnfConfigurableProperties", "instantiatedVnfInfo", "metadata"})

// descriptor is what a VnfInstance says of its VNFD: from the VnfPackage the Service
// names, else from what the Service's render found in its package.
type descriptor struct {
	vnfdID, provider, product, softwareVersion, vnfdVersion string
}

func descriptorOf(svc *v1alpha1.Service, pkg *v1alpha1.VnfPackage) descriptor {
	if pkg != nil {
		s := pkg.Status
		return descriptor{s.VnfdID, s.VnfProvider, s.VnfProductName, s.VnfSoftwareVersion, s.VnfdVersion}
	}
	if vnf := svc.Status.VNF; vnf != nil && vnf.VnfdID != "" {
		return descriptor{vnf.VnfdID, vnf.VnfProvider, vnf.VnfProductName, vnf.VnfSoftwareVersion, vnf.VnfdVersion}
	}
	d := descriptor{vnfdID: svc.Name, provider: "unknown", product: svc.Name, softwareVersion: "unknown", vnfdVersion: "unknown"}
	if svc.Spec.Source.VnfPackage != nil {
		d.vnfdID = svc.Spec.Source.VnfPackage.VnfdID
	}
	if p := svc.Status.Package; p != nil && p.TemplateName != "" {
		d.product = p.TemplateName
		if p.TemplateVersion != "" {
			d.softwareVersion, d.vnfdVersion = p.TemplateVersion, p.TemplateVersion
		}
	}
	return d
}

// instanceView builds the VnfInstance of a Service, with links under base; pods are the
// Service's pods (nil when the caller may not list them).
func instanceView(base string, svc *v1alpha1.Service, pkg *v1alpha1.VnfPackage, pods []corev1.Pod) VnfInstance {
	d := descriptorOf(svc, pkg)
	v := VnfInstance{
		ID: svc.Name, VnfInstanceName: svc.Annotations[v1alpha1.AnnotationVnfInstanceName],
		VnfInstanceDescription: svc.Annotations[v1alpha1.AnnotationVnfInstanceDescription],
		VnfdID:                 d.vnfdID, VnfProvider: d.provider, VnfProductName: d.product,
		VnfSoftwareVersion: d.softwareVersion, VnfdVersion: d.vnfdVersion,
		InstantiationState: string(instantiationState(svc)),
		Metadata:           instanceMetadata(svc),
		Links:              instanceLinks(base, svc),
	}
	if len(svc.Spec.Inputs) > 0 {
		v.VnfConfigurableProperties = map[string]any{}
		for k, raw := range svc.Spec.Inputs {
			var value any
			if json.Unmarshal(raw.Raw, &value) == nil {
				v.VnfConfigurableProperties[k] = value
			}
		}
	}
	if v.InstantiationState == string(v1alpha1.Instantiated) {
		v.InstantiatedVnfInfo = instantiatedInfo(svc, pods)
	}
	return v
}

// instantiationState is what the Service is: its status once the reconciler said it, else
// what its spec asks for.
func instantiationState(svc *v1alpha1.Service) v1alpha1.InstantiationState {
	if svc.Status.InstantiationState != "" {
		return svc.Status.InstantiationState
	}
	if svc.Spec.InstantiationState == v1alpha1.NotInstantiated {
		return v1alpha1.NotInstantiated
	}
	return v1alpha1.Instantiated
}

func instanceMetadata(svc *v1alpha1.Service) map[string]any {
	raw := svc.Annotations[v1alpha1.AnnotationVnfMetadata]
	if raw == "" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil
	}
	return m
}

func instantiatedInfo(svc *v1alpha1.Service, pods []corev1.Pod) *InstantiatedVnfInfo {
	info := &InstantiatedVnfInfo{FlavourID: "default", VnfState: "STARTED"}
	if svc.Spec.Stopped {
		info.VnfState = "STOPPED"
	}
	if vnf := svc.Status.VNF; vnf != nil {
		info.FlavourID = vnf.FlavourID
		for _, a := range vnf.ScaleStatus {
			info.ScaleStatus = append(info.ScaleStatus, ScaleInfo{AspectID: a.AspectID, ScaleLevel: a.ScaleLevel})
		}
		for _, a := range vnf.MaxScaleLevels {
			info.MaxScaleLevels = append(info.MaxScaleLevels, ScaleInfo{AspectID: a.AspectID, ScaleLevel: a.ScaleLevel})
		}
	} else if lc := svc.Status.Lifecycle; lc != nil {
		for _, a := range lc.Aspects {
			info.ScaleStatus = append(info.ScaleStatus, ScaleInfo{AspectID: a.AspectID, ScaleLevel: a.ScaleLevel})
			info.MaxScaleLevels = append(info.MaxScaleLevels, ScaleInfo{AspectID: a.AspectID, ScaleLevel: a.MaxScaleLevel})
		}
	}
	for _, pod := range pods {
		node := podNode(svc, &pod)
		if node == "" || pod.DeletionTimestamp != nil {
			continue
		}
		kind := "Pod"
		if owner := controllerOf(&pod); owner != "" {
			kind = owner
		}
		info.VnfcResourceInfo = append(info.VnfcResourceInfo, VnfcResourceInfo{ID: pod.Name, VduID: node,
			ComputeResource: ResourceHandle{ResourceID: pod.Name, VimLevelResourceType: kind}})
		info.VnfcInfo = append(info.VnfcInfo, VnfcInfo{ID: node + "-" + pod.Name, VduID: node, VnfcResourceInfoID: pod.Name, VnfcState: vnfcState(&pod)})
	}
	sort.Slice(info.VnfcResourceInfo, func(i, j int) bool { return info.VnfcResourceInfo[i].ID < info.VnfcResourceInfo[j].ID })
	sort.Slice(info.VnfcInfo, func(i, j int) bool { return info.VnfcInfo[i].ID < info.VnfcInfo[j].ID })
	return info
}

// podNode is the node template (VDU) a pod of the Service belongs to ("" when none).
func podNode(svc *v1alpha1.Service, pod *corev1.Pod) string {
	if pod.Labels[v1alpha1.LabelService] != svc.Name {
		return ""
	}
	label := pod.Labels[v1alpha1.LabelNode]
	for _, node := range svc.Status.Nodes {
		if render.LabelValue(node.Name) == label {
			return node.Name
		}
	}
	return ""
}

// controllerOf names the kind of the workload a pod belongs to: its controller's, or the
// Deployment a ReplicaSet of a Deployment is.
func controllerOf(pod *corev1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			if ref.Kind == "ReplicaSet" && pod.Labels["pod-template-hash"] != "" {
				return "Deployment"
			}
			return ref.Kind
		}
	}
	return ""
}

func vnfcState(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodPending {
		return "STARTED"
	}
	return "STOPPED"
}

// instanceLinks: self, and the tasks the instance's state allows.
func instanceLinks(base string, svc *v1alpha1.Service) InstanceLinks {
	self := base + "/vnflcm/v2/vnf_instances/" + svc.Name
	links := InstanceLinks{Self: Link{Href: self}}
	task := func(name string) *Link { return &Link{Href: self + "/" + name} }
	if instantiationState(svc) == v1alpha1.NotInstantiated {
		links.Instantiate = task("instantiate")
		return links
	}
	links.Terminate, links.Scale, links.ScaleToLevel = task("terminate"), task("scale"), task("scale_to_level")
	links.ChangeFlavour, links.Heal, links.Operate, links.ChangeVnfPkg = task("change_flavour"), task("heal"), task("operate"), task("change_vnfpkg")
	return links
}
