#!/usr/bin/env bash
# demo.sh: Calaf doing its main job. On the test ground's embedded one-node cluster (the
# default) it builds the operator image, installs CRDs, RBAC and the operator Deployment
# (deploy/test-ground), deploys examples/hello-world with `calaf deploy --wait` (progress
# per node until Ready), and prints the Service's outputs — computed from live attributes —
# and the page the workload serves. The cluster stays up for exploring; `make cluster-down`
# stops it.
#
# With DEMO_KUBECONFIG=path (an existing cluster of yours) it installs the CRDs there and
# runs the operator as a local process instead, then removes the demo Service at the end.
set -euo pipefail
REPO_DIR=$(cd "$(dirname "$0")/../.." && pwd)
source "$REPO_DIR/test/ground/lib.sh"
cd "$REPO_DIR"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "building calaf (the front), calaf-full, calaf-offline and calaf-runner (which the operator streams into pods to run operations)"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/calaf ./cmd/calaf
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/calaf-full ./cmd/calaf-full
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -tags calaf_offline -o bin/calaf-offline ./cmd/calaf-full
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/calaf-runner ./cmd/calaf-runner
CALAF=$REPO_DIR/bin/calaf
CALAF_FULL=$REPO_DIR/bin/calaf-full # the operator: the whole of Calaf
NAMESPACE=${DEMO_NAMESPACE:-calaf-demo}

if [[ -n ${DEMO_KUBECONFIG:-} ]]; then
  export KUBECONFIG=$DEMO_KUBECONFIG
  KUBECTL=$(command -v kubectl || echo "$BIN_DIR/kubectl")
  step "installing the Calaf CRDs into the cluster of $KUBECONFIG"
  "$KUBECTL" apply --server-side -k deploy/crd
  "$KUBECTL" wait --for condition=established --timeout=60s crd/services.calaf.io crd/operations.calaf.io
  step "running the operator as a local process (log: /tmp/calaf-demo-operator.log)"
  "$CALAF_FULL" operator --metrics-bind-address=0 --health-probe-bind-address=0 >/tmp/calaf-demo-operator.log 2>&1 &
  operator_pid=$!
  trap 'kill $operator_pid 2>/dev/null || true' EXIT
else
  if ! cluster_running; then
    step "starting the embedded cluster (first run: builds Kubernetes from source, about 15 min)"
    "$GROUND_DIR/cluster-up.sh"
  fi
  export KUBECONFIG=$KUBECONFIG_OUT
  KUBECTL=$BIN_DIR/kubectl
  step "building the operator image (no docker: from the static binary) and loading it into the node"
  "$GROUND_DIR/images.sh" operator "$CALAF_FULL"
  step "installing CRDs, RBAC and the operator (kubectl apply -k deploy/test-ground)"
  "$KUBECTL" apply --server-side -k deploy/test-ground >/dev/null
  "$KUBECTL" wait --for condition=established --timeout=60s crd/services.calaf.io crd/operations.calaf.io >/dev/null
  # a new image under the same tag: restart the operator to pick it up
  "$KUBECTL" -n calaf-system rollout restart deployment/calaf-operator >/dev/null
  "$KUBECTL" -n calaf-system rollout status deployment/calaf-operator --timeout=120s
fi

"$KUBECTL" create namespace "$NAMESPACE" --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null

step "validating examples/hello-world offline"
"$CALAF" validate examples/hello-world
"$CALAF" graph examples/hello-world -o html > /tmp/calaf-demo-topology.html
echo "topology picture: /tmp/calaf-demo-topology.html"

step "deploying it: calaf deploy hello examples/hello-world --wait"
"$CALAF" deploy hello examples/hello-world -n "$NAMESPACE" -i 'message=Hello from the Calaf demo!' --wait --wait-timeout=5m

step "status and outputs (computed from live attributes)"
"$CALAF" status hello -n "$NAMESPACE"

step "what the web workload serves"
pod=$("$KUBECTL" -n "$NAMESPACE" get pods -l calaf.io/service=hello,calaf.io/node=web -o jsonpath='{.items[0].metadata.name}')
"$KUBECTL" -n "$NAMESPACE" exec "$pod" -- wget -qO- http://127.0.0.1:8080/

step "the Service as kubectl shows it (kubectl get csvc)"
"$KUBECTL" -n "$NAMESPACE" get csvc

if [[ -n ${DEMO_KUBECONFIG:-} ]]; then
  step "removing the demo Service"
  "$CALAF" delete hello -n "$NAMESPACE" --wait
else
  cat <<MSG

The cluster is still up. Explore it with:
  export KUBECONFIG=$KUBECONFIG_OUT
  bin/calaf status hello -n $NAMESPACE
  bin/calaf deploy hello examples/hello-world -n $NAMESPACE -i replicas=3 --wait
Stop it with: make cluster-down
MSG
fi
