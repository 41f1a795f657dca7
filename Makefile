# attnseq: the two commands a new user runs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo lint test test-fast test-kernels margins bench drill clean

# Python keeps compiled modules, and pytest its rewritten test modules, in __pycache__: a shell
# that sets PYTHONDONTWRITEBYTECODE makes every run compile them again (3-5 s of each test run).
unexport PYTHONDONTWRITEBYTECODE

install: $(STAMP)

# Torch is pinned and installed first so pip never pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@command -v espeak-ng >/dev/null || echo "make install: espeak-ng is not installed (apt-get install espeak-ng, as root): attnseq data speech needs it, and its tests will be skipped"
	touch $(STAMP)

demo: install
	$(BIN)/attnseq demo --out runs/demo --overwrite

# ruff's lint rules and its formatting ([tool.ruff] in pyproject.toml); `ruff format .` mends the latter.
lint: install
	$(BIN)/ruff check --quiet .
	$(BIN)/ruff format --check --quiet .

# Two test processes, each handed one test at a time, the longest (marked minutes) first
# (tests/conftest.py): the run ends when the work does, not on one core finishing a long test.
XDIST = -n 2 --maxschedchunk 1

# The 15 slowest tests are listed after: the suite's 10 minutes on 2 cores, and where they go.
test: lint
	$(BIN)/python -m pytest -q $(XDIST) --durations=15 tests

# The edit loop: everything but the tests marked slow (models trained to an accuracy, the docs'
# commands run one by one), < 40 s.
test-fast: lint
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow" tests

# The tests that train a model to a threshold (marked learns) again, with torch, MKL, oneDNN and
# CTranslate2 held to other kernels than this CPU's own: KERNELS=avx2 or plainest (bench/isa.py);
# by default AVX2 on an AVX-512 machine, else the plainest. A threshold tuned to one CPU's
# arithmetic fails here, not on a user's machine. .ci/run runs it after make test.
test-kernels: install
	env $$($(BIN)/python bench/isa.py $(or $(KERNELS),second)) $(BIN)/python -m pytest -q $(XDIST) -m learns tests

# The learning tests over seeds 0-2 under this CPU's kernels, AVX2 and the plainest: each
# measure's worst value beside its threshold (bench/margins.py; about 30 minutes on 2 cores).
margins: install
	$(BIN)/python bench/margins.py

# The benchmark table (matmul ceiling, training and decoding speed, peak RSS); with
# AGAINST=REV, that commit measured in the same run and each figure's ratio to it.
bench: install
	$(BIN)/python bench/run.py $(if $(AGAINST),--against $(AGAINST))

# Every bad input and fault of the reliability drill, and 30 kills of a training run.
drill: install
	$(BIN)/python bench/reliability.py

clean:
	rm -rf runs .pytest_cache
