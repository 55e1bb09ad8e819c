# orkwal — `make help` lists the targets.
GO      ?= go
BIN     ?= bin/orkwal
DATA    ?= orkwal-data
FUZZTIME ?= 30s

.PHONY: help build run test fuzz verify bench clean

help: ## list the targets and the variables they use
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'
	@echo "variables (make VAR=value target): GO=$(GO) BIN=$(BIN) DATA=$(DATA) FUZZTIME=$(FUZZTIME)"

build: ## build a static binary into bin/orkwal
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/orkwal

run: build ## build, then exec the daemon on examples/ (data folder: DATA); stopping make stops it
	exec $(BIN) run --data $(DATA) --workflows examples

test: ## run every test with the race detector (what CI runs)
	$(GO) test -race -count=1 ./...

fuzz: ## run each fuzz target for FUZZTIME
	for t in FuzzParse FuzzParseCron; do \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./replay/workflow/ || exit 1; done
	for t in FuzzSegment FuzzRecordDecode FuzzApply; do \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./fuzz/ || exit 1; done
	for t in FuzzTriggerBody FuzzWorkflowBody FuzzRequestTarget; do \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./api/ || exit 1; done

verify: ## gofmt, go vet and a tidy go.mod
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff

bench: ## run the benchmarks and write docs/benchmarks.md (~5-7 min)
	GO=$(GO) scripts/bench.sh

clean: ## remove build output
	rm -rf bin

.PHONY: torture
torture: ## crash-recovery torture, ~35 min: 100,000 simulated power cuts, 1,000 kill -9s
	GO=$(GO) scripts/torture.sh
