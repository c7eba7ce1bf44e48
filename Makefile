# The course's commands. `make book` and `make test` create the environment (.venv/) on first use.
#   make book     build the rendered book into _build/html from the chapters' stored outputs (seconds)
#   make outputs  re-execute the chapters and store their outputs (after changing one: NB=book/NN_name.ipynb)
#   make book-zh  build the Chinese editions into _build/html/zh_CN and zh_TW, from the chapters' stored outputs
#   make translations   bring locales/ in step with the English text, and zh_TW with zh_CN (tools/book_editions.py)
#   make test     lint, unit tests, notebook regression (nbval), course integrity, grading round trips
#   make release  regenerate exercises/ from solutions/ with nbgrader
#   make grade NB=PATH   grade an exercise notebook where it is (seqlab grade PATH): points, feedback
#   make bench    time seqlab against torch.nn and d2l's models (benchmarks/results/); DEVICE=cuda on a GPU
#   make student-edition DIR=PATH   write or update the students' repository in PATH (tools/student_edition.py)

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# nbgrader runs `alembic` as a program, so the environment's bin/ must come first on PATH.
export PATH := $(BIN):$(PATH)
# The course's models are small: one thread per process is as fast as two, and it keeps torch's
# threads from spinning against each other when pytest-xdist runs two notebooks on two cores.
export OMP_NUM_THREADS ?= 1
# No progress bars in stored outputs, the rendered book or nbgrader's test cells.
export SEQLAB_PROGRESS ?= 0
STAMP := $(VENV)/.installed

.PHONY: env book outputs book-zh translations test lint release grade bench student-edition clean

env: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

book: env
	$(BIN)/jupyter-book build --all --warningiserror --keep-going .
	@echo
	@echo "The book is built. Open it: file://$(CURDIR)/_build/html/index.html"

# What an author runs after changing a chapter (or seqlab under it): every chapter, or NB=... only.
# A cell's limit bounds a hang, not a busy machine. The second pass joins the pieces of a cell's printed
# stream (a busy machine delivers them in several).
outputs: env
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=1800 $(or $(NB),book/0*.ipynb)
	$(BIN)/jupyter nbconvert --to notebook --inplace --coalesce-streams $(or $(NB),book/0*.ipynb)

book-zh: env
	$(BIN)/python tools/book_editions.py build zh_CN zh_TW

translations: env
	$(BIN)/python tools/book_editions.py extract
	$(BIN)/python tools/book_editions.py derive-tw

# ruff over the code and the notebooks; actionlint over .github/workflows/ (an action on a runtime that
# GitHub's runners no longer have fails here, not on an instructor's first push).
lint: env
	$(BIN)/ruff check
	$(BIN)/actionlint

test: lint
	$(BIN)/python -m pytest -n 2 --dist loadfile --durations=25 --doctest-modules seqlab tests book solutions --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg

# "*" is a glob over solutions/: every exercise in one nbgrader process (22 s as a loop of eight, 5 s so).
release: env
	$(BIN)/nbgrader generate_assignment "*" --force

grade: env
	@test -n "$(NB)" || { echo "usage: make grade NB=path/to/exNN_name.ipynb" >&2; exit 2; }
	$(BIN)/seqlab grade "$(NB)"

bench: env
	$(BIN)/python benchmarks/bench.py --device $(or $(DEVICE),cpu) --grading

student-edition: env
	@test -n "$(DIR)" || { echo "usage: make student-edition DIR=path/to/the/edition" >&2; exit 2; }
	$(BIN)/python tools/student_edition.py "$(DIR)"

clean:
	rm -rf _build
