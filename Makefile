# cudapool: build, test and GPU packaging. CI runs `make test`, `make race-short` and `make cross`.
GO ?= go
GPU_DIR := .gpu
# Stripped (one -ldflags: a second would replace the first): the binaries
# travel to the GPU host, which limits what it carries. Built without cgo, as
# the binding needs none.
GPU_LDFLAGS := -ldflags='-s -w'
GPU_ENV := CGO_ENABLED=0
# The example programs (package main); examples/loadgen is their helper, no
# program. Expanded where used, so that only make gpu runs go list.
EXAMPLES = $(notdir $(shell $(GO) list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' ./examples/...))
CC ?= gcc
# Packages whose tests run on a GPU host: name.test is built from each.
GPU_TESTS := cudapool:. choose:./choose cudart:./cudart cublas:./cublas cudarttest:./cudart/cudarttest conformance:./cudart/cudarttest/conformance pool:./pool vmem:./vmem pinned:./pinned kvcache:./kvcache nccl:./nccl ncclconformance:./nccl/conformance cublasconformance:./cublas/conformance

.PHONY: test race-short race cross bench lint fuzz gpu nocgo quickstart clean

## test: gofmt, go vet, every test without cgo (as the GPU binaries are
## built) and staticcheck (a tool in go.mod); CI runs it, then race-short
## and cross
test:
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l .); test -z "$$out" || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) test ./...
	$(GO) tool staticcheck ./...

## race-short: the library's short tests under the race detector, where cgo
## (a C compiler) is available; CI runs it after test
race-short:
	@if [ "$$($(GO) env CGO_ENABLED)" = 1 ]; then echo "$(GO) test -race -short (all but $(RACE_LONG))"; \
	$(GO) test -race -short $$($(GO) list ./... | grep -v -E '$(RACE_LONG)'); \
	else echo "no C compiler (cgo off): the race detector's tests skipped"; fi

# The conformance suite and the example programs take minutes under the race
# detector on 2 cores (the suite's run, the examples' builds): make race runs
# them, race-short does not.
RACE_LONG := /conformance$$|/examples/

## race: every test under the race detector, long ones included (needs cgo)
race:
	$(GO) test -race ./...

## cross: the README's program built with CGO_ENABLED=0 for every platform
## the README names (CI runs it; minutes the first time)
cross:
	CUDAPOOL_CROSS=1 $(GO) test -count=1 -run '^TestReadmeGoBlocks$$' .

## bench: every benchmark with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: staticcheck, the version go.mod's tool directive names
lint:
	$(GO) tool staticcheck ./...

## fuzz: each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadTrace$$' -fuzztime $(FUZZTIME) ./plan
	$(GO) test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) ./plan
	$(GO) test -run '^$$' -fuzz '^FuzzReadCSV$$' -fuzztime $(FUZZTIME) ./plan
	$(GO) test -run '^$$' -fuzz '^FuzzCLI$$' -fuzztime $(FUZZTIME) ./examples/plan
	$(GO) test -run '^$$' -fuzz '^FuzzPool$$' -fuzztime $(FUZZTIME) ./pool
	$(GO) test -run '^$$' -fuzz '^FuzzSlots$$' -fuzztime $(FUZZTIME) ./pool
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./cudart/internal/ptx
	$(GO) test -run '^$$' -fuzz '^FuzzRendezvous$$' -fuzztime $(FUZZTIME) ./examples/tp

## nocgo: the library builds and vets without cgo
nocgo:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...

## quickstart: the README's first command
quickstart:
	$(GO) run ./examples/quickstart

## gpu: test binaries and example programs for a GPU host, into .gpu/, with
## the testdata they read beside them (testdata/plan/traces), the C
## source of examples/tp's all-reduce reference (built there: nccl.h), the
## dependency list the fake's test checks where there is no go command, and
## run.sh, which runs every test binary there on CUDA. On the GPU host run
## `.gpu/run.sh LOGDIR` twice on a host of two or more GPUs: with
## CUDA_VISIBLE_DEVICES=0 (one GPU) and with every GPU visible (the
## two-GPU tests skip on one); CONTRIBUTING.md says when each is due.
gpu:
	mkdir -p $(GPU_DIR)/testdata/plan
	cp scripts/gpu-run.sh $(GPU_DIR)/run.sh
	cp scripts/kill-rank.sh $(GPU_DIR)/kill-rank.sh
	rm -rf $(GPU_DIR)/testdata/plan/traces && cp -r plan/testdata/traces $(GPU_DIR)/testdata/plan/
	$(GO) list -deps ./cudart/cudarttest > $(GPU_DIR)/testdata/cudarttest.deps
	$(foreach t,$(GPU_TESTS),$(GPU_ENV) $(GO) test -c $(GPU_LDFLAGS) -o $(GPU_DIR)/$(word 1,$(subst :, ,$(t))).test $(word 2,$(subst :, ,$(t))) &&) true
	$(foreach e,$(EXAMPLES),$(GPU_ENV) $(GO) build $(GPU_LDFLAGS) -o $(GPU_DIR)/$(e) ./examples/$(e) &&) true
	$(CC) -O2 -Wall -o $(GPU_DIR)/vector_c examples/vector/cref/grow.c -ldl
	cp examples/tp/cref/allreduce.c $(GPU_DIR)/allreduce.c

clean:
	rm -rf $(GPU_DIR)
