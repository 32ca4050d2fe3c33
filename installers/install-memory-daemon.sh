#!/usr/bin/env bash
# install-memory-daemon.sh — one command from nothing to every MCP client sharing one velesdb-memory
# daemon (macOS + Linux). Thin on purpose: it makes a virtual environment, pip-installs velesmem,
# puts `velesdb-memory` on PATH (~/.local/bin), then calls the Python subcommands that do the work
# (and are tested on every OS):
#   velesdb-memory prepare-model     the local model's int8 graph, derived once beside the install
#   velesdb-memory service install   autostart (launchd / systemd --user / detached fallback), and
#                                    the installer record every later command reads its port from
#   velesdb-memory service wait      /health over strict TLS against the daemon's own CA
#   velesdb-memory trust-ca          the CA in the user's trust store (login keychain / NSS)
#   velesdb-memory wire              the clients installed here (CLI on PATH or config dir present):
#                                    Claude Code (and its session hooks), Codex, Claude Desktop, Cursor,
#                                    Windsurf, Devin CLI, Cline, Zed, opencode, Gemini CLI, Qwen Code,
#                                    Copilot CLI; each runs the installed velesdb-memory over stdio
#   velesdb-memory skills install    the agent skills: ~/.claude/skills (read by opencode too), and
#                                    ~/.agents/skills when Codex is installed
# Re-running is idempotent. --uninstall removes the service and our client entries only: never the
# store, the CA or its trust. See docs/installers.md.
set -euo pipefail

PROG=$(basename "$0")
SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)

# The embedders velesmem knows (velesmem.config.EMBEDDERS; a test keeps the two lists equal). Checked
# here too so a typo is refused before a virtual environment is made and pip runs.
EMBEDDERS="hash local ollama openai"
CLIENT_NAMES="claude-code, codex, claude-desktop, cursor, windsurf, devin, cline, zed, opencode, gemini, qwen, copilot"

PORT=""
STORE=""
TLS_DIR=""
EMBEDDER=""
TTL=""
OLLAMA_URL=""
OLLAMA_MODEL=""
EXTRACTOR_MODEL=""
FROM_RELEASE=""          # "", "latest" or a version
SHA256=""
SKIP_CHECKSUM=0
REINSTALL=0
ASSUME_YES=0
SKIP_CA_TRUST=0
WIRE_ONLY=0
FORCE_RESTART=0
UNINSTALL=0
SKIP_CLIENTS=()
TOKEN=${VELESMEM_INSTALL_TOKEN:-}

usage() {
  cat <<EOF
usage: $PROG [options]

Install velesdb-memory as an autostarted HTTPS daemon and wire every MCP client to it.

options:
  --port=PORT              daemon port (default: the installed daemon's, else 18090); a port held
                           by another program is refused
  --store=DIR              store directory (default ~/.velesdb-memory)
  --tls-dir=DIR            local CA directory (default ~/.velesdb-memory-tls)
  --embedder=NAME          embedding backend: ${EMBEDDERS// /, } (default: the store's own; local for a new store)
  --ollama-url=URL         Ollama server, for --embedder=ollama
  --ollama-model=NAME      Ollama embedding model
  --extractor-model=NAME   model used by remember_extracted
  --ttl=SECONDS            default TTL of new facts (default: permanent)
  --from-release[=VERSION] install a released velesmem from the package index instead of this
                           checkout (pinned to VERSION; default: the newest published)
  --sha256=HEX             with --from-release: the SHA-256 the downloaded file must have
  --skip-checksum          with --from-release: install without checking the file's SHA-256
  --reinstall              pip-install again even when the same version is already installed
  --skip-client=NAME       leave a client alone (repeatable, or comma-separated):
                           $CLIENT_NAMES
  --skip-ca-trust          do not add the CA to the user's trust store
  --token=TOKEN            bearer token every client sends, for a daemon that requires one
                           (velesdb-memory token create; docs/auth.md); VELESMEM_INSTALL_TOKEN
                           keeps it out of the process list
  --wire-only              only (re)wire the clients to a daemon that already runs
  --force-restart          restart the daemon even if its settings did not change
  --uninstall              remove the service and our client entries (never the store,
                           the CA or its trust)
  -y, --yes                do not ask for confirmation
  -h, --help               show this help

environment:
  VELESMEM_INSTALL_VENV    the virtual environment to create/use (default ~/.velesdb-memory-venv)
  VELESMEM_INSTALL_SOURCE  what pip installs (default: this checkout)
  VELESMEM_INSTALL_EXTRAS  the extras installed with it (default embed: the in-process
                           semantic embedder a new store gets; empty for the hash embedder only)
  VELESMEM_INSTALL_PYTHON  an interpreter that already has velesmem: skip the venv and pip
                           (the tests use this; so can a developer with an editable install)
  VELESMEM_INSTALL_MANAGER force the service manager: launchd, systemd, background (default: auto)
  VELESMEM_INSTALL_BIN_DIR where the velesdb-memory command is linked (default ~/.local/bin)
  VELESMEM_INSTALL_TOKEN   the bearer token, as --token (which wins)
EOF
}

die() { echo "$PROG: $*" >&2; exit 2; }    # a bad flag: nothing was done
fail() { echo "$PROG: $*" >&2; exit 1; }   # could not do what was asked: nothing was installed

while [ $# -gt 0 ]; do
  arg=$1
  shift
  case "$arg" in
    --*=*) name=${arg%%=*}; val=${arg#*=}; inline=1 ;;
    *) name=$arg; val=""; inline=0 ;;
  esac
  case "$name" in
    --port|--store|--tls-dir|--embedder|--ollama-url|--ollama-model|--extractor-model|--ttl|--skip-client|--sha256|--token)
      if [ "$inline" = 0 ]; then
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
    --from-release)  # an optional value, inline only: --from-release or --from-release=1.2.3
      if [ "$inline" = 1 ]; then
        [ -n "$val" ] || die "--from-release= needs a version (or drop the '=' for the newest)"
        FROM_RELEASE=$val
      else
        FROM_RELEASE=latest
      fi ;;
    --sha256) SHA256=$(printf '%s' "$val" | tr '[:upper:]' '[:lower:]') ;;
    --skip-checksum) SKIP_CHECKSUM=1 ;;
    --reinstall) REINSTALL=1 ;;
    --skip-client) SKIP_CLIENTS+=("$val") ;;
    --token) TOKEN=$val ;;
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
if [ -n "$EMBEDDER" ]; then
  EMBEDDER=$(printf '%s' "$EMBEDDER" | tr '[:upper:]' '[:lower:]')
  case " $EMBEDDERS " in
    *" $EMBEDDER "*) ;;
    *) die "--embedder=$EMBEDDER is not a known embedder: use one of ${EMBEDDERS// /, }" ;;
  esac
fi
if [ -n "$SHA256" ]; then
  [ -n "$FROM_RELEASE" ] || die "--sha256 checks a downloaded release: use it with --from-release"
  case "$SHA256" in
    *[!0-9a-f]*) die "--sha256 must be 64 hexadecimal digits" ;;
  esac
  [ "${#SHA256}" = 64 ] || die "--sha256 must be 64 hexadecimal digits"
  [ "$SKIP_CHECKSUM" = 0 ] || die "--sha256 and --skip-checksum contradict each other"
fi
if [ -n "$FROM_RELEASE" ] && [ -n "${VELESMEM_INSTALL_SOURCE:-}${VELESMEM_INSTALL_PYTHON:-}" ]; then
  die "--from-release installs a release into the virtual environment: unset VELESMEM_INSTALL_SOURCE and VELESMEM_INSTALL_PYTHON"
fi
if [ "$SKIP_CHECKSUM" = 1 ] && [ -z "$FROM_RELEASE" ]; then
  die "--skip-checksum only applies to --from-release"
fi

SUMMARY=$(mktemp "${TMPDIR:-/tmp}/velesmem-install.XXXXXX")
DOWNLOADS=""
# shellcheck disable=SC2329  # invoked by the EXIT trap
cleanup() { rm -f "$SUMMARY"; if [ -n "$DOWNLOADS" ]; then rm -rf "$DOWNLOADS"; fi; }
trap cleanup EXIT
note() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$SUMMARY"; }
NEXT=""  # the line printed after the summary: what to run next

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
  if [ -n "$NEXT" ]; then
    echo
    echo "$NEXT"
  fi
}

finish() { # exit status: 1 when any step failed (a warning, e.g. a client config we could not parse, is not)
  print_summary
  if grep -q '^failed' "$SUMMARY"; then exit 1; fi
  exit 0
}

# --- what to install -------------------------------------------------------------------------
VENV=${VELESMEM_INSTALL_VENV:-$HOME/.velesdb-memory-venv}
SOURCE=""
SOURCE_VERSION=""
if [ -n "${VELESMEM_INSTALL_SOURCE:-}" ]; then
  SOURCE=$VELESMEM_INSTALL_SOURCE
elif [ -n "$FROM_RELEASE" ]; then
  SOURCE="the package index"
elif [ -f "$SCRIPT_DIR/../pyproject.toml" ] && grep -q '^name = "velesmem"' "$SCRIPT_DIR/../pyproject.toml"; then
  SOURCE=$(cd "$SCRIPT_DIR/.." && pwd)
fi
if [ -d "$SOURCE" ] && [ -f "$SOURCE/velesmem/__init__.py" ]; then
  SOURCE_VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$SOURCE/velesmem/__init__.py")
fi
NEEDS_PIP=1
if [ -n "${VELESMEM_INSTALL_PYTHON:-}" ] || [ "$UNINSTALL" = 1 ] || [ "$WIRE_ONLY" = 1 ]; then
  NEEDS_PIP=0
fi
if [ "$NEEDS_PIP" = 1 ] && [ -z "$SOURCE" ]; then
  fail "this script is not inside a velesmem checkout, so there is nothing to install: clone the \
repository and run installers/install-memory-daemon.sh from it (velesmem is not published on the \
package index yet; once it is, --from-release installs a release)"
fi

if [ "$UNINSTALL" = 0 ] && [ "$WIRE_ONLY" = 0 ] && [ "$ASSUME_YES" = 0 ] && [ -t 0 ]; then
  echo "This installs velesdb-memory (${VELESMEM_INSTALL_PYTHON:-venv $VENV, from $SOURCE}),"
  echo "starts it as an autostarted HTTPS daemon and wires your MCP clients to it."
  printf 'Proceed? [y/N] '
  read -r answer
  case "$answer" in y|Y|yes|YES) ;; *) echo "aborted"; exit 1 ;; esac
fi

# The velesmem version installed in the interpreter's own environment (not one it merely sees).
installed_version() {
  "$1" -P - <<'PY' 2>/dev/null
import importlib.metadata as md, os, sys
try:
    dist = md.distribution("velesmem")
except md.PackageNotFoundError:
    sys.exit(1)
home = os.path.realpath(sys.prefix)
where = os.path.realpath(str(dist.locate_file("")))
if where != home and not where.startswith(home + os.sep):
    sys.exit(1)  # visible through a path or .pth, but not installed here
print(dist.version)
PY
}

sha256_of() {
  "$PY" -P -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

# --from-release: download the pinned release through pip, check its SHA-256, install that file.
fetch_release() {
  local want=velesmem said file got
  [ "$FROM_RELEASE" = latest ] || want="velesmem==$FROM_RELEASE"
  DOWNLOADS=$(mktemp -d "${TMPDIR:-/tmp}/velesmem-release.XXXXXX")
  echo "downloading $want from the package index"
  if ! said=$("$PY" -P -m pip download --quiet --disable-pip-version-check --no-deps --dest "$DOWNLOADS" "$want" 2>&1); then
    fail "$want is not on the package index (velesmem is not published there yet): run this script \
from a clone of the repository instead, which installs that checkout. pip said: $(printf '%s' "$said" | grep -i error | tail -n 2 | tr '\n' ' ')"
  fi
  file=$(find "$DOWNLOADS" -maxdepth 1 -type f -name 'velesmem-*' | head -n 1)
  [ -n "$file" ] || fail "pip downloaded no velesmem file for $want"
  got=$(sha256_of "$file")
  if [ "$SKIP_CHECKSUM" = 1 ]; then
    note skipped "checksum of $(basename "$file")" "--skip-checksum (sha256 $got)"
  elif [ -z "$SHA256" ]; then
    fail "refusing to install $(basename "$file") unverified: pass --sha256=<the SHA-256 published \
with the release> (this file's is $got: compare the two), or --skip-checksum to install it anyway"
  elif [ "$got" != "$SHA256" ]; then
    fail "checksum mismatch for $(basename "$file"): expected $SHA256, got $got — nothing was installed"
  else
    note "done" "checksum of $(basename "$file")" "sha256 $got matches --sha256"
  fi
  SOURCE=$file
  SOURCE_VERSION=$(basename "$file")
  SOURCE_VERSION=${SOURCE_VERSION#velesmem-}
  case "$SOURCE_VERSION" in
    *.whl) SOURCE_VERSION=${SOURCE_VERSION%%-*} ;;
    *.tar.gz) SOURCE_VERSION=${SOURCE_VERSION%.tar.gz} ;;
    *.zip) SOURCE_VERSION=${SOURCE_VERSION%.zip} ;;
  esac
}

# --- the interpreter that runs velesmem ------------------------------------------------------
if [ -n "${VELESMEM_INSTALL_PYTHON:-}" ]; then
  PY=$VELESMEM_INSTALL_PYTHON
  note skipped "virtual environment + pip install" "VELESMEM_INSTALL_PYTHON=$PY is used as is"
elif [ "$NEEDS_PIP" = 0 ]; then
  PY=$VENV/bin/python
  [ -x "$PY" ] || die "no velesmem installation at $VENV (set VELESMEM_INSTALL_VENV or VELESMEM_INSTALL_PYTHON)"
else
  command -v python3 >/dev/null 2>&1 || fail "python3 (3.11 or newer) is required"
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || fail "python3 must be 3.11 or newer"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "creating the virtual environment $VENV"
    python3 -m venv "$VENV" || fail "python3 -m venv $VENV failed (Debian/Ubuntu: apt install python3-venv)"
    note "done" "virtual environment $VENV"
  else
    note skipped "virtual environment $VENV" "already exists"
  fi
  PY=$VENV/bin/python
  HAVE=$(installed_version "$PY" || true)
  if [ -n "$FROM_RELEASE" ] && [ "$FROM_RELEASE" != latest ] && [ "$HAVE" = "$FROM_RELEASE" ] && [ "$REINSTALL" = 0 ]; then
    SOURCE_VERSION=$FROM_RELEASE  # pinned and already there: nothing to download
  elif [ -n "$FROM_RELEASE" ]; then
    fetch_release
  fi
  if [ -n "$HAVE" ] && [ "$HAVE" = "$SOURCE_VERSION" ] && [ "$REINSTALL" = 0 ]; then
    note skipped "pip install $SOURCE" "velesmem $HAVE is already installed in $VENV (--reinstall to install it again)"
  else
    EXTRAS=${VELESMEM_INSTALL_EXTRAS-embed}
    TARGET=$SOURCE
    [ -n "$EXTRAS" ] && TARGET="${SOURCE}[${EXTRAS}]"
    echo "installing velesmem from $TARGET"
    "$PY" -P -m pip install --quiet --disable-pip-version-check "$TARGET" || fail "pip install $TARGET failed"
    note "done" "pip install $TARGET"
  fi
fi
"$PY" -P -c 'import velesmem' 2>/dev/null || die "$PY cannot import velesmem"

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
SKILL_ARGS=(--target claude)
if command -v codex >/dev/null 2>&1 || [ -d "${CODEX_HOME:-$HOME/.codex}" ]; then SKILL_ARGS+=(--target codex); fi

# -P: never the velesmem of the directory the script is run from (a checkout), only the installed one
vm() { "$PY" -P -m velesmem "$@"; }

# --- uninstall: our client entries + the service; never the store, the CA or the trust --------
if [ "$UNINSTALL" = 1 ]; then
  # The clients first: the service's record still names the daemon's URL for the message.
  vm wire --uninstall ${WIRE_ARGS[@]+"${WIRE_ARGS[@]}"} --summary "$SUMMARY" || true
  vm skills install --uninstall --target claude --target codex --summary "$SUMMARY" || true
  vm service uninstall --summary "$SUMMARY" || note failed "service uninstall" "see the messages above"
  note skipped "store, CA and CA trust" "never removed by the uninstaller (see docs/installers.md)"
  if [ -z "${VELESMEM_INSTALL_PYTHON:-}" ]; then
    note skipped "virtual environment $VENV" "kept; rm -rf it (and ~/.local/bin/velesdb-memory) to remove velesmem itself"
  fi
  finish
fi

# --- velesdb-memory on PATH ------------------------------------------------------------------
BIN_DIR=${VELESMEM_INSTALL_BIN_DIR:-$HOME/.local/bin}
link_commands() {
  local scripts name target link
  scripts=$(dirname "$PY")
  if [ ! -x "$scripts/velesdb-memory" ]; then
    note skipped "velesdb-memory on PATH" "no velesdb-memory command beside $PY"
    NEXT="next: $PY -m velesmem doctor"
    return
  fi
  mkdir -p "$BIN_DIR"
  for name in velesdb-memory velesmem; do
    target=$scripts/$name
    link=$BIN_DIR/$name
    [ -x "$target" ] || continue
    if [ -e "$link" ] && [ ! -L "$link" ]; then
      note skipped "$link" "a file that is not our link is already there; left alone"
      continue
    fi
    if [ "$(readlink "$link" 2>/dev/null || true)" = "$target" ]; then
      note skipped "$link" "already links to $target"
    else
      ln -sfn "$target" "$link"
      note "done" "$link" "links to $target"
    fi
  done
  case ":$PATH:" in
    *":$BIN_DIR:"*) NEXT="next: velesdb-memory doctor" ;;
    *)
      note warning "velesdb-memory on PATH" "$BIN_DIR is not on your PATH"
      NEXT="velesdb-memory is in $BIN_DIR, which is not on your PATH. Add it (and put the same line in
~/.profile, ~/.bashrc or ~/.zshrc to keep it):
  export PATH=\"$BIN_DIR:\$PATH\"
then: velesdb-memory doctor   (or now, without PATH: $BIN_DIR/velesdb-memory doctor)" ;;
  esac
}
link_commands

# --- install ---------------------------------------------------------------------------------
if [ "$WIRE_ONLY" = 1 ]; then
  note skipped "service install and CA trust" "--wire-only"
else
  # The local model's int8 graph, derived now (seconds, once) so no daemon start pays for it.
  if MODEL_FILE=$(vm prepare-model); then
    note "done" "local model prepared" "${MODEL_FILE:-nothing to prepare}"
  else
    note warning "local model prepared" "prepare-model failed; the daemon derives it on its first start"
  fi
  if ! vm service install ${SERVICE_ARGS[@]+"${SERVICE_ARGS[@]}"} --summary "$SUMMARY"; then
    note failed "install stopped" "the daemon is not running, so no client was wired"
    NEXT="the daemon's own words are above; fix that and re-run the installer"
    finish
  fi
  vm service wait ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} --summary "$SUMMARY" || { note failed "install stopped" "no /health"; finish; }
  if [ "$SKIP_CA_TRUST" = 1 ]; then
    note skipped "CA trust" "--skip-ca-trust"
  else
    vm trust-ca ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} --summary "$SUMMARY" || true
  fi
  # The dashboard's URL, in the summary (nothing is opened).
  vm open --print ${DAEMON_ARGS[@]+"${DAEMON_ARGS[@]}"} --summary "$SUMMARY" >/dev/null || true
fi
if [ -n "$TOKEN" ]; then  # through stdin: never in a process's arguments
  printf '%s\n' "$TOKEN" | vm wire --token - ${WIRE_ARGS[@]+"${WIRE_ARGS[@]}"} --summary "$SUMMARY" || true
else
  vm wire ${WIRE_ARGS[@]+"${WIRE_ARGS[@]}"} --summary "$SUMMARY" || true
fi
vm skills install "${SKILL_ARGS[@]}" --summary "$SUMMARY" || true
finish
