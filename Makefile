GO ?= go

.PHONY: all deps generate check-generate build vet lint check fuzz test test-mysql test-interop test-deploy test-race bench soak run

# The code generators and the linter are pinned in a module of their own, so that the
# service's go.mod carries only what the service and its tests import.
TOOL = $(GO) tool -modfile=tools/go.mod

all: build

# Only the generated files are removed first, so that stale output for a
# deleted .proto disappears while hand-written files in gen/ survive. All three plugins
# (protoc-gen-go, -go-grpc, -go-vtproto) write files ending in .pb.go.
generate:
	find gen -type f -name '*.pb.go' -exec rm -f {} +
	$(TOOL) buf generate

check-generate: generate
	@if ! git diff --quiet --exit-code -- gen || [ -n "$$(git ls-files --others --exclude-standard -- gen)" ]; then \
		echo "error: gen/ is out of date with proto/: run 'make generate' and commit the result" >&2; \
		git status --porcelain -- gen >&2; \
		exit 1; \
	fi

deps:
	./scripts/install-deps.sh test

# The tests run every suite that crosses the database on MariaDB, then once more on MySQL
# (VSTREAM_TEST_FLAVOR picks the server internal/testdb starts).
TEST_ENV = VSTREAM_REQUIRE_BROWSER=1 VSTREAM_REQUIRE_NATS=1

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...

# errcheck, exhaustive, govet (with shadow), staticcheck and more: see .golangci.yml.
lint:
	$(TOOL) golangci-lint run ./...

# The fast lane, for every change before make test: vet, lint (gofmt and goimports included)
# and the tests of every package that starts no database server. Installs nothing.
check:
	$(GO) vet ./...
	$(MAKE) lint
	$(GO) test -count=1 $$(./scripts/db-packages.sh --others)

# Every fuzz target for FUZZTIME each (default 10s); failing inputs land in testdata/fuzz/.
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# vet and lint run in the recipe rather than as prerequisites so that 'make -j'
# cannot check while generate is rewriting gen/.
test: deps check-generate
	$(GO) vet ./...
	$(MAKE) lint
	$(TEST_ENV) $(GO) test -count=1 -timeout 30m ./...
	$(MAKE) test-mysql
	$(MAKE) test-interop
	$(MAKE) test-deploy

test-mysql:
	$(TEST_ENV) VSTREAM_TEST_FLAVOR=mysql $(GO) test -count=1 -timeout 30m $$(./scripts/db-packages.sh)

# Vitess's own clients against a vstreamd process; a module of its own (see interop/doc.go).
# On both flavors.
test-interop:
	cd interop && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
	cd interop && VSTREAM_TEST_FLAVOR=mysql $(GO) test -count=1 -timeout 10m ./...

# The operations kit's dashboard and alerts against a running vstreamd; a module of its own
# (see deploy/doc.go). On both flavors.
test-deploy:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...
	cd deploy && VSTREAM_TEST_FLAVOR=mysql $(GO) test -count=1 -timeout 10m ./...

# Kept out of 'test' because the race detector roughly doubles its run time.
test-race: deps
	VSTREAM_REQUIRE_BROWSER=1 VSTREAM_REQUIRE_NATS=1 $(GO) test -race -count=1 -timeout 30m ./...

# Every benchmark on MariaDB, then the binlog, copy and latency ones on MySQL, each beside its
# anchor measured on the same server in the same run.
bench:
	./scripts/install-deps.sh mariadb mysql nats
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...
	VSTREAM_TEST_FLAVOR=mysql $(GO) test -run '^$$' -bench 'Throughput|Copy|Latency|Process' -benchmem ./bench/

# Ten minutes at 1,000 transactions/s with 10 filtered streams (SOAK_DURATION to change).
SOAK_DURATION ?= 10m
soak:
	./scripts/install-deps.sh $(FLAVOR)
	VSTREAM_TEST_FLAVOR=$(FLAVOR) \
	$(GO) test -count=1 -timeout 60m -run TestSoak -v ./soak/ -soak.duration $(SOAK_DURATION)

# The demo needs only the database: FLAVOR=mysql runs it on MySQL.
FLAVOR ?= mariadb
run: build
	./scripts/install-deps.sh $(FLAVOR)
	$(GO) build -o bin/ ./internal/cmd/demodb
	VSTREAM_TEST_FLAVOR=$(FLAVOR) ./scripts/run-demo.sh
