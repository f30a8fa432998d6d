// Package nfvapi is Calaf's NFV interface: the ETSI SOL003 VNF lifecycle management
// (/vnflcm/v2) and VNF package management (/vnfpkgm/v1) REST interfaces an NFVO drives a
// VNFM through, with the SOL013 conventions (package sol013). It keeps nothing of its own:
// every resource it shows is a Kubernetes resource — a VNF instance is a Service, an
// operation occurrence an Operation, a subscription a LifecycleSubscription, a VNF package a
// VnfPackage — read and written as the caller (impersonation), so that Kubernetes RBAC
// decides what an NFVO may see and do, and any number of replicas serve one view.
package nfvapi
