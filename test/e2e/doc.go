// Package e2e holds Calaf's node-mode end-to-end tests: they run pods on a real kubelet.
// They carry the build tag e2e and need a cluster in $KUBECONFIG; `make test-e2e` starts
// the test ground's one-node cluster, runs them and stops it:
//
//	test/ground/with-cluster.sh go test -tags e2e -count=1 ./test/e2e/...
//
// Shared helpers live in package framework.
package e2e
