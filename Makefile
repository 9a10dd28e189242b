# rdmashuffle: the two commands a new user needs are `make run` and `make test`.
GO ?= go

.PHONY: run overview reproduce test bench fuzz fuzz-short vet build clean ibverbs-dev ibverbs-check

# The command-line tool, stamped with the commit it is built from (and
# "+dirty" with uncommitted changes), which every record and report names:
# go run stamps nothing. Built on every use; go build redoes only what
# changed.
EXPLORE := bin/explore

# The main job on the default simulated cluster: no RDMA hardware, no setup.
# Liu19's figure 19 at quick scale: the eight designs and the qperf, IPoIB
# and MPI baselines on 2 to 16 nodes, FDR and EDR, repartition and broadcast;
# a table here and the plots in results/fig19 (a few minutes on 2 cores);
# then the advice for 8 EDR nodes of 4 threads (docs/advise.md).
run: build
	$(EXPLORE) figure fig19 --out results/fig19
	$(EXPLORE) advise --nodes 8 --threads 4 --bytes-per-node 1GiB --band controls --brief

# Microbenchmarks and one row per design on 8 EDR nodes (seconds).
overview: build
	$(EXPLORE) overview

# Every claim's verdict: docs/validation.md and docs/figures/ (quick scale).
reproduce: build
	$(EXPLORE) reproduce --quick --update-docs

# The one-page HTML report (results/report/index.html: figures, verdicts,
# evidence, provenance), then its test in headless Chromium: every figure
# loads and the verdict table has its 29 rows. Installs Debian's chromium
# when missing (as root, or with sudo).
.PHONY: report-check
report-check: build
	@if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then \
		sudo=""; if [ "$$(id -u)" != 0 ]; then sudo="sudo"; fi; \
		echo "installing Debian's chromium to render the report"; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	fi
	$(EXPLORE) report
	REPORT_REQUIRE_CHROMIUM=1 $(GO) test -count=1 -v -run 'TestRenderChromium|TestPageStructure' ./experiments/report/

# go vet, every test, and a few seconds of every fuzz target; the race
# detector over the loopback backend (every design and pattern on real
# threads, at GOMAXPROCS 1, 2 and 4, and the conformance suite); with
# libibverbs-dev installed (installed here when missing and running as
# root on Debian), also the real-hardware backend, compiled, vetted and run
# on the software RDMA device (ibverbs-check). The time limit per package is
# 30 minutes: the evidence suite and the simulator's tests take several
# minutes each on a loaded 2-core machine, near go test's default of 10.
test: ibverbs-dev vet fuzz-short
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -cpu 1,2,4 ./fabric/loopback/
	$(GO) test -count=1 -race -cpu 2,4 -run TestExecConformance ./fabric/host/
	@if [ -e /usr/include/infiniband/verbs.h ]; then \
		echo "$(GO) vet -tags ibverbs ./fabric/ibv/ && $(GO) test -count=1 -tags ibverbs ./fabric/ibv/"; \
		$(GO) vet -tags ibverbs ./fabric/ibv/ && $(GO) test -count=1 -tags ibverbs ./fabric/ibv/; \
	else \
		echo "skipping the libibverbs backend build: install libibverbs-dev to compile it"; \
	fi
	@$(MAKE) --no-print-directory ibverbs-check

# The libibverbs backend executed through the unmodified libibverbs on the
# software RDMA device (fabric/ibv/softrdma): its conformance suite 5 times
# on an InfiniBand-like and a RoCE-like port under the race detector and
# cgo's strict pointer checks, then every hardware-path design on 3 nodes
# with its integrity checked. Making the device files needs root; without
# it (or without libibverbs-dev) it says so in one line and passes.
ibverbs-check:
	GO="$(GO)" sh fabric/ibv/softrdma/check.sh

vet:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-formatted (run gofmt -w): $$out"; exit 1; fi
	$(GO) vet ./...
	GOARCH=386 $(GO) build ./... # 32-bit int: sizes and limits must not overflow it

# The headers and library of the real-hardware backend.
ibverbs-dev:
	@if [ ! -e /usr/include/infiniband/verbs.h ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing libibverbs-dev to build the real-hardware backend"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libibverbs-dev >/dev/null; \
		else \
			echo "libibverbs-dev is not installed: the real-hardware backend will not be built (sudo apt-get install libibverbs-dev)"; \
		fi; \
	fi

# Performance benchmarks (see docs/performance.md for what each measures).
bench:
	$(GO) test -p 1 -run '^$$' -bench . ./fabric/sim/ ./algos/
	$(GO) test -run '^$$' -bench 'Run(ME|SE)SQSR16' -benchtime 1x ./experiments/
	$(GO) test -run '^$$' -bench FragmentScan -benchtime 3x ./tpch/

# Every fuzz target for FUZZ_SHORT each (part of make test). Minimizing a
# new interesting input may take at most FUZZ_MINIMIZE executions (Go's
# default is 60 s per input, which a short run can spend entirely on it:
# FuzzParseProfile ran 368 executions in 60 s).
FUZZ_SHORT ?= 3s
FUZZ_MINIMIZE ?= 200x
FUZZ_TARGETS = ./fabric/:FuzzQPInfo ./fabric/sim/:FuzzParseProfile ./fabric/host/:FuzzFrame ./algos/:FuzzHeader ./algos/:FuzzBcastMessage \
	./flowctl/:FuzzCreditValues ./flowctl/:FuzzCount ./faults/:FuzzParseSchedule ./faults/:FuzzParseSpecs \
	./experiments/sweep/:FuzzParseSweep ./experiments/sweep/:FuzzParseNodeCycles ./experiments/sweep/:FuzzParseShard ./experiments/sweep/:FuzzPattern \
	./experiments/report/:FuzzParseValidation ./experiments/sensitivity/:FuzzFromSummary \
	./tcpshuffle/:FuzzParseHeader ./fabric/topo/ibnet/:FuzzReadIBNetDiscover ./fabric/topo/ibnet/:FuzzReadLFTs \
	./fabric/topo/ibnet/:FuzzReadYAML ./fabric/netspec/:FuzzParseSpec ./fabric/sim/trace/:FuzzReader ./experiments/results/:FuzzParseLabel
# The fuzzing engine sometimes reports "context deadline exceeded" as its
# time runs out, with no failing input written (seen on FuzzParseSpecs and
# FuzzCount, with and without new inputs being minimized, and on
# FuzzReader in two of three CI runs of 2026-11-29); such a run is
# repeated, up to twice. A real failure writes its input under
# testdata/fuzz and fails again.
fuzz-short:
	@out=$$(mktemp); for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		cmd="$(GO) test -run '^\$$' -fuzz ^$$fn\$$ -fuzztime $(FUZZ_SHORT) -fuzzminimizetime $(FUZZ_MINIMIZE) $$pkg"; echo "$$cmd"; \
		for try in 1 2 3; do \
			if $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZ_SHORT) -fuzzminimizetime $(FUZZ_MINIMIZE) $$pkg >$$out 2>&1; then cat $$out; break; fi; \
			cat $$out; \
			if [ $$try != 3 ] && grep -q 'context deadline exceeded' $$out && ! grep -q 'Failing input written' $$out; then \
				echo "(the fuzzing engine ran out of time while minimizing, with no failing input: once more)"; continue; fi; \
			rm -f $$out; exit 1; \
		done; done; rm -f $$out

# A longer run of the main fuzz targets.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzQPInfo -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./fabric/
	$(GO) test -run '^$$' -fuzz FuzzParseProfile -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./fabric/sim/
	$(GO) test -run '^$$' -fuzz FuzzHeader -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./algos/
	$(GO) test -run '^$$' -fuzz FuzzParseSweep -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./experiments/sweep/
	$(GO) test -run '^$$' -fuzz FuzzFrame -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./fabric/host/
	$(GO) test -run '^$$' -fuzz FuzzParseHeader -fuzztime 30s -fuzzminimizetime $(FUZZ_MINIMIZE) ./tcpshuffle/

build:
	$(GO) build -buildvcs=true -o $(EXPLORE) ./cmd/explore

clean:
	rm -rf bin results
