# tfdist: the two commands a user needs are `make deploy` and `make test`.
# Everything else here is what those two set up on a fresh machine.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Re-install only when requirements.txt changes (a stamp keyed on its content).
STAMP := $(VENV)/.installed-$(shell sha256sum requirements.txt | cut -c1-12)
COLLECTION_LINK := .collections/ansible_collections/tfdist/cluster

CLOUD ?= local
CLUSTER ?= tfdist
EXTRA ?=

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help setup images deploy destroy test test-unit test-e2e lint build bench clean

help:
	@echo "make deploy   set up and train on the default cluster (cloud=$(CLOUD))"
	@echo "make test     set up and run every test"
	@echo "make destroy  remove the cluster (CLOUD=..., CLUSTER=...)"
	@echo "make bench    deploy overhead against hand-started TF processes; docker cluster scaling; 10-200 EC2 nodes; checkpoint copies"
	@echo "make lint     ansible-lint (production profile)"
	@echo "make build    build the Galaxy collection tarball into build/"
	@echo "make images   start Docker and build the docker cloud's node images"

setup: $(STAMP) $(COLLECTION_LINK)

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --progress-bar off -r requirements.txt
	@rm -f $(VENV)/.installed-* && touch $@

# The repository itself is the collection: link it where Ansible looks for tfdist.cluster.
$(COLLECTION_LINK):
	@mkdir -p $(dir $@)
	@ln -sfn ../../.. $@

# The docker cloud's engine and node images (built once from Debian packages, then reused).
images:
	bash scripts/build-node-image.sh

deploy: setup
	$(BIN)/ansible-playbook playbooks/deploy.yml -e cloud=$(CLOUD) -e cluster_name=$(CLUSTER) $(EXTRA)

destroy: setup
	$(BIN)/ansible-playbook playbooks/destroy.yml -e cloud=$(CLOUD) -e cluster_name=$(CLUSTER) $(EXTRA)

test: setup lint
	$(BIN)/python -m pytest tests -ra

test-unit: setup
	$(BIN)/python -m pytest tests/unit -ra

test-e2e: setup
	$(BIN)/python -m pytest tests/e2e -ra

lint: setup
	$(BIN)/ansible-lint --profile production

build: setup
	@mkdir -p build
	$(BIN)/ansible-galaxy collection build --force --output-path build .

bench: setup
	$(BIN)/python bench/deploy_overhead.py
	$(BIN)/python bench/docker_scaling.py
	$(BIN)/python bench/cloud_scale.py
	$(BIN)/python bench/checkpoint_mirror.py

clean:
	rm -rf build .pytest_cache
