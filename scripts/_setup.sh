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
