# orkwal — `make help` lists the targets.
GO      ?= go
BIN     ?= bin/orkwal
DATA    ?= orkwal-data
FUZZTIME ?= 30s
# The release build: static, stripped, reproducible (-trimpath; the same
# commit gives the same bytes), version and commit stamped, urfave/cli's
# man and markdown generators left out (urfave_cli_no_docs).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
TAGS    ?= urfave_cli_no_docs
LDFLAGS ?= -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
RELEASE ?= bin/release

.PHONY: help build release run test fuzz verify bench clean

help: ## list the targets and the variables they use
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'
	@echo "variables (make VAR=value target): GO=$(GO) BIN=$(BIN) DATA=$(DATA) FUZZTIME=$(FUZZTIME)"

build: ## build the static, stripped release binary (bin/orkwal)
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/orkwal

release: ## cross-build linux amd64, arm64 and armv7 into bin/release, with SHA256SUMS
	@mkdir -p $(RELEASE)
	$(MAKE) build BIN=$(RELEASE)/orkwal-linux-amd64 GOOS=linux GOARCH=amd64
	$(MAKE) build BIN=$(RELEASE)/orkwal-linux-arm64 GOOS=linux GOARCH=arm64
	$(MAKE) build BIN=$(RELEASE)/orkwal-linux-armv7 GOOS=linux GOARCH=arm GOARM=7
	cd $(RELEASE) && sha256sum orkwal-linux-amd64 orkwal-linux-arm64 orkwal-linux-armv7 > SHA256SUMS
	@ls -l $(RELEASE)

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

bench: ## run the benchmarks and write docs/benchmarks.md (~7-9 min)
	GO=$(GO) scripts/bench.sh

clean: ## remove build output
	rm -rf bin

.PHONY: torture
torture: ## crash-recovery torture, ~35 min: 100,000 simulated power cuts, 1,000 kill -9s
	GO=$(GO) scripts/torture.sh
