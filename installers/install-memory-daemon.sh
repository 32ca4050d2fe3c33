#!/usr/bin/env bash
# install-memory-daemon.sh — one command from nothing to every MCP client sharing one velesdb-memory
# daemon (macOS + Linux). Thin on purpose: it makes a virtual environment, pip-installs velesmem,
# then calls the Python subcommands that do the work (and are tested on every OS):
#   velesdb-memory service install   autostart (launchd / systemd --user / detached fallback)
#   velesdb-memory service wait      /health over strict TLS against the daemon's own CA
#   velesdb-memory trust-ca          the CA in the user's trust store (login keychain / NSS)
#   velesdb-memory wire              Claude Code, Codex, Claude Desktop, Cursor, Windsurf, Devin CLI
# Re-running is idempotent. --uninstall removes the service and our client entries only: never the
# store, the CA or its trust. See docs/installers.md.
set -euo pipefail

PROG=$(basename "$0")
SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)

PORT=""
STORE=""
TLS_DIR=""
EMBEDDER=""
TTL=""
OLLAMA_URL=""
OLLAMA_MODEL=""
EXTRACTOR_MODEL=""
ASSUME_YES=0
SKIP_CA_TRUST=0
WIRE_ONLY=0
FORCE_RESTART=0
UNINSTALL=0
SKIP_CLIENTS=()

usage() {
  cat <<EOF
usage: $PROG [options]

Install velesdb-memory as an autostarted HTTPS daemon and wire every MCP client to it.

options:
  --port=PORT              daemon port (default 18090); a port held by another program is refused
  --store=DIR              store directory (default ~/.velesdb-memory)
  --tls-dir=DIR            local CA directory (default ~/.velesdb-memory-tls)
  --embedder=NAME          embedding backend (default hash)
  --ollama-url=URL         Ollama server, for --embedder=ollama
  --ollama-model=NAME      Ollama embedding model
  --extractor-model=NAME   model used by remember_extracted
  --ttl=SECONDS            default TTL of new facts (default: permanent)
  --skip-client=NAME       leave a client alone (repeatable, or comma-separated):
                           claude-code, codex, claude-desktop, cursor, windsurf, devin
  --skip-ca-trust          do not add the CA to the user's trust store
  --wire-only              only (re)wire the clients to a daemon that already runs
  --force-restart          restart the daemon even if its settings did not change
  --uninstall              remove the service and our client entries (never the store,
                           the CA or its trust)
  -y, --yes                do not ask for confirmation
  -h, --help               show this help

environment:
  VELESMEM_INSTALL_VENV    the virtual environment to create/use (default ~/.velesdb-memory-venv)
  VELESMEM_INSTALL_SOURCE  what pip installs (default: this checkout when run from one, else
                           "velesmem" from PyPI)
  VELESMEM_INSTALL_PYTHON  an interpreter that already has velesmem: skip the venv and pip
                           (the tests use this; so can a developer with an editable install)
  VELESMEM_INSTALL_MANAGER force the service manager: launchd, systemd, background (default: auto)
EOF
}

die() { echo "$PROG: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  arg=$1
  shift
  case "$arg" in
    --*=*) name=${arg%%=*}; val=${arg#*=} ;;
    *) name=$arg; val="" ;;
  esac
  case "$name" in
    --port|--store|--tls-dir|--embedder|--ollama-url|--ollama-model|--extractor-model|--ttl|--skip-client)
      if [ "$name" = "$arg" ]; then
        [ $# -ge 1 ] || die "$name needs a value"
        val=$1
        shift
      fi
      [ -n "$val" ] || die "$name needs a value" ;;
  esac
  case "$name" in
    --port) PORT=$val ;;
    --store) STORE=$val ;;
    --tls-dir) TLS_DIR=$val ;;
    --embedder) EMBEDDER=$val ;;
    --ollama-url) OLLAMA_URL=$val ;;
    --ollama-model) OLLAMA_MODEL=$val ;;
    --extractor-model) EXTRACTOR_MODEL=$val ;;
    --ttl) TTL=$val ;;
    --skip-client) SKIP_CLIENTS+=("$val") ;;
    --skip-ca-trust) SKIP_CA_TRUST=1 ;;
    --wire-only) WIRE_ONLY=1 ;;
    --force-restart) FORCE_RESTART=1 ;;
    --uninstall) UNINSTALL=1 ;;
    -y|--yes) ASSUME_YES=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $arg" ;;
  esac
done

case "$PORT" in
  "") ;;
  *[!0-9]*) die "--port must be a number, got '$PORT'" ;;
  *) { [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ]; } || die "--port $PORT is out of range 1-65535" ;;
esac
case "$TTL" in
  *[!0-9]*) die "--ttl must be a whole number of seconds, got '$TTL'" ;;
esac

SUMMARY=$(mktemp "${TMPDIR:-/tmp}/velesmem-install.XXXXXX")
trap 'rm -f "$SUMMARY"' EXIT
note() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$SUMMARY"; }

print_summary() {
  echo
  echo "velesdb-memory installer — summary"
  local status step detail
  while IFS=$'\t' read -r status step detail; do
    if [ -n "$detail" ]; then
      printf '  %-8s %s — %s\n' "$status" "$step" "$detail"
    else
      printf '  %-8s %s\n' "$status" "$step"
    fi
  done <"$SUMMARY"
}

finish() { # exit status: 1 when any step failed
  print_summary
  if grep -q '^failed' "$SUMMARY"; then exit 1; fi
  exit 0
}

# --- the interpreter that runs velesmem ------------------------------------------------------
VENV=${VELESMEM_INSTALL_VENV:-$HOME/.velesdb-memory-venv}
if [ -n "${VELESMEM_INSTALL_SOURCE:-}" ]; then
  SOURCE=$VELESMEM_INSTALL_SOURCE
elif [ -f "$SCRIPT_DIR/../pyproject.toml" ] && grep -q '^name = "velesmem"' "$SCRIPT_DIR/../pyproject.toml"; then
  SOURCE=$(cd "$SCRIPT_DIR/.." && pwd)
else
  SOURCE=velesmem
fi

if [ "$UNINSTALL" = 0 ] && [ "$WIRE_ONLY" = 0 ] && [ "$ASSUME_YES" = 0 ] && [ -t 0 ]; then
  echo "This installs velesdb-memory (${VELESMEM_INSTALL_PYTHON:-venv $VENV, from $SOURCE}),"
  echo "starts it as an autostarted HTTPS daemon and wires your MCP clients to it."
  printf 'Proceed? [y/N] '
  read -r answer
  case "$answer" in y|Y|yes|YES) ;; *) echo "aborted"; exit 1 ;; esac
fi

if [ -n "${VELESMEM_INSTALL_PYTHON:-}" ]; then
  PY=$VELESMEM_INSTALL_PYTHON
  note skipped "virtual environment + pip install" "VELESMEM_INSTALL_PYTHON=$PY is used as is"
elif [ "$UNINSTALL" = 1 ] || [ "$WIRE_ONLY" = 1 ]; then
  PY=$VENV/bin/python
  [ -x "$PY" ] || die "no velesmem installation at $VENV (set VELESMEM_INSTALL_VENV or VELESMEM_INSTALL_PYTHON)"
else
  command -v python3 >/dev/null 2>&1 || die "python3 (3.11 or newer) is required"
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "python3 must be 3.11 or newer"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "creating the virtual environment $VENV"
    python3 -m venv "$VENV"
    note "done" "virtual environment $VENV"
  else
    note skipped "virtual environment $VENV" "already exists"
  fi
  PY=$VENV/bin/python
  echo "installing velesmem from $SOURCE"
  "$PY" -m pip install --quiet --disable-pip-version-check "$SOURCE"
  note "done" "pip install $SOURCE"
fi
"$PY" -c 'import velesmem' 2>/dev/null || die "$PY cannot import velesmem"

DAEMON_ARGS=()
[ -n "$PORT" ] && DAEMON_ARGS+=(--port "$PORT")
[ -n "$TLS_DIR" ] && DAEMON_ARGS+=(--tls-dir "$TLS_DIR")
SERVICE_ARGS=(${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"})
[ -n "$STORE" ] && SERVICE_ARGS+=(--store "$STORE")
[ -n "$EMBEDDER" ] && SERVICE_ARGS+=(--embedder "$EMBEDDER")
[ -n "$TTL" ] && SERVICE_ARGS+=(--ttl "$TTL")
[ -n "$OLLAMA_URL" ] && SERVICE_ARGS+=(--ollama-url "$OLLAMA_URL")
[ -n "$OLLAMA_MODEL" ] && SERVICE_ARGS+=(--ollama-model "$OLLAMA_MODEL")
[ -n "$EXTRACTOR_MODEL" ] && SERVICE_ARGS+=(--extractor-model "$EXTRACTOR_MODEL")
[ "$FORCE_RESTART" = 1 ] && SERVICE_ARGS+=(--force-restart)
[ -n "${VELESMEM_INSTALL_MANAGER:-}" ] && SERVICE_ARGS+=(--manager "$VELESMEM_INSTALL_MANAGER")
WIRE_ARGS=(${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"})
for client in ${SKIP_CLIENTS[@]+"${SKIP_CLIENTS[@]}"}; do WIRE_ARGS+=(--skip-client "$client"); done

vm() { "$PY" -m velesmem "$@"; }

# --- uninstall: service + our client entries; never the store, the CA or the trust ------------
if [ "$UNINSTALL" = 1 ]; then
  vm service uninstall --summary "$SUMMARY" || note failed "service uninstall" "see the messages above"
  vm wire --uninstall ${WIRE_ARGS[@]+"${WIRE_ARGS[@]}"} --summary "$SUMMARY" || true
  note skipped "store, CA and CA trust" "never removed by the uninstaller (see docs/installers.md)"
  if [ -z "${VELESMEM_INSTALL_PYTHON:-}" ]; then
    note skipped "virtual environment $VENV" "kept; rm -rf it to remove velesmem itself"
  fi
  finish
fi

# --- install ---------------------------------------------------------------------------------
if [ "$WIRE_ONLY" = 1 ]; then
  note skipped "service install and CA trust" "--wire-only"
else
  if ! vm service install ${SERVICE_ARGS[@]+"${SERVICE_ARGS[@]}"} --summary "$SUMMARY"; then
    note failed "install stopped" "the daemon is not running, so no client was wired"
    finish
  fi
  vm service wait ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} --summary "$SUMMARY" || { note failed "install stopped" "no /health"; finish; }
  if [ "$SKIP_CA_TRUST" = 1 ]; then
    note skipped "CA trust" "--skip-ca-trust"
  else
    vm trust-ca ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} --summary "$SUMMARY" || true
  fi
fi
vm wire ${WIRE_ARGS[@]+"${WIRE_ARGS[@]}"} --summary "$SUMMARY" || true
finish
