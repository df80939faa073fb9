# The two set-up commands of the README: `make demo` and `make test`.
# Each creates .venv/ and installs what it needs by itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo test test-all lint bench zoo clean debs train-deps

$(VENV)/.stamp-base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	touch $@

$(VENV)/.stamp-demo: pyproject.toml $(VENV)/.stamp-base
	$(PIP) install -e '.[oracles]'
	touch $@

$(VENV)/.stamp-test: pyproject.toml $(VENV)/.stamp-base
	$(PIP) install -e '.[test]'
	touch $@

# Debian packages: the Arm bare-metal toolchain with newlib (Cortex-M backend),
# Fashion-MNIST's IDX files (IDX loader tests), the host C compiler (host kernels, SVM trainer)
# PostgreSQL (the shared tuning database; tests start a throwaway server), and the aarch64
# cross compiler with qemu user mode (the NEON host kernels are tested under emulation), and
# qemu-system-arm (Cortex-M boards: the example applications boot on mps2-an386, netduinoplus2).
# Root on the target machines.
DEBS := gcc-arm-none-eabi libnewlib-arm-none-eabi dataset-fashion-mnist gcc postgresql \
        gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static qemu-system-arm
debs:
	@dpkg -s $(DEBS) >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBS); }

demo: $(VENV)/.stamp-demo debs
	$(VENV)/bin/edgenn demo

test: $(VENV)/.stamp-test debs
	$(PY) -m pytest -n 2 -q --durations=15

# PyTorch (CPU) for training SkipNets: the optional extra `train` (torch==2.13.0).
train-deps: $(VENV)/.stamp-test
	$(PIP) install -e '.[test,train]'

test-all: train-deps debs
	$(PY) -m pytest -n 2 -q -m 'slow or not slow'

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check edgenn tests benchmarks tools
	$(VENV)/bin/mypy --explicit-package-bases edgenn tools/fuzzing

bench: $(VENV)/.stamp-test
	$(PY) benchmarks/ref_runtime_throughput.py

# Every model of zoo/ through inspect, ref and cortex-m4 against TFLite Micro / onnxruntime,
# validate and bench (docs/models.md); writes benchmarks/results/model_zoo.json.
zoo: $(VENV)/.stamp-test debs
	$(PY) benchmarks/model_zoo.py zoo

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
