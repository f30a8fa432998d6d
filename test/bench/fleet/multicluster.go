package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/e2e/framework"
)

// targetNames are the test ground's remote control planes (test/ground/remote.sh) the
// Services of -multicluster deploy into.
func targetNames() []string { return []string{"remote", "remote2"} }

// targetCluster is a cluster Services deploy into: the bench's admin client of it, and
// the counting proxy the operator reaches it through (TLS, as a kubeconfig's server must
// be), with the certificate that proxy serves.
type targetCluster struct {
	name   string
	c      client.Client
	cs     kubernetes.Interface
	proxy  *countingProxy
	caData []byte
}

// runMulticluster runs -rounds rounds of the n Services in the operator's own cluster
// (run A) and of the same n Services deployed into the two remote control planes, half
// in each (run B), in an order drawn for each round, and reports their medians.
func (b *bench) runMulticluster(ctx context.Context, report string) error {
	targets, err := startTargets()
	defer stopTargets(targets)
	if err != nil {
		return err
	}
	fmt.Printf("runs in an order drawn from seed %d (-seed %d repeats it)\n", b.seed, b.seed)
	var rounds [][]result
	for i := 0; i < b.rounds; i++ {
		local := fleet{n: b.n, namespace: fmt.Sprintf("fleet-local-%d-r%d-%s", b.n, i, runID), selectors: []string{""}}
		remote := fleet{n: b.n, namespace: fmt.Sprintf("fleet-targets-%d-r%d-%s", b.n, i, runID), selectors: []string{""}, targets: secretNames(targets)}
		results, err := b.order.run([]func() (result, error){
			func() (result, error) {
				r, err := b.operatorRun(ctx, local)
				r.name = localRunName(b.n)
				return r, err
			},
			func() (result, error) { return b.targetRun(ctx, remote, targets) },
		})
		if err != nil {
			return err
		}
		printRound(i, b.n, results)
		for _, t := range targets {
			fmt.Printf("   requests to %s per Service there: %s\n", t.name, strings.Join(perService(results[1].targetRequests[t.name], servicesIn(b.n, len(targets), indexOf(targets, t.name))), ", "))
		}
		rounds = append(rounds, results)
	}
	if report == "" {
		return nil
	}
	return writeMulticlusterReport(report, b.settings, rounds)
}

func localRunName(n int) string { return fmt.Sprintf("A: %d Services in the operator's cluster", n) }

func targetRunName(n, clusters int) string {
	return fmt.Sprintf("B: %d Services in %d target clusters", n, clusters)
}

// targetRun measures f's Services deployed into the target clusters: it creates f's
// namespace in each, and a kubeconfig Secret of each in f's namespace, then measures the
// operator (measureOperator) with the target clusters' requests counted from the first
// Service created; it clears f's namespace here and in every target cluster after.
func (b *bench) targetRun(ctx context.Context, f fleet, targets []*targetCluster) (result, error) {
	if err := createNamespace(ctx, b.c, f.namespace); err != nil {
		return result{}, err
	}
	for _, t := range targets {
		if err := createNamespace(ctx, t.c, f.namespace); err != nil {
			return result{}, fmt.Errorf("%s: %w", t.name, err)
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: secretName(t.name)},
			Data:       map[string][]byte{"value": proxyKubeconfig(t.name, t.proxy.Host(), t.caData)},
		}
		if err := b.c.Create(ctx, secret); err != nil {
			return result{}, err
		}
		t.proxy.Counts(true)
	}
	res, err := b.measureOperator(ctx, f)
	if err != nil {
		return result{}, err
	}
	res.name = targetRunName(f.n, len(targets))
	res.targetRequests = map[string]map[string]int64{}
	for _, t := range targets {
		res.targetRequests[t.name] = t.proxy.Counts(true)
	}
	if err := clearNamespace(ctx, b.c, f.namespace); err != nil {
		return result{}, err
	}
	for _, t := range targets {
		if err := clearTargetNamespace(ctx, t, f.namespace); err != nil {
			return result{}, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return res, nil
}

// secretName names the kubeconfig Secret of a target cluster (Cluster API's layout).
func secretName(cluster string) string { return cluster + "-kubeconfig" }

func secretNames(targets []*targetCluster) []string {
	var names []string
	for _, t := range targets {
		names = append(names, secretName(t.name))
	}
	return names
}

func indexOf(targets []*targetCluster, name string) int {
	for i, t := range targets {
		if t.name == name {
			return i
		}
	}
	return -1
}

// servicesIn is how many of n Services deploy into target k of clusters: Service i
// deploys into target i mod clusters.
func servicesIn(n, clusters, k int) int {
	count := n / clusters
	if k < n%clusters {
		count++
	}
	return count
}

// proxyKubeconfig is the kubeconfig of a Secret that sends the operator to a target
// cluster through its counting proxy: the proxy's server and certificate, and no
// credentials (the proxy adds the bench's own).
func proxyKubeconfig(cluster, server string, caData []byte) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: bench
  user: {}
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: bench}
current-context: %[1]s
`, cluster, server, base64.StdEncoding.EncodeToString(caData))
}

// startTargets starts the remote control planes (remote.sh up) and a TLS counting proxy
// in front of each; it returns those started so far with an error.
func startTargets() ([]*targetCluster, error) {
	certificate, caData, err := selfSignedCertificate()
	if err != nil {
		return nil, err
	}
	var targets []*targetCluster
	for _, name := range targetNames() {
		out, err := remoteScript("up", name)
		if err != nil {
			return targets, err
		}
		t := &targetCluster{name: name, caData: caData}
		targets = append(targets, t)
		data, err := os.ReadFile(lastLine(out))
		if err != nil {
			return targets, err
		}
		config, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			return targets, err
		}
		config.QPS, config.Burst = 200, 400
		if t.c, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
			return targets, err
		}
		if t.cs, err = kubernetes.NewForConfig(config); err != nil {
			return targets, err
		}
		if t.proxy, err = startProxyServing(config, &certificate); err != nil {
			return targets, err
		}
		fmt.Printf("target cluster %s: %s, through the proxy %s\n", name, config.Host, t.proxy.Host())
	}
	return targets, nil
}

// stopTargets stops the proxies and the remote control planes (remote.sh down).
func stopTargets(targets []*targetCluster) {
	for _, t := range targets {
		if t.proxy != nil {
			t.proxy.Close()
		}
		if out, err := remoteScript("down", t.name); err != nil {
			fmt.Fprintf(os.Stderr, "fleet: %v\n%s", err, out)
		}
	}
}

// remoteScript runs test/ground/remote.sh action name and returns its output.
func remoteScript(action, name string) (string, error) {
	out, err := exec.Command(filepath.Join(framework.RepoRoot(), "test", "ground", "remote.sh"), action, name).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("remote.sh %s %s: %w: %s", action, name, err, out)
	}
	return string(out), nil
}

func lastLine(out string) string {
	out = strings.TrimSpace(out)
	return strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:])
}

// selfSignedCertificate makes the certificate the target clusters' proxies serve, for
// 127.0.0.1, and returns it with its PEM (the kubeconfigs' CA).
func selfSignedCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "calaf-fleet-bench-proxy"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caData, nil
}

// clearTargetNamespace deletes namespace's objects in a target cluster, then the
// namespace, and waits until it is gone. The remote control planes run no namespace
// controller, so the bench deletes what the Services applied (their kinds:
// ConfigMaps, ServiceAccounts, Services) itself, and finalizes the namespace.
func clearTargetNamespace(ctx context.Context, t *targetCluster, namespace string) error {
	lists := []client.ObjectList{&corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{}}
	deleted := 0
	for _, list := range lists {
		if err := t.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
		objects, err := apimeta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, obj := range objects {
			if err := t.c.Delete(ctx, obj.(client.Object)); client.IgnoreNotFound(err) != nil {
				return err
			}
			deleted++
		}
	}
	namespaces := t.cs.CoreV1().Namespaces()
	if err := namespaces.Delete(ctx, namespace, metav1.DeleteOptions{}); client.IgnoreNotFound(err) != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ns, err := namespaces.Get(ctx, namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			fmt.Printf("namespace %s of %s cleared (%d objects)\n", namespace, t.name, deleted)
			return nil
		}
		if err != nil {
			return err
		}
		if len(ns.Spec.Finalizers) > 0 {
			ns.Spec.Finalizers = nil
			if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return fmt.Errorf("namespace %s not gone after a minute", namespace)
}

// medianTargetRequests returns, for run j, the medians over rounds of each target
// cluster's counts.
func medianTargetRequests(rounds [][]result, j int) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for cluster, counts := range rounds[0][j].targetRequests {
		out[cluster] = map[string]int64{}
		for key := range counts {
			out[cluster][key] = median[int64](runOf(rounds, j), func(r result) float64 { return float64(r.targetRequests[cluster][key]) }, nil)
		}
	}
	return out
}

// runOf is run j of every round.
func runOf(rounds [][]result, j int) []result {
	var runs []result
	for _, round := range rounds {
		runs = append(runs, round[j])
	}
	return runs
}

// sum adds up counts.
func sum(counts map[string]int64) int64 {
	var total int64
	for _, count := range counts {
		total += count
	}
	return total
}

// writeMulticlusterReport replaces the target clusters' section of benchmarks.md with the
// medians of the rounds (run A, the operator's own cluster, then run B, the target
// clusters) and B ÷ A of each round, their median.
func writeMulticlusterReport(path string, s settings, rounds [][]result) error {
	runs := medians(rounds)
	a, b := runs[0], runs[1]
	targets, names := medianTargetRequests(rounds, 1), targetNames()
	var w strings.Builder
	fmt.Fprintf(&w, "%s %d Services in %d target clusters\n\n", sectionTitle, s.n, len(names))
	fmt.Fprintf(&w, "For whoever deploys Services into other clusters than the operator's (`spec.kubeConfig`, [multicluster.md](multicluster.md)) and sizes the operator for it: what %d Services spread over %d target clusters cost against the same %d Services in the operator's own cluster — the time until they report Applied and Ready, the requests the operator sends to each cluster, and its memory.\n\n", s.n, len(names), s.n)
	fmt.Fprintf(&w, "Written by `make bench-multicluster` (test/bench/fleet `-multicluster`) %s %s\n\n", machine(), roundsNote(s, "A and B, each in a namespace of its own"))
	w.WriteString(multiclusterSetup(s))
	writeRunTable(&w, "A", runs)
	applied, appliedEach := pairedRatioOf(rounds, 1, 0, func(r result) time.Duration { return r.applied })
	ready, readyEach := pairedRatioOf(rounds, 1, 0, func(r result) time.Duration { return r.duration })
	fmt.Fprintf(&w, "B ÷ A, each round's B against the same round's A: Services report Applied %.2f×%s; all Ready %.2f×%s. Peak RSS of the operator %s in B against %s in A.\n\n",
		applied, roundsOf(appliedEach), ready, roundsOf(readyEach), mib(b.peakRSS), mib(a.peakRSS))
	writeClusterRequests(&w, s.n, a, b, targets)
	w.WriteString(multiclusterLimits)
	w.WriteString(memoryNote)
	return benchreport.WriteBenchmark(path, w.String())
}

// multiclusterSetup says what runs A and B do.
func multiclusterSetup(s settings) string {
	names := targetNames()
	return fmt.Sprintf("Each Service is test/bench/fleet/nodeless: a ConfigMap of its own inputs, a ServiceAccount and a Kubernetes Service (3 objects), all healthy as soon as they are applied — the target clusters are control planes alone (test/ground/remote.sh: etcd and kube-apiserver, no node, no controller but the garbage collector), where a Deployment would never be Ready. "+
		"*A*: the %d Services in the operator's own cluster (the test ground's one-node cluster). *B*: the same %d Services, Service *i* deployed into `%s` when *i* is even, `%s` when odd (%d each), through kubeconfig Secrets of the Services' namespace (`spec.kubeConfig.secretRef`, key `value`); the Services themselves, their status and events stay in the operator's cluster. "+
		"The bench creates the Services as `make bench-fleet` does (%d at a time, carrying the operator's finalizer) and follows their status through a watch: *applied* is until every Service says `Applied`, *Ready* until every one says `Ready` for its generation. "+
		"One operator process runs both, with `--concurrency %d --kube-api-qps %g --kube-api-burst %d --settle-delay %s --target-cluster-allow=127.0.0.1/32` (the target clusters listen on loopback), and watches the run's namespace. "+
		"Requests are counted by proxies in the bench process: one in front of the operator's cluster (plain HTTP), one in front of each target cluster (TLS, with a certificate of the bench's: a kubeconfig's server must be `https://`; the kubeconfig Secrets name the proxy, which adds the bench's admin credentials). They are counted from the first Service created until all were Ready: the operator's start-up LISTs and WATCHes of its own cluster come before, but its connection to each target cluster — made when a Service first needs it, its discovery and the watches of its cache there — is in B's count. "+
		"After each run the bench deletes its namespace and waits until it is gone, here and in the target clusters (there, having no namespace controller, it deletes the objects itself and finalizes the namespace).\n\n",
		s.n, s.n, names[0], names[1], servicesIn(s.n, 2, 0), s.workers, s.operatorConcurrency(), s.operatorQPS, int(2*s.operatorQPS), s.operatorSettleDelay())
}

// writeClusterRequests writes the requests of A and B by cluster, each per Service of
// that cluster (the Services themselves live in the operator's cluster: all n count
// there), and all of a run's requests per Service.
func writeClusterRequests(w *strings.Builder, n int, a, b result, targets map[string]map[string]int64) {
	names := targetNames()
	w.WriteString("Requests per Service, by cluster (the operator's cluster: per Service of the run; a target cluster: per Service deployed into it):\n\n| run | cluster | Services | " + strings.Join(columns, " | ") + " | writes | all |\n|---|---|---:|" + strings.Repeat("---:|", len(columns)+2) + "\n")
	row := func(run, cluster string, services int, counts map[string]int64) {
		c := perColumn(counts, services)
		fmt.Fprintf(w, "| %s | %s | %d |", run, cluster, services)
		for _, col := range columns {
			fmt.Fprintf(w, " %.2f |", c[col])
		}
		fmt.Fprintf(w, " %.2f | %.2f |\n", writes(c), float64(sum(counts))/float64(services))
	}
	row("A", "operator's", n, a.requests)
	row("B", "operator's", n, b.requests)
	all := sum(b.requests)
	for k, name := range names {
		row("B", name, servicesIn(n, len(names), k), targets[name])
		all += sum(targets[name])
	}
	fmt.Fprintf(w, "\nAll requests per Service, every cluster together: A %.2f, B %.2f. By resource, B's to `%s`: %s; B's to the operator's cluster: %s.\n\n",
		float64(sum(a.requests))/float64(n), float64(all)/float64(n), names[0], strings.Join(perService(targets[names[0]], servicesIn(n, len(names), 0)), ", "), strings.Join(perService(b.requests, n), ", "))
}

// multiclusterLimits says what the figures can show and what not.
const multiclusterLimits = "What this can show, and what not: every API server here is on the same machine as the operator, over loopback — no network latency or bandwidth between the operator and a target cluster, as a real site far away would add to every request; the target clusters are bare control planes, lighter than the one-node cluster's (which runs its controllers, scheduler and kubelet too); and the operator reaches them over TLS and HTTP/2 through the bench's proxy, its own cluster over plain HTTP. " +
	"What it shows either way: what a target cluster adds to the operator's own work and memory (a connection, its discovery, a cache and watches per cluster and namespace), and where the requests of a Service go when its objects are elsewhere — its applies to its target cluster, its status and events to the operator's.\n\n"
