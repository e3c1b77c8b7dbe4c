#!/bin/bash
# neuron-env first-boot bootstrap (cloud-init user-data), rendered by `neuron-env userdata`.
# Installs neuron-env, installs the Neuron PyTorch backend into a venv, runs doctor (with the
# device smoke test) and exits non-zero on failure so `cloud-init status` shows it.
# Idempotent across reboots: a finished run with the same settings is not repeated.
# shellcheck disable=SC2317,SC2016  # functions called through retry; rendered values are literal
set -uo pipefail

# -- settings (rendered, each quoted for the shell; each can be overridden by the environment) --
setting() {  # setting VAR DEFAULT: keep the environment's non-empty value, else the default
    if [ -z "${!1:-}" ]; then printf -v "$1" '%s' "$2"; fi
}
setting NEURON_ENV_SOURCE @@SOURCE@@     # wheelhouse dir, wheel (path/URL/s3://) or pip spec
setting NEURON_ENV_SOURCE_SHA256 @@SOURCE_HASH@@   # a wheel's sha256, checked before pip
setting NEURON_ENV_SOURCE_INDEX_URL @@SOURCE_INDEX_URL@@   # the team's own index
setting NEURON_ENV_TOOL_VENV @@TOOL_VENV@@
setting NEURON_ENV_TARGET_VENV @@TARGET_VENV@@
setting NEURON_ENV_TORCH @@TORCH@@
setting NEURON_ENV_BACKEND @@BACKEND@@
setting NEURON_ENV_BASE_PYTHON @@PYTHON@@
setting NEURON_ENV_LOG_DIR @@LOG_DIR@@
setting NEURON_ENV_STATE_DIR @@STATE_DIR@@
setting NEURON_ENV_SMOKE @@SMOKE@@
setting NEURON_ENV_DOCTOR_WAIT @@WAIT@@   # doctor --wait: failing checks retried while the driver loads
setting NEURON_ENV_RETRIES @@RETRIES@@
setting NEURON_ENV_RETRY_DELAY 5   # seconds; doubles per attempt
setting NEURON_ENV_MAX_DELAY 120
# extra arguments: rendered as words; NEURON_ENV_EXTRA_*_ARGS (split on blanks) replace them
EXTRA_INSTALL=(@@INSTALL_ARGS@@)
EXTRA_DOCTOR=(@@DOCTOR_ARGS@@)
if [ -n "${NEURON_ENV_EXTRA_INSTALL_ARGS:-}" ]; then
    read -r -a EXTRA_INSTALL <<<"$NEURON_ENV_EXTRA_INSTALL_ARGS"
fi
if [ -n "${NEURON_ENV_EXTRA_DOCTOR_ARGS:-}" ]; then
    read -r -a EXTRA_DOCTOR <<<"$NEURON_ENV_EXTRA_DOCTOR_ARGS"
fi
@@INDEX_SETTINGS@@
# -----------------------------------------------------------------------------------------------

mkdir -p "$NEURON_ENV_LOG_DIR" "$NEURON_ENV_STATE_DIR" || exit 2
BOOT_LOG="$NEURON_ENV_LOG_DIR/bootstrap.log"

redact() {  # never print credentials embedded in URLs (https://user:token@mirror/...)
    # 1. the index URLs this script knows: their userinfo (up to the URL's last @), literally,
    #    whatever it holds (/, blanks, @); 2. any other URL: user:password with a / or blanks
    #    in the password, then the usual userinfo up to the authority's last @ (neuron-env's
    #    own mask does the same: guards/redact.py)
    local line u ui
    while IFS= read -r line || [ -n "$line" ]; do
        for u in "${NEURON_ENV_NEURON_INDEX_URL:-}" "${NEURON_ENV_PYTORCH_INDEX_URL:-}"; do
            case "$u" in *://*@*) ;; *) continue ;; esac
            ui=${u#*://}
            ui=${ui%@*}
            [ -n "$ui" ] && line=${line//"$ui@"/***@}
        done
        printf '%s\n' "$line"
    done | sed -E -e 's#://[^/:@[:space:]]+:[^@[:space:]]*/[^@[:space:]]*@#://***@#g' \
                  -e 's#://[^/:@[:space:]]+:[^/@]*[[:blank:]][^/@]*@#://***@#g' \
                  -e 's#://[^/[:space:]]+@#://***@#g'
}

log() {  # timestamped, to the console (cloud-init-output.log) and the bootstrap log
    printf '%s neuron-env-bootstrap: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | redact | tee -a "$BOOT_LOG" >&2
}

transient() {  # transient NAME RC: could waiting fix this failure (the network, a timeout)?
    case "$1:$2" in
        *:4) return 0 ;;                       # timed out
        *:130 | *:3) return 1 ;;               # interrupted; a bug
        self-install:2) return 1 ;;            # the tool venv could not be created
        self-install:*) return 0 ;;            # pip: usually the network
        index-url:1) return 0 ;;               # SSM: the network or the instance role
        install:*) grep -qE 'could not be reached|was too slow|timed out' \
                       "$NEURON_ENV_LOG_DIR/install.json" 2>/dev/null ;;
        *) return 1 ;;
    esac
}

retry() {  # retry NAME CMD...: bounded attempts with exponential backoff, for what time can fix
    local name=$1 attempt=1 delay=$NEURON_ENV_RETRY_DELAY rc=0
    shift
    while true; do
        "$@"
        rc=$?
        [ "$rc" -eq 0 ] && return 0
        if ! transient "$name" "$rc"; then
            log "$name failed (exit $rc): not retried (waiting will not fix it)"
            return "$rc"
        fi
        if [ "$attempt" -ge "$NEURON_ENV_RETRIES" ]; then
            log "$name failed (exit $rc) after $attempt attempt(s)"
            return "$rc"
        fi
        log "$name failed (exit $rc); retry $attempt/$NEURON_ENV_RETRIES in ${delay}s"
        sleep "$delay"
        attempt=$((attempt + 1))
        delay=$((delay * 2 > NEURON_ENV_MAX_DELAY ? NEURON_ENV_MAX_DELAY : delay * 2))
        [ "$delay" -lt 1 ] && delay=1
    done
}

index_from() {  # index_from VAR SOURCE: an index URL read at boot (ssm:NAME or env:NAME)
    local var=$1 src=$2 val=""
    [ -n "${!var:-}" ] && return 0
    case "$src" in
        ssm:*) val=$(aws ssm get-parameter --name "${src#ssm:}" --with-decryption \
                     --query Parameter.Value --output text) || {
                   log "cannot read SSM parameter ${src#ssm:} (needs the aws CLI and ssm:GetParameter)"
                   return 1; } ;;
        env:*) local name=${src#env:}
               val=${!name:-} ;;
    esac
    if [ -z "$val" ]; then
        log "FAILED: $var: $src is empty; set it, or render without --*-index-url-from"
        return 2
    fi
    printf -v "$var" '%s' "$val"
    export "${var?}"
}

preflight() {  # deterministic problems, said once with what to do (exit 2, never retried)
    local p
    for p in "$NEURON_ENV_TOOL_VENV" "$NEURON_ENV_TARGET_VENV"; do
        if [ -e "$p" ] && [ ! -d "$p" ]; then
            log "FAILED: $p exists and is not a directory: remove it or render with another --venv/--tool-venv"
            exit 2
        fi
    done
    if ! "$NEURON_ENV_BASE_PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        log "FAILED: $NEURON_ENV_BASE_PYTHON cannot create venvs (missing or no ensurepip): apt-get install -y python3-venv (or dnf install python3), or set --python"
        exit 2
    fi
}

settings_key() {  # every setting that changes what is installed or judged: changed, run again
    printf '%s\n' "$NEURON_ENV_SOURCE" "$NEURON_ENV_SOURCE_SHA256" "$NEURON_ENV_SOURCE_INDEX_URL" \
        "$NEURON_ENV_TOOL_VENV" "$NEURON_ENV_TARGET_VENV" "$NEURON_ENV_TORCH" \
        "$NEURON_ENV_BACKEND" "$NEURON_ENV_BASE_PYTHON" "$NEURON_ENV_SMOKE" \
        "$NEURON_ENV_DOCTOR_WAIT" "${NEURON_ENV_NEURON_INDEX_URL:-}" \
        "${NEURON_ENV_PYTORCH_INDEX_URL:-}" "${EXTRA_INSTALL[*]}" "${EXTRA_DOCTOR[*]}" \
        @@KEY_LOOKUPS@@| sha256sum | cut -c1-16
}

DONE="$NEURON_ENV_STATE_DIR/bootstrap.done"
KEY=$(settings_key)
if [ -f "$DONE" ] && [ "$(cat "$DONE")" = "$KEY" ]; then
    log "already bootstrapped with these settings ($KEY): nothing to do"
    exit 0
fi
log "start (settings $KEY)"
preflight
@@INDEX_LOOKUPS@@

NE="$NEURON_ENV_TOOL_VENV/bin/neuron-env"
fetch_wheel() {  # fetch_wheel SOURCE FILE: a wheel by path, file://, http(s):// or s3:// URL
    case "$1" in
        s3://*) aws s3 cp --only-show-errors "$1" "$2" ;;
        http://* | https://*) curl -fsSL --retry 2 --max-time 300 -o "$2" "$1" ;;
        *) cp -- "${1#file://}" "$2" ;;
    esac
}
install_self() {
    if [ ! -x "$NEURON_ENV_TOOL_VENV/bin/python" ]; then
        "$NEURON_ENV_BASE_PYTHON" -m venv "$NEURON_ENV_TOOL_VENV" || {
            log "cannot create $NEURON_ENV_TOOL_VENV (writable? python3-venv installed?)"
            return 2; }
    fi
    local pip=("$NEURON_ENV_TOOL_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 20)
    [ -n "$NEURON_ENV_SOURCE_INDEX_URL" ] && pip+=(--index-url "$NEURON_ENV_SOURCE_INDEX_URL")
    case "$NEURON_ENV_SOURCE" in
        *.whl)
            local whl got
            whl="$NEURON_ENV_STATE_DIR/${NEURON_ENV_SOURCE##*/}"
            fetch_wheel "$NEURON_ENV_SOURCE" "$whl" || return 1
            got=$(sha256sum "$whl" | cut -d' ' -f1)
            if [ "$got" != "$NEURON_ENV_SOURCE_SHA256" ]; then
                log "FAILED: $NEURON_ENV_SOURCE has sha256 $got, not $NEURON_ENV_SOURCE_SHA256: not installed"
                rm -f -- "$whl"
                return 2
            fi
            "${pip[@]}" -- "$whl" ;;
        /*) "${pip[@]}" --no-index --find-links "$NEURON_ENV_SOURCE" -- neuron-env ;;
        "") log "FAILED: no source for neuron-env (NEURON_ENV_SOURCE): render with --source"
            return 2 ;;
        *) if [ -z "$NEURON_ENV_SOURCE_INDEX_URL" ]; then
               log "FAILED: $NEURON_ENV_SOURCE is a pip spec without NEURON_ENV_SOURCE_INDEX_URL (neuron-env is not on the public index)"
               return 2
           fi
           "${pip[@]}" -- "$NEURON_ENV_SOURCE" ;;  # a source is never taken for an option
    esac
}
if [ -x "$NE" ] && "$NE" --version >/dev/null 2>&1; then
    log "neuron-env present: $("$NE" --version)"
else
    log "installing neuron-env from $NEURON_ENV_SOURCE into $NEURON_ENV_TOOL_VENV"
    retry self-install install_self || { log "FAILED: could not install neuron-env"; exit 2; }
fi

log "installing the $NEURON_ENV_BACKEND backend (torch $NEURON_ENV_TORCH) into $NEURON_ENV_TARGET_VENV"
INSTALL_ARGS=(install --yes --venv "$NEURON_ENV_TARGET_VENV" --python "$NEURON_ENV_BASE_PYTHON" --backend "$NEURON_ENV_BACKEND" --format json)
[ -n "$NEURON_ENV_TORCH" ] && INSTALL_ARGS+=(--torch "$NEURON_ENV_TORCH")
INSTALL_ARGS+=("${EXTRA_INSTALL[@]}")
do_install() {
    "$NE" "${INSTALL_ARGS[@]}" >"$NEURON_ENV_LOG_DIR/install.json" 2>>"$BOOT_LOG"
}
retry install do_install
rc=$?
if [ "$rc" -ne 0 ]; then
    log "FAILED: neuron-env install exited $rc (report: $NEURON_ENV_LOG_DIR/install.json)"
fi

DOCTOR_ARGS=(doctor --python "$NEURON_ENV_TARGET_VENV/bin/python" --report "json:$NEURON_ENV_LOG_DIR/doctor.json" --report "junit:$NEURON_ENV_LOG_DIR/doctor.xml")
[ "$NEURON_ENV_DOCTOR_WAIT" != 0 ] && DOCTOR_ARGS+=(--wait "$NEURON_ENV_DOCTOR_WAIT")
[ "$NEURON_ENV_SMOKE" = 1 ] && DOCTOR_ARGS+=(--smoke)
DOCTOR_ARGS+=("${EXTRA_DOCTOR[@]}")
log "running neuron-env ${DOCTOR_ARGS[*]}"
"$NE" "${DOCTOR_ARGS[@]}" 2>&1 | redact | tee -a "$BOOT_LOG"
drc=${PIPESTATUS[0]}
log "doctor exited $drc (report: $NEURON_ENV_LOG_DIR/doctor.json)"

if [ "$rc" -eq 0 ] && [ "$drc" -eq 0 ]; then
    printf '%s' "$KEY" >"$DONE"
    log "done"
    exit 0
fi
[ "$rc" -ne 0 ] && exit "$rc"
exit "$drc"
