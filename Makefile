# rdmashuffle: the two commands a new user needs are `make run` and `make test`.
GO ?= go

.PHONY: run test bench fuzz vet build clean

# The main job on the default simulated cluster: no RDMA hardware, no setup.
run:
	$(GO) run ./cmd/explore overview

# go vet and every test.
test: vet
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

# Performance benchmarks (see docs/performance.md for what each measures).
bench:
	$(GO) test -run '^$$' -bench . ./fabric/sim/

# A short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzQPInfo -fuzztime 30s ./fabric/
	$(GO) test -run '^$$' -fuzz FuzzParseProfile -fuzztime 30s ./fabric/sim/
	$(GO) test -run '^$$' -fuzz FuzzHeader -fuzztime 30s ./algos/

build:
	$(GO) build -o bin/explore ./cmd/explore

clean:
	rm -rf bin results
