# cudapool: build, test and GPU packaging. `make test` is what CI runs.
GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@2025.1.1
GPU_DIR := .gpu
EXAMPLES := $(filter-out internal,$(notdir $(wildcard examples/*)))
# Packages whose tests matter on a GPU host.
GPU_PKGS := . ./cudart ./cudart/cudarttest ./pool

.PHONY: test race bench lint fuzz gpu nocgo quickstart clean

## test: the full go vet and every test (what CI runs)
test:
	$(GO) vet ./...
	$(GO) test ./...

## race: every test under the race detector
race:
	$(GO) test -race ./...

## bench: every benchmark with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: staticcheck, fetched through the Go module proxy
lint:
	$(GO) run $(STATICCHECK) ./...

## fuzz: each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadTrace$$' -fuzztime $(FUZZTIME) ./plan
	$(GO) test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) ./plan

## nocgo: the library builds and vets without cgo
nocgo:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...

## quickstart: the README's first command
quickstart:
	$(GO) run ./examples/quickstart

## gpu: test binaries and example programs for a GPU host, into .gpu/
gpu:
	mkdir -p $(GPU_DIR)
	$(GO) test -c -o $(GPU_DIR)/cudapool.test .
	$(GO) test -c -o $(GPU_DIR)/cudart.test ./cudart
	$(GO) test -c -o $(GPU_DIR)/cudarttest.test ./cudart/cudarttest
	$(GO) test -c -o $(GPU_DIR)/pool.test ./pool
	$(foreach e,$(EXAMPLES),$(GO) build -o $(GPU_DIR)/$(e) ./examples/$(e) &&) true

clean:
	rm -rf $(GPU_DIR)
