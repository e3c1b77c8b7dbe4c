#!/bin/bash
# neuron-env first-boot bootstrap (cloud-init user-data), rendered by `neuron-env userdata`.
# Installs neuron-env, installs the Neuron PyTorch backend into a venv, runs doctor (with the
# device smoke test) and exits non-zero on failure so `cloud-init status` shows it.
# Idempotent across reboots: a finished run with the same settings is not repeated.
# shellcheck disable=SC2317  # functions below are called through retry
set -uo pipefail

# -- settings (rendered; each can be overridden by the environment) ----------------------------
NEURON_ENV_SOURCE="${NEURON_ENV_SOURCE:-@@SOURCE@@}"     # pip spec, wheel URL or wheelhouse dir
NEURON_ENV_TOOL_VENV="${NEURON_ENV_TOOL_VENV:-@@TOOL_VENV@@}"
NEURON_ENV_TARGET_VENV="${NEURON_ENV_TARGET_VENV:-@@TARGET_VENV@@}"
NEURON_ENV_TORCH="${NEURON_ENV_TORCH:-@@TORCH@@}"
NEURON_ENV_BACKEND="${NEURON_ENV_BACKEND:-@@BACKEND@@}"
NEURON_ENV_BASE_PYTHON="${NEURON_ENV_BASE_PYTHON:-@@PYTHON@@}"
NEURON_ENV_LOG_DIR="${NEURON_ENV_LOG_DIR:-@@LOG_DIR@@}"
NEURON_ENV_STATE_DIR="${NEURON_ENV_STATE_DIR:-@@STATE_DIR@@}"
NEURON_ENV_SMOKE="${NEURON_ENV_SMOKE:-@@SMOKE@@}"
NEURON_ENV_RETRIES="${NEURON_ENV_RETRIES:-@@RETRIES@@}"
NEURON_ENV_RETRY_DELAY="${NEURON_ENV_RETRY_DELAY:-5}"   # seconds; doubles per attempt
NEURON_ENV_MAX_DELAY="${NEURON_ENV_MAX_DELAY:-120}"
NEURON_ENV_EXTRA_INSTALL_ARGS="${NEURON_ENV_EXTRA_INSTALL_ARGS:-@@INSTALL_ARGS@@}"
NEURON_ENV_EXTRA_DOCTOR_ARGS="${NEURON_ENV_EXTRA_DOCTOR_ARGS:-@@DOCTOR_ARGS@@}"
@@INDEX_EXPORTS@@
# -----------------------------------------------------------------------------------------------

mkdir -p "$NEURON_ENV_LOG_DIR" "$NEURON_ENV_STATE_DIR" || exit 2
BOOT_LOG="$NEURON_ENV_LOG_DIR/bootstrap.log"

redact() {  # never print credentials embedded in URLs (https://user:token@mirror/...)
    sed -E 's#://[^/@[:space:]]+@#://***@#g'
}

log() {  # timestamped, to the console (cloud-init-output.log) and the bootstrap log
    printf '%s neuron-env-bootstrap: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | redact | tee -a "$BOOT_LOG" >&2
}

retry() {  # retry NAME CMD...: bounded attempts with exponential backoff (network steps)
    local name=$1 attempt=1 delay=$NEURON_ENV_RETRY_DELAY rc=0
    shift
    while true; do
        "$@"
        rc=$?
        [ "$rc" -eq 0 ] && return 0
        # neuron-env's 1 (a check or the provenance rules failed) and 130 (interrupted) won't
        # improve with time; pip's 1 (self-install) usually is the network
        if [ "$name" = install ] && { [ "$rc" -eq 1 ] || [ "$rc" -eq 130 ]; }; then
            log "$name failed (exit $rc): not retried"
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

settings_key() {
    printf '%s|%s|%s|%s|%s|%s' "$NEURON_ENV_SOURCE" "$NEURON_ENV_TARGET_VENV" "$NEURON_ENV_TORCH" \
        "$NEURON_ENV_BACKEND" "$NEURON_ENV_BASE_PYTHON" "$NEURON_ENV_SMOKE" | sha256sum | cut -c1-16
}

DONE="$NEURON_ENV_STATE_DIR/bootstrap.done"
KEY=$(settings_key)
if [ -f "$DONE" ] && [ "$(cat "$DONE")" = "$KEY" ]; then
    log "already bootstrapped with these settings ($KEY): nothing to do"
    exit 0
fi
log "start (settings $KEY)"

NE="$NEURON_ENV_TOOL_VENV/bin/neuron-env"
install_self() {
    if [ ! -x "$NEURON_ENV_TOOL_VENV/bin/python" ]; then
        "$NEURON_ENV_BASE_PYTHON" -m venv "$NEURON_ENV_TOOL_VENV" || return 2
    fi
    local pip=("$NEURON_ENV_TOOL_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 20)
    if [ -d "$NEURON_ENV_SOURCE" ]; then
        "${pip[@]}" --no-index --find-links "$NEURON_ENV_SOURCE" neuron-env
    else
        "${pip[@]}" "$NEURON_ENV_SOURCE"
    fi
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
read -r -a XI <<<"$NEURON_ENV_EXTRA_INSTALL_ARGS"
INSTALL_ARGS+=("${XI[@]}")
do_install() {
    "$NE" "${INSTALL_ARGS[@]}" >"$NEURON_ENV_LOG_DIR/install.json" 2>>"$BOOT_LOG"
}
retry install do_install
rc=$?
if [ "$rc" -ne 0 ]; then
    log "FAILED: neuron-env install exited $rc (report: $NEURON_ENV_LOG_DIR/install.json)"
fi

DOCTOR_ARGS=(doctor --python "$NEURON_ENV_TARGET_VENV/bin/python" --report "json:$NEURON_ENV_LOG_DIR/doctor.json" --report "junit:$NEURON_ENV_LOG_DIR/doctor.xml")
[ "$NEURON_ENV_SMOKE" = 1 ] && DOCTOR_ARGS+=(--smoke)
read -r -a EXTRA <<<"$NEURON_ENV_EXTRA_DOCTOR_ARGS"
DOCTOR_ARGS+=("${EXTRA[@]}")
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
