# Calaf — make help lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GROUND := test/ground
CALAF_CACHE ?= $(HOME)/.cache/calaf
export CALAF_CACHE
BIN_DIR := $(CALAF_CACHE)/k8s-v1.37.2/bin
TOOLS_DIR := $(CALAF_CACHE)/tools
CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen-v0.23.0
GO_TEST_FLAGS ?=

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)

##@ Development
.PHONY: build
build: ## Build calaf (the front), calaf-full, calaf-offline and calaf-runner (streamed into pods to run operations) into bin/.
	CGO_ENABLED=0 go build -trimpath -o bin/calaf ./cmd/calaf
	CGO_ENABLED=0 go build -trimpath -o bin/calaf-full ./cmd/calaf-full
	CGO_ENABLED=0 go build -trimpath -tags calaf_offline -o bin/calaf-offline ./cmd/calaf-full
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/calaf-runner ./cmd/calaf-runner

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and CRD manifests.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=deploy/crd

$(CONTROLLER_GEN):
	mkdir -p $(TOOLS_DIR)
	GOBIN=$(TOOLS_DIR) go install sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
	mv $(TOOLS_DIR)/controller-gen $(CONTROLLER_GEN)

.PHONY: vet
vet: ## go vet and gofmt check.
	go vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

##@ Test ground (a real control plane and node, built from source)
.PHONY: deps
deps: ## Install the Debian packages the test ground needs (only those missing; needs root then).
	$(GROUND)/deps.sh

.PHONY: ground-build
ground-build: ## Build (once, cached) kube-apiserver, etcd, kubelet, ... from the module proxy.
	$(GROUND)/build.sh

.PHONY: cluster-up
cluster-up: ground-build ## Start the one-node cluster; kubeconfig in /var/run/calaf-ground/kubeconfig.
	$(GROUND)/cluster-up.sh

.PHONY: cluster-down
cluster-down: ## Stop the one-node cluster and remove every trace of it.
	$(GROUND)/cluster-down.sh

##@ Demo
.PHONY: demo
demo: ground-build ## Calaf on the embedded cluster: operator in-cluster, hello-world deployed, outputs printed. DEMO_KUBECONFIG=path uses your cluster.
	test/demo/demo.sh

##@ Test
.PHONY: test
test: deps ground-build ## Unit, API-server (envtest) and node-mode end-to-end tests; ends with how many tests ran, how many were skipped and why.
	@mkdir -p bin && : > $(TEST_SUMMARY)
	@rc=0; { $(MAKE) test-unit && $(MAKE) test-e2e; } || rc=$$?; \
		printf '\n=== make test: summary (%s)\n' "$$( ((rc == 0)) && echo ok || echo "FAILED ($$rc)")"; cat $(TEST_SUMMARY); exit $$rc

# Every stage of make test appends its tally here (test/testsummary): tests passed,
# failed and skipped, the reason of each skip, and the stages skipped whole.
TEST_SUMMARY ?= $(CURDIR)/bin/test-summary.txt
TESTSUMMARY := bin/testsummary

.PHONY: $(TESTSUMMARY)
$(TESTSUMMARY):
	@mkdir -p bin && go build -o $(TESTSUMMARY) ./test/testsummary

.PHONY: test-unit
test-unit: $(TESTSUMMARY) ## Unit and envtest integration tests (real kube-apiserver + etcd), never from the test cache; then test-race and test-fuzz.
	KUBEBUILDER_ASSETS=$(BIN_DIR) go test -json -count=1 $(GO_TEST_FLAGS) ./... | $(TESTSUMMARY) -stage 'unit and envtest' -summary $(TEST_SUMMARY)
	$(MAKE) test-race
	$(MAKE) test-fuzz

# The fuzz targets (package:target) and how much each runs in make test; their seed corpora
# are in the packages' testdata/fuzz (go test runs those as plain tests too).
# FUZZ_TIME is a count of executions, not a duration: Go 1.26's fuzz coordinator can report
# "context deadline exceeded" as a failure when a duration ends while a worker is mid-input
# (golang/go#75804, fixed in Go 1.27). A count has no deadline to race; 10000x is a few
# seconds per target here.
FUZZ_TARGETS := ./tosca/:FuzzOpenArchive ./tosca/:FuzzParseMeta ./tosca/:FuzzParseManifest \
	./tosca/:FuzzInputsAsData ./tosca/sol004/:FuzzVerifyCMS ./render/:FuzzValidateObjects
FUZZ_TIME ?= 10000x

.PHONY: test-fuzz
test-fuzz: ## A short fuzz run of every fuzz target (FUZZ_TIME each: 10000x executions by default, or a duration such as 30s): package loader, TOSCA.meta and .mf parsers, input conversion, CMS signature check, rendered-object validation.
	@mkdir -p bin; for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; name=$${target##*:}; \
		echo "go test -run '^$$' -fuzz '^$$name$$' -fuzztime=$(FUZZ_TIME) $$pkg"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime=$(FUZZ_TIME) $$pkg || { echo "fuzz: FAILED — $$target" >> $(TEST_SUMMARY); exit 1; }; \
	done; \
	echo "fuzz: ok — $(words $(FUZZ_TARGETS)) targets, $(FUZZ_TIME) each" >> $(TEST_SUMMARY)

# The packages that run concurrently — compiles and renders, the worker pools, the
# reconcilers with their waves of applies (envtest), the orchestration of operations —
# under the race detector (it needs cgo: skipped, saying so, where no C compiler is
# installed). Their workers run a calaf built without it (test/raceworker says why).
RACE_PACKAGES := ./tosca/... ./render/ ./etsi/ ./internal/lru/ ./worker/ ./controller/ \
	./source/... ./orchestration/ ./lifecycle/ ./policy/ ./internal/operator/

.PHONY: test-race
test-race: $(TESTSUMMARY) ## The concurrent packages (compile, render, workers, reconcilers) under the race detector (needs a C compiler).
	@mkdir -p bin; if command -v gcc >/dev/null; then \
		echo "CGO_ENABLED=1 go test -race -count=1 $(RACE_PACKAGES)"; \
		KUBEBUILDER_ASSETS=$(BIN_DIR) CGO_ENABLED=1 go test -json -race -count=1 $(RACE_PACKAGES) | $(TESTSUMMARY) -stage 'race detector' -summary $(TEST_SUMMARY); \
	else \
		echo "test-race: no C compiler (gcc), so no race detector: skipped"; \
		echo "race detector: SKIPPED whole — no C compiler (gcc) on this machine" >> $(TEST_SUMMARY); \
	fi

FLEET_N ?= 1000
FLEET_SMALLER ?= 300
FLEET_ROUNDS ?= 3
# The seed of the order of the runs within each round (0: drawn at random; the report
# says the one used, and FLEET_SEED=it repeats the orders); FLEET_ARGS: more flags of
# test/bench/fleet, e.g. -settle-delay 0.
FLEET_SEED ?= 0
FLEET_ARGS ?=
FLEET_KCM_QPS ?= 400
FLEET_DISTINCT_N ?= 1000
FLEET_SHARDS ?= 2
FLEET_SHARDS_N ?= 2000
FLEET_MULTICLUSTER_N ?= 200

.PHONY: bench
bench: ## Every benchmark, each against a same-run baseline (compile/render, package size, workers, whole processes, ETSI packages, sources, orchestration, lifecycle, the NFV interface, 1,000 Services, request costs, distinct packages, shards, Services in target clusters; about 100 min in all), and the records of docs/robustness.md; writes docs/benchmarks.md whole.
	go test -count=1 -timeout 60m -v -run '^(TestReport|TestETSIReport|TestSizeReport|TestWorkerReport|TestProcessReport)$$' ./test/benchmarks/ -args -report=$(CURDIR)/docs/benchmarks.md
	KUBEBUILDER_ASSETS=$(BIN_DIR) go test -count=1 -timeout 20m -v -run '^TestBenchSources$$' ./test/sources/ -args -report=$(CURDIR)/docs/benchmarks.md
	$(MAKE) bench-orchestration
	$(MAKE) bench-lifecycle
	$(MAKE) bench-nfv
	$(MAKE) bench-fleet
	$(MAKE) bench-fleet-costs
	$(MAKE) bench-fleet-distinct FLEET_ROUNDS=$(FLEET_SIDE_ROUNDS)
	$(MAKE) bench-fleet-shards FLEET_ROUNDS=$(FLEET_SIDE_ROUNDS)
	$(MAKE) bench-multicluster
	$(MAKE) bench-robustness

# Rounds of the distinct-packages and shards runs within make bench (each round of shards
# takes about 20 min).
FLEET_SIDE_ROUNDS ?= 1

.PHONY: bench-robustness
bench-robustness: ## docs/robustness.md's records: the untrusted packages' table (each case a real calaf process, its time and memory), and what raw Puccini does with each bad input, its crashes and hangs asserted (a few minutes of CPU).
	go test -count=1 -timeout 20m -v -run '^TestUntrustedInputs$$' ./internal/cli/ -args -robustness-report=$(CURDIR)/docs/robustness.md
	CALAF_RAW_PUCCINI=1 go test -count=1 -timeout 20m -v -run '^TestRawPucciniOnBadInputs$$' ./internal/cli/

.PHONY: bench-fleet
bench-fleet: build ## 1,000 (and 300) Services through the operator against plain server-side apply loops, requests counted, on the one-node cluster with kube-controller-manager at FLEET_KCM_QPS (FLEET_ROUNDS rounds, 3 by default, the runs of each in a random order, about 10 min each; FLEET_N=300 FLEET_SMALLER=0 for a quicker run); writes docs/benchmarks.md.
	CALAF_KCM_QPS=$(FLEET_KCM_QPS) CALAF_KCM_BURST=$$(($(FLEET_KCM_QPS) * 2)) $(GROUND)/with-cluster.sh go run ./test/bench/fleet -n $(FLEET_N) -smaller $(FLEET_SMALLER) -rounds $(FLEET_ROUNDS) -seed $(FLEET_SEED) -calaf bin/calaf-full -report $(CURDIR)/docs/benchmarks.md $(FLEET_ARGS)

.PHONY: bench-fleet-distinct
bench-fleet-distinct: build ## 1,000 Services, each its own package revision, through the operator against raw Puccini compiling the same packages in a loop, on the one-node cluster (FLEET_DISTINCT_N, FLEET_ROUNDS interleaved rounds, about 10 min each); writes docs/benchmarks.md.
	CALAF_KCM_QPS=$(FLEET_KCM_QPS) CALAF_KCM_BURST=$$(($(FLEET_KCM_QPS) * 2)) $(GROUND)/with-cluster.sh go run ./test/bench/fleet -distinct -n $(FLEET_DISTINCT_N) -rounds $(FLEET_ROUNDS) -calaf bin/calaf-full -report $(CURDIR)/docs/benchmarks.md

.PHONY: bench-fleet-shards
bench-fleet-shards: build ## 2,000 Services through one operator and through FLEET_SHARDS shards (--watch-label-selector), interleaved, on the one-node cluster (FLEET_SHARDS_N, FLEET_ROUNDS interleaved rounds, about 20 min each); writes docs/benchmarks.md.
	CALAF_KCM_QPS=$(FLEET_KCM_QPS) CALAF_KCM_BURST=$$(($(FLEET_KCM_QPS) * 2)) $(GROUND)/with-cluster.sh go run ./test/bench/fleet -shards $(FLEET_SHARDS) -n $(FLEET_SHARDS_N) -rounds $(FLEET_ROUNDS) -calaf bin/calaf-full -report $(CURDIR)/docs/benchmarks.md

.PHONY: bench-multicluster
bench-multicluster: build ## FLEET_MULTICLUSTER_N (200) Services spread over 2 target clusters (test/ground/remote.sh's remote and remote2, control planes without nodes, started and stopped within the run) against the same Services in the operator's own cluster: time to Applied and Ready, requests per cluster, the operator's memory (FLEET_ROUNDS interleaved rounds, a few minutes each); writes docs/benchmarks.md.
	CALAF_KCM_QPS=$(FLEET_KCM_QPS) CALAF_KCM_BURST=$$(($(FLEET_KCM_QPS) * 2)) $(GROUND)/with-cluster.sh go run ./test/bench/fleet -multicluster -n $(FLEET_MULTICLUSTER_N) -rounds $(FLEET_ROUNDS) -seed $(FLEET_SEED) -calaf bin/calaf-full -report $(CURDIR)/docs/benchmarks.md

.PHONY: bench-fleet-costs
bench-fleet-costs: build ## What each request of a fleet Service costs the API server and etcd (CPU per request): the baselines' applies, the Service's own create, status patch and event, on the one-node cluster (FLEET_ROUNDS rounds, about 2 min each); writes docs/benchmarks.md.
	CALAF_KCM_QPS=$(FLEET_KCM_QPS) CALAF_KCM_BURST=$$(($(FLEET_KCM_QPS) * 2)) $(GROUND)/with-cluster.sh go run ./test/bench/fleet -request-costs -n $(FLEET_N) -rounds $(FLEET_ROUNDS) -calaf bin/calaf-full -report $(CURDIR)/docs/benchmarks.md

.PHONY: bench-orchestration
bench-orchestration: ## Operations in pods (runner transfer, warm runs) against a plain exec round trip, on the one-node cluster; writes docs/benchmarks.md.
	$(GROUND)/with-cluster.sh go test -tags e2e -count=1 -timeout 20m -v -run '^TestOrchestrationBench$$' ./test/e2e/ -args -orchestration-report=$(CURDIR)/docs/benchmarks.md

.PHONY: bench-lifecycle
bench-lifecycle: ## A SCALE occurrence against kubectl scale of the same workload, on the one-node cluster; writes docs/benchmarks.md.
	$(GROUND)/with-cluster.sh go test -tags e2e -count=1 -timeout 20m -v -run '^TestLifecycleBench$$' ./test/e2e/ -args -lifecycle-report=$(CURDIR)/docs/benchmarks.md

.PHONY: bench-nfv
bench-nfv: ## The NFV interface: an instantiation through REST against creating the Service directly, and listing 1,000 instances, on the one-node cluster; writes docs/benchmarks.md.
	$(GROUND)/with-cluster.sh go test -tags e2e -count=1 -timeout 30m -v -run '^TestNFVBench$$' ./test/e2e/ -args -nfv-report=$(CURDIR)/docs/benchmarks.md

.PHONY: test-e2e
# ConfigMap mode's tests run first, alone: on a cluster where Calaf's CRDs are not
# installed yet (the other packages install them).
test-e2e: $(TESTSUMMARY) ## Node-mode end-to-end tests on the one-node cluster (started and stopped here).
	$(GROUND)/with-cluster.sh bash -c 'go test -json -tags e2e -count=1 -timeout 15m $(GO_TEST_FLAGS) ./test/e2e/configmap/ && \
	  go test -json -tags e2e -count=1 -timeout 40m $(GO_TEST_FLAGS) $$(go list -tags e2e ./test/e2e/... | grep -v /test/e2e/configmap$$)' \
	  | $(TESTSUMMARY) -stage 'node-mode e2e' -summary $(TEST_SUMMARY)
