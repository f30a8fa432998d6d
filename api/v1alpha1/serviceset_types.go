package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceSetKind is the kind of ServiceSet.
const ServiceSetKind = "ServiceSet"

// Labels of the Services a ServiceSet makes.
const (
	// LabelServiceSet names the ServiceSet a Service is one site of.
	LabelServiceSet = "calaf.io/service-set"
	// LabelSite names the site (the cluster) a ServiceSet's Service deploys into; on a
	// kubeconfig Secret or a Cluster API Cluster, it names the site (default: the object's
	// name).
	LabelSite = "calaf.io/site"
)

// ServiceSetSpec says which Service to deploy into which clusters, and how to roll a
// change out across them.
type ServiceSetSpec struct {
	// Template is the Service each site gets: its labels, annotations and spec. Its
	// spec.kubeConfig is the site's (set by the ServiceSet).
	Template ServiceTemplate `json:"template"`

	// Clusters selects the sites.
	Clusters ClusterSelector `json:"clusters"`

	// InputsFromLabels gives each site's Service inputs from its cluster's labels (those
	// of its kubeconfig Secret, or its Cluster API Cluster): input name → label key. A
	// label a site lacks gives no input.
	// +optional
	InputsFromLabels map[string]string `json:"inputsFromLabels,omitempty"`

	// Sites are per-site values, by site name: inputs over the template's and the
	// labels'.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=name
	// +optional
	Sites []SiteValues `json:"sites,omitempty"`

	// Rollout says how a new template (or new per-site values) reaches the sites.
	// +optional
	Rollout Rollout `json:"rollout,omitempty"`

	// DeselectedSites says what becomes of the Service of a site no longer selected (its
	// Secret or Cluster deleted or relabelled): Delete (the default) deletes it, and its
	// objects with it; Keep leaves it running, listed as Deselected, until it is selected
	// again or deleted by hand (a label changed by mistake tears no site down).
	// +kubebuilder:validation:Enum=Delete;Keep
	// +optional
	DeselectedSites DeselectedSitesPolicy `json:"deselectedSites,omitempty"`

	// Interval is how often the clusters are selected again (a Secret or Cluster labelled
	// or unlabelled, added or removed), besides every change of the ServiceSet and of its
	// Services.
	// +kubebuilder:default="1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// DeselectedSitesPolicy is what becomes of the Services of sites no longer selected.
type DeselectedSitesPolicy string

const (
	DeselectedSitesDelete DeselectedSitesPolicy = "Delete"
	DeselectedSitesKeep   DeselectedSitesPolicy = "Keep"
)

// ServiceTemplate is the Service a ServiceSet makes per site.
type ServiceTemplate struct {
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`
	Spec     ServiceSpec      `json:"spec"`
}

// TemplateMetadata are the labels and annotations of the Services a ServiceSet makes.
type TemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClusterSelector selects the clusters of a ServiceSet's sites, in its namespace: its
// kubeconfig Secrets (Flux's layout: key value or value.yaml), or its Cluster API
// Clusters (each with its <name>-kubeconfig Secret). Exactly one is set.
// +kubebuilder:validation:XValidation:rule="has(self.secretSelector) != has(self.clusterSelector)",message="set exactly one of secretSelector and clusterSelector"
type ClusterSelector struct {
	// SecretSelector selects kubeconfig Secrets by label.
	// +optional
	SecretSelector *metav1.LabelSelector `json:"secretSelector,omitempty"`
	// ClusterSelector selects Cluster API Clusters (cluster.x-k8s.io) by label.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Delegate hands each site's Service to the Calaf operator serving its cluster
	// (spec.kubeConfig.delegate).
	// +optional
	Delegate bool `json:"delegate,omitempty"`
}

// SiteValues are the values of one site.
type SiteValues struct {
	// Name of the site.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Inputs of the site's Service, over the template's and its labels'.
	// +optional
	Inputs map[string]apiextensionsv1.JSON `json:"inputs,omitempty"`
}

// Rollout says how a change reaches the sites: in the order of their names, at most
// MaxConcurrent at a time (a site is done once its Service is Ready for the change), and,
// unless ContinueOnFailure, no further site once one failed.
type Rollout struct {
	// MaxConcurrent is how many sites take a change at once (default 1).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConcurrent int32 `json:"maxConcurrent,omitempty"`
	// ContinueOnFailure goes on to the next sites when one fails; by default the rollout
	// stops at the first failure (until the ServiceSet changes).
	// +optional
	ContinueOnFailure bool `json:"continueOnFailure,omitempty"`
}

// SitePhase is where one site of a ServiceSet stands.
type SitePhase string

const (
	// SitePending waits for its turn in the rollout.
	SitePending SitePhase = "Pending"
	// SiteProgressing has the change and is not Ready with it yet.
	SiteProgressing SitePhase = "Progressing"
	// SiteReady has the change and is Ready with it.
	SiteReady SitePhase = "Ready"
	// SiteFailed has the change and failed with it (its Service Stalled, or not Ready
	// for a failure).
	SiteFailed SitePhase = "Failed"
	// SiteDeselected is no longer selected, its Service kept (deselectedSites: Keep).
	SiteDeselected SitePhase = "Deselected"
)

// SiteStatus is one site of a ServiceSet.
type SiteStatus struct {
	// Name of the site.
	Name string `json:"name"`
	// Cluster is the kubeconfig Secret or Cluster API Cluster the site is.
	Cluster string `json:"cluster"`
	// Service is the site's Service (in the ServiceSet's namespace).
	Service string    `json:"service"`
	Phase   SitePhase `json:"phase"`
	// Revision is the package revision the site's Service applied last.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Reason and Message are those of the site's Service's Ready condition (or why the
	// site waits).
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ServiceSetStatus is where the sites of a ServiceSet stand.
type ServiceSetStatus struct {
	// ObservedGeneration is the last generation every site is Ready with.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Sites are the selected sites, in rollout order.
	// +optional
	Sites []SiteStatus `json:"sites,omitempty"`
	// ReadySites and TotalSites count them; Summary says "ready/total".
	// +optional
	ReadySites int32 `json:"readySites,omitempty"`
	// +optional
	TotalSites int32 `json:"totalSites,omitempty"`
	// +optional
	Summary string `json:"summary,omitempty"`
}

// ServiceSet makes a Service per selected cluster (a site), rolls changes out across
// them, and says where each stands.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=csvcset,categories=calaf
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Sites",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type ServiceSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ServiceSetSpec `json:"spec,omitempty"`
	// +optional
	Status ServiceSetStatus `json:"status,omitempty"`
}

// ServiceSetList is a list of ServiceSets.
// +kubebuilder:object:root=true
type ServiceSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceSet{}, &ServiceSetList{})
}
