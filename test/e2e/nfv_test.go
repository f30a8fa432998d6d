//go:build e2e

package e2e

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// An NFVO drives Calaf with OpenStack's own client (python3-tackerclient), through calaf
// nfv-api, on the one-node cluster: it subscribes (its callback tested with a GET first),
// onboards three packages (a CNF, its next version, and a version whose image does not
// exist), creates a VNF instance, instantiates it, scales it out and in, heals a pod,
// renames it, changes its package, fails a change to the broken package and retries,
// rolls back and fails such changes, terminates it and deletes it, then deletes its
// subscription and a disabled package. Every answer is checked against the OpenAPI
// document; the receiver checks every notification (schema, credentials) and their order.
func TestNFVInterfaceWithOpenStackClient(t *testing.T) {
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "nfvo")
	api := startNFVAPI(t, "--outbound-allow="+subscriberAddress+"/32")
	nfvo := newNFVO(t, ns)
	receiver := newReceiver(t, "nfvo", "nfvo-password")

	// Subscribe: the callback is tested with a GET that answers 204.
	var sub map[string]any
	api.openstackJSON(t, nfvo, &sub, "vnflcm", "subsc", "create", writeJSON(t, map[string]any{
		"callbackUri":    receiver.url + "/notify",
		"authentication": map[string]any{"authType": []string{"BASIC"}, "paramsBasic": map[string]any{"userName": "nfvo", "password": "nfvo-password"}},
	}))
	subID := sub["ID"].(string)
	g.Expect(receiver.getCount()).To(Equal(1), "the callback was not tested with a GET")

	// Onboard the packages.
	v1 := api.onboard(t, nfvo, packageZip(t, "v1", nil))
	v2 := api.onboard(t, nfvo, packageZip(t, "v2", nil))
	broken := api.onboard(t, nfvo, packageZip(t, "v3", map[string]string{"image: busybox:1.36": "image: calaf.local/absent:0", "imagePullPolicy: IfNotPresent": "imagePullPolicy: Never"}))
	var packages []map[string]any
	api.openstackJSON(t, nfvo, &packages, "vnf", "package", "list")
	g.Expect(packages).To(HaveLen(3))

	// Create and instantiate.
	var inst map[string]any
	api.openstackJSON(t, nfvo, &inst, "vnflcm", "create", v1.vnfdID, "--name", "web-1", "--description", "the web CNF")
	id := inst["ID"].(string)
	g.Expect(inst["Instantiation State"]).To(Equal("NOT_INSTANTIATED"))
	out := api.mustOpenstack(t, nfvo, "vnflcm", "instantiate", id, filepath.Join(framework.RepoRoot(), "test/etsi/nfv-cnf.instantiate.json"))
	g.Expect(out).To(ContainSubstring("Instantiate request for VNF Instance " + id + " has been accepted"))
	api.waitOccurrence(t, nfvo, id, "INSTANTIATE", "COMPLETED")
	shown := api.showInstance(t, nfvo, id)
	g.Expect(shown["Instantiation State"]).To(Equal("INSTANTIATED"))
	g.Expect(vnfcIDs(shown)).To(HaveLen(1))

	// Scale out and in, heal a pod, rename.
	api.mustOpenstack(t, nfvo, "vnflcm", "scale", "--type", "SCALE_OUT", "--aspect-id", "web_aspect", id)
	api.waitOccurrence(t, nfvo, id, "SCALE", "COMPLETED")
	g.Eventually(func() []string { return vnfcIDs(api.showInstance(t, nfvo, id)) }, time.Minute).Should(HaveLen(2))
	out, code := api.openstack(t, nfvo, "vnflcm", "scale", "--type", "SCALE_OUT", "--aspect-id", "web_aspect", "--number-of-steps", "5", id)
	g.Expect(code).NotTo(BeZero(), "a scale past the maximum was accepted: %s", out)
	g.Expect(out).To(ContainSubstring("at most 2"))
	api.mustOpenstack(t, nfvo, "vnflcm", "scale", "--type", "SCALE_IN", "--aspect-id", "web_aspect", id)
	api.waitOccurrence(t, nfvo, id, "SCALE", "COMPLETED")
	vnfc := vnfcIDs(api.showInstance(t, nfvo, id))[0]
	api.mustOpenstack(t, nfvo, "vnflcm", "heal", id, "--vnfc-instance", vnfc)
	api.waitOccurrence(t, nfvo, id, "HEAL", "COMPLETED")
	g.Expect(vnfcIDs(api.showInstance(t, nfvo, id))).NotTo(ContainElement(vnfc))
	api.mustOpenstack(t, nfvo, "vnflcm", "update", id, "--I", writeJSON(t, map[string]any{"vnfInstanceName": "web-renamed"}))
	api.waitOccurrence(t, nfvo, id, "MODIFY_INFO", "COMPLETED")
	g.Expect(api.showInstance(t, nfvo, id)["VNF Instance Name"]).To(Equal("web-renamed"))

	// Change the package; a change to the broken one fails, is retried, rolled back; another
	// is failed.
	change := func(pkg onboarded) string {
		return writeJSON(t, map[string]any{"vnfdId": pkg.vnfdID, "additionalParams": map[string]any{
			"upgrade_type": "RollingUpdate", "lcm-kubernetes-def-files": []string{"Files/kubernetes/web.yaml"}}})
	}
	api.mustOpenstack(t, nfvo, "vnflcm", "change-vnfpkg", id, change(v2))
	api.waitOccurrence(t, nfvo, id, "CHANGE_VNFPKG", "COMPLETED")
	g.Expect(api.showInstance(t, nfvo, id)["VNFD ID"]).To(Equal(v2.vnfdID))
	api.mustOpenstack(t, nfvo, "vnflcm", "change-vnfpkg", id, change(broken))
	failing := api.waitOccurrence(t, nfvo, id, "CHANGE_VNFPKG", "FAILED_TEMP")
	out, code = api.openstack(t, nfvo, "vnflcm", "scale", "--type", "SCALE_OUT", "--aspect-id", "web_aspect", id)
	g.Expect(code).NotTo(BeZero(), "a task was accepted while another occurrence is in progress: %s", out)
	g.Expect(out).To(ContainSubstring("in progress"))
	g.Expect(api.mustOpenstack(t, nfvo, "vnflcm", "op", "retry", failing)).To(ContainSubstring("accepted"))
	waitRetried(t, ns, failing, 1, "FAILED_TEMP")
	g.Expect(api.mustOpenstack(t, nfvo, "vnflcm", "op", "rollback", failing)).To(ContainSubstring("accepted"))
	waitRolledBack(t, ns, failing)
	g.Expect(api.showInstance(t, nfvo, id)["VNFD ID"]).To(Equal(v2.vnfdID))
	api.mustOpenstack(t, nfvo, "vnflcm", "change-vnfpkg", id, change(broken))
	failing = api.waitOccurrence(t, nfvo, id, "CHANGE_VNFPKG", "FAILED_TEMP")
	var failed map[string]any
	api.openstackJSON(t, nfvo, &failed, "vnflcm", "op", "fail", failing)
	g.Expect(failed["Operation State"]).To(Equal("FAILED"))

	// Terminate (the instance stays, NOT_INSTANTIATED), delete.
	out, code = api.openstack(t, nfvo, "vnflcm", "delete", id)
	g.Expect(code).NotTo(BeZero(), "an INSTANTIATED instance was deleted: %s", out)
	api.mustOpenstack(t, nfvo, "vnflcm", "terminate", id, "--termination-type", "GRACEFUL", "--graceful-termination-timeout", "30")
	api.waitOccurrence(t, nfvo, id, "TERMINATE", "COMPLETED")
	g.Eventually(func() any { return api.showInstance(t, nfvo, id)["Instantiation State"] }, time.Minute).Should(Equal("NOT_INSTANTIATED"))
	g.Expect(api.mustOpenstack(t, nfvo, "vnflcm", "delete", id)).To(ContainSubstring("deleted successfully"))
	_, code = api.openstack(t, nfvo, "vnflcm", "show", id)
	g.Expect(code).NotTo(BeZero())

	// Every notification, in order.
	g.Eventually(func() []string { return notificationSummary(receiver.notifications()) }, 2*time.Minute).Should(Equal([]string{
		"VnfIdentifierCreationNotification",
		"INSTANTIATE STARTING", "INSTANTIATE PROCESSING", "INSTANTIATE COMPLETED",
		"SCALE STARTING", "SCALE PROCESSING", "SCALE COMPLETED",
		"SCALE STARTING", "SCALE PROCESSING", "SCALE COMPLETED",
		"HEAL STARTING", "HEAL PROCESSING", "HEAL COMPLETED",
		"MODIFY_INFO STARTING", "MODIFY_INFO PROCESSING", "MODIFY_INFO COMPLETED",
		"CHANGE_VNFPKG STARTING", "CHANGE_VNFPKG PROCESSING", "CHANGE_VNFPKG COMPLETED",
		"CHANGE_VNFPKG STARTING", "CHANGE_VNFPKG PROCESSING", "CHANGE_VNFPKG FAILED_TEMP",
		"CHANGE_VNFPKG PROCESSING", "CHANGE_VNFPKG FAILED_TEMP", "CHANGE_VNFPKG ROLLING_BACK", "CHANGE_VNFPKG ROLLED_BACK",
		"CHANGE_VNFPKG STARTING", "CHANGE_VNFPKG PROCESSING", "CHANGE_VNFPKG FAILED_TEMP", "CHANGE_VNFPKG FAILED",
		"TERMINATE STARTING", "TERMINATE PROCESSING", "TERMINATE COMPLETED",
		"VnfIdentifierDeletionNotification",
	}))
	receiver.lock.Lock()
	g.Expect(receiver.problems).To(BeEmpty())
	receiver.lock.Unlock()
	for _, n := range receiver.notifications() {
		g.Expect(n["vnfInstanceId"]).To(Equal(id))
		g.Expect(n["subscriptionId"]).To(Equal(subID))
	}

	// The subscription and the packages.
	var subs []map[string]any
	api.openstackJSON(t, nfvo, &subs, "vnflcm", "subsc", "list")
	g.Expect(subs).To(HaveLen(1))
	api.openstackJSON(t, nfvo, &sub, "vnflcm", "subsc", "show", subID)
	g.Expect(sub["Callback URI"]).To(Equal(receiver.url + "/notify"))
	api.mustOpenstack(t, nfvo, "vnflcm", "subsc", "delete", subID)
	_, code = api.openstack(t, nfvo, "vnf", "package", "delete", broken.id)
	g.Expect(code).NotTo(BeZero(), "an ENABLED package was deleted")
	api.mustOpenstack(t, nfvo, "vnf", "package", "update", "--operational-state", "DISABLED", broken.id)
	api.mustOpenstack(t, nfvo, "vnf", "package", "delete", broken.id)
	api.openstackJSON(t, nfvo, &packages, "vnf", "package", "list")
	g.Expect(packages).To(HaveLen(2))

	api.exchanges.expectConforming(t)
}

// onboarded is a package the NFV API onboarded.
type onboarded struct{ id, vnfdID string }

// onboard creates a package, uploads the zip and waits until it is ONBOARDED.
func (api *nfvAPI) onboard(t *testing.T, who nfvo, zipPath string) onboarded {
	t.Helper()
	var created map[string]any
	api.openstackJSON(t, who, &created, "vnf", "package", "create")
	id := created["ID"].(string)
	api.mustOpenstack(t, who, "vnf", "package", "upload", "--path", zipPath, id)
	var shown map[string]any
	NewWithT(t).Eventually(func() any {
		api.openstackJSON(t, who, &shown, "vnf", "package", "show", id)
		return shown["Onboarding State"]
	}, 2*time.Minute, time.Second).Should(Equal("ONBOARDED"), "package %s: %v", id, shown)
	return onboarded{id: id, vnfdID: shown["VNFD ID"].(string)}
}

// showInstance is `openstack vnflcm show` as JSON.
func (api *nfvAPI) showInstance(t *testing.T, who nfvo, id string) map[string]any {
	t.Helper()
	var shown map[string]any
	api.openstackJSON(t, who, &shown, "vnflcm", "show", id)
	return shown
}

// vnfcIDs are the VNFC instance ids (<vdu>-<pod>) an instance shows.
func vnfcIDs(shown map[string]any) []string {
	info, _ := shown["Instantiated Vnf Info"].(map[string]any)
	vnfcs, _ := info["vnfcInfo"].([]any)
	var ids []string
	for _, v := range vnfcs {
		ids = append(ids, v.(map[string]any)["id"].(string))
	}
	return ids
}

// waitOccurrence waits until the instance's newest occurrence of an operation (one no
// earlier wait returned) is in a state, and returns its id.
func (api *nfvAPI) waitOccurrence(t *testing.T, who nfvo, instance, operation, state string) string {
	t.Helper()
	var id string
	NewWithT(t).Eventually(func(g Gomega) {
		var occs []map[string]any
		api.openstackJSON(t, who, &occs, "vnflcm", "op", "list")
		var fresh []map[string]any
		for _, o := range occs {
			if o["VNF Instance ID"] == instance && o["Operation"] == operation && !api.seen[o["ID"].(string)] {
				fresh = append(fresh, o)
			}
		}
		g.Expect(fresh).To(HaveLen(1), "the new %s occurrence of %s", operation, instance)
		id = fresh[0]["ID"].(string)
		g.Expect(fresh[0]["Operation State"]).To(Equal(state))
	}, 3*time.Minute, time.Second).Should(Succeed())
	api.seen[id] = true
	return id
}

// waitOccurrenceState waits until an occurrence is in a state.
func (api *nfvAPI) waitOccurrenceState(t *testing.T, who nfvo, id, state string) {
	t.Helper()
	NewWithT(t).Eventually(func() any {
		var shown map[string]any
		api.openstackJSON(t, who, &shown, "vnflcm", "op", "show", id)
		return shown["Operation State"]
	}, 3*time.Minute, time.Second).Should(Equal(state))
}

// waitRetried waits until an occurrence's retry has been handled (status.retries) and it
// is in a state again.
func waitRetried(t *testing.T, ns, id string, retries int32, state string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		op := &v1alpha1.Operation{}
		g.Expect(suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: id}, op)).To(Succeed())
		g.Expect(op.Status.Retries).To(Equal(retries))
		g.Expect(string(op.Status.OperationState)).To(Equal(state))
	}, 3*time.Minute, time.Second).Should(Succeed())
}

// waitRolledBack waits until an occurrence is ROLLED_BACK; otherwise it shows the
// Operation's steps and conditions.
func waitRolledBack(t *testing.T, ns, id string) {
	t.Helper()
	op := &v1alpha1.Operation{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: id}, op)).To(Succeed())
		g.Expect(string(op.Status.OperationState)).To(Equal("ROLLED_BACK"), func() string {
			shown, _ := json.MarshalIndent(op.Status, "", "  ")
			return string(shown)
		})
	}, 3*time.Minute, time.Second).Should(Succeed())
}

// notificationSummary is "OPERATION STATE" for each occurrence notification, the type of
// the others.
func notificationSummary(ns []map[string]any) []string {
	var out []string
	for _, n := range ns {
		if n["notificationType"] == "VnfLcmOperationOccurrenceNotification" {
			out = append(out, fmt.Sprintf("%s %s", n["operation"], n["operationState"]))
			continue
		}
		out = append(out, fmt.Sprint(n["notificationType"]))
	}
	return out
}

// writeJSON writes a value to a file of the test's and returns its path (the client reads
// request bodies from files).
func writeJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// packageZip zips test/etsi/nfv-cnf as a CSAR of a version ("v1" keeps its VNFD id;
// others get their own), with text replaced in its files, and returns its path.
func packageZip(t *testing.T, version string, replace map[string]string) string {
	t.Helper()
	dir := filepath.Join(framework.RepoRoot(), "test/etsi/nfv-cnf")
	path := filepath.Join(t.TempDir(), "web-cnf-"+version+".zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(data), "web-cnf-v1", "web-cnf-"+version)
		text = strings.ReplaceAll(text, "software_version: '1.0'", "software_version: '"+strings.TrimPrefix(version, "v")+".0'")
		for from, to := range replace {
			text = strings.ReplaceAll(text, from, to)
		}
		rel, _ := filepath.Rel(dir, p)
		out, err := w.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = out.Write([]byte(text))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
