# tfdist: the two commands a user needs are `make deploy` and `make test`.
# Everything else here is what those two set up on a fresh machine.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# .venv gets requirements-dev.txt: the collection's requirements.txt (what its plugins import on the
# controller, all an execution environment gets) plus ansible-core, the local cloud's TensorFlow and the
# test, lint and bench tools. Re-installed only when either file changes (a stamp keyed on their content).
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
COLLECTION_LINK := .collections/ansible_collections/tfdist/cluster

CLOUD ?= local
CLUSTER ?= tfdist
EXTRA ?=

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help setup images deploy destroy status logs test test-unit test-e2e lint build bench clean checks-setup sanity docs importer units im-venv changelog sanity-oldest ee-context ee-image core-matrix

help:
	@echo "make deploy   set up and train on the default cluster (cloud=$(CLOUD))"
	@echo "make test     set up and run every test"
	@echo "make destroy  remove the cluster (CLOUD=..., CLUSTER=...)"
	@echo "make status   every cluster here: nodes, job, step, ETA, cost (CLUSTER=NAME: one, with its tasks; CLOUD=NAME: and that cloud's)"
	@echo "make logs     a task's log from its node (CLUSTER=..., TASK=worker-1; EXTRA='-e follow=true')"
	@echo "make bench    deploy overhead against hand-started TF processes; docker cluster scaling; 10-200 EC2 nodes; checkpoint copies; baked images"
	@echo "make lint     ansible-lint (production profile)"
	@echo "make sanity   ansible-test sanity, every test, offline (on a copy under .cache/ansible-test)"
	@echo "make docs     ansible-doc renders every plugin and role entry point; antsibull-docs lint; the changelog checks; the docsite in .cache/docs/html"
	@echo "make changelog  CHANGELOG.rst from changelogs/changelog.yaml (antsibull-changelog generate)"
	@echo "make importer galaxy-importer accepts the built collection"
	@echo "make units    the unit tests under ansible-test units (modules, module_utils, controller contexts)"
	@echo "make sanity-oldest  quick sanity tests, unit tests and check.yml on the oldest ansible-core meta/runtime.yml claims"
	@echo "make core-matrix  the same and a small local deploy on ansible-core 2.20 and 2.21, in a Debian 13 container (Python 3.13)"
	@echo "make im-venv  the Infrastructure Manager (im 2.0.0) in .cache/im-venv, for the test of the RADL it deploys"
	@echo "make build    build the Galaxy collection tarball into build/"
	@echo "make ee-context  the execution environment's build context (ansible-builder create) in .cache/ee/context, checked"
	@echo "make ee-image    build that execution environment with the local Docker engine (tfdist/ee)"
	@echo "make images   start Docker and build the docker cloud's node images"

setup: $(STAMP) $(COLLECTION_LINK)

# tf-keras, for cloud=local with -e tf_keras=true: of the release of requirements-dev.txt's TensorFlow, as the
# tensorflow role picks it, so the stamp follows it too. Without its one dependency: it asks for `tensorflow`, which
# tensorflow-cpu is under another name (pip would add a second copy).
TF_RELEASE := $(shell sed -n 's/^tensorflow-cpu==\([0-9]*\.[0-9]*\)\..*/\1/p' requirements-dev.txt)
$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --progress-bar off -r requirements-dev.txt
	$(BIN)/pip install --quiet --progress-bar off --no-deps 'tf-keras==$(TF_RELEASE).*'
	@rm -f $(VENV)/.installed-* && touch $@

# The repository itself is the collection: link it where Ansible looks for tfdist.cluster.
$(COLLECTION_LINK):
	@mkdir -p $(dir $@)
	@ln -sfn ../../.. $@

# The docker cloud's engine and node images (built once from Debian packages, then reused): the TF node's and the
# VM-like node's (cloud=docker-vm).
images:
	bash scripts/build-node-image.sh
	bash scripts/build-node-image.sh --vm

deploy: setup
	$(BIN)/ansible-playbook playbooks/deploy.yml -e cloud=$(CLOUD) -e cluster_name=$(CLUSTER) $(EXTRA)

destroy: setup
	$(BIN)/ansible-playbook playbooks/destroy.yml -e cloud=$(CLOUD) -e cluster_name=$(CLUSTER) $(EXTRA)

# Every cluster unless CLUSTER is given, and a cloud's own listing only when CLOUD is (on the command line or in the
# environment: their defaults above mean none here).
status: setup
	$(BIN)/ansible-playbook playbooks/status.yml $(EXTRA) \
		$(if $(filter command line environment,$(origin CLUSTER)),-e cluster_name=$(CLUSTER)) \
		$(if $(filter command line environment,$(origin CLOUD)),-e cloud=$(CLOUD))

# One task's log from its node: `make logs TASK=worker-1` (EXTRA='-e lines=200' or '-e follow=true').
TASK ?= chief-0
logs: setup
	$(BIN)/ansible-playbook playbooks/logs.yml -e cluster_name=$(CLUSTER) -e task=$(TASK) $(EXTRA)

# The unit tests run under ansible-test units (as a collection's CI does); pytest runs the other suites in
# TEST_WORKERS processes (pytest-xdist). Many tests wait on containers, daemons and training, so two workers
# use a 2-core machine better than one. A file's tests stay together in one worker (--dist loadfile): their
# module fixtures (an HDFS cluster, a trained local cluster) are set up once. xdist starts the files with the most
# tests first, which pairs the long docker files with short ones (started longest first, docker-heavy files ran side
# by side and took up to 2.5 times as long; tests/conftest.py prints where the time went). TEST_WORKERS=0 runs them
# in one.
# The checks before them are single-threaded tools, so they run two at a time (a target's output is shown
# together, when it ends); then pytest has both cores.
TEST_WORKERS ?= 2
CHECKS := lint sanity docs importer units sanity-oldest core-matrix ee-context im-venv
test: setup
	@echo "make test: $(CHECKS), two at a time"
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(CHECKS)
	$(BIN)/python -m pytest tests --ignore=tests/unit -ra --durations=25 -n $(TEST_WORKERS) --dist loadfile

test-unit: setup
	$(BIN)/python -m pytest tests/unit -ra

test-e2e: setup
	$(BIN)/python -m pytest tests/e2e -ra

lint: setup
	$(BIN)/ansible-lint --profile production

# The collection checks a Galaxy or Automation Hub reviewer runs. Their tools live in their own
# virtualenv (requirements-checks.txt); each check re-runs only when a file of the collection changed
# (stamps in .cache/stamps; `rm -rf .cache/stamps` forces them).
CHECKS_VENV := .cache/checks-venv
CHECKS_BIN := $(CHECKS_VENV)/bin
CHECKS_STAMP := $(CHECKS_VENV)/.installed-$(shell sha256sum requirements-checks.txt | cut -c1-12)
CHECK_STAMPS := .cache/stamps
# Every file git tracks or would track (deleted ones left out).
COLLECTION_FILES := $(wildcard $(shell git ls-files --cached --others --exclude-standard 2>/dev/null))
# The collection tarball as Galaxy gets it, built once per change of the collection's files: `make build`,
# the importer and the execution environment all take this one.
COLLECTION_TARBALL := build/tfdist-cluster-$(shell sed -n 's/^version: *//p' galaxy.yml).tar.gz

$(COLLECTION_TARBALL): $(STAMP) $(COLLECTION_FILES)
	@mkdir -p $(dir $@)
	$(BIN)/ansible-galaxy collection build --force --output-path $(dir $@) .

SANITY_PYTHON ?= 3.11

checks-setup: $(CHECKS_STAMP)

$(CHECKS_STAMP): requirements-checks.txt
	@test -x $(CHECKS_BIN)/python || $(PYTHON) -m venv $(CHECKS_VENV)
	$(CHECKS_BIN)/pip install --quiet --progress-bar off -r requirements-checks.txt
	@rm -f $(CHECKS_VENV)/.installed-* && touch $@

sanity: $(CHECK_STAMPS)/sanity
docs: $(CHECK_STAMPS)/docs
importer: $(CHECK_STAMPS)/importer
units: $(CHECK_STAMPS)/units

# ansible-test wants the collection under .../ansible_collections/tfdist/cluster in a git tree and
# downloads get-pip.py from outside the package registries: scripts/ansible-test.sh copies the tree
# there and puts an offline stand-in in ansible-test's cache. The checks venv brings shellcheck.
$(CHECK_STAMPS)/sanity: $(STAMP) $(CHECKS_STAMP) $(COLLECTION_FILES)
	PATH=$(CURDIR)/$(BIN):$(CURDIR)/$(CHECKS_BIN):$$PATH scripts/ansible-test.sh sanity --venv --python $(SANITY_PYTHON)
	@mkdir -p $(dir $@) && touch $@

# The same tests pytest runs from tests/unit, as ansible-test runs them: each test context in its own
# virtualenv with tests/unit/requirements.txt, module tests seeing only ansible.module_utils.
$(CHECK_STAMPS)/units: $(STAMP) $(COLLECTION_FILES)
	PATH=$(CURDIR)/$(BIN):$$PATH scripts/ansible-test.sh units --venv --python $(SANITY_PYTHON)
	@mkdir -p $(dir $@) && touch $@

# The collection docsite as docs.ansible.com would build it: antsibull-docs lints the plugin and role docs and the
# guides of docs/docsite (extra-docs.yml, their rst and their references), then renders them and Sphinx builds the
# HTML into $(DOCS_SITE)/html. Offline, Ansible's own docsite (intersphinx) is out of reach: links into it (an
# ansible.builtin module, `common_return_values`, an ANSIBLE_* variable) from the plugin and role pages are the only
# Sphinx warnings let through; the guides (docsite/) get none.
DOCS_SITE := .cache/docs
DOCS_EXTERNAL_LABELS := undefined label: '(?!ansible_collections\.tfdist\.)[^']*' \[ref\.ref\]
DOCS_EXTERNAL_ENVVARS := target not found: ANSIBLE_\w+ \[ref\.envvar\]
DOCS_ALLOWED_WARNINGS := ^(?!\S*/docsite/).*($(DOCS_EXTERNAL_LABELS)|$(DOCS_EXTERNAL_ENVVARS))
$(CHECK_STAMPS)/docs: $(STAMP) $(CHECKS_STAMP) $(COLLECTION_FILES) | $(COLLECTION_LINK)
	$(BIN)/python scripts/check-docs.py
	PATH=$(CURDIR)/$(CHECKS_BIN):$$PATH antsibull-docs lint-collection-docs --plugin-docs --check-extra-docs-refs \
		$(COLLECTION_LINK)
	$(CHECKS_BIN)/python scripts/check-changelog.py
	@rm -rf $(DOCS_SITE) && mkdir -p -m 700 $(DOCS_SITE)
	cd $(DOCS_SITE) && export ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.collections PATH=$(CURDIR)/$(CHECKS_BIN):$$PATH && \
		antsibull-docs sphinx-init --use-current --fail-on-error --dest-dir . --project tfdist.cluster \
			--copyright 'tfdist maintainers' --title 'tfdist.cluster documentation' --html-short-title tfdist.cluster \
			tfdist.cluster > /dev/null && \
		antsibull-docs --config-file antsibull-docs.cfg collection --use-current --fail-on-error --dest-dir rst \
			tfdist.cluster > /dev/null && \
		{ sphinx-build -q -b html -c . -D extensions=sphinx_antsibull_ext -w warnings.log rst html 2> /dev/null || \
			{ cat warnings.log; exit 1; }; }
	@grep -vP "$(DOCS_ALLOWED_WARNINGS)" $(DOCS_SITE)/warnings.log; test $$? = 1
	@echo "docsite: $(DOCS_SITE)/html/index.html"
	@mkdir -p $(dir $@) && touch $@

# galaxy-importer on the tarball as Galaxy gets it: ansible-doc, ansible-lint (offline) and its own
# checks, no ansible-test (it would need containers), so nothing leaves the machine. It logs some
# errors (ansible-doc failing) and still exits 0: any ERROR line fails the check.
$(CHECK_STAMPS)/importer: $(COLLECTION_TARBALL) $(CHECKS_STAMP)
	@rm -rf .cache/importer && mkdir -p .cache/importer
	cp $(COLLECTION_TARBALL) .cache/importer/
	cd .cache/importer && PATH=$(CURDIR)/$(CHECKS_BIN):$$PATH \
		GALAXY_IMPORTER_RUN_ANSIBLE_TEST=False GALAXY_IMPORTER_OFFLINE_ANSIBLE_LINT=True \
		GALAXY_IMPORTER_TMP_ROOT_DIR=$(CURDIR)/.cache/importer \
		$(CURDIR)/$(CHECKS_BIN)/python -m galaxy_importer.main $(notdir $(COLLECTION_TARBALL)) > import.log 2>&1; \
		status=$$?; cat import.log; test $$status = 0 && ! grep -q '^ERROR' import.log
	@mkdir -p $(dir $@) && touch $@

# The execution environment (execution-environment.yml, ansible-builder 3): the collection tarball of this checkout
# copied to .cache/ee/tfdist-cluster.tar.gz, the build context from `ansible-builder create` in .cache/ee/context, then
# scripts/check-ee-context.py: what the image installs is requirements.txt and bindep.txt, none of requirements-dev.txt.
EE_DIR := .cache/ee
ee-context: $(CHECK_STAMPS)/ee-context

$(CHECK_STAMPS)/ee-context: $(COLLECTION_TARBALL) $(CHECKS_STAMP)
	@rm -rf $(EE_DIR)/context && mkdir -p $(EE_DIR)
	cp $(COLLECTION_TARBALL) $(EE_DIR)/tfdist-cluster.tar.gz
	$(CHECKS_BIN)/ansible-builder create --file execution-environment.yml --context $(EE_DIR)/context --output-filename Containerfile
	$(CHECKS_BIN)/python scripts/check-ee-context.py $(EE_DIR)/context
	@mkdir -p $(dir $@) && touch $@

# The image, with the local engine. No registry is reachable: the base is the docker cloud's Debian image
# (make images) with this machine's CA bundle, for a proxy that re-signs HTTPS (EE_CA_BUNDLE; see scripts/build-ee.sh).
ee-image: ee-context
	bash scripts/build-ee.sh $(EE_DIR)/context

# The oldest ansible-core that meta/runtime.yml claims (requires_ansible: ">=X.Y.Z" gives X.Y.Z), in its own
# virtualenv with the collection's requirements.txt: ansible-test's quick sanity tests and the unit tests run
# on it, then playbooks/check.yml on cloud=local.
# `make sanity` and `make units` run the newest, .venv's ansible-core (requirements-dev.txt).
OLDEST_CORE := $(shell sed -n 's/^requires_ansible: *">=\([0-9.]*\)".*/\1/p' meta/runtime.yml)
OLDEST_VENV := .cache/core-$(OLDEST_CORE)-venv
OLDEST_STAMP := $(OLDEST_VENV)/.installed-$(shell sha256sum requirements.txt | cut -c1-12)
OLDEST_SANITY := --test validate-modules --test pep8 --test pylint --test yamllint --test ansible-doc

sanity-oldest: $(CHECK_STAMPS)/sanity-oldest

$(OLDEST_STAMP): requirements.txt meta/runtime.yml
	@test -n "$(OLDEST_CORE)" || { echo 'meta/runtime.yml: no requires_ansible: ">=X.Y.Z"'; exit 1; }
	@test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install --quiet --progress-bar off ansible-core==$(OLDEST_CORE) -r requirements.txt
	@rm -f $(OLDEST_VENV)/.installed-* && touch $@

$(CHECK_STAMPS)/sanity-oldest: $(OLDEST_STAMP) $(COLLECTION_FILES) | $(COLLECTION_LINK)
	BIN=$(CURDIR)/$(OLDEST_VENV)/bin scripts/ansible-test.sh sanity --venv --python $(SANITY_PYTHON) $(OLDEST_SANITY)
	BIN=$(CURDIR)/$(OLDEST_VENV)/bin scripts/ansible-test.sh units --venv --python $(SANITY_PYTHON)
	PATH=$(CURDIR)/$(OLDEST_VENV)/bin:$$PATH ansible-playbook playbooks/check.yml -e cloud=local
	@mkdir -p $(dir $@) && touch $@

# The current ansible-core releases beyond .venv's 2.19 need Python 3.12+, which this machine's is not:
# scripts/core-matrix.sh runs each (its TFDIST_CORE_VERSIONS) in a Debian 13 container with Python 3.13, built once
# from Debian packages (tfdist/controller:trixie-tf<version>): the quick sanity tests above, the unit tests, check.yml, and a
# deploy of a few steps on cloud=local then its destroy.
core-matrix: $(CHECK_STAMPS)/core-matrix

$(CHECK_STAMPS)/core-matrix: $(COLLECTION_FILES)
	scripts/core-matrix.sh $(OLDEST_SANITY)
	@mkdir -p $(dir $@) && touch $@

# The Infrastructure Manager's own code (im 2.0.0) for tests/integration/test_im_radl.py, in its own virtualenv,
# installed --no-deps from a fully pinned list (tests/im/requirements.txt): never one of the collection's requirements.
# Re-installed only when that list changes (a stamp keyed on its content).
IM_VENV := .cache/im-venv
IM_STAMP := $(IM_VENV)/.installed-$(shell sha256sum tests/im/requirements.txt | cut -c1-12)

im-venv: $(IM_STAMP)

$(IM_STAMP): tests/im/requirements.txt
	@test -x $(IM_VENV)/bin/python || $(PYTHON) -m venv $(IM_VENV)
	$(IM_VENV)/bin/pip install --quiet --progress-bar off --no-deps -r tests/im/requirements.txt
	@rm -f $(IM_VENV)/.installed-* && touch $@

# CHANGELOG.rst is generated from changelogs/changelog.yaml; a release (`antsibull-changelog release` in the
# checks virtualenv) first turns the fragments of changelogs/fragments/ into galaxy.yml's version there.
changelog: $(CHECKS_STAMP)
	PATH=$(CURDIR)/$(CHECKS_BIN):$$PATH antsibull-changelog generate

build: $(COLLECTION_TARBALL)

bench: setup
	$(BIN)/python bench/deploy_overhead.py
	$(BIN)/python bench/docker_scaling.py
	$(BIN)/python bench/cloud_scale.py
	$(BIN)/python bench/checkpoint_mirror.py
	$(BIN)/python bench/baked_image.py

clean:
	rm -rf build .pytest_cache
